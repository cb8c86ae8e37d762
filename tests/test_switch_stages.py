"""The pipelined switch (``switch_stages=1``, ``docs/fpga.md``, "Pipelined switch (spike)") and
the eject ports' relays (``eject_stages=1``, "Every output staged") in simulation
(``run_fabric`` of ``tests/test_fabric.py``: Amaranth's, from its ``REPLAY_FROM`` nodes the
emitted Verilog in Icarus): every message delivered once, along its path, in order per
(src, dest), and what they cost in cycles; the refusal counted a cycle later with the stage;
and the same checks catching a stage without its mask, and eject relays that drop."""

import re
from collections import defaultdict

import pytest
from amaranth.back import verilog

from ihcube.rtl import Fabric, Kind, Router
from ihcube.verify.faults import UnmaskedStageRouter, relay_fault_router
from ihcube.verify.harness import Request, simulate

from test_fabric import (LATENCY_NODES, LATENCY_PAIRS, all_pairs, broadcasts, problems_of,
                         random_traffic, run_fabric)
from tiers import below, slow_unless

#: Node pairs for the zero-load latency (on ``LATENCY_NODES`` nodes): paths of 0, 3 and 4 hops.
PAIRS = LATENCY_PAIRS


def out_of_order(harness):
    """The (src, dest) pairs whose unicasts were delivered in another order than injected."""
    taken, delivered = defaultdict(list), defaultdict(list)
    for _, node, request in harness.injected:
        if request.kind == Kind.UNICAST:
            taken[node, request.dest].append(request.payload)
    for delivery in sorted(harness.deliveries, key=lambda delivery: delivery.cycle):
        message = delivery.message
        if message.kind == Kind.UNICAST:
            delivered[message.src, message.dest].append(message.payload)
    return sorted(pair for pair in taken if delivered[pair] != taken[pair])


@pytest.mark.parametrize("n, order", slow_unless([(5, "msb"), (5, "lsb"), (13, "msb"),
                                                  (13, "lsb")], below(13)))
def test_all_pairs_and_broadcasts_arrive_once(n, order):
    """Every (src, dest) unicast arrives once at dest along its path, and every broadcast
    once at every other node, with the grants registered."""
    harness = run_fabric(Fabric(n, order=order, switch_stages=1), all_pairs(n) + broadcasts(n))
    assert problems_of(harness) == []
    assert len(harness.deliveries) == n * n + n * (n - 1)
    assert len(harness.hops) == (sum(bin(s ^ d).count("1") for s in range(n) for d in range(n))
                                 + n * (n - 1))


@pytest.mark.parametrize("n, depth, link_stages, ports", slow_unless([
    (13, 2, 0, 1), (5, 1, 1, 1), (13, 1, 1, 1), (5, 1, 0, 3),
], below(13)))
def test_with_deeper_buffers_link_stages_and_ports(n, depth, link_stages, ports):
    """The stage works with two-message buffers, with a relay on every link (both options
    together) and with several PE ports."""
    harness = run_fabric(Fabric(n, depth=depth, link_stages=link_stages, ports=ports,
                                switch_stages=1), all_pairs(n) + broadcasts(n))
    assert problems_of(harness) == []
    assert len(harness.deliveries) == n * n + n * (n - 1)


@pytest.mark.parametrize("n, depth, eject_ready",
                         slow_unless([(13, 1, 0.3), (26, 1, 0.5), (13, 2, 0.2)], below(13)))
def test_random_traffic_under_eject_backpressure(n, depth, eject_ready):
    """Unicasts and broadcasts together, PEs that accept at random (an eject port's stage
    must hold its message while ``ready`` is low): nothing lost, duplicated, altered or
    reordered per (src, dest)."""
    requests = random_traffic(n, 12 * n, seed=n * 10 + depth)
    harness = run_fabric(Fabric(n, depth=depth, switch_stages=1), requests,
                         eject_ready=eject_ready, seed=depth)
    assert problems_of(harness) == []
    assert len(harness.injected) == len(requests)
    assert out_of_order(harness) == []


