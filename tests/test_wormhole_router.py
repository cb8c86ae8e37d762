"""The wormhole router and fabric in simulation (Amaranth's; from :data:`REPLAY_FROM` nodes
on, the emitted Verilog in Icarus), checked flit by flit.

Every run is checked by :func:`ihcube.verify.scoreboard.check_worms`: each (link, virtual
channel) and each eject port carries whole worms one after another, each message is delivered
once along its Algorithm 2 path, each broadcast once to every other node along the unicast
paths (Katseff, Theorems 3 and 4). The negative controls run the same checks on the routers of
:data:`ihcube.verify.faults.WORMHOLE_FAULTS` and must fail.
"""

import random

import pytest

from ihcube import topology
from ihcube.params import head_fields, header_bits, wormhole_parameters
from ihcube.rtl import VcAllocator, WormholeFabric
from ihcube.rtl.message import Kind
from ihcube.spec import FabricSpec, as_wormhole_spec
from ihcube.verify import faults
from ihcube.verify.harness import Request, WormholeHarness, simulate
from ihcube.verify.scoreboard import check_worms
from ihcube.verify.wormhole_replay import replay_worms
from tiers import below, slow_unless


#: Runs of this many nodes and more replay the emitted Verilog in Icarus
#: (:func:`ihcube.verify.wormhole_replay.replay_worms`, the harness's records:
#: ``tests/test_wormhole_replay.py``); smaller ones run the harness on Amaranth's simulator,
#: which is the cheaper there (``docs/verification.md``).
REPLAY_FROM = 8


def run(n, requests, *, vcs=2, vc_depth=2, flits=4, order="msb", router=None, eject_ready=1.0,
        seed=0, cycles=4000, width=16):
    # 16-bit flits hold the header up to 13 nodes (9 bits) and a 7-bit message id above it.
    payload = 16 if width == 16 else width * flits - header_bits(n)
    wormhole = wormhole_parameters(n, payload, flits=flits, flit_width=width, vcs=vcs,
                                   vc_depth=vc_depth)
    extra = {} if router is None else {"router": router}
    if n >= REPLAY_FROM:
        harness = replay_worms(as_wormhole_spec(n, wormhole, order), requests, eject_ready, seed,
                               cycles, **extra)
    else:
        harness = WormholeHarness(WormholeFabric(n, wormhole, order, **extra), eject_ready,
                                  seed)
        for node, request in requests:
            harness.send(node, request)
        harness.run(cycles)
    return harness, check_worms(n, wormhole, harness.injected, harness.flits, order)


def all_pairs(n, broadcasts=True):
    """A unicast from every node to every node (itself included), then a broadcast from each."""
    requests, ident = [], 1
    for src in range(n):
        for dest in range(n):
            requests.append((src, Request(ident, dest)))
            ident += 1
    if broadcasts:
        for src in range(n):
            requests.append((src, Request(ident, 0, Kind.BROADCAST)))
            ident += 1
    return requests


def random_traffic(n, count, seed, broadcast=0.15, spread=60):
    rng = random.Random(seed)
    requests = []
    for ident in range(1, count + 1):
        kind = Kind.BROADCAST if rng.random() < broadcast else Kind.UNICAST
        dest = rng.randrange(n) if kind == Kind.UNICAST else 0
        requests.append((rng.randrange(n), Request(ident, dest, kind, rng.randrange(spread))))
    return requests


@pytest.mark.slow
@pytest.mark.parametrize("n, order", slow_unless([(1, "msb"), (2, "msb"), (3, "msb"), (5, "msb"),
                                      (8, "lsb"), (13, "msb")], below(13)))
def test_all_pairs_and_a_broadcast_from_every_node(n, order):
    harness, problems = run(n, all_pairs(n), order=order)
    assert harness.stalled_at is None
    assert problems == []
    owed = sum(harness.owed(request) for _, _, request in harness.injected)
    assert len(harness.injected) == n * n + n
    assert sum(flit.dim is None for flit in harness.flits) == owed


@pytest.mark.slow
@pytest.mark.parametrize("n, vcs, vc_depth, eject_ready, order", [(7, 3, 2, 0.5, "msb"),
                                                                  (6, 1, 1, 0.4, "lsb")])
