"""The wormhole experiments (issue 16): traffic into the fast wormhole model, the sweep, the
zero-load latency against the design note's closed form, saturation, the command line.

Expected values come from ``docs/wormhole.md`` ("Tzeng and Kumar count one cycle per hop ...
the project's head latency is ``2(h + 1)`` cycles from the PE's handshake, and a message's is
that plus ``L - 1``") and from counting (a worm of ``L`` flits over ``h`` links is ``L h``
link flits), never from the model's own output. Small sizes and short windows: CI cost.
"""

import numpy as np
import pytest

from ihcube.cli import main
from ihcube.sim import sweep
from ihcube.spec import FabricSpec
from ihcube.sim.traffic import Pattern
from ihcube.sim.wormhole_fast import FastWormholeModel
from ihcube.sim.wormhole_traffic import WormholeTrafficSource


def wormhole(n, **options):
    """The wormhole fabric of ``n`` nodes with ``options`` (the others their defaults)."""
    return FabricSpec.of(n, switching="wormhole", **options)


def closed_form(h, flits):
    """docs/wormhole.md: the head reaches the PE 2 (h + 1) cycles after its handshake, the
    tail L - 1 cycles later; at zero load the handshake is in the generation cycle."""
    return 2 * (h + 1) + flits - 1


class MistaggedWormholeSource(WormholeTrafficSource):
    """Broken: each tail carries the tag of the next message to its destination, so tails
    are matched to the wrong messages."""

    def _tags(self, sequence):
        return super()._tags(sequence + 1)


def drained_run(source_class, n, flits, rate, cycles, seed=3):
    """Generate for ``cycles`` cycles, then drain with no new traffic; the run's totals."""
    model = FastWormholeModel(wormhole(n, flits=flits, vcs=2, vc_depth=2))
    source = source_class(model, Pattern(n, "uniform"), rate, seed)
    got = [source.run(cycles)]
    source.rate = 0.0
    got.append(source.run(2000))
    total = {key: sum(g[key] for g in got)
             for key in ("generated", "delivered", "hops_sum", "transfers", "flits_ejected")}
    return total, sum(g["by_hops"] for g in got), source


@pytest.mark.parametrize("n, flits", [(13, 4), (16, 3)])
def test_every_message_matched_and_counted(n, flits):
    """Drained: every message delivered once, every flit ejected, and the link flits are
    exactly L times the hops of the messages the tails were matched to."""
    total, by_hops, source = drained_run(WormholeTrafficSource, n, flits, 0.05, 1500)
    assert total["generated"] > 500
    assert total["delivered"] == total["generated"]
    assert total["flits_ejected"] == flits * total["generated"]
    assert total["transfers"] == flits * total["hops_sum"]
    assert by_hops[0].sum() == total["generated"] and by_hops[0][0] == 0
    assert source.queued == 0


def test_mistagged_tails_are_caught():
    """Negative control: tails matched to the wrong messages break the same counts (or
    name no message at all)."""
    with pytest.raises((AssertionError, IndexError)):
        total, _, _ = drained_run(MistaggedWormholeSource, 16, 3, 0.05, 1500)
        assert total["delivered"] == total["generated"]
        assert total["transfers"] == 3 * total["hops_sum"]


@pytest.mark.parametrize("n, flits, width", [(16, 1, 41), (16, 4, 32), (13, 20, 16),
                                             (64, 20, 32)])
def test_zero_load_latency_is_the_closed_form(n, flits, width):
    """At a very low rate the fastest message of h hops takes exactly the design note's
    2 (h + 1) + L - 1 cycles, their mean is that to 5 % (now and then two worms meet, at the
    same eject port for L cycles), and the fit gives about 2 cycles a hop."""
    spec = wormhole(n, flits=flits, flit_width=width, vcs=3, vc_depth=2)
    rate = 200 / (n * 30000)  # about 200 messages, seldom two at once
    z = sweep.zero_load(spec, rate=rate, cycles=30000)
    assert z["messages"] > 100
    seen = [h for h, mean in enumerate(z["by_hops"]) if mean is not None]
    assert len(seen) >= 3
    for h in seen:
        assert z["fastest_by_hops"][h] == closed_form(h, flits), h
        assert z["by_hops"][h] == pytest.approx(closed_form(h, flits), rel=0.05), h
    assert z["per_hop"] == pytest.approx(2.0, abs=0.25)


