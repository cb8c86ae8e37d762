"""The compiled wormhole model (:mod:`ihcube.sim.wormhole_fast`) against the reference model
and the RTL.

:class:`~ihcube.sim.wormhole_fast.FastWormholeModel` must do, cycle by cycle, what
:class:`~ihcube.sim.wormhole_model.WormholeModel` does (the same injection handshakes, flits
on the same (link, virtual channel), eject handshakes, and the same registers at the end), on
the traffic of ``tests/test_wormhole_model.py`` (unicasts, broadcasts, destinations that do
not exist, random eject backpressure), and what the RTL does on two configurations. The
reference's broken variants, mixed into the fast model, change the tables the kernel is built
from (route selector, channel choice, allocator start, reset room, tail release, travel): the
same comparisons must catch each of them at its first differing cycle. Its message-level
interface (``offer``/``advance``) must give the events of the flit-level ``step``.
"""

import random

import numpy as np
import pytest

from ihcube import topology
from ihcube.params import wormhole_parameters
from ihcube.rtl.message import Kind
from ihcube.sim import wormhole_kernel
from ihcube.sim.wormhole_fast import FastWormholeModel
from ihcube.sim.wormhole_model import WormholeModel
from ihcube.verify.harness import Request, worm_flits
from ihcube.verify.scoreboard import check_worms
from test_wormhole_model import (CONTROL, LONG, NARROW, AllocatorStartsAtZero, BrokenTravel,
                                 HighestFreeChannel, ReadyInReset, RoutedInTheOtherOrder,
                                 TailKeepsTheChannel, all_pairs, first_difference, lockstep,
                                 model_worms, parameters, run_model, small, traffic)

#: State arrays of the reference model (compared at the end of each lockstep run).
STATE = ("fifo", "fifo_head", "fifo_tail", "count", "room", "entries", "written", "idle",
         "read", "routed", "want_reg", "held", "ovc", "busy", "alloc_last", "sw_last",
         "sw_locked", "sw_held", "index", "refusing", "broadcasting", "refused",
         "refused_count")

#: (n, vcs, vc_depth, order, flits, cycles): the corners the issue names (one node, one
#: flit, 20 flits, depth 3, incomplete sizes, 64 nodes), then random configurations.
CORNERS = [
    (1, 1, 1, "msb", 1, 100), (2, 3, 3, "lsb", 20, 400), (3, 2, 1, "msb", 1, 300),
    (7, 1, 3, "lsb", 7, 300), (12, 3, 1, "msb", 20, 400), (19, 2, 2, "lsb", 3, 200),
    (26, 3, 2, "msb", 5, 200), (33, 1, 1, "lsb", 2, 150), (64, 3, 2, "msb", 4, 100),
    (45, 3, 3, "lsb", 11, 120),
]


def random_configurations(count, seed=16):
    rng = random.Random(seed)
    return [(rng.randint(1, 64), rng.randint(1, 3), rng.randint(1, 3),
             rng.choice(["msb", "lsb"]), rng.randint(1, 20), 150) for _ in range(count)]


CONFIGURATIONS = CORNERS + random_configurations(10)


def compare(fast_class, n, vcs, vc_depth, order, flits, cycles, seed=None, width=None):
    """Run the reference and ``fast_class`` on the same traffic (``width``-bit flits, by
    default the header and a few bits); return the first difference of their events (or
    None), the two models and the reference's events."""
    wormhole = parameters(n, vcs, vc_depth, flits, width=width)
    queues, eject_ready = traffic(n, wormhole, cycles, seed=n * 7 + flits if seed is None
                                  else seed)
    reference, fast = WormholeModel(n, wormhole, order), fast_class(n, wormhole, order)
    events, refused = run_model(reference, queues, eject_ready)
    fast_events, fast_refused = run_model(fast, queues, eject_ready)
    difference = first_difference(events, fast_events)
    if difference is None and refused != fast_refused:
        difference = f"refusal counts: reference {refused}, fast {fast_refused}"
    return difference, reference, fast, events


@pytest.mark.parametrize("n, vcs, vc_depth, order, flits, cycles", CONFIGURATIONS)
def test_lockstep_with_the_reference_model(n, vcs, vc_depth, order, flits, cycles):
    """Every handshake and flit in the same cycle; every register the same at the end."""
    difference, reference, fast, events = compare(FastWormholeModel, n, vcs, vc_depth, order,
                                                  flits, cycles)
    assert difference is None
    # The run exercised the fabric: flits ejected, and on links (channel 0 and another).
    kinds = {event[0] for event in events}
    assert kinds == ({"inject", "eject"} if n == 1 else {"inject", "eject", "hop"})
    used = {event[4] for event in events if event[0] == "hop"}
    assert n == 1 or (0 in used and len(used) >= 2)
    for name in STATE:
        assert np.array_equal(getattr(reference, name), getattr(fast, name)), name
    assert fast.cycle == reference.cycle == cycles