def test_random_traffic_with_broadcasts_under_eject_backpressure(n, vcs, vc_depth, eject_ready,
                                                                 order):
    requests = random_traffic(n, 10 * n, seed=n, spread=15)
    harness, problems = run(n, requests, vcs=vcs, vc_depth=vc_depth, eject_ready=eject_ready,
                            seed=n, cycles=20000, order=order)
    assert harness.stalled_at is None
    assert problems == []
    assert len(harness.injected) == len(requests)
    # Several virtual channels of a link were in use at once (the traffic does load them).
    if vcs > 1:
        assert {flit.vc for flit in harness.flits if flit.dim is not None} >= set(range(vcs))


@pytest.mark.slow
@pytest.mark.parametrize("vc_depth, gap", [(1, 2), (2, 1)])
def test_zero_load_latency_is_two_cycles_per_hop_then_a_flit_per_cycle(vc_depth, gap):
    # docs/wormhole.md, "Cycle by cycle": the head is delivered 2 (h + 1) cycles after the
    # injection takes it, h the hops; a unicast's other flits follow `gap` cycles apart (one
    # per cycle with two flits of buffering, every other cycle with one), a broadcast's one
    # per cycle on every branch whatever the depth (its buffers hold a whole message).
    n = 8
    pairs = [(0, 7), (7, 2), (5, 5), (3, 4), (6, 1)]
    requests = [(src, Request(k + 1, dest, at=30 * k)) for k, (src, dest) in enumerate(pairs)]
    requests.append((6, Request(9, 0, Kind.BROADCAST, at=30 * len(pairs))))
    harness, problems = run(n, requests, vc_depth=vc_depth)
    assert problems == []
    assert len(harness.injected) == len(requests)
    for taken, src, request in harness.injected:
        targets = ([node for node in range(n) if node != src]
                   if request.kind == Kind.BROADCAST else [request.dest])
        step = 1 if request.kind == Kind.BROADCAST else gap
        for node in targets:
            hops = topology.distance(n, src, node)
            ejected = [flit.cycle for flit in harness.flits
                       if flit.dim is None and flit.node == node
                       and taken <= flit.cycle < taken + 30]
            assert ejected == [taken + 2 * (hops + 1) + step * k for k in range(4)], \
                (src, node, request)


def test_a_message_for_a_node_that_does_not_exist_is_taken_whole_and_dropped():
    n = 5
    requests = [(1, Request(1, 7)), (1, Request(2, 3)), (2, Request(3, 6)), (4, Request(4, 0))]
    harness, problems = run(n, requests)
    assert problems == []
    assert harness.refused_count == [0, 1, 1, 0, 0]
    assert sum(flit.dim is None for flit in harness.flits) == 2 * 4


@pytest.mark.slow
def test_one_flit_messages():
    n = 6
    # One flit is head and tail; its 8 bits above the 7-bit header carry the message.
    wormhole = wormhole_parameters(n, 8, flits=1, flit_width=15, vcs=2, vc_depth=1)
    harness = WormholeHarness(WormholeFabric(n, wormhole), 0.7, 3)
    for node, request in random_traffic(n, 40, seed=5, spread=30):
        harness.send(node, request)
    harness.run(4000)
    assert harness.stalled_at is None
    assert check_worms(n, wormhole, harness.injected, harness.flits) == []


#: Flits narrower than the header (src runs on into the second flit), and how many messages
#: (their ids must fit the third flit): 26 nodes at 8 bits as the FPGA table builds them (2
#: bits of src in the head, 3 in the second flit), 13 nodes at 8 bits (3 and 1), 5 nodes at 6
#: bits (2 and 1), 13 nodes at 5 bits (the routing fields alone, src whole in the second).
NARROW = [(26, 8, 6, 30), (13, 8, 4, 40), (5, 6, 3, 20), (13, 5, 3, 9)]


@pytest.mark.parametrize("n, width, flits, count", slow_unless(NARROW, below(13)))
def test_narrow_flits_carry_src_into_the_second_flit(n, width, flits, count):
    assert head_fields(n, width).src_width(1) > 0
    requests = random_traffic(n, count, seed=n + width, broadcast=0.3, spread=40)
    harness, problems = run(n, requests, flits=flits, width=width, eject_ready=0.7, seed=n,
                            cycles=3000)
    assert harness.stalled_at is None
    assert problems == []
    assert len(harness.injected) == count
    assert any(request.kind == Kind.BROADCAST for _, _, request in harness.injected)
    assert any(request.kind == Kind.UNICAST for _, _, request in harness.injected)


