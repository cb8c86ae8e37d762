"""The formal check of a whole fabric: :class:`FabricCheck`, by BMC or PDR.

Every PE injects freely; the PEs accept whenever something is delivered (``eject.ready``
always 1) or, with ``eject_ready="free"``, whenever the environment likes. One message is
*tagged* (its payload equals a free constant ``tag``, and it enters at most once, as in
:mod:`.router_check`). It must reach exactly the PEs it is for (its ``dest``, or for a
broadcast every node but the origin), each once, unchanged, and nobody else; with eject always
ready it must have reached all of them within ``bound`` cycles of being taken
(:data:`~.jobs.FABRIC_CHECKS`). ``Cover`` jobs show that the scenarios happen: a unicast over
the longest path, a complete broadcast, and where the bound is tight a delivery that takes all
of it. With ``eject_ready="free"`` and no bound the check is pure safety, which PDR proves for
every cycle (:data:`~.jobs.FABRIC_PROOFS`). With a ``drain``, injection stops for good at a
cycle the environment picks, and the tagged message must have been delivered ``drain`` cycles
later (:data:`~.jobs.FABRIC_DRAINS`; with a relay on every link,
:data:`~.jobs.STAGED_FABRIC_DRAINS`; with every stage, :data:`~.jobs.PIPELINED_FABRIC_DRAINS`).
The fabric may have any of the routers' stages (link relays, registered grants, eject relays):
the properties, at the PEs, are the same.
"""

from amaranth.hdl import (Cat, ClockDomain, ClockSignal, Elaboratable, Module, Mux, Signal,
                          Assert, Assume, Cover)

from ... import topology
from ...rtl import Fabric, Kind, Router
from .environment import hold_constant, popcount
from .probe import free_inputs

__all__ = ["FabricCheck"]