@pytest.mark.parametrize("n, vcs, vc_depth, order, flits, cycles, width",
                         NARROW + [(26, 3, 2, "msb", 6, 200, 8), (64, 2, 1, "lsb", 5, 150, 9)])
def test_lockstep_with_the_reference_model_on_flits_narrower_than_the_header(
        n, vcs, vc_depth, order, flits, cycles, width):
    """Where ``src`` runs on into the second flit (ihcube.params.HeadFields), the kernel
    reads ``kind`` and stamps ``src`` where the reference does."""
    difference, reference, fast, _ = compare(FastWormholeModel, n, vcs, vc_depth, order,
                                             flits, cycles, width=width)
    assert difference is None
    for name in STATE:
        assert np.array_equal(getattr(reference, name), getattr(fast, name)), name


class SrcNotInTheSecondFlit(FastWormholeModel):
    """Broken: stamps only the head flit's part of ``src``; the second flit keeps the PE's
    bits."""

    def _src_place(self):
        return (*super()._src_place()[:3], 0)


class SrcInOneFlit(FastWormholeModel):
    """Broken: reads and stamps the head as if the header fitted in one flit."""

    def _src_place(self):
        a = self.abits
        return 2 * a, a, a, 0


@pytest.mark.parametrize("variant", [SrcNotInTheSecondFlit, SrcInOneFlit],
                         ids=lambda variant: variant.__name__)
def test_lockstep_catches_a_kernel_with_src_in_the_wrong_place(variant):
    """Negative controls for the narrow flits: each broken placement differs from the
    reference on 8-bit flits at 26 nodes."""
    difference, _, _, _ = compare(variant, 26, 3, 2, "msb", 6, 200, width=8)
    assert difference is not None


#: Against the RTL: three configurations (the RTL simulations of ``test_wormhole_model.py``'s
#: lockstep, shared), and in the long tier (``make test-long``) the reference test's long ones
#: too (26 nodes, 20 flits).
RTL_CONFIGURATIONS = [CONTROL, (8, 1, 2, "msb", 3, 300), NARROW[0]]


@pytest.mark.parametrize("config", [
    config if small(config) else pytest.param(config, marks=pytest.mark.slow)
    for config in RTL_CONFIGURATIONS] + [pytest.param(config, marks=pytest.mark.long)
                                         for config in LONG])
def test_lockstep_with_rtl(config):
    """The fast model against the Amaranth simulation of the fabric, as the reference is."""
    difference, refused, model_refused = lockstep(FastWormholeModel, *config)
    assert difference is None
    assert model_refused == refused


# Broken kernels: the reference's broken rules, built into the fast model's tables.

BROKEN = [AllocatorStartsAtZero, HighestFreeChannel, ReadyInReset, TailKeepsTheChannel,
          BrokenTravel, RoutedInTheOtherOrder]


def broken_fast(variant):
    """``variant``'s rule in the fast model (its hook, FastWormholeModel's kernel)."""
    return type(f"Fast{variant.__name__}", (variant, FastWormholeModel), {})


@pytest.mark.parametrize("variant", BROKEN, ids=lambda variant: variant.__name__)
def test_lockstep_catches_a_broken_kernel(variant):
    """Each broken kernel differs from the reference model, at a cycle the comparison
    names (a buffer with room in reset: at cycle 0), and from the RTL."""
    difference, _, _, _ = compare(broken_fast(variant), *CONTROL)
    assert difference is not None and difference.startswith("cycle ")
    if variant is ReadyInReset:
        assert difference.startswith("cycle 0, inject at node ")
    difference, _, _ = lockstep(broken_fast(variant), *CONTROL)
    assert difference is not None and difference.startswith("cycle ")


class NoWakeOnPop(FastWormholeModel):
    """A kernel whose blocked channels sleep and are never woken by the far buffer's pop."""
    _wakes = wormhole_kernel.WAKE_ON_RELEASE


class NoWakeOnRelease(FastWormholeModel):
    """A kernel whose heads waiting for an output channel are never woken by a tail."""
    _wakes = wormhole_kernel.WAKE_ON_POP


@pytest.mark.slow
@pytest.mark.parametrize("variant", [NoWakeOnPop, NoWakeOnRelease],
                         ids=lambda variant: variant.__name__)
def test_lockstep_catches_a_kernel_whose_sleepers_never_wake(variant):
    """A unicast channel blocked by a full far buffer is not visited until that buffer pops,
    a head that waits while every channel of its output is busy until a tail frees one (the
    kernel's own shortcuts, no rule of the reference): without the wake-up, the lockstep
    runs see the blocked worm's next flit missing, at the cycle it should cross."""
    for config in [CONTROL] + CORNERS[1:]:
        difference, _, _, _ = compare(variant, *config)
        assert difference is not None and difference.startswith("cycle "), config


