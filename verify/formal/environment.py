"""What both checks count with and assume of their environment."""

from amaranth.hdl import Assume, Const, Signal

__all__ = ["popcount", "hold_constant"]


def popcount(bits):
    """The number of set bits among ``bits`` (an 8-bit value: the checks count a few dozen)."""
    return sum((bit.as_unsigned() for bit in bits), Const(0, 8))


def hold_constant(m, signal):
    """Assume that the free ``signal`` keeps its first value; return a flag that is low in the
    first cycle only (the reset-less checks have no reset to say so)."""
    previous = Signal.like(signal, name=f"{signal.name}_prev")
    started = Signal(name="started")
    m.d.sync += [previous.eq(signal), started.eq(1)]
    m.d.comb += Assume(~started | (signal == previous))
    return started
