"""The buffer of a router input: messages, and the copies each still has to send."""

from amaranth.hdl import Array, Module, Signal, unsigned
from amaranth.lib import data
from amaranth.lib.wiring import In

from .buffer import LinkBuffer

__all__ = ["InputBuffer", "entry_layout"]


def entry_layout(message, copies):
    """An :class:`InputBuffer` entry: a ``message`` and ``want``, a bit per output that the
    input can use (``copies`` of them), set for each copy the message still has to send."""
    return data.StructLayout({"message": message, "want": unsigned(copies)})


class InputBuffer(LinkBuffer):
    """A :class:`LinkBuffer` of messages, each with the copies it still has to send.

    A message is written with ``want``, the outputs it will take here (decided on the way in,
    so that at the head its requests come from flip-flops). As its copies leave, the router
    says so on ``sent`` and their bits are cleared from the head's ``want``; the router
    takes the head once nothing is left. So the router keeps no copy record of its own, and a
    head's requests are its ``want`` bits as they are: an entry not in use wants nothing
    (its bits were cleared before it was taken, and reset to 0).

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
        The head's copies that leave in this cycle: cleared from its ``want``.
    """

    def _members(self, layout):
        return {**super()._members(layout),
                "sent": In(data.Layout.cast(layout)["want"].shape)}

    def elaborate(self, platform):
        m = Module()
        layout = data.Layout.cast(self._layout)
        # The messages are read only while counted, so they need no reset; the wants are
        # requests, so an entry not in use must want nothing from reset on.
        messages = Array(Signal(layout["message"].shape, name=f"entry{i}", reset_less=True)
                         for i in range(self.depth))
        wants = Array(Signal(layout["want"].shape, name=f"want{i}")
                      for i in range(self.depth))
        head, tail, write = self._elaborate_ring(m)
        m.d.comb += [
            self.r.payload.message.eq(messages[head]),
            self.r.payload.want.eq(wants[head]),
        ]
        m.d.sync += wants[head].eq(wants[head] & ~self.sent)
        with m.If(write):  # into an entry not in use (a write wins over its clearing)
            m.d.sync += [
                messages[tail].eq(self.w.payload.message),
                wants[tail].eq(self.w.payload.want),
            ]
        return m
