"""The emitted fabric Verilog in Icarus Verilog, driven by cocotb and checked as the
Amaranth-simulator tests check the fabric (``tests/test_router.py``, ``tests/test_fabric.py``).

:class:`VerilogFabric` does for the Verilog top ``ihcube_n<N>_w<W>`` what
:class:`ihcube.verify.harness.FabricHarness` does in the Amaranth simulator: a queue per PE,
random eject backpressure, and a monitor on every link (the ``links_out__<j>__*`` ports of
the ``router<k>`` instances inside the top). It records the same
:class:`~ihcube.verify.harness.Hop` and :class:`~ihcube.verify.harness.Delivery` records, so
:func:`ihcube.verify.scoreboard.check_run` judges them; nothing here restates a routing rule.
Message fields are packed and unpacked at the offsets of
:func:`~ihcube.rtl.message.inject_layout` and :func:`~ihcube.rtl.message.message_layout`.

The fabric's parameters come from the environment that :mod:`ihcube.verify.cocotb_runner` sets
(:class:`ihcube.verify.cocotb_runner.Settings`).
"""

import dataclasses
import random
from collections import deque

import cocotb
import pytest
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge

from ihcube import topology
from ihcube.cocotb import Scoreboard
from ihcube.cocotb.native import Codec
from ihcube.verify.cocotb_runner import Settings
from ihcube.rtl.configuration import configuration_layout
from ihcube.rtl.message import Kind, inject_layout, message_layout
from ihcube.verify.harness import Delivery, Hop, Message, Request
from ihcube.verify.scoreboard import check_run
from ihcube.spec import FabricSpec

CLOCK_PERIOD_NS = 10


