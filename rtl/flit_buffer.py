"""The flit buffer of one virtual channel at the receiving end of a link."""

from amaranth.hdl import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..params import check_positive_integer
from .buffer import LinkBuffer

__all__ = ["FlitBuffer"]


class FlitBuffer(wiring.Component):
    """A first-in first-out buffer of ``depth`` flits that also says when it is empty.

    The queue is a :class:`LinkBuffer` (``w.ready`` a flip-flop, ``r`` from its state only);
    ``idle`` is a flip-flop too, high in a cycle in which the buffer holds nothing, so that a
    sender in another router may start a whole broadcast into it (``docs/wormhole.md``).

    Parameters
    ----------
    layout : ShapeLike
        Shape of a flit.
    depth : int
        Flits held (>= 1).

    Members
    -------
    w : ``In(stream.Signature(layout))``
        Flits in; ``w.ready`` is registered.
    r : ``Out(stream.Signature(layout))``
        The oldest flit.
    idle : ``Out(1)``
        Registered: the buffer is empty in this cycle.
    """

    #: The queue; negative-control variants replace it (``ihcube.verify.faults``).
    fifo = LinkBuffer

    def __init__(self, layout, depth=1):
        self._layout = layout
        self._depth = check_positive_integer(depth, "Buffer depth")
        super().__init__({
            "w":    In(stream.Signature(layout)),
            "r":    Out(stream.Signature(layout)),
            "idle": Out(1, init=1),
        })

    depth = property(lambda self: self._depth)

    def elaborate(self, platform):
        m = Module()
        fifo = m.submodules.fifo = self.fifo(self._layout, self._depth)
        wiring.connect(m, wiring.flipped(self.w), fifo.w)
        wiring.connect(m, fifo.r, wiring.flipped(self.r))
        count = Signal(range(self._depth + 1))
        count_next = Signal.like(count)
        m.d.comb += count_next.eq(count + (self.w.valid & self.w.ready)
                                  - (self.r.valid & self.r.ready))
        m.d.sync += [count.eq(count_next), self.idle.eq(~count_next.any())]
        return m