class LatePeModel(FastWormholeModel):
    """Broken: each PE offers a message one cycle after it may (a cycle lost at injection)."""

    def offer(self, nodes, words, at=None):
        return super().offer(nodes, words, None if at is None else np.asarray(at) + 1)


def fastest_by_hops(model_class, n, flits, rate, cycles, seed=1):
    """The least latency by hop count of uniform traffic on ``model_class``."""
    model = model_class(wormhole(n, flits=flits, vcs=3, vc_depth=2))
    source = WormholeTrafficSource(model, Pattern(n, "uniform"), rate, seed)
    got = source.run(cycles)
    return [int(t) if c else None for c, t in zip(got["by_hops"][0], got["fastest_by_hops"])]


def test_zero_load_check_catches_a_late_pe():
    """Negative control: the same comparison with the closed form rejects a model whose PEs
    lose a cycle at injection; the real model passes it on the same traffic."""
    def matches(fastest):
        return all(t == closed_form(h, 4) for h, t in enumerate(fastest) if t is not None)
    assert matches(fastest_by_hops(FastWormholeModel, 16, 4, 0.001, 20000))
    assert not matches(fastest_by_hops(LatePeModel, 16, 4, 0.001, 20000))


SHORT = sweep.Settings(warmup=200, window=300, min_windows=2, max_windows=3, seed=5)


def test_sweep_points_and_saturation():
    """Below the knee a point is unsaturated with throughput near its rate and flit
    throughput L times it; at the injection limit 1/L, on 16 nodes of uniform traffic, the
    fabric cannot keep up and the point is saturated, with no latency."""
    spec = wormhole(16, flits=5, vcs=2, vc_depth=2)
    assert sweep.injection_limit(spec) == pytest.approx(0.2)
    points = sweep.points([spec], ("uniform",), (0.01, 0.2, 0.3))
    assert [(p.depth, p.rate) for p in points] == [(2, 0.01), (2, 0.2)]  # 0.3 > 1/5
    low, high = (sweep.measure(p, SHORT) for p in points)
    assert not low["saturated"] and low["throughput"] == pytest.approx(0.01, rel=0.25)
    assert low["flit_throughput"] == pytest.approx(5 * low["throughput"], rel=0.05)
    assert low["switching"] == "wormhole" and low["flits"] == 5 and low["vcs"] == 2
    assert high["saturated"] and high["mean_latency"] == ""
    assert high["throughput"] < 0.2 * 0.95
    # Densities are flits per cycle on a link, both directions: at most 2.
    assert 0 < high["peak_density"] <= 2.0


def csv_bytes(tmp_path, name, seed, jobs):
    out = tmp_path / name
    status = main(["sweep", "--switching", "wormhole", "--flits", "4", "--sizes", "16,13",
                   "--patterns", "uniform,decreasing", "--rates", "0.02,0.2", "--warmup",
                   "100", "--window", "200", "--max-windows", "2", "--seed", str(seed),
                   "--jobs", str(jobs), "--out", str(out), "--no-plots"])
    assert status == 0
    return (out / "sweep_wormhole-quick_custom.csv").read_bytes()


@pytest.mark.slow
def test_same_seed_same_bytes(tmp_path):
    """Same seed: the same CSV from one worker process and from two; another seed gives
    other bytes (the comparison's control)."""
    one = csv_bytes(tmp_path, "a", 1, 1)
    assert one == csv_bytes(tmp_path, "b", 1, 2)
    assert one != csv_bytes(tmp_path, "c", 2, 1)
    lines = one.decode().splitlines()
    assert lines[0].split(",") == list(sweep.CSV_COLUMNS) and len(lines) == 1 + 2 * 2 * 2


