"""The fabric with a traffic generator and a checker on every node, and the global count."""

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import Out

from .. import topology
from ..rtl import Fabric, Router
from ..rtl.message import Kind
from ..spec import as_spec
from .checker import Checker, CheckerErrors
from .traffic import LFSR_SHARERS, TrafficGenerator, lfsr_step, seed_of

__all__ = ["SelfTest", "SelfTestErrors", "check_selftest_spec"]

#: Width of the message counters.
COUNT_WIDTH = 32


def check_selftest_spec(spec):
    """Return ``spec`` if the self-test builds it: packet switching, one PE port (a generator
    and a checker a node), the routing order ``msb`` (its bitstreams' names do not say an
    order), else raise ``ValueError``."""
    if not spec.packet:
        raise ValueError(f"Switching must be packet for the self-test, not {spec.mode!r}")
    if spec.ports != 1:
        raise ValueError(f"Port count must be 1 for the self-test, not {spec.ports!r}")
    if spec.order != topology.MSB_FIRST:
        raise ValueError(f"Routing order must be msb for the self-test, not {spec.order!r}")
    return spec


class SelfTestErrors(CheckerErrors):
    """Bit positions of :attr:`SelfTest.errors`: the checkers' (OR over nodes), then these."""
    LOST    = CheckerErrors.COUNT      # a drain did not deliver everything within its time
    EXCESS  = CheckerErrors.COUNT + 1  # more deliveries than the injections account for
    REFUSED = CheckerErrors.COUNT + 2  # the fabric refused an injection (none names no node)
    COUNT   = CheckerErrors.COUNT + 3


