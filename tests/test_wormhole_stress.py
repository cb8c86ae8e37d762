"""The wormhole stress run (:mod:`ihcube.verify.wormhole_stress`): a slice of the campaign on the
model and the RTL, and the negative controls that show its scoreboard and watchdog can fail: a
routing whose dependency graph over (link, virtual channel) is cyclic is refused by the static
check and, forced through, stalls with its cycle of waits reported; flits dropped, duplicated
or reordered (by faulty flit buffers in the RTL, or a broken eject port behind the model) are
caught. ``make stress-campaign`` runs the whole campaign (its wormhole part too)."""

from dataclasses import replace
from unittest import mock

import pytest

from ihcube import deadlock
from ihcube.params import head_fields
from ihcube.rtl import WormholeFabric
from ihcube.rtl import wormhole_fabric as wormhole_fabric_module
from ihcube.verify import faults
from ihcube.verify.faults import WEIGHT_PARITY, weight_parity_wormhole_router
from ihcube.verify.stress import StressConfig
from ihcube.verify.wormhole_stress import (MUTANTS, decode_worm, find_stall, message_flits,
                                           run_model, run_rtl)

BAD = ("lost", "duplicated", "corrupted", "misdelivered")


def wormhole(n, flits, vcs, vc_depth, order="msb", **keywords):
    """A wormhole stress configuration: ``n`` nodes, ``flits`` per message, ``vcs`` channels
    of ``vc_depth`` flits, and the other keywords of :meth:`StressConfig.of`."""
    return StressConfig.of(n, switching="wormhole", flits=flits, vcs=vcs, vc_depth=vc_depth,
                           order=order, **keywords)


def assert_clean(result, min_flits_per_node_cycle=0.1):
    """Nothing lost, duplicated, corrupted or misdelivered, every owed worm delivered, and
    real traffic carried (flits on links, broadcasts among them)."""
    counts, config, spec = result.counts, result.config, result.config.spec
    assert result.ok, result.summary()
    assert counts["delivered"] == counts["deliveries owed"] > 0
    for name in BAD:
        assert counts[name] == 0, name
    injected_flits = counts["messages injected"] * spec.wormhole.flits
    assert injected_flits >= min_flits_per_node_cycle * spec.nodes * config.cycles
    if config.broadcast > 0 and spec.nodes > 2:
        assert counts["broadcasts injected"] > 0


# --- The slice: sizes, channels, depths and both orders on the model; small n on the RTL ------

MODEL_SLICE = [(1, 2, 1, 1, "msb"), (2, 3, 1, 1, "lsb"), (3, 4, 2, 1, "msb"),
               (5, 5, 1, 2, "lsb"), (8, 20, 3, 2, "msb"), (8, 4, 2, 1, "lsb"),
               (13, 6, 3, 1, "msb"), (26, 5, 1, 2, "msb"), (33, 4, 2, 2, "lsb")]


@pytest.mark.parametrize("n, flits, vcs, depth, order", MODEL_SLICE)
def test_model_under_saturating_worms(n, flits, vcs, depth, order):
    cycles = 400 if n <= 13 else 200
    config = wormhole(n, flits, vcs, depth, order, cycles=cycles, seed=n + vcs)
    assert_clean(run_model(config))


@pytest.mark.slow
@pytest.mark.parametrize("n, flits, vcs, depth, order, eject_ready", [
    (5, 4, 2, 1, "msb", 0.75), (3, 3, 1, 2, "lsb", 0.5)])
def test_rtl_under_saturating_worms_matches_the_model_flit_for_flit(n, flits, vcs, depth, order,
                                                                  eject_ready):
    config = wormhole(n, flits, vcs, depth, order, cycles=120, seed=n, eject_ready=eject_ready,
                      broadcast=0.15)
    rtl = run_rtl(config)
    assert_clean(rtl)
    # The same PEs drive both: the model is cycle-exact, so every link flit agrees.
    model = run_model(config)
    assert rtl.records.link_flits == model.records.link_flits and rtl.counts == model.counts


def test_traffic_is_reproducible_from_the_seed():
    config = wormhole(8, 4, 2, 1, cycles=200, seed=7)
    assert run_model(config).counts == run_model(config).counts
    assert run_model(config).records.link_flits != \
        run_model(replace(config, seed=8)).records.link_flits


def test_message_flits_round_trip_and_broken_worms_are_named():
    wh = wormhole(13, 5, 2, 1).spec.wormhole
    width = wh.flit_width
    words = message_flits(13, wh, 1234, 9, 0)
    marks = [1 << width] + [0] * 3 + [1 << width + 1]
    worm = [w | m for w, m in zip(words, marks)]
    assert decode_worm(13, wh, worm) == (1234, 9, 0, 0)
    # A flit lost, repeated or swapped, or a mark moved: each is named, none decodes.
    for broken in (worm[:2] + worm[3:], worm[:2] + worm[1:4], [worm[0], worm[2], worm[1],
                   *worm[3:]], [worm[0] & ~(1 << width), *worm[1:]]):
        assert isinstance(decode_worm(13, wh, broken), str)