@pytest.mark.slow
def test_src_stamped_into_the_wrong_flit_is_caught():
    """Negative control: the router that stamps src's high bits one flit late (at 5 nodes
    with 6-bit flits, where src's high bit runs on into the second flit)."""
    n, width, flits, count = NARROW[2]
    requests = random_traffic(n, count, seed=n + width, broadcast=0.3, spread=40)
    _, problems = run(n, requests, flits=flits, width=width, eject_ready=0.7, seed=n,
                      cycles=3000, router=faults.SrcOneFlitLateRouter)
    assert any("is not whole and in order" in problem for problem in problems)


# --- Negative controls: the same checks on broken routers -------------------------------------


#: The traffic of the negative controls: the real router carries it cleanly
#: (test_the_negative_controls_pass_only_because_they_are_broken), so a failure is the fault's.
FAULT_TRAFFIC = dict(n=5, count=40, seed=2, broadcast=0.1, spread=20)


def fault_run(router=None):
    traffic = dict(FAULT_TRAFFIC)
    n = traffic.pop("n")
    return run(n, random_traffic(n, **traffic), router=router, cycles=3000)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["dropping-flit-buffer", "duplicating-flit-buffer",
                                  "shared-channel"])
def test_the_scoreboard_catches_a_broken_router(name):
    harness, problems = fault_run(faults.WORMHOLE_FAULTS[name])
    assert problems, f"{name} went unnoticed"


def test_a_router_that_does_not_release_on_tail_stalls_and_the_watchdog_says_so():
    harness, problems = fault_run(faults.WORMHOLE_FAULTS["no-release-on-tail"])
    assert harness.stalled_at is not None
    assert problems  # messages owed were never delivered


@pytest.mark.slow
def test_the_negative_controls_pass_only_because_they_are_broken():
    harness, problems = fault_run()
    assert harness.stalled_at is None and problems == []


# --- Fairness of virtual-channel allocation ---------------------------------------------------


def allocator_waits(allocator_class, requesters, vcs, cycles=300, seed=1):
    """Drive a VcAllocator with requesters that keep asking and worms that hold a channel a
    random time; return the most grants to others that any request waited through."""
    allocator = allocator_class(requesters, vcs)
    rng = random.Random(seed)
    worst = [0]

    async def testbench(ctx):
        waiting = [True] * requesters
        others = [0] * requesters
        holding = {}  # vc -> cycles left
        for _ in range(cycles):
            ctx.set(allocator.requests, sum(1 << j for j in range(requesters) if waiting[j]))
            release = sum(1 << v for v, left in holding.items() if left == 0)
            ctx.set(allocator.release, release)
            grant = ctx.get(allocator.grant)
            if grant:
                j = grant.bit_length() - 1
                holding[ctx.get(allocator.vc)] = rng.randrange(1, 4)
                for other in range(requesters):
                    if other != j and waiting[other]:
                        others[other] += 1
                        worst[0] = max(worst[0], others[other])
                others[j] = 0
            for v in [v for v, left in holding.items() if left == 0]:
                del holding[v]
            holding = {v: left - 1 for v, left in holding.items()}
            await ctx.tick()

    simulate(allocator, testbench)
    return worst[0]


@pytest.mark.parametrize("requesters, vcs", [(3, 1), (5, 2), (7, 3)])
def test_a_waiting_head_is_granted_within_requesters_minus_one_grants_to_others(requesters, vcs):
    assert allocator_waits(VcAllocator, requesters, vcs) <= requesters - 1


def test_a_fixed_priority_allocator_breaks_the_bound():
    assert allocator_waits(faults.UnfairAllocator, 5, 1) > 5 - 1


@pytest.mark.parametrize("name", sorted(faults.WORMHOLE_FAULTS))
def test_every_faulty_wormhole_router_elaborates_and_says_what_catches_it(name):
    from amaranth.hdl import Fragment
    router = faults.WORMHOLE_FAULTS[name]
    assert "Caught by" in router.__doc__, f"{name}: say which check must catch it"
    # Called as a fabric calls its router factory: router(spec, node, strap=True).
    spec = FabricSpec.of(5, 16, switching="wormhole", flits=4, flit_width=16, vcs=2)
    assert Fragment.get(router(spec, 1, strap=True), None).subfragments
