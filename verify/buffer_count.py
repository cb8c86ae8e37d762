"""A buffer as the router builds it, with a count of what it holds beside it: how the stress
engine reads, out of the Amaranth simulation, how many copies each input buffer and each relay
holds at a stall (:func:`ihcube.verify.stress.run_rtl`)."""

from amaranth.hdl import Module
from amaranth.lib import wiring

__all__ = ["CountedBuffer", "counting", "HELD_WIDTH"]

#: Bits of :attr:`CountedBuffer.held`: a count of writes less reads, wide enough for any
#: buffer (a faulty one that duplicates may hand out more than it was given: the count is then
#: what its ports say, modulo this width).
HELD_WIDTH = 16


class CountedBuffer(wiring.Component):
    """``buffer`` with both of its streams passed through unchanged (no cycle and no logic in
    between) and ``held`` counting the messages written into it less those read out of it.

    The count is taken at the ports, so it holds for any buffer class, the broken ones of
    :mod:`ihcube.verify.faults` included (for those it is what the ports say went in and out).

    Parameters
    ----------
    buffer : :class:`~ihcube.rtl.LinkBuffer`, :class:`~ihcube.rtl.InputBuffer` or a
        component with the signature of one
        The buffer that does the work.
    held : Signal
        The count, :data:`HELD_WIDTH` bits, made by the caller (the buffer is made while the
        router is elaborated, the signal before, so that a testbench can read it).

    Members
    -------
    w, r, sent
        As ``buffer``'s (``sent`` if it has one).
    """

    def __init__(self, buffer, held):
        self.buffer = buffer
        self.held = held
        super().__init__(buffer.signature)

    def elaborate(self, platform):
        m = Module()
        m.submodules.buffer = buffer = self.buffer
        wiring.connect(m, wiring.flipped(self.w), buffer.w)
        wiring.connect(m, buffer.r, wiring.flipped(self.r))
        if "sent" in self.signature.members:  # an input buffer: what its head has sent
            m.d.comb += buffer.sent.eq(self.sent)
        written = self.w.valid & self.w.ready
        read = self.r.valid & self.r.ready
        m.d.sync += self.held.eq(self.held + written - read)
        return m


def counting(make, held, made):
    """A buffer factory like ``make`` (called as ``make(layout, depth)``, as
    :attr:`ihcube.rtl.Router.input_buffer` is) whose buffers are :class:`CountedBuffer` s
    counting into the signals of ``held`` in the order made; each is appended to ``made``.
    Its attribute ``uncounted`` is ``make``, so that counting again starts from the real
    factory rather than from a spent one."""
    make = getattr(make, "uncounted", make)

    def make_counted(layout, depth):
        if len(made) == len(held):
            raise ValueError(f"The router made more than the {len(held)} buffers counted")
        counted = CountedBuffer(make(layout, depth), held[len(made)])
        made.append(counted)
        return counted
    make_counted.uncounted = make
    return make_counted