def clock_jumps(at, to):
    """The fast model with its clock set from cycle ``at`` to cycle ``to`` (the reference's
    clock is only its cycle count: nothing it does depends on it after cycle 0)."""
    class ClockJumps(FastWormholeModel):
        def step(self, inject_valid, inject_payload, eject_ready):
            if self.cycle == at:
                self.cycle = to
            return super().step(inject_valid, inject_payload, eject_ready)
    return ClockJumps


@pytest.mark.slow
@pytest.mark.parametrize("config", [CONTROL, (33, 1, 1, "lsb", 2, 300)])
def test_pop_stamps_wrap_after_two_to_the_31_cycles(config):
    """The kernel's pop stamps are a cycle's low 31 bits, wiped when they wrap: across the
    wrap it still does what the reference does. Negative control: a clock that jumps past the
    wipe (stamps of 60 cycles ago taken for this cycle's, as without the wipe) is caught."""
    assert compare(clock_jumps(60, (1 << 31) - 1), *config)[0] is None
    difference = compare(clock_jumps(60, (1 << 31) + 1), *config)[0]
    assert difference is not None and difference.startswith("cycle ")


def test_the_broken_kernels_are_the_fast_model():
    """The negative controls run the compiled step, not the reference's (else they would
    test the reference again)."""
    for variant in BROKEN:
        assert broken_fast(variant).step is FastWormholeModel.step


# The model alone against the topology rules, at sizes the reference is too slow for.

@pytest.mark.parametrize("n, order, vcs, vc_depth, eject_ready", [
    (20, "msb", 3, 2, 1.0), (37, "lsb", 2, 1, 0.5), (64, "msb", 1, 3, 0.7)])
def test_fast_model_follows_the_topology_rules(n, order, vcs, vc_depth, eject_ready):
    """All pairs and a broadcast from every node: the flit scoreboard finds whole worms,
    each unicast once along its Algorithm 2 path, each broadcast once per node."""
    wormhole = parameters(n, vcs, vc_depth, 4, spare=14)
    requests = all_pairs(n)
    injected, flits = model_worms(FastWormholeModel(n, wormhole, order), requests,
                                  eject_ready)
    assert len(injected) == len(requests)
    assert check_worms(n, wormhole, injected, flits, order) == []


def test_the_scoreboard_catches_a_broken_kernel():
    n = 20
    wormhole = parameters(n, 3, 2, 4, spare=10)
    injected, flits = model_worms(broken_fast(RoutedInTheOtherOrder)(n, wormhole),
                                  all_pairs(n), cycles=1500)
    assert check_worms(n, wormhole, injected, flits) != []


# Messages: offer and advance against the flit-level step.