def latencies(fabric):
    """Each message of :data:`PAIRS` alone in ``fabric``: (hops, cycles from taken to
    delivered)."""
    requests = [(src, Request(payload=k, dest=dest, at=16 * k))
                for k, (src, dest) in enumerate(PAIRS)]
    harness = run_fabric(fabric, requests)
    assert problems_of(harness) == []
    assert len(harness.deliveries) == len(PAIRS)
    taken = {request.payload: cycle for cycle, _, request in harness.injected}
    return sorted((bin(d.message.src ^ d.message.dest).count("1"),
                   d.cycle - taken[d.message.payload]) for d in harness.deliveries)


@pytest.mark.slow
def test_zero_load_latency_is_two_per_router():
    """A message alone spends two cycles in each router it passes (the grant is registered,
    then the crossbar moves it): delivered 2 hops + 2 cycles after it was taken, against
    hops + 1 without the stage."""
    staged = latencies(Fabric(LATENCY_NODES, switch_stages=1))
    assert [cycles for hops, cycles in staged] == [2 * hops + 2 for hops, _ in staged]
    assert {hops for hops, _ in staged} == {0, 3, 4}  # popcount(src XOR dest) of PAIRS
    plain = latencies(Fabric(LATENCY_NODES))
    assert [cycles for hops, cycles in plain] == [hops + 1 for hops, _ in plain]


@pytest.mark.slow
def test_zero_load_latency_with_link_stages_is_three_per_hop():
    """Both options: a cycle in the stage and one in the relay more per hop, 3 hops + 2."""
    staged = latencies(Fabric(LATENCY_NODES, switch_stages=1, link_stages=1))
    assert [cycles for hops, cycles in staged] == [3 * hops + 2 for hops, _ in staged]


@pytest.mark.parametrize("n, requests", slow_unless([
    (5, all_pairs(5)), (5, broadcasts(5)), (13, random_traffic(13, 60, seed=3)),
], below(13)))
def test_checks_catch_a_stage_without_its_mask(n, requests):
    """Negative control: a head that still asks for the output whose stage holds its copy
    is granted again, and the same checks as above see messages delivered twice."""
    harness = run_fabric(Fabric(n, router=UnmaskedStageRouter, switch_stages=1), requests,
                         max_cycles=2_000)
    problems = problems_of(harness)
    assert any(re.search(r" was delivered [2-9] times", problem) for problem in problems), \
        problems


def test_unmasked_router_is_the_real_one_without_the_stage():
    """The negative control's router differs only where the stage is: without it, the same
    traffic passes (so what the control catches is the missing mask)."""
    harness = run_fabric(Fabric(5, router=UnmaskedStageRouter), all_pairs(5) + broadcasts(5))
    assert problems_of(harness) == []


@pytest.mark.slow
@pytest.mark.parametrize("option", ["switch_stages", "eject_stages"])
def test_stages_0_is_the_router_of_before(option):
    """The default and an explicit 0 write the same Verilog; 1 does not."""
    def text(**options):
        return verilog.convert(Router(13, 0, **options), name="router")
    assert text(**{option: 0}) == text()
    assert text(**{option: 1}) != text()


@pytest.mark.parametrize("option, name", [("switch_stages", "Switch"),
                                          ("eject_stages", "Eject")])
@pytest.mark.parametrize("stages, error", [(2, ValueError), (-1, ValueError),
                                           (True, TypeError), ("1", TypeError)])
def test_wrong_stages(option, name, stages, error):
    message = rf"^{name} stages must be 0 or 1, not {stages!r}$"
    with pytest.raises(error, match=message):
        Fabric(5, **{option: stages})
    with pytest.raises(error, match=message):
        Router(5, 0, **{option: stages})


