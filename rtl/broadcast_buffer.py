"""The broadcast channel's buffer: one whole message, read by each branch at its own pace."""

from amaranth.hdl import Array, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..params import check_positive_integer

__all__ = ["BroadcastBuffer"]


class BroadcastBuffer(wiring.Component):
    """Holds one broadcast of ``flits`` flits; each of ``branches`` outputs reads it whole.

    A broadcast enters only an ``idle`` buffer (its sender waits for that), so the buffer
    never holds more than one message and flit ``k`` is entry ``k``. Each branch that ``want``
    names reads the entries in order from its own index, as fast as its output lets it, never
    waiting for the other branches: a broadcast moves whole on each branch (virtual cut-through)
    and no branch holds a channel while another waits (``docs/wormhole.md``, "Broadcasts").
    When every wanted branch has read the last flit, the buffer empties.

    Parameters
    ----------
    layout : ShapeLike
        Shape of a flit.
    flits : int
        Flits per message.
    branches : int
        Outputs that may read.

    Members
    -------
    w : ``In(stream.Signature(layout))``
        Flits in; ``w.ready`` is registered.
    head : ``Out(layout)``
        Entry 0, the head flit once ``written`` is non-zero.
    written : ``Out(range(flits + 1))``
        Flits held so far.
    want : ``In(branches)``
        The branches that read this message (fixed while it is held).
    r : ``Out(stream.Signature(layout)).array(branches)``
        Branch ``b``'s next flit.
    idle : ``Out(1)``
        Registered: the buffer is empty in this cycle.
    done : ``Out(1)``
        Combinational: every wanted branch reads its last flit by the end of this cycle, and
        the buffer empties.
    """

    def __init__(self, layout, flits, branches):
        self._layout = layout
        self._flits = check_positive_integer(flits, "Flit count")
        self._branches = check_positive_integer(branches, "Branch count")
        super().__init__({
            "w":       In(stream.Signature(layout)),
            "head":    Out(layout),
            "written": Out(range(self._flits + 1)),
            "want":    In(self._branches),
            "r":       Out(stream.Signature(layout)).array(self._branches),
            "idle":    Out(1, init=1),
            "done":    Out(1),
        })

    flits = property(lambda self: self._flits)
    branches = property(lambda self: self._branches)

    def elaborate(self, platform):
        m = Module()
        flits = self._flits
        entries = Array(Signal(self._layout, name=f"entry{k}", reset_less=True)
                        for k in range(flits))
        room = Signal()  # low in reset
        read = [Signal(range(flits + 1), name=f"read{b}") for b in range(self._branches)]
        m.d.comb += [self.w.ready.eq(room), self.head.eq(entries[0])]
        write = self.w.valid & self.w.ready
        with m.If(write):
            m.d.sync += entries[self.written].eq(self.w.payload)
        finished = self.done
        m.d.comb += finished.eq((self.written == flits) & (self.want != 0))
        for b, index in enumerate(read):
            port = self.r[b]
            m.d.comb += [
                port.valid.eq(self.want[b] & (index < self.written)),
                port.payload.eq(entries[index]),
            ]
            with m.If(port.valid & port.ready):
                m.d.sync += index.eq(index + 1)
            with m.If(self.want[b] & (index + (port.valid & port.ready) != flits)):
                m.d.comb += finished.eq(0)
        written_next = Signal.like(self.written)
        m.d.comb += written_next.eq(self.written + write)
        with m.If(finished):
            m.d.comb += written_next.eq(0)
            m.d.sync += [index.eq(0) for index in read]
        m.d.sync += [
            self.written.eq(written_next),
            room.eq(written_next != flits),
            self.idle.eq(~written_next.any()),
        ]
        return m
