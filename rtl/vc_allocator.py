"""Virtual-channel allocation at one output: which waiting head gets which free channel."""

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..params import check_positive_integer
from .prefix_arbiter import PrefixArbiter

__all__ = ["VcAllocator"]


class VcAllocator(wiring.Component):
    """Reserve the ``vcs`` virtual channels of one output for worms, one at a time.

    Each channel is *busy* from the cycle after a head is granted it until the cycle after its
    worm's tail has left on it (``release``): flits of two worms never share a channel. While a
    channel is free and ``available``, the requesters take turns (a round-robin
    :class:`~ihcube.rtl.prefix_arbiter.PrefixArbiter`); the granted one gets the lowest such
    channel in the same cycle. **Bound**: a head that keeps requesting is granted after at
    most ``requesters - 1`` grants to others.

    Parameters
    ----------
    requesters : int
        Input virtual channels that may ask for this output.
    vcs : int
        Channels of the output that this allocator hands out.

    Members
    -------
    requests : ``In(requesters)``
        Heads that want a channel of this output.
    available : ``In(vcs)``
        Channels that may be granted in this cycle besides being free (the broadcast channel
        only when the far buffer is empty); all ones otherwise.
    release : ``In(vcs)``
        Channels whose worm's tail leaves in this cycle.
    grant : ``Out(requesters)``
        One-hot: the requester granted a channel in this cycle (none if zero).
    vc : ``Out(range(vcs))``
        The channel granted.
    busy : ``Out(vcs)``
        The channels reserved, registered.
    """

    #: The arbiter between requesters; negative-control variants replace it.
    arbiter = PrefixArbiter
    #: Whether a grant reserves its channel; False is a negative control (worms interleave).
    reserves = True
    #: Whether a tail frees its channel; False is a negative control (the output locks up).
    releases = True

    def __init__(self, requesters, vcs=1):
        self._requesters = check_positive_integer(requesters, "Requester count")
        self._vcs = check_positive_integer(vcs, "Virtual channel count")
        super().__init__({
            "requests":  In(self._requesters),
            "available": In(self._vcs, init=(1 << self._vcs) - 1),
            "release":   In(self._vcs),
            "grant":     Out(self._requesters),
            "vc":        Out(range(self._vcs)),
            "busy":      Out(self._vcs),
        })

    requesters = property(lambda self: self._requesters)
    vcs = property(lambda self: self._vcs)

    def elaborate(self, platform):
        m = Module()
        arbiter = m.submodules.arbiter = self.arbiter(self._requesters)
        free = Signal(self._vcs)
        m.d.comb += [
            free.eq(~self.busy & self.available),
            arbiter.requests.eq(self.requests & free.any().replicate(self._requesters)),
            arbiter.ready.eq(1),  # a grant is served at once: requests are qualified by `free`
            self.grant.eq(arbiter.grant & arbiter.valid.replicate(self._requesters)),
        ]
        for v in reversed(range(self._vcs)):  # lowest free channel, assigned last
            with m.If(free[v]):
                m.d.comb += self.vc.eq(v)
        taken = Signal(self._vcs)
        if self.reserves:
            m.d.comb += taken.eq(arbiter.valid.replicate(self._vcs) & (1 << self.vc))
        freed = self.release if self.releases else 0
        m.d.sync += self.busy.eq((self.busy | taken) & ~freed)
        return m
