"""The fast model (:mod:`ihcube.sim.model`) against the RTL and against the topology rules.

The lockstep tests run the emitted Verilog of a fabric in Icarus
(:func:`ihcube.verify.replay.replay`) and a :class:`~ihcube.sim.model.Model` on the same
traffic (unicasts, broadcasts, destinations that do not exist) and the same eject
backpressure, both drawn up front, and compare every cycle's injection handshakes, link
transfers and deliveries, message fields included; the first difference fails the test with
its cycle and port. Broken variants of the model must fail the same comparison.
:func:`test_replay_is_the_amaranth_simulation` shows, on small fabrics of each kind, that the
Verilog in Icarus records exactly what Amaranth's simulation of the design records (so the
lockstep holds for both).

``make check`` runs the lockstep for ``n <= 8`` only; the larger sizes are marked slow (Icarus
takes about 10 ms a cycle at ``n = 26``, Amaranth's simulator 25). Each RTL simulation runs
once a run (:func:`tiers.shared`), whichever tests and workers compare with it."""

import dataclasses
import random

import numpy as np
import pytest
from amaranth.hdl import Cat

from ihcube import topology
from ihcube.rtl import Fabric, Kind, Router, message_layout
from ihcube.verify import faults
from ihcube.verify.harness import Delivery, Hop, Message, Request, simulate
from ihcube.sim import model_kernel
from ihcube.sim.model import DELIVERY, HOP, Model
from ihcube.verify.replay import replay
from ihcube.verify.scoreboard import check_run
from ihcube.spec import FabricSpec
from tiers import shared, slow_unless

#: Cycles of each lockstep run (the issue asks for at least 2,000).
CYCLES = 2000

#: The lockstep configurations: every size from 1 to 16, and 26 and 32, with the buffer
#: depths, routing orders and payload widths spread over them.
LOCKSTEP = [
    # n, depth, order, payload_width
    (1, 1, "msb", 32), (2, 2, "lsb", 32), (3, 1, "msb", 7), (4, 2, "msb", 32),
    (5, 1, "lsb", 32), (6, 3, "msb", 32), (7, 1, "msb", 64), (8, 2, "lsb", 32),
    (9, 1, "msb", 32), (10, 2, "msb", 1), (11, 1, "lsb", 32), (12, 1, "msb", 32),
    (13, 2, "msb", 32), (14, 1, "lsb", 16), (15, 3, "msb", 32), (16, 1, "msb", 32),
    (26, 1, "msb", 32), (32, 2, "lsb", 32),
]


def small(config):
    """The lockstep configurations of ``make check``: up to 5 nodes."""
    return config[0] <= 5


def two_ports(config):
    """The lockstep configurations with PE ports of ``make check``: up to 5 nodes, 2 ports."""
    return small(config) and config[4] <= 2

#: The configuration that the broken model variants are compared on.
CONTROL = (6, 3, "msb", 32)


# Traffic and backpressure, drawn up front and fed to both.