class VerilogFabric:
    """Traffic source, eject backpressure and link monitors around the Verilog fabric.

    Parameters
    ----------
    dut : cocotb handle
        The top module ``ihcube_n<N>_w<W>``.
    settings : :class:`ihcube.verify.cocotb_runner.Settings`
        The parameters the Verilog was generated with.
    eject_ready : float or list of float
        Probability that a PE accepts a delivery in a given cycle (1.0: always), for all PEs or
        one per PE.
    seed : int
        Seed of the backpressure pattern.

    Attributes
    ----------
    injected : list of (cycle, node, Request)
        Requests taken by the fabric, refused ones included.
    hops : list of :class:`~ihcube.verify.harness.Hop`
    deliveries : list of :class:`~ihcube.verify.harness.Delivery`
    cycle : int
        Cycles since reset.
    """

    def __init__(self, dut, settings, eject_ready=1.0, seed=0):
        n = self.n = settings.nodes
        self.order = settings.order
        self.reconfigurable = settings.reconfigurable
        self.eject_ready = (list(eject_ready) if isinstance(eject_ready, (list, tuple))
                            else [eject_ready] * n)
        self._dut = dut
        self._random = random.Random(seed)
        self._inject_codec = Codec(inject_layout(n, settings.width))
        self._message_codec = Codec(message_layout(n, settings.width))

        def stream(scope, prefix):
            return tuple(getattr(scope, f"{prefix}__{member}")
                         for member in ("valid", "ready", "payload"))

        self._inject = [stream(dut, f"inject__{k}") for k in range(n)]
        self._eject = [stream(dut, f"eject__{k}") for k in range(n)]
        # Port links_out__j of router k is its j-th existing link, in increasing dimension.
        self._links = [(node, dim, *stream(getattr(dut, f"router{node}"), f"links_out__{j}"))
                       for node in range(n)
                       for j, dim in enumerate(topology.links(n, node))]
        self._refused = [getattr(dut, f"refused__{k}") for k in range(n)]
        self._refused_count = [getattr(dut, f"refused_count__{k}") for k in range(n)]

        self._queues = [deque() for _ in range(n)]
        self._presented = [None] * n   # the request each inject port shows
        self._valid = [None] * n       # what each inject valid was last driven to
        self._ready = [None] * n       # what each eject ready was last driven to
        self.injected = []
        self.hops = []
        self.deliveries = []
        self.cycle = 0

    async def reset(self, cycles=2):
        """Start the clock and hold ``rst`` for ``cycles`` cycles, PEs idle."""
        Clock(self._dut.clk, CLOCK_PERIOD_NS, unit="ns").start()
        self._dut.rst.value = 1
        if self.reconfigurable:
            self._dut.config__valid.value = 0
        for node in range(self.n):
            self._drive_valid(node, False)
            self._drive_ready(node, False)
        for _ in range(cycles):
            await RisingEdge(self._dut.clk)
        self._dut.rst.value = 0

    async def fault_reset(self):
        """A fail-stop fault's reset in the middle of a run (call it right after a rising
        edge): every PE stops offering and its queue is emptied, and ``rst`` is held for one
        cycle."""
        for node, queue in enumerate(self._queues):
            queue.clear()
            self._drive_valid(node, False)
            self._drive_ready(node, False)
        self._dut.rst.value = 1
        await RisingEdge(self._dut.clk)
        self._dut.rst.value = 0
        self.cycle += 1

    def send(self, node, request):
        """Queue ``request`` at the PE of ``node``; the PE offers its queue in order, each
        request from its cycle ``at`` (counted from reset) on."""
        self._queues[node].append(request)

    def deliveries_expected(self, requests):
        """How many deliveries ``(node, Request)`` pairs make: one per unicast to a node that
        exists, ``n - 1`` per broadcast."""
        return sum(self.n - 1 if request.kind == Kind.BROADCAST else int(request.dest < self.n)
                   for _, request in requests)

    def _drive_valid(self, node, value):
        if self._valid[node] != value:
            self._inject[node][0].value = int(value)
            self._valid[node] = value

    def _drive_ready(self, node, value):
        if self._ready[node] != value:
            self._eject[node][1].value = int(value)
            self._ready[node] = value

    async def run(self, max_cycles, expected_deliveries=None, idle_cycles=16):
        """Run until ``expected_deliveries`` more messages arrived (or, without it, all queues
        are empty) and ``idle_cycles`` cycles passed with nothing moving; or until
        ``max_cycles`` cycles ran. Return whether it finished before ``max_cycles``.

        Call it, and return from it, right after a rising clock edge.
        """
        clk = self._dut.clk
        target = None if expected_deliveries is None else len(self.deliveries) + expected_deliveries
        quiet = 0
        for _ in range(max_cycles):
            cycle = self.cycle
            # Drive this cycle's inputs right after the edge ...
            offered = []
            for node, queue in enumerate(self._queues):
                offer = bool(queue) and queue[0].at <= cycle
                if offer:
                    request = queue[0]
                    if self._presented[node] is not request:
                        self._inject[node][2].value = self._inject_codec.pack(
                            dest=request.dest, kind=request.kind.value, payload=request.payload)
                        self._presented[node] = request
                    offered.append(node)
                self._drive_valid(node, offer)
                self._drive_ready(node, self.eject_ready[node] >= 1.0
                                  or self._random.random() < self.eject_ready[node])

            # ... and see, once they have settled, which handshakes the next edge completes.
            await ReadOnly()
            moved = False
            for node in offered:
                if self._inject[node][1].value:
                    self.injected.append((cycle, node, self._queues[node].popleft()))
                    moved = True
            for node, (valid, _, payload) in enumerate(self._eject):
                if self._ready[node] and valid.value:
                    self.deliveries.append(Delivery(cycle, node, self._message(payload)))
                    moved = True
            for node, dim, valid, ready, payload in self._links:
                if valid.value and ready.value:
                    self.hops.append(Hop(cycle, node, dim, self._message(payload)))
                    moved = True

            await RisingEdge(clk)
            self.cycle += 1
            done = (len(self.deliveries) >= target if target is not None
                    else not any(self._queues))
            quiet = quiet + 1 if done and not moved else 0
            if done and quiet >= idle_cycles:
                return True
        return False

    def _message(self, handle):
        fields = self._message_codec.unpack(int(handle.value))
        fields["kind"] = Kind(fields["kind"])
        return Message(**fields)

    async def refusals(self):
        """Each node's ``refused`` flag and ``refused_count``, as of this cycle."""
        await ReadOnly()
        flags = [bool(int(flag.value)) for flag in self._refused]
        counts = [int(count.value) for count in self._refused_count]
        await RisingEdge(self._dut.clk)
        self.cycle += 1
        return flags, counts

    def problems(self):
        """What :func:`ihcube.verify.scoreboard.check_run` finds wrong with the record (hops
        included), and what the users' :class:`ihcube.cocotb.Scoreboard` finds wrong at the
        PE ports alone."""
        board = Scoreboard(FabricSpec(self.n, order=self.order))
        for _, node, request in self.injected:
            board.sent(node, request.dest, request.payload, request.kind == Kind.BROADCAST)
        for delivery in self.deliveries:
            message = delivery.message
            board.received(delivery.node, message.src, message.dest, message.payload,
                           message.kind == Kind.BROADCAST)
        return (check_run(self.n, self.injected, self.hops, self.deliveries, self.order)
                + board.problems())

    def status(self):
        """One line on how far the run got, for failure messages."""
        waiting = sum(len(queue) for queue in self._queues)
        return (f"after {self.cycle} cycles: {len(self.injected)} injected, {waiting} still "
                f"queued, {len(self.deliveries)} delivered, {len(self.hops)} link transfers")


