"""The buffer of a router input: messages, and the copies each still has to send."""

from amaranth.hdl import Array, Module, Mux, Signal, unsigned
from amaranth.lib import data
from amaranth.lib.wiring import In

from .buffer import LinkBuffer

__all__ = ["InputBuffer", "entry_layout", "HEAD_WANT_FROM"]

#: The depth from which an :class:`InputBuffer` keeps what its head still wants in a register
#: ``head_want`` of its own rather than in the head's stored ``want``.
HEAD_WANT_FROM = 2


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
    is a flip-flop as it is. From depth :data:`HEAD_WANT_FROM` on the stored bits stay as
    written, and a register ``head_want`` holds what the head still wants: loaded when a
    message becomes the head (the next entry's bits, or those written into an empty
    buffer), cleared as copies leave, zero while the buffer is empty. So a request is again a
    flip-flop, with no multiplexer on the head pointer before the arbiters, and the
    message taken changes only the head pointer and ``head_want``, not a register per
    entry. An entry's bits only load (at the tail), with the flip-flops' enable and no LUT.

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
        keeps_head = self.depth >= HEAD_WANT_FROM
        # The messages are read only while counted, so they need no reset. At depth 1 the
        # wants are the requests, so an entry not in use must want nothing from reset on;
        # with ``head_want`` the entries' wants are read only while counted.
        messages = Array(Signal(layout["message"].shape, name=f"entry{i}", reset_less=True)
                         for i in range(self.depth))
        wants = Array(Signal(layout["want"].shape, name=f"want{i}", reset_less=keeps_head)
                      for i in range(self.depth))
        ring = self._elaborate_ring(m)
        head, tail = ring.head, ring.tail
        m.d.comb += self.r.payload.message.eq(messages[head])
        if not keeps_head:
            m.d.comb += self.r.payload.want.eq(wants[head])
            m.d.sync += wants[head].eq(wants[head] & ~self.sent)
        else:
            head_want = Signal(layout["want"].shape, name="head_want")
            after = Mux(head == self.depth - 1, 0, head + 1)
            m.d.comb += self.r.payload.want.eq(head_want)
            # The message taken leaves the next entry at the head; or the one written
            # becomes the head, into an empty ring or as the only message leaves; or the
            # head stays, less its copies sent (all of them when it is taken).
            m.d.sync += head_want.eq(
                Mux(ring.read & (ring.count > 1), wants[after],
                    Mux(ring.write & (ring.count == ring.read), self.w.payload.want,
                        head_want & ~self.sent)))
        with m.If(ring.write):  # into an entry not in use (at depth 1, wins over its clearing)
            m.d.sync += [
                messages[tail].eq(self.w.payload.message),
                wants[tail].eq(self.w.payload.want),
            ]
        return m
