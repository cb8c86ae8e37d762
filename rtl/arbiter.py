"""Fair arbitration of one output among the inputs that want it."""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..params import check_positive_integer

__all__ = ["RoundRobinArbiter"]


class RoundRobinArbiter(wiring.Component):
    """Round-robin arbiter that holds its grant until the granted request is served.

    Priority starts just after the requester served last, so a requester that keeps its
    request up is granted after at most ``count - 1`` transfers to others: with an output
    that is always ready, within ``count`` cycles. A grant is held while the output is
    stalled, so what the output presents stays put until it is taken. ``grant`` and
    ``valid`` do not depend on ``ready``.

    Parameters
    ----------
    count : int
        Number of requesters.

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

    def __init__(self, count):
        count = self._count = check_positive_integer(count, "Requester count")
        super().__init__({
            "requests": In(count),
            "grant":    Out(count),
            "valid":    Out(1),
            "ready":    In(1),
        })

    @property
    def count(self):
        return self._count

    def elaborate(self, platform):
        m = Module()
        count = self._count

        last = Signal(range(count), init=count - 1)  # requester served last
        held = Signal(count)                          # grant kept across a stall
        locked = Signal()

        after_last = Signal(count)
        # Requester 0 is never after `last`: comparing `last < 0` would be a constant.
        m.d.comb += after_last.eq(self.requests
                                  & Cat(Const(0, 1), *(last < j for j in range(1, count))))

        fresh = Signal(count)
        # Lowest set bit of the requests after `last`, else of all requests: written so
        # that the later assignment wins.
        for j in reversed(range(count)):
            with m.If(self.requests[j]):
                m.d.comb += fresh.eq(1 << j)
        for j in reversed(range(count)):
            with m.If(after_last[j]):
                m.d.comb += fresh.eq(1 << j)

        m.d.comb += [
            self.grant.eq(Mux(locked, held, fresh)),
            self.valid.eq(self.grant.any()),
        ]
        with m.If(self.valid & self.ready):
            m.d.sync += locked.eq(0)
            for j in range(count):
                with m.If(self.grant[j]):
                    m.d.sync += last.eq(j)
        with m.Elif(self.valid):
            m.d.sync += [locked.eq(1), held.eq(self.grant)]
        return m