class SelfTest(wiring.Component):
    """An ``n``-node :class:`~ihcube.rtl.Fabric` under on-chip random traffic, checked.

    Rounds of ``run_cycles`` cycles of traffic, each followed by a *drain*: the generators
    stop, and every message injected so far must be delivered. The count is global: a unicast
    owes one delivery and a broadcast ``n - 1``, so ``in_flight`` adds those when a message is
    injected and subtracts one per delivery. A drain ends when every generator is idle and
    ``in_flight`` is 0; if that takes more than ``drain_cycles`` cycles the round fails with
    ``LOST`` (a message dropped, or the fabric stuck), and ``in_flight`` below 0 at any time
    is ``EXCESS``.

    Together with the checkers (each delivery is for its node, intact, and after the last one
    from its source, so no message is delivered twice to a node) the count makes the check
    exactly-once: with no duplicates, as many deliveries as owed means none is missing.
    Things it cannot tell: a lost message and a phantom one in the same round (but a phantom
    has to carry a valid check and an unseen sequence number); hash collisions of the
    checksum; and order gaps of ``2**15`` or more messages from one source between two
    deliveries to the same node (with uniform destinations the chance is negligible).

    Parameters
    ----------
    spec : FabricSpec
        The fabric, packet switching with one PE port (or its keyword form, as
        :class:`~ihcube.rtl.Fabric` takes it: ``SelfTest(5, 32, link_stages=1)``).
    router : callable
        As for :class:`~ihcube.rtl.Fabric`; the tests pass broken variants.
    run_cycles, drain_cycles : int
        Length of a round's traffic and the most a drain may take.
    rate, broadcast_share, ready_rate : int
        As for :class:`TrafficGenerator` and :class:`Checker`.

    Members
    -------
    passed : ``Out(1)``
        At least one round is complete and nothing is wrong.
    failed : ``Out(1)``
        Something is wrong (sticky).
    errors : ``Out(SelfTestErrors.COUNT)``
        What is wrong, by :class:`SelfTestErrors` position (sticky).
    rounds : ``Out(16)``
        Rounds completed (drains that ended, in time or not).
    sent : ``Out(COUNT_WIDTH)``
        Messages injected, broadcasts counted once.
    delivered : ``Out(COUNT_WIDTH)``
        Deliveries to PEs.
    broadcasts : ``Out(COUNT_WIDTH)``
        Broadcasts injected.
    draining : ``Out(1)``
        The generators are stopped.
    round_done : ``Out(1)``
        A drain ended this cycle.
    """

    def __init__(self, spec, *args, router=Router, run_cycles=4096, drain_cycles=4096, rate=8,
                 broadcast_share=1, ready_rate=12, **keywords):
        spec = self._spec = check_selftest_spec(as_spec(spec, *args, **keywords))
        n = self._n = spec.nodes
        payload_width = spec.payload_width
        self.fabric = Fabric(spec, router=router)
        self.generators = [TrafficGenerator(n, node, payload_width, rate, broadcast_share)
                           for node in range(n)]
        self.checkers = [Checker(n, node, payload_width, ready_rate) for node in range(n)]
        self._run_cycles = run_cycles
        self._drain_cycles = drain_cycles
        super().__init__({
            "passed":     Out(1),
            "failed":     Out(1),
            "errors":     Out(SelfTestErrors.COUNT),
            "rounds":     Out(16),
            "sent":       Out(COUNT_WIDTH),
            "delivered":  Out(COUNT_WIDTH),
            "broadcasts": Out(COUNT_WIDTH),
            "draining":   Out(1),
            "round_done": Out(1),
        })

    n = property(lambda self: self._n)
    spec = property(lambda self: self._spec)

    def elaborate(self, platform):
        m = Module()
        n = self._n
        fabric = m.submodules.fabric = self.fabric
        # One LFSR per LFSR_SHARERS nodes, each node at its own phase (traffic.phase_shift).
        lfsrs = [Signal(32, init=seed_of(group), name=f"lfsr{group}")
                 for group in range((n + LFSR_SHARERS - 1) // LFSR_SHARERS)]
        m.d.sync += [lfsr.eq(lfsr_step(lfsr)) for lfsr in lfsrs]
        for node, (generator, checker) in enumerate(zip(self.generators, self.checkers)):
            m.submodules[f"generator{node}"] = generator
            m.d.comb += generator.lfsr.eq(lfsrs[node // LFSR_SHARERS])
            m.submodules[f"checker{node}"] = checker
            wiring.connect(m, generator.inject, fabric.inject[node])
            wiring.connect(m, fabric.eject[node], checker.eject)
            m.d.comb += [
                generator.enable.eq(~self.draining),
                checker.chance.eq(generator.chance),
            ]

        injected = [port.valid & port.ready for port in fabric.inject]
        unicasts = sum(fire & (port.payload.kind == Kind.UNICAST)
                       for fire, port in zip(injected, fabric.inject))
        broadcasts = sum(fire & (port.payload.kind == Kind.BROADCAST)
                         for fire, port in zip(injected, fabric.inject))
        deliveries = sum(checker.received for checker in self.checkers)

        # The cycle's change first, then one wide addition (not three: on the iCE40 each is a
        # carry chain of the counter's width).
        change = Signal(range(-n, n * (n - 1) + 1))
        m.d.comb += change.eq(unicasts + broadcasts * (n - 1) - deliveries)
        in_flight = Signal(range(-(1 << COUNT_WIDTH), 1 << COUNT_WIDTH))
        m.d.sync += [
            in_flight.eq(in_flight + change),
            self.sent.eq(self.sent + unicasts + broadcasts),
            self.broadcasts.eq(self.broadcasts + broadcasts),
            self.delivered.eq(self.delivered + deliveries),
        ]

        errors = Signal(SelfTestErrors.COUNT)
        checker_errors = 0
        for checker in self.checkers:
            checker_errors = checker_errors | checker.errors
        with m.If(in_flight < 0):
            m.d.sync += errors[SelfTestErrors.EXCESS].eq(1)
        with m.If(Cat(*fabric.refused).any()):
            m.d.sync += errors[SelfTestErrors.REFUSED].eq(1)

        ended_one = Signal()  # a round has ended (rounds alone wraps around)
        timer = Signal(range(max(self._run_cycles, self._drain_cycles) + 1))
        idle = Cat(*(generator.idle for generator in self.generators)).all()
        with m.FSM():
            with m.State("RUN"):
                m.d.sync += timer.eq(timer + 1)
                with m.If(timer == self._run_cycles - 1):
                    m.d.sync += [timer.eq(0), self.draining.eq(1)]
                    m.next = "DRAIN"
            with m.State("DRAIN"):
                m.d.sync += timer.eq(timer + 1)
                empty = idle & (in_flight == 0)
                with m.If(empty | (timer == self._drain_cycles - 1)):
                    with m.If(~empty):
                        m.d.sync += errors[SelfTestErrors.LOST].eq(1)
                    m.d.sync += [
                        timer.eq(0),
                        self.draining.eq(0),
                        self.rounds.eq(self.rounds + 1),
                        ended_one.eq(1),
                    ]
                    m.d.comb += self.round_done.eq(1)
                    m.next = "RUN"

        all_errors = errors | checker_errors
        m.d.comb += [
            self.errors.eq(all_errors),
            self.failed.eq(all_errors.any()),
            self.passed.eq(ended_one & ~all_errors.any()),
        ]
        return m
