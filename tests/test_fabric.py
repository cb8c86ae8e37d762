"""The fabric in simulation (Amaranth's; from :data:`REPLAY_FROM` nodes on, its emitted
Verilog in Icarus), checked by link monitors and the scoreboard."""

import random

import pytest

from ihcube import topology
from ihcube.generate import fabric_verilog
from ihcube.rtl import Fabric, Kind, Router
from ihcube.verify.faults import buffer_fault_router, faulty_router
from ihcube.verify.harness import FabricHarness, Request, owed_deliveries
from ihcube.verify.replay import replay_packets
from ihcube.verify.scoreboard import check_run
from tiers import below, shared, slow_unless

#: Runs of this many nodes and more replay the emitted Verilog in Icarus
#: (:func:`ihcube.verify.replay.replay_packets`, the harness's records:
#: ``tests/test_packet_replay.py``); smaller ones run the harness on Amaranth's simulator,
#: which is the cheaper there (``docs/verification.md``). ``tests/test_switch_stages.py`` and
#: ``tests/test_pe_ports.py`` run their fabrics here too.
REPLAY_FROM = 26


@shared
def emitted(spec):
    """The emitted Verilog of the sound fabric ``spec``, generated once a run (the tests
    replay several traffics on most fabrics)."""
    return fabric_verilog(spec)


def run_fabric(fabric, requests, eject_ready=1.0, seed=0, max_cycles=20_000):
    """Send ``requests`` (node, Request) pairs through ``fabric``; return the harness (from
    :data:`REPLAY_FROM` nodes on, the replay's record of the same run)."""
    expected = sum(owed_deliveries(fabric.n, request) for _, request in requests)
    router = type(fabric.routers[0])
    # The replay builds each router as router(spec, node, strap=True), as the fabric built
    # them when they are of one class and have its spec (not so for a factory that gives
    # some nodes another class or spec: that fabric stays on Amaranth's simulator).
    if fabric.n >= REPLAY_FROM and not fabric.reconfigurable and all(
            type(each) is router and each.spec == fabric.spec for each in fabric.routers):
        sound = router is Router
        return replay_packets(fabric.spec, requests, eject_ready, seed, max_cycles, expected,
                              idle_cycles=32, router=None if sound else router,
                              text=emitted(fabric.spec) if sound else None)
    harness = FabricHarness(fabric, eject_ready=eject_ready, seed=seed)
    for node, request in requests:
        harness.send(node, request)
    return harness.run(max_cycles, expected_deliveries=expected, idle_cycles=32)


def problems_of(harness):
    spec = harness.spec
    return check_run(spec.nodes, harness.injected, harness.hops, harness.deliveries,
                     spec.order, ports=spec.ports)


def all_pairs(n):
    return [(src, Request(payload=src * n + dest, dest=dest))
            for src in range(n) for dest in range(n)]


def broadcasts(n):
    return [(src, Request(payload=src, kind=Kind.BROADCAST)) for src in range(n)]


@pytest.mark.parametrize("n, depth, order", slow_unless([
    (1, 1, "msb"), (2, 1, "msb"), (3, 1, "msb"), (5, 1, "msb"), (7, 1, "msb"),
    (8, 1, "msb"), (13, 1, "msb"), (26, 1, "msb"),
    (13, 2, "msb"), (3, 1, "lsb"), (3, 2, "lsb"), (8, 1, "lsb"), (13, 2, "lsb"),
], below(13)))
def test_all_pairs_unicast(n, depth, order):
    """Every (src, dest) message arrives once, at dest, with its src and payload, after
    exactly popcount(src XOR dest) hops along the Algorithm 2 path."""
    harness = run_fabric(Fabric(n, depth=depth, order=order), all_pairs(n))
    assert problems_of(harness) == []
    assert len(harness.deliveries) == n * n
    assert len(harness.hops) == sum(bin(s ^ d).count("1") for s in range(n) for d in range(n))


@pytest.mark.parametrize("n, order", slow_unless([(n, "msb") for n in (2, 3, 5, 8, 13, 26)]
                         + [(n, "lsb") for n in (5, 8, 13)], below(13)))
