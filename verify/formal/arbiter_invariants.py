"""What the checks know of a :class:`~ihcube.rtl.RoundRobinArbiter`'s state: the helper
invariants that make "a stalled output keeps its message" inductive."""

from amaranth.hdl import Assert, Cat

__all__ = ["check_arbiter"]


def check_arbiter(m, arbiter, stalled, name):
    """Assert the invariants of ``arbiter`` (a probe of a holding round-robin arbiter, or of a
    broken one with the same mask) into ``m``. ``stalled`` is high in the cycle after one in
    which the arbiter's output was valid and not ready.

    Its mask ``after`` is a thermometer (some bits from the top); it holds bit 0 only after a
    stall on requester 0 (a transfer clears it); and after a stall, the requester where
    priority starts, the one stalled, still requests: so it is granted again, and the output
    keeps its message with no register of the grant (``rtl/arbiter.py``). Of an arbiter built
    not to hold (``hold=False``), only the first.
    """
    after = arbiter.signal("after")
    requests = arbiter.component.requests
    first = after & ~(after << 1)  # the lowest set bit: where priority starts
    m.d.comb += Assert(Cat(*(~after[j] | after[j + 1] for j in range(len(after) - 1))).all(),
                       f"arbiter of {name}: mask out of range")
    if not arbiter.component.hold:
        return
    m.d.comb += [
        Assert(~after[0] | stalled, f"arbiter of {name}: priority at 0 with no stall"),
        Assert(~stalled | ((first & requests) != 0),
               f"arbiter of {name}: the stalled request is gone"),
    ]
