"""The packet fabric's harness runs replayed in Icarus
(:func:`ihcube.verify.replay.replay_packets`) against
:class:`~ihcube.verify.harness.FabricHarness` on Amaranth's simulation: ``tests/test_fabric.py``'s
``run_fabric`` (which ``tests/test_pe_ports.py`` and ``tests/test_switch_stages.py`` use too)
takes its records from the replay from :data:`~test_fabric.REPLAY_FROM` nodes on, so the replay
must record what the harness records, stop when it stops, and run the routers it is given."""

import functools

import pytest

from ihcube.rtl import Fabric, Kind
from ihcube.verify import replay
from ihcube.verify.faults import buffer_fault_router, faulty_router
from ihcube.verify.harness import FabricHarness, Request, owed_deliveries
from ihcube.verify.scoreboard import check_run
from test_fabric import REPLAY_FROM, all_pairs, broadcasts, random_traffic
from tiers import slow_unless

#: The records the replay must reproduce.
RECORDS = ("injected", "hops", "deliveries", "refused_count", "refused", "cycles", "stalled_at")


def both(fabric, requests, router=None, eject_ready=1.0, seed=0, max_cycles=2_000,
         expected=True, idle_cycles=32):
    """The harness's run of ``requests`` on ``fabric`` (built with ``router``), and the
    replay's of the same on its emitted Verilog. ``expected``: the run ends on the deliveries
    owed (as ``run_fabric`` runs it), else on empty queues."""
    owed = sum(owed_deliveries(fabric.n, request)
               for _, request in requests) if expected else None
    harness = FabricHarness(fabric, eject_ready=eject_ready, seed=seed)
    for node, request in requests:
        harness.send(node, request)
    harness.run(max_cycles, expected_deliveries=owed, idle_cycles=idle_cycles)
    replayed = replay.replay_packets(fabric.spec, requests, eject_ready, seed, max_cycles, owed,
                                     idle_cycles, router=router)
    return harness, replayed


def problems(run):
    spec = run.spec
    return check_run(spec.nodes, run.injected, run.hops, run.deliveries, spec.order,
                     ports=spec.ports)


#: (fabric options, traffic, eject readiness): depth 1 and 2, two PE ports, the switch, link
#: and eject stages, eject backpressure, destinations that do not exist, broadcasts.
CHECKS = [
    (dict(nodes=5), "pairs", 1.0),
    (dict(nodes=5, depth=2, ports=2), "random", 0.4),
    (dict(nodes=5, order="lsb", switch_stages=1, link_stages=1, eject_stages=1), "random", 0.6),
    (dict(nodes=6, depth=2, switch_stages=1), "pairs", 0.7),
]


def traffic(n, kind, ports=1):
    if kind == "pairs":
        return all_pairs(n) + broadcasts(n)
    requests = random_traffic(n, 10 * n, seed=n, broadcast_share=0.2, bad_share=0.2)
    return [(node, Request(request.payload, request.dest, request.kind, request.at,
                           request.payload % ports)) for node, request in requests]


@pytest.mark.parametrize("options, kind, eject_ready",
                         slow_unless(CHECKS, lambda config: config[0] == CHECKS[0][0]))
def test_replay_records_what_the_harness_records(options, kind, eject_ready):
    """Every injection (its request), hop and delivery (port included), in the same cycle
    with the same fields, the refusals at the end, and the cycles run."""
    assert options["nodes"] < REPLAY_FROM  # the harness here is Amaranth's
    options = dict(options)
    n = options.pop("nodes")
    fabric = Fabric(n, **options)
    requests = traffic(n, kind, fabric.ports)
    harness, replayed = both(fabric, requests, eject_ready=eject_ready, seed=n)
    for name in RECORDS:
        assert getattr(replayed, name) == getattr(harness, name), name
    assert problems(replayed) == []
    assert any(request.kind == Kind.BROADCAST for _, request in requests)
    if kind == "random":  # a destination that does not exist was refused
        assert any(replayed.refused)


@pytest.mark.slow
def test_replay_ends_as_the_harness_without_owed_deliveries(monkeypatch):
    """Without deliveries owed, the run ends once the queues are empty and nothing moved
    for the idle cycles, as the harness's does; readiness drawn past the first cycles (as
    ``FIRST_CYCLES`` says) continues the harness's draws."""
    monkeypatch.setattr(replay, "FIRST_CYCLES", 16)
    fabric = Fabric(5, ports=2)
    harness, replayed = both(fabric, traffic(5, "random", 2), eject_ready=0.3, seed=2,
                             expected=False, idle_cycles=4)
    assert replayed.cycles > 16
    for name in RECORDS:
        assert getattr(replayed, name) == getattr(harness, name), name


#: Broken routers: a broken broadcast travel rule, a router that lets a bad destination in,
#: buffers that drop every fifth message (the run goes to ``max_cycles``, deliveries owed).
BROKEN = [(5, faulty_router("broken-travel"), "delivered"),
          (5, faulty_router("refuse-nothing"), "names no node but entered"),
          (5, buffer_fault_router("drop", every=5, first=5), "delivered 0 times")]


@functools.cache
def sound_replay(n):
    """The replay of the negative controls' traffic on the sound ``n``-node fabric."""
    requests = traffic(n, "random", 1)
    owed = sum(owed_deliveries(n, request) for _, request in requests)
    return replay.replay_packets(n, requests, max_cycles=600,
                                 expected_deliveries=owed, idle_cycles=32)


@pytest.mark.slow
@pytest.mark.parametrize("n, router, complaint", BROKEN)
def test_replay_runs_a_broken_router(n, router, complaint):
    """Negative control: the replay runs the routers it is given, records what the harness
    records with them, and the scoreboard catches them there as in the harness; the records
    differ from the sound fabric's."""
    requests = traffic(n, "random", 1)
    harness, replayed = both(Fabric(n, router=router), requests, router=router, max_cycles=600)
    for name in RECORDS:
        assert getattr(replayed, name) == getattr(harness, name), name
    assert any(complaint in problem for problem in problems(replayed))
    sound = sound_replay(n)
    assert problems(sound) == []
    assert (sound.hops, sound.deliveries) != (replayed.hops, replayed.deliveries)
