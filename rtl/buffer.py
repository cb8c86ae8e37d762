"""The message buffer at the receiving end of a link direction."""

from typing import NamedTuple

from amaranth.hdl import Array, Module, Mux, Signal, Value
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..params import check_depth

__all__ = ["LinkBuffer", "Ring"]


class Ring(NamedTuple):
    """The ring of a :class:`LinkBuffer`'s entries, as :meth:`LinkBuffer._elaborate_ring`
    made it."""
    head: Value
    tail: Value
    write: Value
    read: Value
    count: Value


class LinkBuffer(wiring.Component):
    """First-in first-out buffer of ``depth`` messages (Katseff, Algorithm 3).

    ``w.ready`` is a flip-flop that says whether the buffer has room in this cycle, so a
    sender in another router never sees a combinational path through the receiver. It is
    low during reset and rises in the first cycle after it.
    The price is that "free" reaches the sender one cycle late: with ``depth=1`` a link
    carries a message at most every other cycle; ``depth=2`` restores one per cycle.

    Parameters
    ----------
    layout : ShapeLike
        Shape of a message.
    depth : int
        Number of messages held (>= 1).

    Members
    -------
    w : ``In(stream.Signature(layout))``
        Messages in; ``w.ready`` is registered.
    r : ``Out(stream.Signature(layout))``
        The oldest message; ``r.valid`` and ``r.payload`` depend on this buffer's state only.
    """

    def __init__(self, layout, depth=1):
        self._layout = layout
        depth = self._depth = check_depth(depth)
        super().__init__(self._members(layout))

    def _members(self, layout):
        """The signature's members for entries of ``layout``."""
        return {
            "w": In(stream.Signature(layout)),
            "r": Out(stream.Signature(layout)),
        }

    @property
    def depth(self):
        return self._depth

    def elaborate(self, platform):
        m = Module()
        # Entries are read only while counted, so they need no reset.
        entries = Array(Signal(self._layout, name=f"entry{i}", reset_less=True)
                        for i in range(self._depth))
        ring = self._elaborate_ring(m)
        m.d.comb += self.r.payload.eq(entries[ring.head])
        with m.If(ring.write):
            m.d.sync += entries[ring.tail].eq(self.w.payload)
        return m

    def _elaborate_ring(self, m):
        """The ring of ``depth`` entries: its ``count``, ``room`` and the ports' handshakes.
        Return a :class:`Ring`: its ``head`` and ``tail``, whether ``w`` writes in this cycle
        (into the entry at ``tail``), whether ``r`` reads (the entry at ``head``) and the
        ``count`` of entries in use in this cycle; the caller keeps the entries.
        ``w.ready`` is low while the ring is full, so a write and a read never meet in one
        entry."""
        depth = self._depth
        head = Signal(range(depth))
        tail = Signal(range(depth))
        count = Signal(range(depth + 1))
        count_next = Signal.like(count)
        room = Signal()  # low in reset, so nothing handed over then is lost

        write = self.w.valid & self.w.ready
        read = self.r.valid & self.r.ready

        m.d.comb += [
            self.w.ready.eq(room),
            self.r.valid.eq(count != 0),
            count_next.eq(count + write - read),
        ]
        m.d.sync += [
            count.eq(count_next),
            room.eq(count_next != depth),
        ]
        with m.If(write):
            m.d.sync += tail.eq(Mux(tail == depth - 1, 0, tail + 1))
        with m.If(read):
            m.d.sync += head.eq(Mux(head == depth - 1, 0, head + 1))
        return Ring(head, tail, write, read, count)
