"""The wormhole model (:mod:`ihcube.sim.wormhole_model`) in lockstep with the RTL.

Each test runs the RTL of a :class:`~ihcube.rtl.WormholeFabric` (its emitted Verilog in
Icarus, or Amaranth's simulation for the smallest: :func:`rtl_record`) and a
:class:`~ihcube.sim.wormhole_model.WormholeModel` on the same PE traffic (random unicasts,
broadcasts and destinations that do not exist, flit words with random bits everywhere the
router should overwrite or ignore) and the same random eject backpressure, both drawn up front,
and compares every cycle's injection handshakes, flits on each (link, virtual channel) and
eject handshakes, flit bits and marks included; the first difference fails the test with its
cycle and port. Broken variants of the model must fail the same comparison.
"""

import random

import numpy as np
import pytest
from amaranth.hdl import Cat

from ihcube import topology
from ihcube.params import head_fields, header_bits, wormhole_parameters
from ihcube.rtl import WormholeFabric
from ihcube.rtl.message import Kind
from ihcube.sim.wormhole_model import WormholeModel
from ihcube.verify import faults
from ihcube.verify.harness import Flit, Request, simulate, worm_flits
from ihcube.verify.scoreboard import check_worms
from ihcube.verify.wormhole_replay import wormhole_replay
from test_model import first_difference as packet_first_difference
from tiers import shared, slow_unless

#: (n, vcs, vc_depth, order, flits, cycles): every size the issue names, both orders, one and
#: three virtual channels, depth one and two, one-flit and several-flit messages.
LOCKSTEP = [
    (1, 1, 1, "msb", 2, 120),
    (2, 3, 2, "lsb", 4, 250),
    (3, 1, 1, "msb", 1, 250),
    (5, 3, 1, "lsb", 4, 300),
    (8, 1, 2, "msb", 3, 300),
    (6, 3, 1, "msb", 4, 250),
    (8, 3, 2, "lsb", 1, 250),
    (13, 3, 2, "msb", 4, 250),
]

#: More configurations, longer runs, 26 nodes and Tzeng and Kumar's 20 flits: the ``long``
#: tier, which only ``make test-long`` runs (about three minutes more).
LONG = [
    (4, 2, 3, "msb", 5, 500), (7, 2, 1, "lsb", 2, 500), (16, 3, 2, "msb", 4, 300),
    (9, 1, 1, "lsb", 4, 400), (11, 3, 3, "msb", 1, 400), (6, 1, 2, "lsb", 6, 500),
    (12, 2, 2, "lsb", 3, 400), (3, 3, 1, "lsb", 4, 600), (2, 1, 1, "msb", 1, 600),
    (10, 3, 1, "msb", 2, 400), (14, 1, 2, "lsb", 4, 300), (5, 2, 2, "msb", 8, 500),
    (8, 3, 2, "msb", 20, 800), (26, 3, 2, "msb", 4, 200), (13, 1, 1, "lsb", 20, 600),
]

#: The configuration the broken model variants are compared on.
CONTROL = (5, 3, 1, "lsb", 4, 300)

#: (n, vcs, vc_depth, order, flits, cycles, flit_width): flits narrower than the header, so
#: that src runs on into the second flit (ihcube.params.HeadFields): 8-bit flits at 13 nodes
#: (3 bits of src in the head), 5 and 4 bits at 5 nodes (1 bit, none).
NARROW = [
    (13, 3, 2, "msb", 4, 250, 8),
    (5, 1, 1, "lsb", 3, 250, 5),
    (5, 2, 2, "msb", 4, 250, 4),
]

#: The long tier's narrow flits: 26 nodes at 8 bits, as on the FPGA.
NARROW_LONG = [(26, 3, 2, "msb", 6, 150, 8)]


def small(config):
    """The lockstep configurations of ``make check``: up to 5 nodes."""
    return config[0] <= 5


def long(configurations):
    """``configurations`` marked ``long``: run by ``make test-long`` only."""
    return [pytest.param(*config, marks=pytest.mark.long) for config in configurations]