def _fail_if(problems, what):
    assert not problems, f"{what}:\n" + "\n".join(str(problem) for problem in problems)


def _bad_destinations(n, requests):
    bad = [0] * n
    for src, request in requests:
        if request.kind == Kind.UNICAST and request.dest >= n:
            bad[src] += 1
    return bad


def random_traffic(n, count, rng, broadcast_share=0.1, bad_share=0.0, spread=0):
    """``count`` requests from random PEs: unicasts to random nodes, some broadcasts and, where
    the address width allows, some destinations that do not exist. Each is offered from a
    random cycle below ``spread`` (0: all at once); every PE's queue is in that order."""
    addresses = 1 << topology.address_bits(n)
    requests = []
    for payload in range(count):
        src = rng.randrange(n)
        at = rng.randrange(spread) if spread else 0
        roll = rng.random()
        if roll < broadcast_share:
            request = Request(payload=payload, kind=Kind.BROADCAST, at=at)
        elif roll < broadcast_share + bad_share and addresses > n:
            request = Request(payload=payload, dest=rng.randrange(n, addresses), at=at)
        else:
            request = Request(payload=payload, dest=rng.randrange(n), at=at)
        requests.append((src, request))
    requests.sort(key=lambda pair: pair[1].at)
    return requests


async def _run(bench, requests, max_cycles, idle_cycles=32):
    """Send ``requests`` and run until they are delivered; return a complaint if the fabric
    did not finish within ``max_cycles`` cycles (checked after the scoreboard, which says
    more about what went wrong), else None."""
    for node, request in requests:
        bench.send(node, request)
    if not await bench.run(max_cycles, bench.deliveries_expected(requests), idle_cycles):
        return f"the fabric did not finish within {max_cycles} cycles, {bench.status()}"
    return None


