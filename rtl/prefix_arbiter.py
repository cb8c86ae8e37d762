"""The round-robin arbiter built of parallel prefixes, for arbiters over many requesters."""

from amaranth.hdl import Cat, Const, Module, Mux, Signal

from .arbiter import RoundRobinArbiter

__all__ = ["PrefixArbiter", "prefix_or"]


def prefix_or(bits):
    """The inclusive prefix OR of ``bits`` (a list of one-bit values): bit ``j`` is
    ``bits[0] | ... | bits[j]``, in ``ceil(log2(len(bits)))`` levels of two-input ORs
    (Kogge and Stone), shared by every ``j``, where a ``[:j].any()`` per ``j`` lets the
    synthesis tool share the ORs as a chain, a level per requester."""
    level, span = list(bits), 1
    while span < len(level):
        level = [level[j] | level[j - span] if j >= span else level[j]
                 for j in range(len(level))]
        span *= 2
    return level


class PrefixArbiter(RoundRobinArbiter):
    """:class:`RoundRobinArbiter`, the same function cycle by cycle (``grant``, ``valid``, the
    priority mask ``after``), built for depth rather than size.

    The round-robin arbiter grants the lowest request in the mask ``after``, else the lowest
    request; then the next mask is the requesters above the one served (or, after a stall,
    at or above it). Here every "lowest" and every "above" is read off two shared prefix ORs,
    of the masked requests and of all of them (:func:`prefix_or`): ``log2(count)`` levels
    instead of a chain of ``count``, and no second chain from the grant to the next mask. The
    wormhole router's arbiters have up to ``k (V + 1) + 2`` requesters (22 at node 0 of 26
    with three channels), where the chain was the router's critical path
    (``docs/fpga-design.md``). The packet router keeps :class:`RoundRobinArbiter`, whose
    Verilog is unchanged.

    Parameters and members are :class:`RoundRobinArbiter`'s.
    """

    #: The prefix OR; negative-control variants replace it.
    prefix = staticmethod(prefix_or)

    def elaborate(self, platform):
        m = Module()
        count = self.count
        after = Signal(count, init=0)  # the name the formal invariants read
        masked = Signal(count)
        m.d.comb += masked.eq(self.requests & after)
        # Inclusive prefix ORs: below[j] is "some request at 0 .. j".
        below_masked = Cat(*self.prefix([masked[j] for j in range(count)]))
        below_all = Cat(*self.prefix([self.requests[j] for j in range(count)]))
        any_masked = below_masked[-1]
        # Exclusive prefixes: some request strictly below j.
        under_masked = Cat(Const(0, 1), below_masked[:-1])
        under_all = Cat(Const(0, 1), below_all[:-1])
        m.d.comb += [
            self.grant.eq((masked & ~under_masked)
                          | (~any_masked.replicate(count) & self.requests & ~under_all)),
            self.valid.eq(below_all[-1]),
        ]
        # Above the granted requester: the requests strictly below j include the grant. At
        # or above it (a stall): inclusive.
        served = Mux(any_masked, under_masked, under_all)
        if not self.hold:
            with m.If(self.valid & self.ready):
                m.d.sync += after.eq(served)
            return m
        stalled = Mux(any_masked, below_masked, below_all)
        with m.If(self.valid):
            m.d.sync += after.eq(Mux(self.ready, served, stalled))
        return m