def test_broadcast_from_every_source(n, order):
    """Broadcasts from all nodes at once: every other node gets exactly one copy of each,
    the origin none, and each copy travels the unicast path; n - 1 link messages each."""
    harness = run_fabric(Fabric(n, order=order), broadcasts(n))
    assert problems_of(harness) == []
    assert len(harness.deliveries) == n * (n - 1)
    assert len(harness.hops) == n * (n - 1)
    # The travel vectors on the links are those of Katseff's Algorithm 6 (mirrored for lsb).
    for src in range(n):
        seen = sorted((hop.node, hop.far, hop.message.travel)
                      for hop in harness.hops if hop.message.payload == src)
        assert seen == sorted(topology.broadcast_tree(n, src, order))


def random_traffic(n, count, seed, broadcast_share=0.1, bad_share=0.0):
    """``count`` requests from random PEs: unicasts to random nodes, some broadcasts and,
    where the address width allows, some destinations that do not exist."""
    rng = random.Random(seed)
    addresses = 1 << topology.address_bits(n)
    requests = []
    for payload in range(count):
        src = rng.randrange(n)
        roll = rng.random()
        if roll < broadcast_share:
            requests.append((src, Request(payload=payload, kind=Kind.BROADCAST)))
        elif roll < broadcast_share + bad_share and addresses > n:
            requests.append((src, Request(payload=payload, dest=rng.randrange(n, addresses))))
        else:
            requests.append((src, Request(payload=payload, dest=rng.randrange(n))))
    return requests


@pytest.mark.parametrize("n, depth, eject_ready", slow_unless([
    (13, 1, 0.3), (26, 1, 0.5), (26, 2, 0.2), (7, 3, 0.1),
], below(13)))
def test_random_traffic_under_eject_backpressure(n, depth, eject_ready):
    """Unicasts and broadcasts together, PEs that accept at random: nothing is lost,
    duplicated or altered."""
    requests = random_traffic(n, 12 * n, seed=n * 10 + depth)
    harness = run_fabric(Fabric(n, depth=depth), requests, eject_ready=eject_ready, seed=depth)
    assert problems_of(harness) == []
    assert len(harness.injected) == len(requests)


@pytest.mark.parametrize("n", slow_unless([1, 5, 26], below(13)))
def test_bad_destination_is_refused_and_counted(n):
    """Injections to nodes that do not exist are taken, dropped and counted at their PE;
    the rest of the traffic is delivered."""
    requests = random_traffic(n, 10 * n, seed=n, broadcast_share=0.1, bad_share=0.3)
    bad = [0] * n
    for src, request in requests:
        if request.kind == Kind.UNICAST and request.dest >= n:
            bad[src] += 1
    assert sum(bad) > 0
    harness = run_fabric(Fabric(n), requests)
    assert problems_of(harness) == []
    assert harness.refused_count == bad
    assert harness.refused == [count > 0 for count in bad]


@pytest.mark.parametrize("n", slow_unless([5, 8], below(13)))
def test_broadcast_check_catches_broken_travel_rule(n):
    harness = run_fabric(Fabric(n, router=faulty_router("broken-travel")), broadcasts(n),
                         max_cycles=400)
    assert any("delivered" in problem for problem in problems_of(harness))


@pytest.mark.parametrize("n, order", slow_unless([(8, "msb"), (13, "lsb")], below(13)))
def test_scoreboard_catches_a_router_that_drives_a_dest_bit_it_does_not_know(n, order):
    """Negative control of the known dest bits (``Router.known_dest_mask``): with one
    dimension too many driven from the address, unicasts are altered on their links."""
    harness = run_fabric(Fabric(n, order=order,
                                router=faulty_router("known-dest-one-too-many")),
                         all_pairs(n), max_cycles=2000)
    assert any("altered on a link" in problem for problem in problems_of(harness))


def test_fabric_check_catches_a_router_without_the_turns_of_missing_links():
    # n = 3: node 1 has no link 1; its message for node 2 turns at node 0 from link 0 to 1.
    harness = run_fabric(Fabric(3, router=faulty_router("no-turn-up")), all_pairs(3),
                         max_cycles=400)
    assert "unicast 5 from 1 to 2 was delivered 0 times" in problems_of(harness)


