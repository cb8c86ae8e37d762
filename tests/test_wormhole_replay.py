"""The wormhole fabric's replay in Icarus (:mod:`ihcube.verify.wormhole_replay`) against
Amaranth's simulation: the lockstep tests of ``tests/test_wormhole_model.py`` take the RTL's
record from the replay from :data:`~test_wormhole_model.REPLAY_FROM` nodes on, so the replay
must record what Amaranth's simulation of the same design does, and run the routers it is
given."""

import pytest

from ihcube.verify import faults
from ihcube.verify.wormhole_replay import wormhole_replay
from test_wormhole_model import (CONTROL, LOCKSTEP, NARROW, REPLAY_FROM, first_difference,
                                 rtl_record)
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