@cocotb.test()
async def route_selection(dut):
    """Every router's first step for every destination address, at zero load: a message from
    ``a`` leaves on the Algorithm 2 link (``topology.route_step``) one cycle after it was
    taken (two with a link stage: the relay holds it a cycle), or reaches ``a``'s PE one
    cycle after when ``dest == a``; ``dest >= n`` is refused."""
    settings = Settings.from_env()
    n = settings.nodes
    bench = VerilogFabric(dut, settings)
    await bench.reset()
    # Round k: every node a sends to a XOR k at once. Destinations form a permutation, and
    # each round drains before the next, so every first step is taken at zero load.
    requests, unfinished = [], []
    for k in range(1 << topology.address_bits(n)):
        batch = [(a, Request(payload=k * n + a, dest=a ^ k, at=bench.cycle)) for a in range(n)]
        requests += batch
        unfinished.append(await _run(bench, batch, max_cycles=100 + 10 * n, idle_cycles=4))

    # The payload names the source (k * n + a), whatever the message's own fields say.
    first_hop = {}
    for hop in bench.hops:  # in cycle order
        if hop.node == hop.message.payload % n and hop.message.payload not in first_hop:
            first_hop[hop.message.payload] = hop
    at_own_pe = {delivery.message.payload: delivery for delivery in bench.deliveries
                 if delivery.node == delivery.message.payload % n}
    # Cycles from the injection to the first step: onto a link (True), or to the own PE.
    first_step = {True: 1 + settings.link_stages + settings.switch_stages,
                  False: settings.stages.zero_load_cycles(0)}
    mismatches, late = [], []
    for cycle, a, request in bench.injected:
        if request.dest >= n:
            expected = []
        else:
            step = topology.route_step(n, a, request.dest, settings.order)
            expected = ["pe" if step is None else step]
        seen, when = [], []
        if request.payload in first_hop:
            seen.append(first_hop[request.payload].dim)
            when.append(first_hop[request.payload].cycle)
        if request.payload in at_own_pe:
            seen.append("pe")
            when.append(at_own_pe[request.payload].cycle)
        if seen != expected:
            mismatches.append((a, request.dest, expected, seen))
        elif when and when != [cycle + first_step[seen != ["pe"]]]:
            late.append((a, request.dest, cycle, when))
    _fail_if(mismatches, "(node, dest, expected first step, seen) where a router chose wrong")
    _fail_if(late, f"(node, dest, taken, left) where a first step was not "
                   f"{first_step[True]} cycles after the injection onto a link, or "
                   f"{first_step[False]} to the PE")
    _fail_if(bench.problems(), "the scoreboard found problems")
    _fail_if([complaint for complaint in unfinished if complaint], "unfinished rounds")
    assert len(bench.injected) == len(requests)
    flags, counts = await bench.refusals()
    bad = _bad_destinations(n, requests)
    assert counts == bad, f"refused_count {counts}, expected {bad}"
    assert flags == [count > 0 for count in bad], f"refused {flags}, expected {bad}"


@cocotb.test()
async def all_pairs_unicast(dut):
    """Every (src, dest) message arrives once, at dest, with its src and payload, along the
    Algorithm 2 path (``topology.path``, popcount(src XOR dest) hops)."""
    settings = Settings.from_env()
    n = settings.nodes
    bench = VerilogFabric(dut, settings)
    await bench.reset()
    requests = [(src, Request(payload=src * n + dest, dest=dest))
                for src in range(n) for dest in range(n)]
    unfinished = await _run(bench, requests, max_cycles=200 + 50 * n)
    _fail_if(bench.problems(), "the scoreboard found problems")
    assert not unfinished, unfinished
    assert len(bench.deliveries) == n * n
    assert len(bench.hops) == sum(len(topology.path(n, s, d, settings.order)) - 1
                                  for s in range(n) for d in range(n))
    flags, counts = await bench.refusals()
    assert not any(flags) and not any(counts), f"refused with no bad destination: {counts}"


@cocotb.test()
async def broadcast_from_every_source(dut):
    """Broadcasts from all nodes at once: every other node gets exactly one copy of each, the
    origin none, each copy travels the unicast path, and the travel vectors on the links are
    Algorithm 6's (``topology.broadcast_tree``)."""
    settings = Settings.from_env()
    n = settings.nodes
    bench = VerilogFabric(dut, settings)
    await bench.reset()
    requests = [(src, Request(payload=src, kind=Kind.BROADCAST)) for src in range(n)]
    unfinished = await _run(bench, requests, max_cycles=200 + 50 * n)
    _fail_if(bench.problems(), "the scoreboard found problems")
    assert not unfinished, unfinished
    assert len(bench.deliveries) == n * (n - 1)
    assert len(bench.hops) == n * (n - 1)
    wrong = []
    for src in range(n):
        seen = sorted((hop.node, hop.far, hop.message.travel)
                      for hop in bench.hops if hop.message.payload == src)
        if seen != sorted(topology.broadcast_tree(n, src, settings.order)):
            wrong.append((src, seen))
    _fail_if(wrong, "(origin, link messages) whose travel vectors are not Algorithm 6's")