def test_scoreboard_catches_a_bad_destination_let_in():
    n = 5
    requests = [(0, Request(payload=1, dest=7)), (1, Request(payload=2, dest=4))]
    harness = run_fabric(Fabric(n, router=faulty_router("refuse-nothing")), requests,
                         max_cycles=200)
    assert any("names no node but entered" in problem for problem in problems_of(harness))


#: The fabric of the zero-load latency checks, and its node pairs: the longest paths (4 hops)
#: both ways, a local delivery (0 hops) and two of 3 hops.
LATENCY_NODES = 13
LATENCY_PAIRS = [(7, 8), (8, 7), (3, 12), (5, 5), (1, 10), (12, 2)]


@pytest.mark.slow
def test_zero_load_latency_is_hops_plus_one():
    """Alone in the fabric, a message taken in cycle t is delivered in cycle t + hops + 1:
    one cycle per link, one from the injection buffer to the first link or the PE."""
    n, pairs = LATENCY_NODES, LATENCY_PAIRS
    requests = [(src, Request(payload=k, dest=dest, at=12 * k))
                for k, (src, dest) in enumerate(pairs)]
    harness = run_fabric(Fabric(n), requests)
    assert problems_of(harness) == []
    taken = {request.payload: cycle for cycle, _, request in harness.injected}
    for delivery in harness.deliveries:
        message = delivery.message
        hops = bin(message.src ^ message.dest).count("1")
        assert delivery.cycle - taken[message.payload] == hops + 1


@pytest.mark.parametrize("n, depth", slow_unless([(5, 1), (13, 1), (13, 2)], below(13)))
def test_link_stages_deliver_everything_once(n, depth):
    """With a relay on every outgoing link, every unicast and broadcast still arrives once,
    along its path."""
    harness = run_fabric(Fabric(n, depth=depth, link_stages=1), all_pairs(n) + broadcasts(n))
    assert problems_of(harness) == []
    assert len(harness.deliveries) == n * n + n * (n - 1)


@pytest.mark.slow
def test_zero_load_latency_with_link_stages_is_two_per_hop():
    """A relay on each link adds one cycle per hop: delivered in cycle t + 2 hops + 1."""
    n, pairs = LATENCY_NODES, LATENCY_PAIRS
    requests = [(src, Request(payload=k, dest=dest, at=12 * k))
                for k, (src, dest) in enumerate(pairs)]
    harness = run_fabric(Fabric(n, link_stages=1), requests)
    assert problems_of(harness) == []
    taken = {request.payload: cycle for cycle, _, request in harness.injected}
    assert len(harness.deliveries) == len(pairs)
    for delivery in harness.deliveries:
        message = delivery.message
        hops = bin(message.src ^ message.dest).count("1")
        assert delivery.cycle - taken[message.payload] == 2 * hops + 1


@pytest.mark.parametrize("fault, complaint", [("drop", "delivered 0 times"),
                                              ("duplicate", "delivered 2 times")])
def test_scoreboard_catches_a_buffer_that_drops_or_duplicates(fault, complaint):
    router = buffer_fault_router(fault, every=5, first=5)  # every fifth message
    harness = run_fabric(Fabric(8, router=router), all_pairs(8), max_cycles=600)
    assert any(complaint in problem for problem in problems_of(harness))


@pytest.mark.parametrize("args, error, message", [
    ((0,), ValueError, r"^Node count must be a positive integer, not 0$"),
    ((26, 0), ValueError, r"^Payload width must be a positive integer, not 0$"),
    ((26, 32, 0), ValueError, r"^Buffer depth must be a positive integer, not 0$"),
])
def test_wrong_parameters(args, error, message):
    with pytest.raises(error, match=message):
        Fabric(*args)


@pytest.mark.parametrize("stages, error", [(2, ValueError), (-1, ValueError),
                                           (True, TypeError), ("1", TypeError)])
def test_wrong_link_stages(stages, error):
    with pytest.raises(error, match=rf"^Link stages must be 0 or 1, not {stages!r}$"):
        Fabric(5, link_stages=stages)