def parameters(n, vcs, vc_depth, flits, spare=3, width=None):
    """The wormhole parameters: ``width``-bit flits, by default the narrowest flit that holds
    the header and ``spare`` more bits."""
    width = header_bits(n) + spare if width is None else width
    return wormhole_parameters(n, width * flits - header_bits(n), flits=flits,
                               flit_width=width, vcs=vcs, vc_depth=vc_depth)


def traffic(n, wormhole, cycles, seed):
    """Return ``(queues, eject_ready)``: per node, a list of ``(at, words)`` messages, each
    offered from cycle ``at`` on, and a ``(cycles, n)`` eject-ready pattern.

    Load comes in phases (a burst from cycle 0, when no buffer is ready yet, a pause, light,
    heavy, medium); one message in eight is a broadcast, one unicast in eight names a node
    that does not exist where the address width allows. Head words carry random ``src`` bits
    (the router stamps its own) and a broadcast random ``dest`` bits (it writes the travel
    vector). Each PE accepts with its own probability and every so often a third stall.
    """
    rng = random.Random(seed)
    bits = topology.address_bits(n)
    addresses = 1 << bits
    width = wormhole.flit_width
    fields = head_fields(n, width)
    queues = [[] for _ in range(n)]
    phases = [(0.5, 4), (0.0, 20), (0.03, cycles // 4), (0.3, cycles // 4),
              (0.1, cycles // 4)]
    start = 0
    for rate, length in phases:
        for cycle in range(start, start + length):
            for node in range(n):
                if rng.random() >= rate:
                    continue
                roll = rng.random()
                if roll < 0.12:
                    kind, dest = Kind.BROADCAST, rng.randrange(addresses)
                elif roll < 0.24 and addresses > n:
                    kind, dest = Kind.UNICAST, rng.randrange(n, addresses)
                else:
                    kind, dest = Kind.UNICAST, rng.randrange(n)
                if width >= header_bits(n):
                    head = (dest | rng.randrange(addresses) << bits | kind.value << 2 * bits
                            | rng.getrandbits(width - header_bits(n)) << header_bits(n))
                else:  # random bits where src starts, above the routing fields
                    head = (dest | kind.value << fields.kind_bit
                            | rng.getrandbits(width - bits - 1) << bits + 1)
                words = [head] + [rng.getrandbits(width) for _ in range(wormhole.flits - 1)]
                queues[node].append((cycle, words))
        start += length
    accept = [rng.choice([1.0, 0.8, 0.5, 0.25]) for _ in range(n)]
    eject_ready = np.zeros((cycles, n), np.uint8)
    for cycle in range(cycles):
        stall = (cycle // 30) % 5 == 2
        for node in range(n):
            eject_ready[cycle, node] = rng.random() < accept[node] and not (
                stall and node % 3 == 0)
    return queues, eject_ready


class Sources:
    """The PEs' injection side: each offers its queue's flits in order, a message's first
    flit from its ``at`` cycle on."""

    def __init__(self, queues):
        self.words = [[(at if i == 0 else 0, word) for at, words in queue
                       for i, word in enumerate(words)] for queue in queues]
        self.next = [0] * len(queues)

    def offers(self, cycle):
        """Each node's ``(valid, word)`` in this cycle."""
        offers = []
        for node, words in enumerate(self.words):
            i = self.next[node]
            valid = i < len(words) and words[i][0] <= cycle
            offers.append((valid, words[i][1] if valid else 0))
        return offers

    def taken(self, node):
        self.next[node] += 1


def run_rtl(fabric, queues, eject_ready):
    """Simulate ``fabric``; return its events, ``("inject", cycle, node)``, ``("hop", cycle,
    node, dim, vc, flit)`` and ``("eject", cycle, node, flit)`` (``flit`` the layout's bits:
    payload, head, tail), and each node's ``(refused_count, refused)`` at the end."""
    n = fabric.n
    sources = Sources(queues)
    links = [(node, dim, port) for node, router in enumerate(fabric.routers)
             for dim, port in zip(router.dims, router.links_out)]
    events, refused = [], []

    async def testbench(ctx):
        for cycle in range(len(eject_ready)):
            offers = sources.offers(cycle)
            for node, (valid, word) in enumerate(offers):
                ctx.set(fabric.inject[node].valid, valid)
                ctx.set(fabric.inject[node].payload, word)
                ctx.set(fabric.eject[node].ready, int(eject_ready[cycle, node]))
            ready = ctx.get(Cat(*(port.ready for port in fabric.inject)))
            valid = ctx.get(Cat(*(port.valid for port in fabric.eject)))
            for node in range(n):
                if offers[node][0] and ready >> node & 1:
                    events.append(("inject", cycle, node))
                    sources.taken(node)
                if valid >> node & 1 and eject_ready[cycle, node]:
                    events.append(("eject", cycle, node,
                                   ctx.get(fabric.eject[node].payload.as_value())))
            for node, dim, port in links:
                if ctx.get(port.valid):
                    vc = ctx.get(port.vc)
                    if ctx.get(port.ready) >> vc & 1:
                        events.append(("hop", cycle, node, dim, vc,
                                       ctx.get(port.flit.as_value())))
            await ctx.tick()
        refused.extend((ctx.get(count), ctx.get(flag))
                       for count, flag in zip(fabric.refused_count, fabric.refused))

    simulate(fabric, testbench, "ihcube_wormhole_model")
    return events, refused


def run_model(model, queues, eject_ready):
    """Run ``model`` on the same PEs; return events and refusal counts as :func:`run_rtl`."""
    n = model.n
    sources = Sources(queues)
    events = []
    for cycle in range(len(eject_ready)):
        offers = sources.offers(cycle)
        ready, ejects, hops = model.step([valid for valid, _ in offers],
                                         [word for _, word in offers], eject_ready[cycle])
        for node in range(n):
            if offers[node][0] and ready[node]:
                events.append(("inject", cycle, node))
                sources.taken(node)
        events += [("eject", cycle, node, flit) for node, flit in ejects]
        events += [("hop", cycle, *hop) for hop in hops]
    return events, [(int(count), int(flag))
                    for count, flag in zip(model.refused_count, model.refused)]


def first_difference(rtl, model):
    """:func:`test_model.first_difference` over the wormhole events (``eject``, not
    ``deliver``)."""
    return packet_first_difference(rtl, model, kinds=("inject", "hop", "eject"))


#: Configurations of this many nodes and more run on the emitted Verilog in Icarus
#: (:func:`ihcube.verify.wormhole_replay.wormhole_replay`), smaller ones in Amaranth's
#: simulator, which is the cheaper there: generating and compiling the Verilog costs more than
#: simulating a few hundred cycles of up to 6 nodes (``docs/verification.md``).
REPLAY_FROM = 8


@shared
def rtl_record(n, vcs, vc_depth, order, flits, cycles, width=None, router=None):
    """The traffic of a configuration and what the RTL (with ``router``, a faulty one, if
    given) did with it (one simulation a run, whichever tests and workers compare with it):
    the replay of the emitted Verilog from :data:`REPLAY_FROM` nodes on, Amaranth's simulation
    below (``tests/test_wormhole_replay.py`` shows that the two record the same)."""
    wormhole = parameters(n, vcs, vc_depth, flits, width=width)
    queues, eject_ready = traffic(n, wormhole, cycles, seed=n * 100 + vcs * 10 + flits)
    extra = {} if router is None else {"router": router}
    if n >= REPLAY_FROM:
        events, refused = wormhole_replay(n, queues, eject_ready, wormhole, order, **extra)
    else:
        events, refused = run_rtl(WormholeFabric(n, wormhole, order, **extra), queues,
                                  eject_ready)
    return wormhole, queues, eject_ready, events, refused


def lockstep(model_class, n, vcs, vc_depth, order, flits, cycles, width=None, router=None):
    """The first difference between ``model_class`` and the RTL (or None), both sides'
    refusal counts."""
    wormhole, queues, eject_ready, rtl, refused = rtl_record(n, vcs, vc_depth, order, flits,
                                                             cycles, width, router)
    events, model_refused = run_model(model_class(n, wormhole, order), queues, eject_ready)
    return first_difference(rtl, events), refused, model_refused


@pytest.mark.parametrize("n, vcs, vc_depth, order, flits, cycles, width",
                         slow_unless([(*config, None) for config in LOCKSTEP] + NARROW, small)
                         + long([(*config, None) for config in LONG] + NARROW_LONG))
def test_lockstep_with_rtl(n, vcs, vc_depth, order, flits, cycles, width):
    """Every injection handshake, link flit and eject handshake happens in the same cycle,
    with the same bits, in the model and the RTL; the refusal counts agree at the end."""
    difference, refused, model_refused = lockstep(WormholeModel, n, vcs, vc_depth, order,
                                                  flits, cycles, width)
    assert difference is None
    assert model_refused == refused
    # The run exercised what it should: hops on several channels, broadcasts, refusals.
    wormhole, _, _, events, _ = rtl_record(n, vcs, vc_depth, order, flits, cycles, width)
    kinds = {event[0] for event in events}
    assert kinds == ({"inject", "eject"} if n == 1 else {"inject", "eject", "hop"})
    kind_bit = head_fields(n, wormhole.flit_width).kind_bit
    heads = [event[-1] for event in events if event[0] == "eject"
             and event[-1] >> wormhole.flit_width & 1]
    assert any(head >> kind_bit & 1 == Kind.BROADCAST.value for head in heads) or n == 1
    used = {event[4] for event in events if event[0] == "hop"}
    assert used >= ({0, vcs} if n > 1 else set())
    assert 1 in used or vcs == 1 or n < 5  # worms overlapped on a link: a second channel
    assert (sum(count for count, _ in refused) > 0) == (1 << topology.address_bits(n) > n)


# Broken variants of the model: each must make the lockstep comparison fail.

class AllocatorStartsAtZero(WormholeModel):
    """Negative control: the allocators' arbiters start on their first requester."""

    def _allocator_start(self, requesters):
        return 0


class HighestFreeChannel(WormholeModel):
    """Negative control: a unicast head is granted the highest free channel, not the lowest."""

    def _channel_choice(self, free):
        return free.bit_length() - 1


class ReadyInReset(WormholeModel):
    """Negative control: buffers have room in the first cycle after reset."""

    _ready_in_reset = True


class TailKeepsTheChannel(WormholeModel):
    """Negative control: a tail does not free the output channel it leaves on."""

    _tail_releases = False


class BrokenTravel(WormholeModel):
    """Negative control: a broadcast copy sent on link ``l`` keeps travel bit ``l``."""

    def _travel_mask(self, node, dim):
        return super()._travel_mask(node, dim) | 1 << dim


class RoutedInTheOtherOrder(WormholeModel):
    """Negative control: unicast heads take the first set bit in the other routing order."""

    def _first_set_bit(self, bits):
        other = topology.LSB_FIRST if self.order == topology.MSB_FIRST else topology.MSB_FIRST
        return topology.first_set_bit(bits, other)


@pytest.mark.parametrize("variant, at_cycle", [
    (AllocatorStartsAtZero, None), (HighestFreeChannel, None), (ReadyInReset, 0),
    (TailKeepsTheChannel, None), (BrokenTravel, None), (RoutedInTheOtherOrder, None),
])
def test_lockstep_catches_a_broken_model(variant, at_cycle):
    difference, _, _ = lockstep(variant, *CONTROL)
    assert difference is not None
    assert difference.startswith("cycle ")
    if at_cycle is not None:
        assert difference.startswith(f"cycle {at_cycle}, inject at node ")


@pytest.mark.slow
def test_lockstep_catches_src_stamped_into_the_wrong_flit():
    """Negative control for the narrow flits: a router that stamps src's high bits into the
    third flit, not the second, differs from the model on the first such message (at 5 nodes
    with 5-bit flits, where 2 of src's 3 bits run on into the second flit)."""
    difference, _, _ = lockstep(WormholeModel, *NARROW[1], router=faults.SrcOneFlitLateRouter)
    assert difference is not None and difference.startswith("cycle ")
    # Where the header fits a flit, that router is the real one.
    assert lockstep(WormholeModel, *CONTROL, router=faults.SrcOneFlitLateRouter)[0] is None


def test_first_difference_names_the_cycle_and_port():
    rtl = [("inject", 3, 1), ("hop", 5, 2, 1, 0, 77), ("eject", 7, 0, 9)]
    changed = [rtl[0], ("hop", 5, 2, 1, 1, 77), rtl[2]]
    assert first_difference(rtl, rtl) is None
    assert first_difference(rtl, changed) == (
        "cycle 5, hop at node 2 link 1: RTL [('hop', 5, 2, 1, 0, 77)], "
        "model [('hop', 5, 2, 1, 1, 77)]")
    assert first_difference(rtl, rtl[:2]).startswith("cycle 7, eject at node 0: ")


# The model alone against the topology rules, at sizes the RTL simulation cannot reach quickly.

def model_worms(model, requests, eject_ready=1.0, seed=0, cycles=20000):
    """Run ``model`` on ``(node, Request)`` pairs, each as the flits of
    :func:`~ihcube.verify.harness.worm_flits`, until every owed flit is delivered; return
    ``(injected, flits)`` as :class:`~ihcube.verify.harness.WormholeHarness` records them."""
    n, wormhole = model.n, model.wormhole
    rng = random.Random(seed)
    queues = [[] for _ in range(n)]
    for node, request in requests:
        queues[node].append((request.at, worm_flits(n, wormhole, node, request), request))
    sources = Sources([[(at, words) for at, words, _ in queue] for queue in queues])
    owed = sum(wormhole.flits * (n - 1 if request.kind == Kind.BROADCAST
                                 else int(request.dest < n)) for _, request in requests)
    mask = (1 << wormhole.flit_width) - 1

    def flit(cycle, node, dim, vc, bits):
        return Flit(cycle, node, dim, vc, bits & mask, bool(bits >> wormhole.flit_width & 1),
                    bool(bits >> wormhole.flit_width + 1 & 1))

    injected, flits = [], []
    for cycle in range(cycles):
        offers = sources.offers(cycle)
        ready = [rng.random() < eject_ready for _ in range(n)]
        taken, ejects, hops = model.step([valid for valid, _ in offers],
                                         [word for _, word in offers], ready)
        for node in range(n):
            if offers[node][0] and taken[node]:
                if sources.next[node] % wormhole.flits == 0:
                    injected.append((cycle, node,
                                     queues[node][sources.next[node] // wormhole.flits][2]))
                sources.taken(node)
        flits += [flit(cycle, *hop) for hop in hops]
        flits += [flit(cycle, node, None, None, bits) for node, bits in ejects]
        owed -= len(ejects)
        if owed == 0 and all(s == len(w) for s, w in zip(sources.next, sources.words)):
            break
    return injected, flits


def all_pairs(n):
    """A unicast from every node to every node (itself included), then a broadcast from each."""
    requests = [(src, Request(1 + src * n + dest, dest)) for src in range(n)
                for dest in range(n)]
    return requests + [(src, Request(1 + n * n + src, 0, Kind.BROADCAST)) for src in range(n)]


@pytest.mark.parametrize("n, order, vcs, vc_depth, eject_ready", [
    (20, "msb", 3, 2, 1.0), (17, "lsb", 1, 1, 0.5)])
def test_model_follows_the_topology_rules(n, order, vcs, vc_depth, eject_ready):
    """All pairs and a broadcast from every node, under eject backpressure: the flit
    scoreboard finds whole worms on every (link, channel), each unicast once along its
    Algorithm 2 path and each broadcast once per node along the unicast paths."""
    wormhole = parameters(n, vcs, vc_depth, 4, spare=10)  # room for the message ids
    requests = all_pairs(n)
    injected, flits = model_worms(WormholeModel(n, wormhole, order), requests, eject_ready)
    assert len(injected) == len(requests)
    assert check_worms(n, wormhole, injected, flits, order) == []


def test_the_topology_check_catches_a_broken_model():
    """Negative control: a model that routes in the other order strands the heads whose
    first bit in that order is not one of their input's onward links (a worm cut short, a
    message not delivered); the scoreboard says so."""
    n = 20
    wormhole = parameters(n, 3, 2, 4, spare=10)
    injected, flits = model_worms(RoutedInTheOtherOrder(n, wormhole), all_pairs(n),
                                  cycles=1500)
    problems = check_worms(n, wormhole, injected, flits)
    assert problems != []