def lockstep_traffic(n, payload_width, cycles, seed, ports=1):
    """Return ``(requests, eject_ready)``: ``(node, Request)`` pairs in queue order, and an
    ``(cycles, n * ports)`` eject-ready pattern of 0s and 1s (column ``a * ports + p``: eject
    port ``p`` of node ``a``). With ``ports > 1`` each request names a random port.

    The offered load comes in phases: a burst from the first cycle (when the buffers are not
    ready yet), a pause, light, saturating and medium load. About one request in twelve is a
    broadcast, and one unicast in ten names a node that does not exist
    where the address width allows. Each PE accepts with its own probability, and every so
    often a third of them stall for 50 cycles.
    """
    rng = random.Random(seed)
    addresses = 1 << topology.address_bits(n)
    broadcast_share = 0.08 if n > 1 else 0.3
    phases = [(0.5, 8), (0.0, 40), (0.05, cycles // 4), (0.6, cycles // 4), (0.2, cycles // 4)]
    requests = []
    start = 0
    for rate, length in phases:
        for cycle in range(start, start + length):
            for node in range(n):
                if rng.random() >= rate:
                    continue
                payload = rng.getrandbits(payload_width)
                roll = rng.random()
                if roll < broadcast_share:
                    request = Request(payload=payload, dest=rng.randrange(addresses),
                                      kind=Kind.BROADCAST, at=cycle)
                elif roll < broadcast_share + 0.1 and addresses > n:
                    request = Request(payload=payload, dest=rng.randrange(n, addresses),
                                      at=cycle)
                else:
                    request = Request(payload=payload, dest=rng.randrange(n), at=cycle)
                if ports > 1:
                    request = dataclasses.replace(request, port=rng.randrange(ports))
                requests.append((node, request))
        start += length
    accept = [rng.choice([1.0, 0.9, 0.6, 0.3]) for _ in range(n * ports)]
    eject_ready = np.zeros((cycles, n * ports), np.uint8)
    for cycle in range(cycles):
        stall = (cycle // 50) % 7 == 3
        for port in range(n * ports):
            eject_ready[cycle, port] = (rng.random() < accept[port]
                                        and not (stall and port // ports % 3 == 0))
    return requests, eject_ready


# The RTL side: one Amaranth simulation that records every cycle.

def run_rtl(fabric, requests, eject_ready, configure=()):
    """Simulate ``fabric`` for ``len(eject_ready)`` cycles with PEs that offer their queues as
    :class:`~ihcube.verify.harness.FabricHarness` does and accept as ``eject_ready`` says;
    a reconfigurable fabric is offered configuration ``(active_nodes, mask)`` in ``cycle``
    for each ``(cycle, active_nodes, mask)`` of ``configure``.

    Returns the events, ``("inject", cycle, node, request)``, ``("deliver", cycle, node,
    dest, src, kind, travel, payload, port)`` and ``("hop", cycle, node, dim, dest, src, kind,
    travel, payload)``, and for each configuration ``("config", cycle, taken, refused,
    *logical_address)`` (after it), and each node's ``refused_count`` at the end.
    """
    configure = {cycle: (active, mask) for cycle, active, mask in configure}
    n, P = fabric.n, fabric.ports
    cycles = len(eject_ready)
    queues = [[] for _ in range(n * P)]  # one per node and injection port
    for index, (node, request) in enumerate(requests):
        queues[node * P + request.port].append((index, request))
    injects = [port for node in range(n) for port in fabric.injects(node)]
    ejects = [port for node in range(n) for port in fabric.ejects(node)]
    layout = message_layout(n, fabric.payload_width)
    fields = [(layout[name].offset, layout[name].width)
              for name in ("dest", "src", "kind", "travel", "payload")]
    inject_shape = injects[0].payload.shape()
    inject_width = inject_shape.size
    inject_bits = [inject_shape.const({"dest": request.dest, "kind": request.kind,
                                       "payload": request.payload}).as_value().value
                   for _, request in requests]
    links = [(node, dim, port) for node, router in enumerate(fabric.routers)
             for dim, port in zip(router.dims, router.links_out)]
    events = []
    refused_count = []

    def message(bits):
        return tuple(bits >> offset & ((1 << width) - 1) for offset, width in fields)

    async def testbench(ctx):
        # Every PE input of a cycle is set at once, so that the design settles once.
        stride = inject_width + 2
        drive = Cat(*(Cat(inject.valid, inject.payload.as_value(), eject.ready)
                      for inject, eject in zip(injects, ejects)))
        inject_ready = Cat(*(port.ready for port in injects))
        eject_valid = Cat(*(port.valid for port in ejects))
        link_valid = Cat(*(port.valid for _, _, port in links))
        link_ready = Cat(*(port.ready for _, _, port in links))
        head = [0] * (n * P)
        for cycle in range(cycles):
            value = 0
            offered = [False] * (n * P)
            for q in range(n * P):  # port q % P of node q // P
                queue = queues[q]
                bits = int(eject_ready[cycle, q]) << (inject_width + 1)
                if head[q] < len(queue) and queue[head[q]][1].at <= cycle:
                    offered[q] = True
                    bits |= 1 | inject_bits[queue[head[q]][0]] << 1
                value |= bits << (q * stride)
            ctx.set(drive, value)

            ready = ctx.get(inject_ready)
            for q in range(n * P):
                if offered[q] and ready >> q & 1:
                    events.append(("inject", cycle, q // P, queues[q][head[q]][0]))
                    head[q] += 1
            valid = ctx.get(eject_valid)
            for q in range(n * P):
                if valid >> q & 1 and eject_ready[cycle, q]:
                    bits = ctx.get(ejects[q].payload.as_value())
                    events.append(("deliver", cycle, q // P, *message(bits), q % P))
            moving = ctx.get(link_valid) & ctx.get(link_ready)
            while moving:
                k = (moving & -moving).bit_length() - 1
                moving &= moving - 1
                node, dim, port = links[k]
                events.append(("hop", cycle, node, dim,
                               *message(ctx.get(port.payload.as_value()))))
            if cycle in configure:
                active, mask = configure[cycle]
                ctx.set(fabric.config.payload, {"active_nodes": active, "mask": mask})
                ctx.set(fabric.config.valid, 1)
                taken = ctx.get(fabric.config.ready)
                await ctx.tick()
                ctx.set(fabric.config.valid, 0)
                events.append(("config", cycle, taken, ctx.get(fabric.config_refused),
                               *(ctx.get(address) for address in fabric.logical_address)))
                continue
            await ctx.tick()
        refused_count.extend(ctx.get(count) for count in fabric.refused_count)

    simulate(fabric, testbench)
    return events, refused_count


@shared
def rtl_record(n, depth, order, payload_width, ports=1, link_stages=0, router=Router,
               switch_stages=0, eject_stages=0):
    """The traffic of a lockstep configuration and what the emitted Verilog (with ``router``,
    a faulty one for the negative controls) did with it in Icarus
    (:func:`ihcube.verify.replay.replay`: one simulation per configuration, shared by the
    tests and workers that use it). :func:`test_replay_is_the_amaranth_simulation` shows that
    it records what Amaranth's simulation of the same design does."""
    requests, eject_ready = lockstep_traffic(n, payload_width, CYCLES, seed=n * 1000 + depth,
                                             ports=ports)
    spec = FabricSpec.of(n, payload_width=payload_width, depth=depth, order=order, ports=ports,
                         link_stages=link_stages, switch_stages=switch_stages,
                         eject_stages=eject_stages)
    events, refused_count = replay(spec, requests, eject_ready, router=router)
    return requests, eject_ready, events, refused_count


# The model side, and the comparison.

def model_events(model, requests, eject_ready):
    """Run ``model`` on the traffic; return its events in the form of :func:`run_rtl`'s."""
    run = model.run(len(eject_ready), requests, eject_ready, record_hops=True)
    fields = ("dest", "src", "kind", "travel", "payload")
    events = [("inject", int(r["cycle"]), int(r["node"]), int(r["request"]))
              for r in run.injections]
    events += [("deliver", int(r["cycle"]), int(r["node"]), *(int(r[f]) for f in fields),
                int(r["port"])) for r in run.deliveries]
    events += [("hop", int(r["cycle"]), int(r["node"]), int(r["dim"]),
                *(int(r[f]) for f in fields)) for r in run.hops]
    return events


def first_difference(rtl, model, kinds=("inject", "hop", "deliver")):
    """The first cycle where two event lists differ, as a sentence naming the port and both
    sides' events there; None if they agree. Events are ``(kind, cycle, node, ...)``, a hop's
    port ``(node, dim)``; ``kinds`` orders the kinds within a cycle."""
    def by_cycle(events):
        table = {}
        for event in events:
            table.setdefault(event[1], {}).setdefault(event[0], []).append(event)
        return table

    rtl, model = by_cycle(rtl), by_cycle(model)
    for cycle in sorted(set(rtl) | set(model)):
        for what in kinds:
            ours = sorted(rtl.get(cycle, {}).get(what, []))
            theirs = sorted(model.get(cycle, {}).get(what, []))
            if ours == theirs:
                continue
            width = 2 if what == "hop" else 1  # a port: (node, dim) or (node,)
            port = min(event[2:2 + width] for event in set(ours) ^ set(theirs))
            name = f"node {port[0]}" + (f" link {port[1]}" if what == "hop" else "")
            at_port = [[event for event in side if event[2:2 + width] == port]
                       for side in (ours, theirs)]
            return (f"cycle {cycle}, {what} at {name}: RTL {at_port[0]}, "
                    f"model {at_port[1]}")
    return None


def lockstep(model_class, n, depth, order, payload_width, ports=1, link_stages=0,
             router=Router, switch_stages=0, eject_stages=0):
    """Compare ``model_class`` with the RTL (built with ``router``) on a configuration; return
    the first difference (or None), the RTL's refusal counts and the model."""
    stages = {"switch_stages": switch_stages, "eject_stages": eject_stages}
    requests, eject_ready, rtl, refused_count = rtl_record(n, depth, order, payload_width,
                                                           ports, link_stages, router, **stages)
    model = model_class(n, payload_width, depth, order, ports=ports, link_stages=link_stages,
                        **stages)
    return first_difference(rtl, model_events(model, requests, eject_ready)), refused_count, model


#: Small configurations of each kind (n, depth, order, payload width, ports, link, switch
#: and eject stages) on which the Verilog replay is compared with Amaranth's simulation.
REPLAY_CHECKS = [(5, 1, "lsb", 32, 1, 0, 0, 0), (6, 3, "msb", 32, 2, 0, 0, 0),
                 (5, 2, "msb", 16, 1, 1, 0, 0), (6, 1, "msb", 32, 2, 1, 1, 1)]


@pytest.mark.slow
@pytest.mark.parametrize("n, depth, order, payload_width, ports, link, switch, eject",
                         slow_unless(REPLAY_CHECKS, lambda config: config[4] == 1))
def test_replay_is_the_amaranth_simulation(n, depth, order, payload_width, ports, link,
                                           switch, eject):
    """The emitted Verilog in Icarus records the same events, cycle for cycle, and the same
    refusal counts as Amaranth's simulation of the fabric, on the lockstep traffic: the
    replay (which the lockstep tests use) stands for the RTL."""
    requests, eject_ready = lockstep_traffic(n, payload_width, 600, seed=n, ports=ports)
    fabric = Fabric(n, payload_width, depth, order, ports=ports, link_stages=link,
                    switch_stages=switch, eject_stages=eject)
    amaranth, amaranth_refused = run_rtl(fabric, requests, eject_ready)
    verilog, verilog_refused = replay(fabric.spec, requests, eject_ready)
    assert first_difference(amaranth, verilog) is None
    assert sorted(amaranth) == sorted(verilog) and amaranth_refused == verilog_refused
    assert {event[0] for event in verilog} == {"inject", "hop", "deliver"}


@pytest.mark.slow
def test_replay_catches_a_broken_router():
    """Negative control: the replay runs the routers it is given; one that ignores the
    existence mask records other events than the sound fabric on the same traffic."""
    requests, eject_ready = lockstep_traffic(5, 32, 300, seed=5)
    spec = FabricSpec.of(5)
    sound, _ = replay(spec, requests, eject_ready)
    broken, _ = replay(spec, requests, eject_ready,
                       router=faults.faulty_router("mask-blind-route"))
    assert first_difference(sound, broken) is not None


@pytest.mark.parametrize("n, depth, order, payload_width", slow_unless(LOCKSTEP, small))
def test_lockstep_with_rtl(n, depth, order, payload_width):
    """Every handshake, hop and delivery of 2,000 cycles of mixed traffic under eject
    backpressure happens in the same cycle, with the same message, in the model and the RTL."""
    difference, refused_count, model = lockstep(Model, n, depth, order, payload_width)
    assert difference is None
    assert list(model.refused_count) == refused_count
    # The run exercised what it should: hops, broadcasts, refusals where possible.
    _, _, events, _ = rtl_record(n, depth, order, payload_width)
    kinds = {event[0] for event in events}
    assert kinds == ({"inject", "deliver"} if n == 1 else {"inject", "deliver", "hop"})
    assert any(event[0] == "deliver" and event[5] == Kind.BROADCAST.value
               for event in events) or n == 1
    assert (sum(refused_count) > 0) == (1 << topology.address_bits(n) > n)


# Broken variants of the model: each must make the lockstep comparison fail.

class ArbiterStartsAtZero(Model):
    """Negative control: the arbiters' ``last`` starts on input 0 instead of on the PE, so
    the first arbitration of each output starts at input 1."""

    def _arbiter_start(self):
        return 0


class ReadyInReset(Model):
    """Negative control: buffers are ready in the first cycle after reset."""

    _ready_in_reset = True


class BrokenTravel(Model):
    """Negative control: keeps travel bit ``l`` on a broadcast copy sent on link ``l``."""

    def _travel_mask(self, node, dim):
        return super()._travel_mask(node, dim) | 1 << dim


class BroadcastDestAsGiven(Model):
    """Negative control: a broadcast copy's ``dest`` on a link is what its origin's PE gave,
    not what the routers drive (:func:`ihcube.topology.relayed_dest`)."""

    def _as_driven(self, delivered, hopped):
        given = hopped["dest"].copy()
        super()._as_driven(delivered, hopped)
        hopped["dest"] = given


class DeliveredHeaderAsCarried(Model):
    """Negative control: a delivered message's ``dest`` and ``travel`` are what it carried,
    not its node and 0 (what the eject port drives)."""

    def _as_driven(self, delivered, hopped):
        dest, travel = delivered["dest"].copy(), delivered["travel"].copy()
        super()._as_driven(delivered, hopped)
        delivered["dest"], delivered["travel"] = dest, travel


@pytest.mark.parametrize("variant, at_cycle", [
    (ArbiterStartsAtZero, None), (ReadyInReset, 0), (BrokenTravel, None),
    (BroadcastDestAsGiven, None), (DeliveredHeaderAsCarried, None),
])
def test_lockstep_catches_a_broken_model(variant, at_cycle):
    difference, _, _ = lockstep(variant, *CONTROL)
    assert difference is not None
    if at_cycle is not None:
        assert difference.startswith(f"cycle {at_cycle}, ")


@pytest.mark.parametrize("n", [2, 3, 6, 13, 26, 64])
@pytest.mark.parametrize("order", topology.ROUTING_ORDERS)
def test_relayed_dests_are_what_the_routers_drive(n, order):
    """The compiled ``dest`` of broadcast copies (``model_kernel.relayed_dests``, from the
    model's tables) against :func:`ihcube.topology.relayed_dest` (the path step by step),
    for every origin, sender and link, with random given ``dest`` bits."""
    model = Model(n, order=order)
    D = topology.dimensions(n)
    copies = np.array([(src, a, link) for src in range(n) for a in range(n)
                       for link in topology.links(n, a)], np.int64).reshape(-1, 3)
    given = np.random.default_rng(n).integers(0, 1 << max(D, 1), len(copies))
    got = model_kernel.relayed_dests(model._tables, D, copies[:, 0], copies[:, 1],
                                     copies[:, 2], given)
    assert got.tolist() == [topology.relayed_dest(n, int(src), int(a), int(link), int(dest),
                                                  order)
                            for (src, a, link), dest in zip(copies, given)]


#: Lockstep configurations with several PE ports (docs/ports.md): (n, depth, order, width,
#: ports), ports 2 and D + 1, complete and incomplete.
LOCKSTEP_PORTS = [
    (5, 1, "msb", 16, 2), (5, 2, "msb", 16, 4), (8, 1, "lsb", 16, 4), (13, 2, "msb", 16, 5),
    (13, 1, "msb", 16, 2),
]


@pytest.mark.slow
@pytest.mark.parametrize("n, depth, order, payload_width, ports",
                         slow_unless(LOCKSTEP_PORTS, two_ports))
def test_lockstep_with_rtl_ports(n, depth, order, payload_width, ports):
    """As :func:`test_lockstep_with_rtl`, with several injection and eject ports: every
    handshake, hop and delivery (its eject port included) in the same cycle."""
    difference, refused_count, model = lockstep(Model, n, depth, order, payload_width, ports)
    assert difference is None
    assert list(model.refused_count) == refused_count
    _, _, events, _ = rtl_record(n, depth, order, payload_width, ports)
    assert {event[-1] for event in events if event[0] == "deliver"} == set(range(ports))


class ArbiterStartsAtThePE(Model):
    """Negative control: the arbiters' ``last`` starts on the first PE slot (where it was
    with one port), not on the last: an eject or link arbiter with several injection inputs
    serves a later one first."""

    def _arbiter_start(self):
        return self._D


@pytest.mark.slow
@pytest.mark.parametrize("variant", [ArbiterStartsAtThePE, ReadyInReset, BrokenTravel])
def test_lockstep_ports_catches_a_broken_model(variant):
    difference, _, _ = lockstep(variant, *LOCKSTEP_PORTS[1])
    assert difference is not None


class Prefetching(Model):
    """The model with its compiled loop prefetching at any size (by default only a state too
    large for the caches is prefetched, and the lockstep fabrics are small)."""

    _prefetch_from = 0


class PrefetchingReadyInReset(Prefetching):
    """Negative control: :class:`Prefetching` with buffers ready in the first cycle."""

    _ready_in_reset = True


@pytest.mark.parametrize("n, depth, order, payload_width, ports",
                         slow_unless([(*CONTROL, 1), LOCKSTEP_PORTS[1], (26, 1, "msb", 32, 1)],
                                     small))
def test_lockstep_with_rtl_prefetching(n, depth, order, payload_width, ports):
    """Prefetching changes no result: every handshake, hop and delivery as in the RTL."""
    difference, refused_count, model = lockstep(Prefetching, n, depth, order, payload_width,
                                                ports)
    assert model.prefetching and not Model(n, ports=ports).prefetching
    assert difference is None
    assert list(model.refused_count) == refused_count


def test_lockstep_prefetching_catches_a_broken_model():
    difference, _, _ = lockstep(PrefetchingReadyInReset, *CONTROL)
    assert difference is not None and difference.startswith("cycle 0, ")


def test_first_difference_names_the_cycle_and_port():
    rtl = [("inject", 3, 1, 0), ("hop", 5, 2, 1, 9, 2, 0, 3, 77), ("deliver", 7, 0, 0, 2, 0, 0, 5)]
    changed = [rtl[0], ("hop", 5, 2, 1, 9, 2, 0, 1, 77), rtl[2]]
    assert first_difference(rtl, rtl) is None
    assert first_difference(rtl, changed) == (
        "cycle 5, hop at node 2 link 1: RTL [('hop', 5, 2, 1, 9, 2, 0, 3, 77)], "
        "model [('hop', 5, 2, 1, 9, 2, 0, 1, 77)]")
    assert first_difference(rtl, rtl[:2]).startswith("cycle 7, deliver at node 0: ")


# Link stages (docs/model.md): a relay on each outgoing link, a cycle more per hop.

@pytest.mark.slow
@pytest.mark.parametrize("n, depth, order, payload_width", slow_unless(LOCKSTEP, small))
def test_lockstep_with_rtl_link_stages(n, depth, order, payload_width):
    """As :func:`test_lockstep_with_rtl`, with ``link_stages=1`` in both: every handshake,
    hop (the relay handing a message to the far buffer) and delivery in the same cycle."""
    difference, refused_count, model = lockstep(Model, n, depth, order, payload_width,
                                                link_stages=1)
    assert difference is None
    assert list(model.refused_count) == refused_count
    _, _, events, _ = rtl_record(n, depth, order, payload_width, 1, 1)
    kinds = {event[0] for event in events}
    assert kinds == ({"inject", "deliver"} if n == 1 else {"inject", "deliver", "hop"})
    assert any(event[0] == "deliver" and event[5] == Kind.BROADCAST.value
               for event in events) or n == 1


@pytest.mark.slow
@pytest.mark.parametrize("n, depth, order, payload_width, ports",
                         slow_unless(LOCKSTEP_PORTS, two_ports))
def test_lockstep_with_rtl_ports_link_stages(n, depth, order, payload_width, ports):
    """As :func:`test_lockstep_with_rtl_ports`, with ``link_stages=1``."""
    difference, refused_count, model = lockstep(Model, n, depth, order, payload_width, ports,
                                                link_stages=1)
    assert difference is None
    assert list(model.refused_count) == refused_count


@pytest.mark.slow
@pytest.mark.parametrize("n, depth, order, payload_width, ports",
                         slow_unless([(*CONTROL, 1), LOCKSTEP_PORTS[1], (26, 1, "msb", 32, 1)],
                                     small))
def test_lockstep_with_rtl_prefetching_link_stages(n, depth, order, payload_width, ports):
    """Prefetching (the relays' records too) changes no result with link stages."""
    difference, refused_count, model = lockstep(Prefetching, n, depth, order, payload_width,
                                                ports, link_stages=1)
    assert model.prefetching
    assert difference is None
    assert list(model.refused_count) == refused_count


class NoRelay(Model):
    """Negative control: ``link_stages=1`` whose relays forward a message in the cycle it
    is written (the kernel without relays): each hop a cycle early."""

    @property
    def _relay_args(self):
        return None


class RelayRoomSeesPop(Model):
    """Negative control: a relay's room rises in the cycle it hands its message on (a
    combinational room), not in the next, so its arbiter sends into a full relay."""

    _relay_room_at_start = False


class PrefetchingRelayRoomSeesPop(Prefetching):
    """Negative control: :class:`RelayRoomSeesPop` on the prefetching path."""

    _relay_room_at_start = False


def first_cycle(events, kind):
    return min(event[1] for event in events if event[0] == kind)


@pytest.mark.slow
def test_lockstep_link_stages_catches_a_relay_without_a_stage():
    """The model without the stage hops one cycle before the RTL's first hop, and the
    comparison says so there."""
    rtl = rtl_record(*CONTROL, 1, 1)[2]
    difference, _, _ = lockstep(NoRelay, *CONTROL, link_stages=1)
    assert difference is not None
    assert difference.startswith(f"cycle {first_cycle(rtl, 'hop') - 1}, hop at ")


@pytest.mark.slow
@pytest.mark.parametrize("variant, config", [
    (RelayRoomSeesPop, (5, 1, "lsb", 32, 1)), (RelayRoomSeesPop, CONTROL + (1,)),
    (RelayRoomSeesPop, LOCKSTEP_PORTS[1]), (PrefetchingRelayRoomSeesPop, CONTROL + (1,)),
])
def test_lockstep_link_stages_catches_a_relay_room_that_sees_its_pop(variant, config):
    """A relay that is full and hands its message on has no room in that cycle: a model whose
    arbiter sends into it then differs from the RTL, at a cycle where the RTL has hopped."""
    rtl = rtl_record(*config, 1)[2]
    difference, _, _ = lockstep(variant, *config, link_stages=1)
    assert difference is not None
    assert int(difference.split(",")[0].split()[1]) > first_cycle(rtl, "hop")


def test_lockstep_link_stages_catches_ready_in_reset():
    difference, _, _ = lockstep(ReadyInReset, *CONTROL, link_stages=1)
    assert difference is not None and difference.startswith("cycle 0, ")


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(faults.RELAY_FAULTS.values()))
def test_lockstep_link_stages_catches_a_faulty_relay(name):
    """Negative control: relays that drop, duplicate, corrupt, swap or keep messages, the
    input buffers real (:func:`ihcube.verify.faults.relay_fault_router`). The RTL then differs
    from the model at a hop (a relay hands the far buffer what it should not, or nothing),
    where the real relays agree with it (:func:`test_lockstep_with_rtl_link_stages`, the same
    configuration and traffic). Without link stages the router has no relay and agrees."""
    router = faults.faulty_router(name)
    difference, _, _ = lockstep(Model, *CONTROL, link_stages=1, router=router)
    assert difference is not None and ", hop at node " in difference, difference
    assert lockstep(Model, *CONTROL, link_stages=1)[0] is None
    assert lockstep(Model, *CONTROL, router=router)[0] is None


@pytest.mark.slow
def test_lockstep_catches_a_router_that_drives_a_dest_bit_it_does_not_know():
    """Negative control of the known dest bits: a router that drives one dimension too many
    of an outgoing link's ``dest`` from its address differs from the model at a hop."""
    router = faults.faulty_router("known-dest-one-too-many")
    difference, _, _ = lockstep(Model, *CONTROL, router=router)
    assert difference is not None and ", hop at node " in difference, difference


def test_zero_load_latency_with_link_stages():
    """One unicast at a time: delivered ``2 * hops + 1`` cycles after it is taken (one
    without link stages), each hop two cycles after the one before."""
    n = 26
    pairs = [(0, 25), (25, 0), (12, 16), (7, 7), (19, 6), (3, 24)]
    requests = [(src, Request(payload=k, dest=dest, at=20 * k))
                for k, (src, dest) in enumerate(pairs)]
    for stages, per_hop in ((0, 1), (1, 2)):
        run = Model(n, link_stages=stages).run(200, requests, record_hops=True)
        taken = {int(r["request"]): int(r["cycle"]) for r in run.injections}
        assert len(run.deliveries) == len(pairs)
        for delivery in run.deliveries:
            hops = bin(int(delivery["src"]) ^ int(delivery["dest"])).count("1")
            assert delivery["cycle"] - taken[int(delivery["payload"])] == per_hop * hops + 1
            cycles = [int(h["cycle"]) for h in run.hops if h["payload"] == delivery["payload"]]
            assert len(cycles) == hops
            assert all(b - a == per_hop for a, b in zip(cycles, cycles[1:]))


def test_link_stages_step_is_run():
    """:meth:`Model.step` with link stages gives what :meth:`Model.run` records."""
    n, cycles = 7, 300
    requests, eject_ready = lockstep_traffic(n, 32, cycles, seed=5)
    expected = Model(n, depth=2, link_stages=1).run(cycles, requests, eject_ready,
                                                     record_hops=True)
    model = Model(n, depth=2, link_stages=1)
    queues = [[(i, r) for i, (node, r) in enumerate(requests) if node == k] for k in range(n)]
    injections, hops = [], []
    for cycle in range(cycles):
        offered = [bool(q) and q[0][1].at <= cycle for q in queues]
        heads = [q[0][1] if offer else Request(payload=0) for q, offer in zip(queues, offered)]
        taken, _, hopped = model.step(
            offered, [r.dest for r in heads], [r.kind.value for r in heads],
            [r.payload for r in heads], eject_ready[cycle], record_hops=True)
        for node in np.flatnonzero(taken):
            injections.append((cycle, node, queues[node].pop(0)[0]))
        hops.append(hopped)
    assert injections == [tuple(map(int, r)) for r in expected.injections]
    assert np.array_equal(np.concatenate(hops), expected.hops)
    assert len(expected.hops) > 100


@pytest.mark.parametrize("rate", [0.05, 0.7])
def test_link_stages_uniform_matches_explicit_queues(rate):
    """:meth:`Model.run_uniform` with link stages does what :meth:`Model.run` (which the
    lockstep compares with the RTL) does with the same messages, and nothing is lost: what
    was taken was delivered or is in a buffer or a relay."""
    n, cycles, seed = 16, 500, 9
    stream = np.uint64(model_kernel.uniform_stream(seed))
    threshold = model_kernel.uniform_threshold(rate, n)
    requests = []
    for t in range(cycles):
        for a in range(n):
            draw = np.uint64(model_kernel.uniform_draw(stream, a, t))
            if draw >> 32 < threshold:
                requests.append((a, Request(payload=t, dest=int(model_kernel.uniform_dest(
                    draw, a, n)), at=t)))
    run = Model(n, link_stages=1).run(cycles, requests, record_hops=True)
    model = Model(n, link_stages=1)
    stats = model.run_uniform(rate, cycles, seed=seed)
    latencies = run.deliveries["cycle"] - run.deliveries["payload"].astype(np.int64)
    assert (stats["injected"], stats["delivered"], stats["hops"]) == (
        len(run.injections), len(run.deliveries), len(run.hops))
    assert stats["mean_latency"] == pytest.approx(latencies.mean(), rel=1e-12)
    assert stats["injected"] == stats["delivered"] + model.in_flight
    assert model.relay_occupancy.sum() > 0 or rate < 0.5


@pytest.mark.parametrize("n, order", [(n, order) for n in (2, 3, 13, 26, 40, 100)
                                      for order in ("msb", "lsb")])
def test_link_stages_follow_the_topology_rules(n, order):
    """All-pairs unicasts and broadcasts with link stages: each arrives once, on its path."""
    requests = [(src, Request(payload=src * n + dest, dest=dest))
                for src in range(n) for dest in range(n)]
    requests += [(src, Request(payload=src, kind=Kind.BROADCAST)) for src in range(n)]
    model = Model(n, depth=2, order=order, link_stages=1)
    run = model.run(80 * n + 200, requests, record_hops=True)
    assert run.pending == 0 and model.idle
    hops, deliveries = as_harness_records(run)
    injected = [(int(r["cycle"]), int(r["node"]), requests[int(r["request"])][1])
                for r in run.injections]
    assert check_run(n, injected, hops, deliveries, order) == []
    assert len(deliveries) == n * n + n * (n - 1)


@pytest.mark.parametrize("stages, error", [(2, ValueError), (-1, ValueError),
                                           (True, TypeError), ("1", TypeError)])
def test_wrong_link_stages(stages, error):
    with pytest.raises(error, match=rf"^Link stages must be 0 or 1, not {stages!r}$"):
        Model(5, link_stages=stages)


# The model against the topology rules, at sizes the RTL simulation cannot reach quickly.

def as_harness_records(run):
    """The model's records as the harness's, for :func:`ihcube.verify.scoreboard.check_run`."""
    def message(record):
        return Message(dest=int(record["dest"]), src=int(record["src"]),
                       kind=Kind(int(record["kind"])), travel=int(record["travel"]),
                       payload=int(record["payload"]))
    hops = [Hop(int(r["cycle"]), int(r["node"]), int(r["dim"]), message(r)) for r in run.hops]
    deliveries = [Delivery(int(r["cycle"]), int(r["node"]), message(r))
                  for r in run.deliveries]
    return hops, deliveries


@pytest.mark.parametrize("n, order", [(n, "msb") for n in (*range(1, 41), 70, 100, 129)]
                         + [(n, "lsb") for n in (*range(1, 41), 70, 100, 129)])
def test_model_follows_the_topology_rules(n, order):
    """All-pairs unicasts and broadcasts from every node arrive once each, along the
    Algorithm 2 path (and the broadcast tree of the order), with the right fields."""
    requests = [(src, Request(payload=src * n + dest, dest=dest))
                for src in range(n) for dest in range(n)]
    requests += [(src, Request(payload=src, kind=Kind.BROADCAST)) for src in range(n)]
    model = Model(n, depth=2, order=order)
    run = model.run(40 * n + 100, requests, record_hops=True)
    assert run.pending == 0
    hops, deliveries = as_harness_records(run)
    injected = [(int(r["cycle"]), int(r["node"]), requests[int(r["request"])][1])
                for r in run.injections]
    assert check_run(n, injected, hops, deliveries, order) == []
    assert len(deliveries) == n * n + n * (n - 1)


def test_route_table_is_route_step():
    """The route selector the model builds is :func:`ihcube.topology.route_step`."""
    for n in (2, 5, 26, 64, 100):
        for order in topology.ROUTING_ORDERS:
            exists, route, _, _ = Model(n, order=order)._tables
            for a in range(n):
                for d in range(n):
                    step = topology.route_step(n, a, d, order)
                    bits = (a ^ d) & int(exists[a])
                    assert (None if bits == 0 else int(route[bits])) == step


# The other ways to drive the model.

def test_step_is_run():
    """Driving the ports cycle by cycle with :meth:`Model.step` gives what :meth:`Model.run`
    records for the same queues."""
    n, cycles = 7, 300
    requests, eject_ready = lockstep_traffic(n, 32, cycles, seed=5)
    expected = Model(n, depth=2).run(cycles, requests, eject_ready, record_hops=True)

    model = Model(n, depth=2)
    queues = [[(i, r) for i, (node, r) in enumerate(requests) if node == k] for k in range(n)]
    injections, deliveries, hops = [], [], []
    for cycle in range(cycles):
        offered = [bool(q) and q[0][1].at <= cycle for q in queues]
        heads = [q[0][1] if offer else Request(payload=0) for q, offer in zip(queues, offered)]
        taken, delivered, hopped = model.step(
            offered, [r.dest for r in heads], [r.kind.value for r in heads],
            [r.payload for r in heads], eject_ready[cycle], record_hops=True)
        for node in np.flatnonzero(taken):
            injections.append((cycle, node, queues[node].pop(0)[0]))
        deliveries.append(delivered)
        hops.append(hopped)
    assert injections == [tuple(map(int, r)) for r in expected.injections]
    assert np.array_equal(np.concatenate(deliveries), expected.deliveries)
    assert np.array_equal(np.concatenate(hops), expected.hops)
    assert model.cycle == cycles


def test_uniform_traffic():
    """Uniform traffic below saturation: every message is accounted for, the throughput is the
    offered load, and the same seed gives the same run."""
    n, cycles, rate = 64, 3000, 0.05
    model = Model(n, depth=2)
    stats = model.run_uniform(rate, cycles, seed=3)
    in_flight = int(model.occupancy.sum())
    assert stats["generated"] == stats["injected"] + stats["queued"]
    assert stats["injected"] == stats["delivered"] + in_flight
    assert abs(stats["throughput"] - rate) < 0.1 * rate
    # Zero-load latency is hops + 1 (test_fabric); the mean hop count is D / 2 here.
    assert topology.dimensions(n) / 2 + 1 <= stats["mean_latency"] < 20
    assert stats == Model(n, depth=2).run_uniform(rate, cycles, seed=3)
    assert stats != Model(n, depth=2).run_uniform(rate, cycles, seed=4)


def test_saturated_queues_grow():
    """Beyond saturation the source queues grow without bound and nothing is lost."""
    model = Model(32)
    stats = model.run_uniform(1.0, 500, seed=1)
    assert stats["queued"] > 32 * 16  # the queues were enlarged
    assert stats["generated"] == 32 * 500
    assert stats["generated"] == stats["injected"] + stats["queued"]
    assert stats["injected"] == stats["delivered"] + int(model.occupancy.sum())


@pytest.mark.parametrize("rate", [0.05, 0.7])
def test_uniform_matches_explicit_queues(rate):
    """run_uniform keeps no queue in memory (it finds a queue's next message again from the
    draws); it must do what :meth:`Model.run` does with every generated message queued
    explicitly: the same counts and the same latencies, below and beyond saturation."""
    n, cycles, seed = 16, 500, 9
    stream = np.uint64(model_kernel.uniform_stream(seed))  # typed as in the kernel
    threshold = model_kernel.uniform_threshold(rate, n)
    requests = []
    for t in range(cycles):
        for a in range(n):
            draw = np.uint64(model_kernel.uniform_draw(stream, a, t))
            if draw >> 32 < threshold:
                dest = int(model_kernel.uniform_dest(draw, a, n))
                requests.append((a, Request(payload=t, dest=dest, at=t)))
    run = Model(n).run(cycles, requests, record_hops=True)
    stats = Model(n).run_uniform(rate, cycles, seed=seed)
    latencies = run.deliveries["cycle"] - run.deliveries["payload"].astype(np.int64)
    assert (stats["generated"], stats["injected"], stats["delivered"], stats["queued"]) == (
        len(requests), len(run.injections), len(run.deliveries),
        len(requests) - len(run.injections))
    assert stats["hops"] == len(run.hops)
    assert stats["max_latency"] == latencies.max()
    assert stats["mean_latency"] == pytest.approx(latencies.mean(), rel=1e-12)


def test_saturated_latencies():
    """Beyond saturation a queue's next head is found again from its draws: each delivery's
    latency (its acceptance less the generation cycle its payload carries) is at least two
    cycles (a hop, then the eject) and at most the run, and a lower rate waits less."""
    cycles = 2000
    high = Model(16).run_uniform(0.9, cycles, seed=5)
    low = Model(16).run_uniform(0.02, cycles, seed=5)
    assert high["queued"] > 16 * 100  # saturated: the queues grew
    for stats in (high, low):
        assert 2 <= stats["mean_latency"] <= stats["max_latency"] <= cycles
    assert high["mean_latency"] > 10 * low["mean_latency"]


def test_records():
    """The structured records carry every field, the payload unsigned."""
    model = Model(4, payload_width=64)
    run = model.run(20, [(0, Request(payload=2**64 - 1, dest=3))], record_hops=True)
    assert run.deliveries.dtype == DELIVERY and run.hops.dtype == HOP
    (delivery,) = run.deliveries
    assert (delivery["node"], delivery["dest"], delivery["src"], delivery["payload"]) == (
        3, 3, 0, 2**64 - 1)
    assert [(int(h["node"]), int(h["dim"])) for h in run.hops] == [(0, 1), (2, 0)]
    assert model.cycle == 20


@pytest.mark.parametrize("args, error, message", [
    ((0,), ValueError, r"^Node count must be a positive integer, not 0$"),
    (("26",), TypeError, r"^Node count must be a positive integer, not '26'$"),
    ((26, 0), ValueError, r"^Payload width must be a positive integer, not 0$"),
    ((26, 65), ValueError, r"^Payload width must be at most 64 in the model, not 65$"),
    ((26, 32, 0), ValueError, r"^Buffer depth must be a positive integer, not 0$"),
    ((26, 32, 1 << 15), ValueError, r"^Buffer depth must be at most 32767 in the model, "
                                    r"not 32768$"),
    ((26, 32, 1, "middle"), ValueError,
     r"^Routing order must be one of 'msb' or 'lsb', not 'middle'$"),
    (((1 << 20) + 1,), ValueError, r"^Node count must be at most 1048576 in the model, "
                                   r"not 1048577$"),
])
def test_wrong_parameters(args, error, message):
    with pytest.raises(error, match=message):
        Model(*args)


def test_wrong_run_arguments():
    model = Model(5)
    with pytest.raises(ValueError, match=r"^Eject-ready pattern must have shape \(10, 5\), "
                                         r"not \(10, 4\)$"):
        model.run(10, eject_ready=np.ones((10, 4)))
    with pytest.raises(ValueError, match=r"^Request nodes must be from 0 to 4$"):
        model.run(10, [(5, Request(payload=0))])
    with pytest.raises(ValueError, match=r"^Generation rate must be from 0 to 1, not 1.5$"):
        model.run_uniform(1.5, 10)


# Switch and eject stages (RTL-side: tests/test_switch_stages.py): the grant registered, a
# relay on each eject port, and with the switch stage a refusal counted a cycle later.

LOCKSTEP_STAGES = [
    # n, depth, order, payload_width, ports, link_stages, switch_stages, eject_stages
    (5, 1, "lsb", 32, 1, 0, 1, 0), (5, 1, "msb", 32, 1, 0, 0, 1),
    (6, 3, "msb", 32, 1, 1, 1, 1), (13, 2, "msb", 32, 1, 1, 1, 1),
    (8, 1, "lsb", 16, 3, 0, 1, 1), (11, 1, "lsb", 32, 1, 1, 1, 0),
]


@pytest.mark.slow
@pytest.mark.parametrize("n, depth, order, payload_width, ports, link, switch, eject",
                         slow_unless(LOCKSTEP_STAGES, small))
def test_lockstep_with_rtl_switch_and_eject_stages(n, depth, order, payload_width, ports,
                                                   link, switch, eject):
    """As :func:`test_lockstep_with_rtl`, with the stages in both: every handshake, hop and
    delivery (an eject relay handing its message to the PE) in the same cycle."""
    difference, refused_count, model = lockstep(Model, n, depth, order, payload_width, ports,
                                                link_stages=link, switch_stages=switch,
                                                eject_stages=eject)
    assert difference is None
    assert list(model.refused_count) == refused_count
    assert model.delivered > 1000
    assert (sum(refused_count) > 0) == (1 << topology.address_bits(n) > n)


@pytest.mark.slow
def test_lockstep_with_rtl_stages_on_threads():
    """Two threads give the one thread's records with every stage on."""
    config = (13, 2, "msb", 32, 1)
    stages = {"link_stages": 1, "switch_stages": 1, "eject_stages": 1}
    requests, eject_ready, rtl, refused_count = rtl_record(*config, 1, Router,
                                                           switch_stages=1, eject_stages=1)
    n, depth, order, payload_width, _ = config
    model = Model(n, payload_width, depth, order, threads=2, **stages)
    assert first_difference(rtl, model_events(model, requests, eject_ready)) is None
    assert list(model.refused_count) == refused_count


class StageLeftOut(Model):
    """Negative control: the RTL's switch stage (or eject relays) missing from the model."""

    left_out = model_kernel.SWITCH_STAGE

    @property
    def _relay_args(self):
        records, room, stages, movers, late = super()._relay_args
        return records, room, stages & ~self.left_out, movers, late


class EjectRelayLeftOut(StageLeftOut):
    left_out = model_kernel.EJECT_STAGE


class EjectRoomSeesPop(Model):
    """Negative control: an eject relay's room rises in the cycle the PE takes its message."""

    _relay_room_at_start = False


@pytest.mark.slow
@pytest.mark.parametrize("variant, config", [
    (StageLeftOut, (5, 1, "lsb", 32, 1, 0, 1, 0)), (StageLeftOut, (6, 3, "msb", 32, 1, 1, 1, 1)),
    (EjectRelayLeftOut, (5, 1, "msb", 32, 1, 0, 0, 1)),
    (EjectRoomSeesPop, (5, 1, "msb", 32, 1, 0, 0, 1)),
])
def test_lockstep_stages_catches_a_broken_model(variant, config):
    n, depth, order, payload_width, ports, link, switch, eject = config
    difference, _, _ = lockstep(variant, n, depth, order, payload_width, ports,
                                link_stages=link, switch_stages=switch, eject_stages=eject)
    assert difference is not None


@pytest.mark.parametrize("ports", [1, 2])
def test_refusal_is_counted_a_cycle_later_with_the_switch_stage(ports):
    """The model's counts follow the RTL's (tests/test_switch_stages.py): in the cycle
    after the refused injection without the stage, a cycle later with it."""
    def counts(switch_stages):
        model = Model(5, ports=ports, switch_stages=switch_stages)
        model.step(False)  # the buffers' room after reset
        seen = []
        valid = np.zeros(5 * ports, bool)
        valid[2 * ports:3 * ports] = True  # every port of node 2, to node 6 (none)
        taken, _, _ = model.step(valid, inject_dest=6)
        assert taken[2 * ports:3 * ports].all()
        seen.append((bool(model.refused[2]), int(model.refused_count[2])))
        for _ in range(2):
            model.step(False)
            seen.append((bool(model.refused[2]), int(model.refused_count[2])))
        return seen

    assert counts(0) == [(True, ports)] * 3
    assert counts(1) == [(False, 0), (True, ports), (True, ports)]


@pytest.mark.parametrize("stages, error, message", [
    ({"switch_stages": 2}, ValueError, r"^Switch stages must be 0 or 1, not 2$"),
    ({"eject_stages": "1"}, TypeError, r"^Eject stages must be 0 or 1, not '1'$"),
])
def test_wrong_stages(stages, error, message):
    with pytest.raises(error, match=message):
        Model(5, **stages)


def test_lockstep_with_rtl_prefetching_stages():
    """Prefetching changes no result with every stage on."""
    difference, refused_count, model = lockstep(Prefetching, 6, 3, "msb", 32, 1, link_stages=1,
                                                switch_stages=1, eject_stages=1)
    assert model.prefetching
    assert difference is None
    assert list(model.refused_count) == refused_count


def test_a_message_in_an_eject_relay_is_in_flight():
    """A message waiting in an eject port's relay for its PE counts in ``eject_occupancy``
    and ``in_flight``, and the model is not idle until the PE takes it."""
    model = Model(5, eject_stages=1)
    model.offer([0], [3])
    model.advance(20, eject_ready=np.zeros((20, 5), bool))
    assert model.eject_occupancy.tolist() == [[0], [0], [0], [1], [0]]
    assert model.in_flight == 1 and not model.idle
    model.advance(1)
    assert model.delivered == 1 and model.in_flight == 0 and model.idle
    assert Model(5).eject_occupancy.sum() == 0


# Reconfigurable fabrics: the configuration changes between segments of traffic, each
# drained before the next configuration is loaded (docs/reconfiguration-hardware.md).

#: Lockstep configurations of reconfigurable fabrics: ``(N, depth, order, payload_width,
#: configurations[, stages])``; the first segment runs on the configuration after reset (``N``
#: active, mask 0), then each configuration ``(active_nodes, mask)`` in turn.
RECONFIGURED = [
    (6, 1, "msb", 16, ((5, 1), (4, 2), (6, 0))),
    (8, 2, "lsb", 32, ((5, 3), (8, 5), (3, 6))),
    (5, 1, "msb", 8, ((4, 1), (3, 2), (1, 4))),
    (6, 2, "msb", 16, ((5, 1), (2, 4), (6, 1)), 1),  # every register stage
]
#: Cycles of traffic in a segment, then of drain (every PE accepting) before the next load.
SEGMENT, DRAIN = 300, 200


def segment_traffic(N, active, payload_width, start, seed):
    """``(requests, eject_ready)`` of one segment from cycle ``start``: random unicasts in
    logical addresses (one in ten to a node that is not active, where the width allows),
    broadcasts, from every physical node (an inactive one's refused), at a light, then a
    saturating, then a medium rate, under backpressure; then the drain, with no requests and
    every PE accepting."""
    rng = random.Random(seed)
    addresses = 1 << topology.address_bits(N)
    requests = []
    for k, rate in enumerate((0.05, 0.5, 0.15)):
        for cycle in range(start + k * SEGMENT // 3, start + (k + 1) * SEGMENT // 3):
            for node in range(N):
                if rng.random() >= rate:
                    continue
                payload, roll = rng.getrandbits(payload_width), rng.random()
                if roll < 0.08:
                    request = Request(payload=payload, dest=rng.randrange(addresses),
                                      kind=Kind.BROADCAST, at=cycle)
                elif roll < 0.18 and addresses > active:
                    request = Request(payload=payload, dest=rng.randrange(active, addresses),
                                      at=cycle)
                else:
                    request = Request(payload=payload, dest=rng.randrange(active), at=cycle)
                requests.append((node, request))
    accept = [rng.choice([1.0, 0.8, 0.4]) for _ in range(N)]
    eject_ready = np.ones((SEGMENT + DRAIN, N), np.uint8)
    for cycle in range(SEGMENT):
        for node in range(N):
            eject_ready[cycle, node] = rng.random() < accept[node]
    return requests, eject_ready


def reconfigured_traffic(N, payload_width, configurations):
    """The segments of a reconfigurable lockstep run: a list of ``(start, (active_nodes,
    mask), requests, eject_ready)``, the first on the configuration after reset (loaded in
    no cycle), each next loaded in its ``start`` cycle, when the one before has drained."""
    segments = []
    for k, configuration in enumerate(((N, 0), *configurations)):
        start = k * (SEGMENT + DRAIN)
        # The cycle of the load offers nothing: the fabric is idle only without offers.
        requests, eject_ready = segment_traffic(N, configuration[0], payload_width, start + 1,
                                                seed=N * 100 + k)
        segments.append((start, configuration, requests, eject_ready))
    return segments


def stage_keywords(stages):
    """The keywords of every register stage at ``stages`` (0 or 1)."""
    return {"link_stages": stages, "switch_stages": stages, "eject_stages": stages}


@shared
def reconfigured_rtl_record(N, depth, order, payload_width, configurations, stages=0):
    """What the reconfigurable RTL (with every register stage at ``stages``) did with
    :func:`reconfigured_traffic` (one simulation a configuration, shared by the tests that
    compare with it)."""
    segments = reconfigured_traffic(N, payload_width, configurations)
    requests = [request for _, _, part, _ in segments for request in part]
    eject_ready = np.concatenate([ready for _, _, _, ready in segments])
    fabric = Fabric(N, payload_width, depth, order, reconfigurable=True,
                    **stage_keywords(stages))
    loads = [(start, *configuration) for start, configuration, _, _ in segments[1:]]
    return run_rtl(fabric, requests, eject_ready, configure=loads)


def reconfigured_lockstep(model_class, N, depth, order, payload_width, configurations,
                          stages=0):
    """Compare ``model_class`` with the reconfigurable RTL, configuring the model where the
    RTL is loaded (up to a load the model is not drained for: a difference before it);
    return the first difference (or None), the RTL's and the model's
    refusal counts, and the configurations as each side saw them (taken, refused, every
    router's logical address)."""
    rtl, refused_count = reconfigured_rtl_record(N, depth, order, payload_width,
                                                 configurations, stages)
    model = model_class(N, payload_width, depth, order, reconfigurable=True,
                        **stage_keywords(stages))
    events, seen, first = [], [], 0
    for k, (start, configuration, requests, eject_ready) in enumerate(
            reconfigured_traffic(N, payload_width, configurations)):
        if k:
            if model.in_flight:  # a broken model that has not drained: compare what ran
                break
            model.configure(*configuration)
            seen.append(("config", start, 1, 0, *map(int, model.logical_address)))
        run = model_events(model, requests, eject_ready)
        events += [event[:3] + (event[3] + first,) if event[0] == "inject" else event
                   for event in run]
        first += len(requests)
    configs = [event for event in rtl if event[0] == "config"]
    return first_difference(rtl, events), refused_count, list(model.refused_count), configs, seen


@pytest.mark.slow
@pytest.mark.parametrize("N, depth, order, payload_width, configurations, stages",
                         slow_unless([(*config, 0)[:6] for config in RECONFIGURED],
                                     lambda config: config[0] == 6 and not config[5]))
def test_lockstep_with_reconfigured_rtl(N, depth, order, payload_width, configurations,
                                        stages):
    """A reconfigurable fabric and its model, configured alike between drained segments of
    traffic, agree on every handshake, hop and delivery, message fields in logical
    addresses included, on the refusals (destinations not active, and every injection of
    an inactive router) and on every router's logical address."""
    difference, rtl_refused, model_refused, rtl_configs, model_configs = \
        reconfigured_lockstep(Model, N, depth, order, payload_width, configurations, stages)
    assert difference is None
    assert model_refused == rtl_refused
    assert rtl_configs == model_configs
    assert sum(rtl_refused) > 0


class KeepsItsOldAddress(Model):
    """Negative control: router 1 keeps the logical address it had after reset."""

    def _logical_address(self, nodes):
        return np.where(np.asarray(nodes) == 1, nodes, super()._logical_address(nodes))


class StaleActiveNodes(Model):
    """Negative control: the rules take the node count after reset, not the active nodes."""

    def _rule_nodes(self):
        return self._n


@pytest.mark.slow
@pytest.mark.parametrize("variant", [KeepsItsOldAddress, StaleActiveNodes])
def test_reconfigured_lockstep_catches_a_broken_model(variant):
    difference, *_ = reconfigured_lockstep(variant, *RECONFIGURED[0])
    assert difference is not None
