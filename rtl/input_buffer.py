"""The buffer of a router input: messages, and the copies each still has to send."""

from amaranth.hdl import Array, Module, Shape, Signal, unsigned
from amaranth.lib import data
from amaranth.lib.wiring import In

from .buffer import LinkBuffer

__all__ = ["InputBuffer", "entry_layout", "HEAD_DONE_FROM"]

#: The depth from which an :class:`InputBuffer` keeps its head's copies sent in a register
#: ``done`` rather than clearing them from the head's stored ``want``.
HEAD_DONE_FROM = 2


def entry_layout(message, copies):
    """An :class:`InputBuffer` entry: a ``message`` and ``want``, a bit per output that the
    input can use (``copies`` of them), set for each copy the message still has to send."""
    return data.StructLayout({"message": message, "want": unsigned(copies)})


class InputBuffer(LinkBuffer):
    """A :class:`LinkBuffer` of messages, each with the copies it still has to send.

    A message is written with ``want``, the outputs it will take here (decided on the way in,
    so that at the head its requests come from flip-flops). As its copies leave, the router
    says so on ``sent`` and their bits are cleared from what the head still wants
    (``r.want``); the router takes the head once nothing is left. So the router keeps no
    copy record of its own, and an empty buffer's head wants nothing.

    At depth 1 the head's stored ``want`` bits are cleared as its copies leave, so a request
    is a flip-flop as it is. From depth :data:`HEAD_DONE_FROM` on the stored bits stay as
    written until the head leaves, and a register ``done`` records the head's copies sent
    (``r.want`` is ``want & ~done``), all ones while the buffer is empty. An entry's bits
    then only load (at the tail), with the flip-flops' enable and no LUT, where bits both
    written and cleared one by one took two LUTs a bit and entry.

    Parameters
    ----------
    layout : :func:`entry_layout`
        Shape of an entry.
    depth : int
        Number of messages held (>= 1).

    Members
    -------
    w : ``In(stream.Signature(layout))``
        Messages in with all they want; ``w.ready`` is registered.
    r : ``Out(stream.Signature(layout))``
        The oldest message, with what it still wants.
    sent : ``In(copies)``
        The head's copies that leave in this cycle: cleared from what it still wants.
    """

    def _members(self, layout):
        return {**super()._members(layout),
                "sent": In(data.Layout.cast(layout)["want"].shape)}

    def elaborate(self, platform):
        m = Module()
        layout = data.Layout.cast(self._layout)
        copies = Shape.cast(layout["want"].shape).width
        keeps_done = self.depth >= HEAD_DONE_FROM
        # The messages are read only while counted, so they need no reset. At depth 1 the
        # wants are the requests, so an entry not in use must want nothing from reset on;
        # with ``done`` a head not in use has sent everything, and only the head requests.
        messages = Array(Signal(layout["message"].shape, name=f"entry{i}", reset_less=True)
                         for i in range(self.depth))
        wants = Array(Signal(layout["want"].shape, name=f"want{i}", reset_less=keeps_done)
                      for i in range(self.depth))
        ring = self._elaborate_ring(m)
        head, tail = ring.head, ring.tail
        m.d.comb += self.r.payload.message.eq(messages[head])
        if not keeps_done:
            m.d.comb += self.r.payload.want.eq(wants[head])
            m.d.sync += wants[head].eq(wants[head] & ~self.sent)
        else:
            # All ones while the ring is empty: a head not in use wants nothing.
            done = Signal(layout["want"].shape, name="done", init=(1 << copies) - 1)
            m.d.comb += self.r.payload.want.eq(wants[head] & ~done)
            with m.If(ring.read | ring.write & ~self.r.valid):  # a new head, or none
                m.d.sync += done.eq(ring.empty_next.replicate(copies))
            with m.Else():
                m.d.sync += done.eq(done | self.sent)
        with m.If(ring.write):  # into an entry not in use (at depth 1, wins over its clearing)
            m.d.sync += [
                messages[tail].eq(self.w.payload.message),
                wants[tail].eq(self.w.payload.want),
            ]
        return m