def test_message_flits_round_trip_with_src_in_the_second_flit():
    # 26 nodes, 8-bit flits: src's low 2 bits in the head, its high 3 in the second flit,
    # where the PE leaves them 0 and the router stamps them (ihcube.params.HeadFields).
    wh = wormhole(26, 6, 1, 1, flit_width=8).spec.wormhole
    width, fields = wh.flit_width, head_fields(26, 8)
    words = message_flits(26, wh, 3, 19, 0)  # 3 * 6 + 1 < 2 ** 5 fits above src
    assert words[1] & 0b111 == 0
    stamped = [fields.stamp(k, word, 22) for k, word in enumerate(words)]
    marks = [1 << width] + [0] * 4 + [1 << width + 1]
    worm = [w | m for w, m in zip(stamped, marks)]
    assert decode_worm(26, wh, worm) == (3, 19, 22, 0)
    # The second flit's src bits left as the PE gave them (not stamped): not that message.
    unstamped = [stamped[0] | marks[0], words[1], *worm[2:]]
    assert decode_worm(26, wh, unstamped)[:3] != (3, 19, 22)


# --- A cyclic (link, virtual channel) graph: refused, and forced through it stalls ------------

def unchecked():
    """Build wormhole fabrics without the elaboration-time check: deadlock-prone on purpose."""
    return mock.patch.object(wormhole_fabric_module.deadlock, "check_wormhole_deadlock_free",
                             lambda *_, **__: None)


DEADLOCK = wormhole(8, flits=8, vcs=1, vc_depth=1, cycles=1000, seed=2, broadcast=0.0,
                    eject_ready=1.0, watchdog=40)


@pytest.mark.slow
def test_a_cyclic_rule_is_refused_then_forced_through_stalls_with_its_cycle_reported():
    """Unicasts whose order flips with the parity of the node's weight, any free channel: the
    graph over (link, virtual channel) is cyclic, so the fabric is refused; built anyway, the
    RTL under saturating worms closes the cycle, the watchdog stops the run, and the report
    names a cycle of channels each of whose front worms waits for the next."""
    wormhole = DEADLOCK.spec.wormhole
    with pytest.raises(ValueError, match=r"^Wormhole routing 'weight parity' .* can deadlock: "
                                         r"its dependency graph over \(link, virtual channel\)"):
        WormholeFabric(8, wormhole, router=weight_parity_wormhole_router, routing=WEIGHT_PARITY)
    with unchecked():
        fabric = WormholeFabric(8, wormhole, router=weight_parity_wormhole_router,
                                routing=WEIGHT_PARITY)
    result = run_rtl(DEADLOCK, fabric=fabric, routing=WEIGHT_PARITY)
    assert not result.ok
    assert result.problems[0].startswith("no flit moved for 40 cycles from cycle ")
    assert result.counts["lost"] > 0
    assert f"stalled at cycle {result.records.stalled_at}: " in result.stall
    assert "cycle of waits over (link, vc): [" in result.stall

    stall = find_stall(result.records, WEIGHT_PARITY)
    assert stall.cycle and len(stall.cycle) >= 2
    graph = deadlock.virtual_channel_dependencies(8, 1, WEIGHT_PARITY)
    for held, wanted in zip(stall.cycle, stall.cycle[1:] + stall.cycle[:1]):
        assert held.is_link and wanted.is_link and wanted.node == held.far
        assert wanted in stall.waits[held]
        assert held in stall.held  # a worm sits in each
        assert wanted in graph[held]  # a wait the static check predicted


def test_the_same_traffic_on_the_real_routing_drains():
    """The control of the control, on the model (cycle-exact with the RTL)."""
    assert_clean(run_model(DEADLOCK))


def test_a_deadlocked_model_is_reported_by_the_watchdog():
    """A model that never frees a channel on the tail (the model's own broken hook) stalls."""
    from ihcube.sim.wormhole_model import WormholeModel

    class NoRelease(WormholeModel):
        _tail_releases = False

    config = wormhole(5, 4, 1, 1, cycles=300, seed=3, watchdog=30)
    result = run_model(config, model=NoRelease)
    assert not result.ok and result.records.stalled_at is not None
    assert "stalled at cycle" in result.stall
    assert_clean(run_model(config))


# --- Flits dropped, duplicated or reordered are caught ------------------------------------

@pytest.mark.parametrize("mutant, count", [("drop", "lost"), ("duplicate", "lost"),
                                           ("reorder", "corrupted")])