@pytest.mark.parametrize("argv, message", [
    (["sweep", "--flits", "4"],
     "Flit count (--flits) is a wormhole option, not taken with packet switching: give "
     "switching 'wormhole' or leave it out"),
    (["sweep", "--switching", "wormhole", "--flits", "0"], None),
    (["sweep", "--switching", "wormhole", "--vcs", "0"], None),
    (["sweep", "--switching", "wormhole", "--depths", "2"],
     "Depths (--depths) are packet buffer depths, not taken with wormhole switching: give "
     "--vc-depth"),
    (["sweep", "--switching", "wormhole", "--rates", "0.5"],
     "No points: every rate is above the injection limit 1/20 (one flit a cycle)"),
    (["sweep", "--beside", "x.csv"],
     "Beside (--beside) draws packet curves beside wormhole ones: give --switching wormhole"),
    (["sweep", "--switching", "wormhole", "--sizes", "2048", "--vcs", "5"],
     "Virtual channel count must be at most 4 in the fast model for 2048 nodes, not 5"),
    (["sweep", "--switching", "wormhole", "--sizes", "1024", "--flit-width", "8"],
     "Flit width must be an integer from 11 (the head flit's routing fields, destination and "
     "kind) to 53 (the whole message: header 21 + payload 32 bits) for 1024 nodes, not 8"),
    (["saturation", "--switching", "wormhole", "--depths", "1"],
     "Depths (--depths) are packet buffer depths, not taken with wormhole switching: give "
     "--vc-depth"),
    (["saturation", "--vc-depth", "2"],
     "Virtual channel depth (--vc-depth) is a wormhole option, not taken with packet "
     "switching: give switching 'wormhole' or leave it out"),
])
def test_bad_input(argv, message, capsys, tmp_path):
    assert main(argv + ["--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    if message is not None:
        assert err[0] == f"ihcube {argv[0]}: error: {message}"
    else:
        assert "must be" in err[0]


def test_each_wormhole_configuration_has_its_own_saturation_file():
    """``ihcube saturation --switching wormhole --vcs 1`` must not overwrite the default
    configuration's results; the flit width, which changes no cycle, is not in the name."""
    from ihcube.sim.sweep import saturation_results_name
    assert saturation_results_name(FabricSpec(26)) == "saturation.json"
    assert saturation_results_name(wormhole(26)) == "saturation_wormhole.json"
    assert saturation_results_name(wormhole(26, flit_width=8)) == "saturation_wormhole.json"
    assert saturation_results_name(wormhole(26, vcs=1)) == \
        "saturation_wormhole_l20_v1_q2.json"
    assert saturation_results_name(wormhole(26, flits=4, vc_depth=3)) == \
        "saturation_wormhole_l4_v3_q3.json"


@pytest.mark.parametrize("switching, buffers, unit", [
    (["--depths", "2"], "depth 2", "messages"),
    (["--switching", "wormhole", "--flits", "4", "--vcs", "2"], "4-flit worms, 2 VCs x 2",
     "flits")])
def test_the_density_picture_says_the_buffers_and_unit_of_its_mode(switching, buffers, unit,
                                                                    tmp_path, monkeypatch):
    """The density picture's title gives the point's buffers, and its scale what a link
    carries, each as the spec's switching mode says them."""
    from ihcube.sim import plots
    drawn = []
    monkeypatch.setattr(plots, "density_plot",
                        lambda n, density, ends, title, path, unit: drawn.append((title, unit))
                        or path)
    assert main(["sweep", "--sizes", "13", *switching, "--patterns", "uniform", "--rates",
                 "0.02", "--warmup", "100", "--window", "200", "--jobs", "1",
                 "--out", str(tmp_path)]) == 0
    (title, drawn_unit), = drawn
    assert title.startswith(f"n = 13, {buffers}, msb first, uniform traffic, rate 0.02")
    assert drawn_unit == unit