def message_traffic(n, wormhole, count, seed):
    """``count`` random messages (one in eight a broadcast) as ``(node, at, words)``."""
    rng = random.Random(seed)
    bits = topology.address_bits(n)
    messages = []
    for i in range(count):
        node = rng.randrange(n)
        kind = Kind.BROADCAST if rng.random() < 0.125 else Kind.UNICAST
        dest = rng.randrange(1 << bits)
        head = dest | kind.value << 2 * bits | (i << 2 * bits + 1)
        words = [head] + [rng.getrandbits(wormhole.flit_width)
                          for _ in range(wormhole.flits - 1)]
        messages.append((node, rng.randrange(count // n * 4 + 1), words))
    return messages


def step_events(model, messages, eject_ready):
    """Drive ``model.step`` with each PE offering its messages in order."""
    queues = [[(at, words) for node, at, words in messages if node == a]
              for a in range(model.n)]
    events, _ = run_model(model, queues, eject_ready)
    heads, seen = [], [0] * model.n
    for event in events:
        if event[0] == "inject":
            node = event[2]
            if seen[node] % model.wormhole.flits == 0:
                heads.append((event[1], node))
            seen[node] += 1
    return heads, sorted(e for e in events if e[0] == "eject"), \
        sorted(e for e in events if e[0] == "hop")


def advance_events(model, messages, eject_ready, chunks=3):
    """The same through ``offer`` and ``advance`` (in a few calls)."""
    model.offer([node for node, _, _ in messages], [words for _, _, words in messages],
                [at for _, at, _ in messages])
    cycles = len(eject_ready)
    bounds = np.linspace(0, cycles, chunks + 1).astype(int)
    heads, ejects, hops = [], [], []
    for start, stop in zip(bounds, bounds[1:]):
        run = model.advance(stop - start, eject_ready[start:stop], record_hops=True,
                            record_ejects=True)
        heads += [(int(r["cycle"]), int(r["node"])) for r in run.injections]
        ejects += [("eject", int(r["cycle"]), int(r["node"]), int(r["flit"]))
                   for r in run.ejects]
        hops += [("hop", *map(int, r)) for r in run.hops]
    return heads, sorted(ejects), sorted(hops)


@pytest.mark.parametrize("n, vcs, vc_depth, flits, count", [
    (6, 3, 2, 4, 40), (13, 2, 1, 20, 60), (26, 3, 2, 5, 150)])
def test_advance_does_what_step_does(n, vcs, vc_depth, flits, count):
    wormhole = parameters(n, vcs, vc_depth, flits, spare=10)
    messages = message_traffic(n, wormhole, count, seed=n)
    rng = np.random.default_rng(n)
    eject_ready = (rng.random((600, n)) < 0.7).astype(np.uint8)
    expected = step_events(FastWormholeModel(n, wormhole), messages, eject_ready)
    model = FastWormholeModel(n, wormhole)
    got = advance_events(model, messages, eject_ready)
    assert got == expected
    assert len(got[0]) == count == model.injected  # all were taken
    assert model.ejected == len(got[1]) and model.transfers == len(got[2])
    # Negative control: the same messages offered a cycle later do not give the same events.
    later = [(node, at + 1, words) for node, at, words in messages]
    assert advance_events(FastWormholeModel(n, wormhole), later, eject_ready) != expected


def test_link_counts_are_the_recorded_hops():
    """``count_links`` counts each flit on its link direction: the recorded hops, tallied;
    a run that does not count them adds nothing."""
    n = 13
    wormhole = parameters(n, 3, 2, 5, spare=10)
    model = FastWormholeModel(n, wormhole)
    messages = message_traffic(n, wormhole, 80, seed=3)
    model.offer([node for node, _, _ in messages], [words for _, _, words in messages],
                [at for _, at, _ in messages])
    run = model.advance(300, record_hops=True, count_links=True)
    expected = np.zeros((n, topology.dimensions(n)), np.int64)
    np.add.at(expected, (run.hops["node"], run.hops["dim"]), 1)
    assert len(run.hops) > 100 and np.array_equal(model.link_counts, expected)
    assert model.link_counts.sum() == model.transfers
    model.offer([node for node, _, _ in messages], [words for _, _, words in messages])
    model.advance(300)
    assert np.array_equal(model.link_counts, expected) and model.transfers > expected.sum()


def test_advance_stops_when_delivered():
    n = 26
    wormhole = parameters(n, 3, 2, 20, spare=10)
    model = FastWormholeModel(n, wormhole)
    requests = [(a, Request(a, (a + 5) % n)) for a in range(n)]
    model.offer([a for a, _ in requests],
                [worm_flits(n, wormhole, a, request) for a, request in requests])
    run = model.advance(10_000, until_delivered=n)
    assert len(run.ejects) == n == model.delivered
    assert model.cycle < 10_000 and run.pending == 0
    assert all(flit >> wormhole.flit_width + 1 & 1 for flit in run.ejects["flit"])


def test_the_stress_runs_drive_the_fast_model_where_it_fits():
    """``verify.wormhole_stress.wormhole_model`` gives the compiled model, and the reference
    for parameters beyond the compiled model's words (its reason is the fast model's own
    error)."""
    from ihcube.spec import FabricSpec
    from ihcube.verify.wormhole_stress import wormhole_model
    assert type(wormhole_model(FabricSpec.of(26, switching="wormhole", flits=4))) is \
        FastWormholeModel
    wide = FabricSpec.of(100, switching="wormhole", flits=20, vcs=8)
    assert FastWormholeModel.beyond(100, wide.wormhole) == (
        "Virtual channel count must be at most 7 in the fast model for 100 nodes, not 8")
    assert type(wormhole_model(wide)) is WormholeModel
    # A flit narrower than the header (src in the second flit) runs on the compiled model too.
    narrow = FabricSpec.of(26, switching="wormhole", flits=6, flit_width=8)
    assert type(wormhole_model(narrow)) is FastWormholeModel


def test_fast_model_limits():
    """Configurations beyond the kernel's words are refused in one line."""
    with pytest.raises(ValueError, match=r"^Virtual channel count must be at most 4 in the "
                                         r"fast model for 2048 nodes, not 5$"):
        FastWormholeModel(2048, wormhole_parameters(2048, flits=20, vcs=5))
    with pytest.raises(ValueError, match=r"^Flit width must be at most 61 in the fast model, "
                                         r"not 62$"):
        FastWormholeModel(4, wormhole_parameters(4, 64, flits=2, flit_width=62))
    model = FastWormholeModel(4, wormhole_parameters(4, flits=2))
    with pytest.raises(ValueError, match=r"^Messages must be 2 flit words each"):
        model.offer([0], [[1, 2, 3]])
    with pytest.raises(ValueError, match=r"^Node must be from 0 to 3, not 4$"):
        model.offer([4], [[1, 2]])