def test_scoreboard_catches_an_eject_port_that_breaks_one_flit(mutant, count):
    config = wormhole(8, 4, 2, 2, cycles=300, seed=1)
    result = run_model(config, mutant=mutant)
    assert not result.ok
    assert result.counts[count] >= 1
    assert set(MUTANTS) == {"drop", "duplicate", "reorder"}


@pytest.mark.parametrize("name", ["dropping-flit-buffer", "duplicating-flit-buffer"])
def test_scoreboard_catches_rtl_flit_buffers_that_drop_or_duplicate(name):
    config = wormhole(5, 4, 2, 2, cycles=120, seed=5, watchdog=40)
    fabric = WormholeFabric(config.spec, router=faults.WORMHOLE_FAULTS[name])
    result = run_rtl(config, fabric=fabric)
    assert not result.ok
    assert result.counts["lost"] + result.counts["corrupted"] > 0


@pytest.mark.slow
def test_scoreboard_catches_rtl_flit_buffers_that_reorder_flits_within_worms():
    # Strikes on the 2nd write of every 8, with 4-flit worms: body flits 1 and 2 change
    # places in every other worm, and the scoreboard says so (not a stall).
    config = wormhole(5, 4, 2, 2, cycles=120, seed=5, watchdog=40)
    fabric = WormholeFabric(config.spec, router=faults.WORMHOLE_FAULTS["reordering-flit-buffer"])
    result = run_rtl(config, fabric=fabric)
    assert result.records.stalled_at is None and result.counts["corrupted"] > 0
    assert any("not whole and in order" in problem for problem in result.problems)


@pytest.mark.slow
def test_the_campaign_covers_sizes_channels_depths_and_orders_on_both_backends():
    from ihcube import topology
    from ihcube.cli.stress import campaign, wormhole_campaign
    configs = [(backend, c.spec, c.spec.wormhole) for backend, c in wormhole_campaign()]
    model = {(s.nodes, w.vcs, w.vc_depth, s.order) for backend, s, w in configs
             if backend == "model"}
    assert {n for n, *_ in model} >= {*range(1, 17), 26, 33, 64}
    assert {(v, q, o) for _, v, q, o in model} == {(v, q, o) for v in (1, 3) for q in (1, 2)
                                                   for o in topology.ROUTING_ORDERS}
    rtl = {(s.nodes, w.vcs, w.vc_depth) for backend, s, w in configs if backend == "rtl"}
    assert {n for n, *_ in rtl} == {2, 3, 5, 8} and {(v, q) for _, v, q in rtl} == \
        {(v, q) for v in (1, 3) for q in (1, 2)}
    assert all(item in campaign() for item in wormhole_campaign())  # make stress-campaign too


# --- Command line -----------------------------------------------------------------------

def test_command_line_runs_wormhole(capsys):
    from ihcube.cli import main
    status = main(["stress", "--nodes", "8", "--cycles", "300", "--switching", "wormhole",
                   "--flits", "4", "--vcs", "2", "--vc-depth", "1"])
    out = capsys.readouterr().out
    assert status == 0
    assert out.startswith("model wormhole: n=8 flits=4 flit_width=32 vcs=2 vc_depth=1 ")
    assert "result                PASS" in out


def test_quick_wormhole_campaign_prints_and_writes_its_table(capsys, tmp_path):
    import json
    from ihcube.cli import main
    out = tmp_path / "stress_campaign_wormhole.json"
    assert main(["stress", "--campaign", "--quick", "--switching", "wormhole", "--jobs", "1",
                 "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "model     L5V1    13     1   msb    300" in printed
    assert "0 runs failed" in printed
    runs = json.loads(out.read_text())["runs"]
    assert {run["switching"] for run in runs} == {"wormhole"}
    assert {run["backend"] for run in runs} == {"model", "rtl"}
    assert all(run["ok"] and run["lost"] == 0 for run in runs)


@pytest.mark.parametrize("args, message", [
    (["--switching", "wormhole", "--depth", "2"],
     "Buffer depth is a packet-switching option, not taken with wormhole switching (its "
     "buffers are vc_depth flits), not 2"),
    (["--vcs", "2"], "Virtual channel count (--vcs) is a wormhole option, not taken with packet "
                     "switching: give switching 'wormhole' or leave it out"),
    (["--switching", "wormhole", "--flits", "1", "--flit-width", "41"],
     "Flit count must be at least 2 in a stress run (the body flits carry the message "
     "number), not 1"),
    (["--switching", "wormhole", "--vcs", "0"],
     "Virtual channel count must be a positive integer, not 0"),
    (["--switching", "circuit"], "Switching must be one of 'packet' or 'wormhole', not "
                                 "'circuit'"),
])
def test_command_line_rejects_bad_wormhole_parameters_in_one_line(capsys, args, message):
    from ihcube.cli import main
    assert main(["stress", "--nodes", "13", *args]) == 2
    captured = capsys.readouterr()
    assert captured.err == f"ihcube stress: error: {message}\n"
    assert captured.out == ""