class FabricCheck(Elaboratable):
    """A :class:`~ihcube.rtl.Fabric` with free PEs and one tagged message, checked by BMC.

    See the module documentation (:mod:`.fabric_check`) for what is assumed and asserted.

    Parameters
    ----------
    spec : FabricSpec
        The fabric, as :class:`~ihcube.rtl.Fabric` takes it (packet switching, one PE port; a
        payload of 1 bit is enough for a tag), with any of the routers' register stages.
    router : callable
        As for :class:`~ihcube.rtl.Fabric`; negative controls pass broken variants.
    bound : int or None
        Cycles within which every copy of the tagged message must have been delivered after
        it was taken; None for safety only.
    eject_ready : ``"always"`` or ``"free"``
        Whether the PEs accept whenever offered a message, or whenever the environment likes.
    covers : bool
        Add the ``Cover`` statements (for a cover job).
    tight : bool
        With ``covers``, also cover a delivery that takes the whole ``bound``, which shows that
        no smaller bound holds.
    drain : int or None
        The PEs inject freely until a cycle that the environment picks (the free input
        ``stop``), and never after; the tagged message must have reached all its PEs
        ``drain`` cycles after that: every message is delivered once injection stops,
        whenever it stops (the stress campaign's drain).
    fabric : callable
        The fabric class (:class:`~ihcube.rtl.Fabric`); negative controls pass broken ones.

    A reconfigurable spec's configuration port is free too: the environment offers any
    configuration in any cycle, and the tagged message must reach exactly the routers it is
    for in the logical addresses of the configuration that held when it was taken (its
    logical ``dest``, or every active router but its origin; nobody if its origin is not
    active), with its logical ``src`` and ``dest``: every configuration, and every sequence
    of them, at once.
    """

    def __init__(self, spec, *, router=Router, bound=None, eject_ready="always", covers=False,
                 tight=False, drain=None, fabric=Fabric):
        if not spec.packet or spec.ports != 1:
            raise ValueError(f"The fabric check is of a packet fabric with one PE port, not "
                             f"{spec!r}")
        self.spec = spec
        self.n = spec.nodes
        self.drain = drain
        self.stop = Signal(name="stop")
        self.bound = bound
        self.eject_ready = eject_ready
        self.covers = covers
        self.tight = tight
        self.fabric = fabric(spec, router=router)
        self.tag = Signal(spec.payload_width, name="tag")
        stop = [self.stop] if drain is not None else []
        self.ports = [ClockSignal(), self.tag, *stop, *free_inputs(self.fabric)]

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = ClockDomain(reset_less=True)
        n = self.n
        fabric = m.submodules.fabric = self.fabric

        tag = self.tag
        hold_constant(m, tag)
        if self.eject_ready == "always":
            m.d.comb += [Assume(port.ready) for port in fabric.eject]

        entering = [port.valid & port.ready & (port.payload.payload == tag)
                    for port in fabric.inject]
        tag_seen = Signal()
        m.d.comb += Assume(popcount(entering) <= Mux(tag_seen, 0, 1))

        t_src = Signal(range(n))
        t_dest = Signal(topology.address_bits(n))
        t_kind = Signal(Kind)
        with m.If(Cat(entering).any()):
            m.d.sync += tag_seen.eq(1)
        for s, port in enumerate(fabric.inject):
            with m.If(entering[s]):
                m.d.sync += [t_src.eq(s), t_dest.eq(port.payload.dest),
                             t_kind.eq(port.payload.kind)]

        # Who must get it: dest for a unicast (nobody if dest >= n), all but the origin for a
        # broadcast (Katseff, Theorems 3 and 4).
        everyone = (1 << n) - 1
        expect = Signal(n)
        # A reconfigurable fabric: the same, in logical addresses over the configuration that
        # held when it was taken (any sequence of configurations the environment offers).
        t_mask = Signal.like(fabric.mask) if self.spec.reconfigurable else 0
        if self.spec.reconfigurable:
            self._configured_expect(m, fabric, entering, t_src, t_dest, t_kind, t_mask, expect)
        else:
            with m.If(t_kind == Kind.UNICAST):
                with m.Switch(t_dest):
                    for d in range(n):
                        with m.Case(d):
                            m.d.comb += expect.eq(1 << d)
            with m.Else():
                with m.Switch(t_src):
                    for s in range(n):
                        with m.Case(s):
                            m.d.comb += expect.eq(everyone & ~(1 << s))

        got = Signal(n)
        arriving = Signal(n)
        for x, port in enumerate(fabric.eject):
            out = port.payload
            m.d.comb += arriving[x].eq(port.valid & port.ready & (out.payload == tag))
            # A delivered message's dest is the node that takes it, its travel 0 (the eject
            # port drives them; for the unicast that may arrive, x is its dest).
            same = ((out.dest == x ^ t_mask) & (out.travel == 0) & (out.src == t_src ^ t_mask)
                    & (out.kind == t_kind))
            m.d.comb += [
                Assert(~arriving[x] | tag_seen,
                       f"node {x} gets a copy of a tagged message never injected"),
                Assert(~arriving[x] | expect[x],
                       f"node {x} gets the tagged message, which is not for it"),
                Assert(~arriving[x] | ~got[x], f"node {x} gets the tagged message twice"),
                Assert(~arriving[x] | same, f"node {x} gets the tagged message altered"),
            ]
        m.d.sync += got.eq(got | arriving)

        age = Signal(8)
        with m.If(tag_seen & (age != 255)):
            m.d.sync += age.eq(age + 1)
        with m.If(Cat(entering).any()):
            m.d.sync += age.eq(1)
        if self.bound is not None:
            m.d.comb += Assert(~tag_seen | (age <= self.bound) | (got == expect),
                               f"the tagged message is not delivered {self.bound} cycles after "
                               f"it was taken")
        if self.drain is not None:
            # Injection stops for good in the cycle after ``stop`` is first high; ``stopped``
            # counts the cycles since (saturating).
            stopped = Signal(range(self.drain + 2))
            with m.If((stopped != 0) & (stopped != self.drain + 1)):
                m.d.sync += stopped.eq(stopped + 1)
            with m.If((stopped == 0) & self.stop):
                m.d.sync += stopped.eq(1)
            m.d.comb += [Assume(~port.valid | (stopped == 0)) for port in fabric.inject]
            m.d.comb += Assert(~tag_seen | (stopped <= self.drain) | (got == expect),
                               f"the tagged message is not delivered {self.drain} cycles after "
                               f"injection stopped")

        if self.covers and not self.spec.reconfigurable:
            # A unicast over the longest path, a complete broadcast, and (if tight) a delivery
            # that takes exactly the bound (the cycle after the last delivery has age bound + 1).
            far = max(((s, d) for s in range(n) for d in range(n)),
                      key=lambda sd: len(topology.path(n, *sd)))
            complete = tag_seen & (got == expect) & (expect != 0)
            m.d.comb += [
                Cover(complete & (t_kind == Kind.UNICAST) & (t_src == far[0])
                      & (t_dest == far[1]),
                      f"a unicast from node {far[0]} to node {far[1]} (the longest path) "
                      f"delivered"),
                Cover(complete & (t_kind == Kind.BROADCAST), "a broadcast delivered to all"),
            ]
            if self.tight:
                last_arrival = Signal()
                m.d.sync += last_arrival.eq(arriving.any() & ((got | arriving) == expect))
                m.d.comb += Cover(complete & last_arrival & (age == self.bound + 1),
                                  f"a delivery that takes the whole bound, {self.bound} cycles")
        return m

    def _configured_expect(self, m, fabric, entering, t_src, t_dest, t_kind, t_mask, expect):
        """Set ``expect`` for a reconfigurable fabric: the configuration ``(active_nodes,
        mask)`` that holds when the tagged message is taken is recorded (``t_mask``); a
        message from a router whose logical address is not active is refused, a unicast goes
        to the router of its logical ``dest`` if that is active, a broadcast to every active
        router but its origin."""
        n = self.n
        t_active = Signal.like(fabric.active_nodes)
        with m.If(Cat(entering).any()):
            m.d.sync += [t_active.eq(fabric.active_nodes), t_mask.eq(fabric.mask)]
        origin_active = (t_src ^ t_mask) < t_active
        for x in range(n):
            logical = t_mask ^ x
            unicast = (logical == t_dest) & (t_dest < t_active)
            broadcast = (logical < t_active) & (t_src != x)
            m.d.comb += expect[x].eq(origin_active & Mux(t_kind == Kind.UNICAST, unicast,
                                                         broadcast))
