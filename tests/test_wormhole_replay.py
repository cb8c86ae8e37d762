"""The wormhole fabric's replay in Icarus (:mod:`ihcube.verify.wormhole_replay`) against
Amaranth's simulation: the lockstep tests of ``tests/test_wormhole_model.py`` take the RTL's
record from the replay from :data:`~test_wormhole_model.REPLAY_FROM` nodes on, so the replay
must record what Amaranth's simulation of the same design does, and run the routers it is
given; ``tests/test_wormhole_router.py`` takes the flit scoreboard's records from
:func:`~ihcube.verify.wormhole_replay.replay_worms` from 8 nodes on, so that must record what
:class:`~ihcube.verify.harness.WormholeHarness` does."""

import pytest

from ihcube.params import header_bits, wormhole_parameters
from ihcube.rtl import WormholeFabric
from ihcube.spec import as_wormhole_spec
from ihcube.verify import faults
from ihcube.verify.harness import Request, WormholeHarness
from ihcube.verify.scoreboard import check_worms
from ihcube.verify.wormhole_replay import replay_worms, wormhole_replay
from test_wormhole_model import (CONTROL, LOCKSTEP, NARROW, REPLAY_FROM, first_difference,
                                 rtl_record)
from test_wormhole_router import random_traffic
from tiers import slow_unless

#: Configurations that :func:`~test_wormhole_model.rtl_record` runs in Amaranth, each with
#: broadcasts: 2 nodes (``make check``'s), three virtual channels of one flit at 5 nodes (the
#: negative controls' configuration), and flits narrower than the header, 5 bits with src's
#: high bit in the second flit and 4 bits with all of src there.
CHECKS = [(*LOCKSTEP[1], None), (*CONTROL, None), NARROW[1], NARROW[2]]


@pytest.mark.parametrize("n, vcs, vc_depth, order, flits, cycles, width",
                         slow_unless(CHECKS, lambda config: config[0] <= 2))
def test_replay_is_the_amaranth_simulation(n, vcs, vc_depth, order, flits, cycles, width):
    """The emitted Verilog in Icarus records the same injections, link flits (channel, bits
    and marks) and ejections, cycle for cycle, and the same refusals as Amaranth's simulation
    of the fabric on the lockstep traffic."""
    assert n < REPLAY_FROM  # rtl_record's events are Amaranth's
    wormhole, queues, eject_ready, amaranth, refused = rtl_record(n, vcs, vc_depth, order,
                                                                  flits, cycles, width)
    verilog, verilog_refused = wormhole_replay(n, queues, eject_ready, wormhole, order)
    assert first_difference(amaranth, verilog) is None
    assert sorted(amaranth) == sorted(verilog) and refused == verilog_refused
    assert {event[0] for event in verilog} == {"inject", "hop", "eject"}


@pytest.mark.slow
def test_replay_catches_a_broken_router():
    """Negative control: the replay runs the routers it is given; one that stamps src's high
    bits into the third flit records other flits than the sound fabric on the same traffic."""
    wormhole, queues, eject_ready, sound, _ = rtl_record(*NARROW[1])
    broken, _ = wormhole_replay(NARROW[1][0], queues, eject_ready, wormhole, NARROW[1][3],
                                router=faults.SrcOneFlitLateRouter)
    difference = first_difference(sound, broken)
    assert difference is not None and " hop at " in difference


#: Harness runs replayed (n, flits, flit width, eject readiness, router): narrow flits with
#: src in the second flit under eject backpressure, with the real router and with one that
#: stamps src one flit late; a router that never releases a channel (a stall).
WORM_CHECKS = [(5, 3, 6, 0.7, None), (5, 3, 6, 0.7, faults.SrcOneFlitLateRouter),
               (5, 4, 16, 1.0, faults.WORMHOLE_FAULTS["no-release-on-tail"])]


@pytest.mark.slow
@pytest.mark.parametrize("n, flits, width, eject_ready, router", WORM_CHECKS)
def test_replayed_worms_are_the_harness_records(n, flits, width, eject_ready, router):
    """:func:`~ihcube.verify.wormhole_replay.replay_worms` records the same injections, link
    and eject flits and refusal counts as :class:`~ihcube.verify.harness.WormholeHarness` on
    Amaranth's simulation (``tests/test_wormhole_router.py`` replays its runs from 8 nodes
    on), and says as it does whether the run delivered everything."""
    payload = 16 if width == 16 else width * flits - header_bits(n)
    wormhole = wormhole_parameters(n, payload, flits=flits, flit_width=width, vcs=2,
                                   vc_depth=2)
    # 19 messages and one refused (no node 7) first: the ids fit the third flit.
    requests = [(1, Request(20, 7))] + random_traffic(n, 19, seed=n + width, broadcast=0.3,
                                                      spread=40)
    extra = {} if router is None else {"router": router}
    harness = WormholeHarness(WormholeFabric(n, wormhole, **extra), eject_ready, seed=n)
    for node, request in requests:
        harness.send(node, request)
    harness.run(3000)
    worms = replay_worms(as_wormhole_spec(n, wormhole), requests, eject_ready, seed=n,
                         cycles=3000, **extra)
    assert worms.injected == harness.injected and worms.flits == harness.flits
    assert worms.refused_count == harness.refused_count == [0, 1, 0, 0, 0]
    assert (worms.stalled_at is None) == (harness.stalled_at is None)
    problems = check_worms(n, wormhole, worms.injected, worms.flits)
    assert (problems == []) == (router is None)
