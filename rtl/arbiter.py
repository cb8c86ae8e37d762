"""Fair arbitration of one output among the inputs that want it."""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..params import check_positive_integer

__all__ = ["RoundRobinArbiter"]


class RoundRobinArbiter(wiring.Component):
    """Round-robin arbiter that holds its grant until the granted request is served.

    Priority starts just after the requester served last, so a requester that keeps its
    request up is granted after at most ``count - 1`` transfers to others: with an output
    that is always ready, within ``count`` cycles. A grant is held while the output is
    stalled, so what the output presents stays put until it is taken: a stall moves the
    priority to start at the stalled requester, which is then chosen again (no register holds
    the grant). ``grant`` and ``valid`` do not depend on ``ready``.

    Parameters
    ----------
    count : int
        Number of requesters.
    hold : bool
        Hold a grant across a stall (the default). Without, the priority moves only when a
        grant is taken (so the fairness bound stands), and ``grant`` is the round-robin
        choice among this cycle's requests even while ``ready`` is low: for a caller that
        registers the grant and holds it itself (:class:`~ihcube.rtl.Router`'s
        ``switch_stages=1``), which masks a staged request while it waits.

    Members
    -------
    requests : ``In(count)``
        Bit ``j`` is set while requester ``j`` waits for this output. A request must stay
        up until it is served.
    grant : ``Out(count)``
        One-hot: the requester whose message the output presents.
    valid : ``Out(1)``
        Whether any requester is granted.
    ready : ``In(1)``
        The output takes the granted request in this cycle.
    """

    def __init__(self, count, hold=True):
        count = self._count = check_positive_integer(count, "Requester count")
        self._hold = bool(hold)
        super().__init__({
            "requests": In(count),
            "grant":    Out(count),
            "valid":    Out(1),
            "ready":    In(1),
        })

    @property
    def count(self):
        return self._count

    @property
    def hold(self):
        return self._hold

    def after_served(self, grant):
        """Who comes after the requester of ``grant`` once it is served: bit ``j`` set if the
        grant is below ``j``, so priority starts just after it (round robin)."""
        return Cat(*(grant[:j].any() for j in range(self._count)))

    def elaborate(self, platform):
        m = Module()
        count = self._count

        # Bit j: requester j comes after the one served last (after a stall: at or after the
        # stalled one). Priority starts at its lowest set bit. A mask, not a pointer that the
        # request -> grant path would compare with every requester's number.
        after = Signal(count, init=0)

        after_last = Signal(count)
        m.d.comb += after_last.eq(self.requests & after)

        # Lowest set bit of the requests in `after`, else of all requests. Each bit is written
        # as its own sum of products, not as a chain of "later assignment wins" multiplexers,
        # which Yosys maps to a LUT level per requester.
        any_after = after_last.any()
        m.d.comb += [
            self.grant.eq(Cat(*(
                (after_last[j] & ~after_last[:j].any())
                | (~any_after & self.requests[j] & ~self.requests[:j].any())
                for j in range(count)))),
            self.valid.eq(self.requests.any()),
        ]

        # The next `after` is data, not one constant per grant bit, which Yosys maps to the
        # flip-flops' set/reset and nextpnr then places far from the logic that shares it.
        served = self.after_served(self.grant)
        if not self._hold:
            with m.If(self.valid & self.ready):
                m.d.sync += after.eq(served)
            return m
        # A stalled grant's requester comes first in the next cycle, and its request stays up
        # until it is served, so it is granted again: the grant holds with no register (and
        # no multiplexer in the grant's path) of its own.
        stalled = Cat(*(self.grant[:j + 1].any() for j in range(count)))  # j at or above it
        with m.If(self.valid):
            m.d.sync += after.eq(Mux(self.ready, served, stalled))
        return m