@pytest.mark.slow
def test_zero_load_latency_with_every_stage_is_three_per_hop_and_one_more():
    """Switch, link and eject stages together (the spike that placed 26 nodes at 153.9 MHz):
    3 hops + 3 cycles; an eject relay alone adds one cycle to a delivery, hops + 2."""
    staged = latencies(Fabric(LATENCY_NODES, switch_stages=1, link_stages=1,
                                eject_stages=1))
    assert [cycles for hops, cycles in staged] == [3 * hops + 3 for hops, _ in staged]
    relayed = latencies(Fabric(LATENCY_NODES, eject_stages=1))
    assert [cycles for hops, cycles in relayed] == [hops + 2 for hops, _ in relayed]


@pytest.mark.parametrize("n, depth, switch_stages, link_stages, ports", slow_unless([
    (5, 1, 1, 1, 1), (13, 1, 1, 1, 1), (13, 2, 1, 1, 1), (5, 1, 0, 0, 3), (13, 1, 1, 0, 2),
], below(13)))
def test_eject_stages_deliver_everything_once(n, depth, switch_stages, link_stages, ports):
    """With a relay on every eject port (alone, or with the other stages, deeper buffers and
    several PE ports) every unicast and broadcast still arrives once."""
    harness = run_fabric(Fabric(n, depth=depth, switch_stages=switch_stages,
                                link_stages=link_stages, eject_stages=1, ports=ports),
                         all_pairs(n) + broadcasts(n))
    assert problems_of(harness) == []
    assert len(harness.deliveries) == n * n + n * (n - 1)


@pytest.mark.parametrize("n, eject_ready", slow_unless([(13, 0.3), (26, 0.5)], below(13)))
def test_every_stage_under_eject_backpressure(n, eject_ready):
    """An eject relay holds its message while the PE's ``ready`` is low: nothing lost,
    duplicated, altered or reordered per (src, dest)."""
    requests = random_traffic(n, 12 * n, seed=n)
    harness = run_fabric(Fabric(n, switch_stages=1, link_stages=1, eject_stages=1), requests,
                         eject_ready=eject_ready, seed=n)
    assert problems_of(harness) == []
    assert len(harness.injected) == len(requests)
    assert out_of_order(harness) == []


@pytest.mark.parametrize("fault, complaint", [("drop", r" was delivered 0 times"),
                                              ("duplicate", r" was delivered 2 times")])
def test_checks_catch_eject_relays_that_drop_or_duplicate(fault, complaint):
    """Negative control: relays that drop or repeat every third message, on the eject ports
    only (no link stages), are caught by the same checks."""
    router = relay_fault_router(fault)
    harness = run_fabric(Fabric(5, router=router, eject_stages=1), all_pairs(5),
                         max_cycles=2_000)
    assert any(re.search(complaint, problem) for problem in problems_of(harness))
    clean = run_fabric(Fabric(5, router=router), all_pairs(5))  # no relay, no fault
    assert problems_of(clean) == []


@pytest.mark.parametrize("ports", [1, 2])
def test_refusal_is_counted_a_cycle_later_with_the_stage(ports):
    """With the switch staged, ``refused`` and ``refused_count`` rise a cycle after the
    refused injection was taken; without, in the cycle after. Every port refuses at once
    (the count adds them)."""
    def counts(switch_stages):
        router = Router(5, 2, ports=ports, switch_stages=switch_stages)
        injects = [router.inject] if ports == 1 else list(router.inject)
        seen = []

        async def testbench(ctx):
            for port in injects:
                ctx.set(port.payload.dest, 6)  # no such node
                ctx.set(port.valid, 1)
            while not all(ctx.get(port.ready) for port in injects):
                await ctx.tick()  # the buffers' room after reset
            assert (ctx.get(router.refused), ctx.get(router.refused_count)) == (0, 0)
            await ctx.tick()
            for port in injects:
                ctx.set(port.valid, 0)
            for _ in range(3):
                seen.append((ctx.get(router.refused), ctx.get(router.refused_count)))
                await ctx.tick()

        simulate(router, testbench)
        return seen

    assert counts(0) == [(1, ports)] * 3
    assert counts(1) == [(0, 0), (1, ports), (1, ports)]