@cocotb.test()
async def random_stress(dut):
    """Random unicasts and broadcasts offered in bursts, PEs that accept at random, some
    rarely: nothing is lost, duplicated, altered or sent off its path."""
    settings = Settings.from_env()
    n = settings.nodes
    rng = random.Random(settings.seed)
    eject_ready = [rng.choice((0.2, 0.5, 1.0)) for _ in range(n)]
    bench = VerilogFabric(dut, settings, eject_ready=eject_ready, seed=settings.seed + 1)
    await bench.reset()
    count = settings.stress
    requests = random_traffic(n, count, rng, broadcast_share=0.1, spread=max(1, 2 * count // n))
    deliveries = bench.deliveries_expected(requests)
    unfinished = await _run(bench, requests, max_cycles=500 + 10 * deliveries)
    _fail_if(bench.problems(), "the scoreboard found problems")
    assert not unfinished, unfinished
    assert len(bench.injected) == len(requests)
    dut._log.info("random stress: %d requests, %d deliveries, %d link transfers in %d cycles",
                  len(requests), len(bench.deliveries), len(bench.hops), bench.cycle)


@cocotb.test()
async def bad_destination_refused(dut):
    """Injections to nodes that do not exist are taken, dropped and counted at their PE while
    other traffic flows; the rest is delivered. (When ``n`` is a power of two every address
    names a node, and nothing may be refused.)"""
    settings = Settings.from_env()
    n = settings.nodes
    rng = random.Random(settings.seed + 2)
    bench = VerilogFabric(dut, settings)
    await bench.reset()
    requests = random_traffic(n, 10 * n, rng, broadcast_share=0.1, bad_share=0.3)
    addresses = 1 << topology.address_bits(n)
    if addresses > n:  # and at least one from every PE
        requests += [(src, Request(payload=len(requests) + src, dest=n + src % (addresses - n)))
                     for src in range(n)]
    bad = _bad_destinations(n, requests)
    unfinished = await _run(bench, requests, max_cycles=500 + 50 * n)
    _fail_if(bench.problems(), "the scoreboard found problems")
    assert not unfinished, unfinished
    assert len(bench.injected) == len(requests)
    flags, counts = await bench.refusals()
    assert counts == bad, f"refused_count {counts}, expected {bad}"
    assert flags == [count > 0 for count in bad], f"refused {flags}, expected {bad}"


@cocotb.test()
async def zero_load_latency(dut):
    """Alone in the fabric, a message taken in cycle t is delivered in cycle t + hops + 1, or
    t + 2 hops + 1 with a link stage (a relay) on every link, t + 3 hops + 3 with every
    stage (:meth:`ihcube.spec.Stages.zero_load_cycles`)."""
    settings = Settings.from_env()
    n = settings.nodes
    bench = VerilogFabric(dut, settings)
    await bench.reset()
    # Longer than any delivery takes at zero load.
    gap = settings.stages.zero_load_cycles(topology.dimensions(n)) + 3
    start = bench.cycle
    requests = [(src, Request(payload=src, dest=n - 1 - src, at=start + gap * src))
                for src in range(n)]
    unfinished = await _run(bench, requests, max_cycles=100 + gap * n, idle_cycles=4)
    _fail_if(bench.problems(), "the scoreboard found problems")
    assert not unfinished, unfinished
    taken = {request.payload: cycle for cycle, _, request in bench.injected}
    wrong = []
    for delivery in bench.deliveries:
        message = delivery.message
        hops = len(topology.path(n, message.src, message.dest, settings.order)) - 1
        if delivery.cycle - taken[message.payload] != settings.stages.zero_load_cycles(hops):
            wrong.append((message.src, message.dest, taken[message.payload], delivery.cycle))
    more = settings.stages.zero_load_cycles(0)
    per_hop = settings.stages.zero_load_cycles(1) - more
    _fail_if(wrong, f"(src, dest, taken, delivered) not delivered "
                    f"{f'{per_hop} ' if per_hop != 1 else ''}hops + {more} cycles after")


def _check_logical(fabric, marks, active, mask, order, what):
    """Fail unless what ``fabric`` recorded since ``marks`` (its injected, hops and deliveries
    counts then), moved to logical addresses (router XOR ``mask``), passes the scoreboard of
    an ``active``-node fabric."""
    injected = [(cycle, node ^ mask, request)
                for cycle, node, request in fabric.injected[marks[0]:]]
    hops = [dataclasses.replace(hop, node=hop.node ^ mask) for hop in fabric.hops[marks[1]:]]
    deliveries = [dataclasses.replace(delivery, node=delivery.node ^ mask)
                  for delivery in fabric.deliveries[marks[2]:]]
    _fail_if(check_run(active, injected, hops, deliveries, order), what)


def _skip_unless_reconfigurable(settings):
    """End a test that takes a reconfigurable fabric as ``skipped`` on a fixed one (cocotb
    records ``pytest.skip`` so; a ``skipif`` would not hold, since the runner names its tests
    and cocotb runs a named test even if marked skipped)."""
    if not settings.reconfigurable:
        pytest.skip("takes a reconfigurable fabric (--reconfigurable)")


async def _load(dut, fabric, configuration):
    """Offer ``configuration`` on the ``config`` port for a cycle (call it right after a
    rising edge); return whether it was taken."""
    n = fabric.n
    dut.config__payload.value = Codec(configuration_layout(n)).pack(
        active_nodes=configuration[0], mask=configuration[1])
    dut.config__valid.value = 1
    await ReadOnly()
    taken = int(dut.config__ready.value)
    await RisingEdge(dut.clk)
    dut.config__valid.value = 0
    fabric.cycle += 1
    return taken


@cocotb.test()
async def fault(dut):
    """A fail-stop fault on a reconfigurable fabric (``docs/reconfiguration-hardware.md``,
    Faults; skipped on a fixed fabric): traffic on every router, then in the middle of
    it the PEs stop, ``rst`` for a cycle, the configuration ``ihcube reconfigure`` gives for
    the failed router (one whose failure moves the logical addresses) offered in the first
    cycle after the reset (it must be taken), and traffic on the survivors. The loss rule at
    the PE ports: a message taken before the reset is delivered at most once to each node it
    is owed, before the reset, and nowhere else; every message taken after it passes the
    scoreboard over the active nodes."""
    from ihcube.reconfigure import best_configuration

    settings = Settings.from_env()
    _skip_unless_reconfigurable(settings)
    n = settings.nodes
    fabric = VerilogFabric(dut, settings, eject_ready=0.7, seed=settings.seed)
    await fabric.reset()
    rng = random.Random(settings.seed)
    before = random_traffic(n, 8 * n, rng, spread=2 * n)
    for src, request in before:
        fabric.send(src, request)
    await fabric.run(3 * n)  # stops with messages in flight
    reset_at = fabric.cycle
    marks = len(fabric.injected), len(fabric.hops), len(fabric.deliveries)
    owed = set()
    for _, node, request in fabric.injected:
        if request.kind == Kind.BROADCAST:
            owed |= {(request.payload, x) for x in range(n) if x != node}
        elif request.dest < n:
            owed.add((request.payload, request.dest))
    got = [(delivery.message.payload, delivery.node) for delivery in fabric.deliveries]
    assert owed, "no message was taken before the fault"
    _fail_if([f"{pair} delivered twice" for pair in set(got) if got.count(pair) > 1]
             + [f"{pair} delivered where it is not owed" for pair in set(got) - owed],
             "the messages taken before the fault")

    await fabric.fault_reset()
    # A router whose failure moves the logical addresses (a mask other than 0), if any.
    moving = [q for q in range(n) if best_configuration(n, [q]).mask]
    failed = rng.choice(moving or range(n))
    best = best_configuration(n, [failed])
    active, mask = best.active_nodes, best.mask
    assert await _load(dut, fabric, (active, mask)), \
        f"configuration {(active, mask)} not taken in the first cycle after the reset"
    await ReadOnly()
    addresses = [int(getattr(dut, f"logical_address__{k}").value) for k in range(n)]
    assert addresses == [k ^ mask for k in range(n)], addresses
    assert failed ^ mask >= active, f"router {failed} failed but is active"
    await RisingEdge(dut.clk)
    fabric.cycle += 1

    after = random_traffic(active, 8 * active, rng, spread=4 * active)
    expected = 0
    for src, request in after:
        fabric.send(src ^ mask, dataclasses.replace(request, at=request.at + fabric.cycle,
                                                    payload=request.payload + 1000))
        expected += active - 1 if request.kind == Kind.BROADCAST else int(request.dest < active)
    finished = await fabric.run(400 * active, expected_deliveries=expected)
    assert finished, f"after the fault: {fabric.status()}"
    late = [delivery for delivery in fabric.deliveries[marks[2]:]
            if delivery.message.payload < 1000]
    _fail_if([f"{delivery} after the reset at cycle {reset_at}" for delivery in late],
             "the messages taken before the fault")
    _check_logical(fabric, marks, active, mask, settings.order,
                   f"{active} active nodes under mask {mask}, after the fault of router {failed}")


@cocotb.test()
async def reconfiguration(dut):
    """A reconfigurable fabric's procedure (``docs/reconfiguration-hardware.md``; skipped on
    a fixed fabric): traffic on the configuration after reset; then, injection
    stopped, wait for ``idle``, load a smaller configuration under a mask, resume; again for
    all nodes under another mask. Each load is taken at once, every router's
    ``logical_address`` is its node XOR the mask, and each phase's messages, in logical
    addresses, pass the scoreboard over the active nodes."""
    settings = Settings.from_env()
    _skip_unless_reconfigurable(settings)
    n, A = settings.nodes, topology.address_bits(settings.nodes)
    fabric = VerilogFabric(dut, settings, eject_ready=0.7, seed=settings.seed)
    await fabric.reset()
    rng = random.Random(settings.seed)
    fits = [(active, mask) for active in range(n, 0, -1) for mask in range(1 << A)
            if topology.configuration_fits(n, active, mask)]
    shrink = next(c for c in fits if c[0] < n and c[1])
    grow = max(c for c in fits if c[0] == n)
    active, mask = n, 0
    for configuration in (None, shrink, grow):
        if configuration is not None:
            while True:  # injection has stopped: wait for the fabric to drain
                await ReadOnly()
                idle = int(dut.idle.value)
                await RisingEdge(dut.clk)
                fabric.cycle += 1
                if idle:
                    break
            taken = await _load(dut, fabric, configuration)
            assert taken, f"configuration {configuration} not taken while idle"
            await ReadOnly()
            assert not int(dut.config_refused.value)
            addresses = [int(getattr(dut, f"logical_address__{k}").value) for k in range(n)]
            assert addresses == [k ^ configuration[1] for k in range(n)], addresses
            await RisingEdge(dut.clk)
            fabric.cycle += 1
            active, mask = configuration
        marks = len(fabric.injected), len(fabric.hops), len(fabric.deliveries)
        requests = random_traffic(active, 8 * active, rng, bad_share=0.1, spread=4 * active)
        owed = 0
        for src, request in requests:
            fabric.send(src ^ mask, dataclasses.replace(request, at=request.at + fabric.cycle,
                                                        payload=request.payload + 1000 * n
                                                        * (mask + 1) * active))
            owed += (active - 1 if request.kind == Kind.BROADCAST
                     else int(request.dest < active))
        finished = await fabric.run(400 * active, expected_deliveries=owed)
        assert finished, f"{configuration}: {fabric.status()}"
        _check_logical(fabric, marks, active, mask, settings.order,
                       f"{active} active nodes under mask {mask}")
