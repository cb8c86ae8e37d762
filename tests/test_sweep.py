"""Traffic patterns, the traffic source and the latency-throughput sweep (issue 5).

The destination distributions are checked against probabilities worked out here from SPEC
section 6 and the Hamming distance (``bin(a ^ b).count("1")``, Katseff's Theorem 1), by the
empirical frequencies of many draws; each check is shown to reject a wrong pattern.
"""

import functools
import json
import math
import subprocess
import sys
from unittest import mock

import numpy as np
import pytest

from ihcube import topology
from ihcube.cli import main
from ihcube.sim import sweep
from ihcube.sim.model import Model
from ihcube.sim.traffic import Pattern, TrafficSource, sample
from ihcube.spec import FabricSpec

DRAWS = 200_000


def hops(a, b):
    return bin(a ^ b).count("1")


def expected_uniform(n, a):
    return {b: 1 / (n - 1) for b in range(n) if b != a}


def expected_sphere(n, a, radius, zeta, reading="literal"):
    """SPEC section 6. Literal: zeta spread over the nodes within the radius, 1 - zeta over
    every other node (the sphere included). Exclusive: 1 - zeta over the nodes outside only
    (all of it inside when nothing is outside)."""
    inside = [b for b in range(n) if b != a and hops(a, b) <= radius]
    outside = [b for b in range(n) if hops(a, b) > radius]
    if reading == "literal":
        return {b: zeta / len(inside) * (b in inside) + (1 - zeta) / (n - 1)
                for b in range(n) if b != a}
    if not outside:
        return {b: 1 / len(inside) for b in inside}
    if not inside:
        return {b: 1 / len(outside) for b in outside}
    probability = {b: zeta / len(inside) for b in inside}
    probability.update({b: (1 - zeta) / len(outside) for b in outside})
    return probability


def expected_decreasing(n, a, reading="literal"):
    """SPEC section 6: 0.34, 0.20, 0.16, 0.10 spread over the nodes 1, 2, 3, 4 hops away;
    the remaining 0.20 over every other node (literal) or over those 5 or more hops away
    (exclusive). A distance with no nodes gets nothing and the rest scale up in proportion."""
    weights = {1: 0.34, 2: 0.20, 3: 0.16, 4: 0.10, 5: 0.20}  # 5: five hops or more
    classes = {}
    for b in range(n):
        if b != a:
            classes.setdefault(min(hops(a, b), 5), []).append(b)
    if reading == "literal":
        total = sum(weights[k] for k in classes if k < 5) + weights[5]
        return {b: (weights[k] / len(members) * (k < 5) + weights[5] / (n - 1)) / total
                for k, members in classes.items() for b in members}
    total = sum(weights[k] for k in classes)
    return {b: weights[k] / total / len(members) for k, members in classes.items()
            for b in members}


def frequencies_match(draws, probability):
    """Whether the draws fit ``probability``: no draw outside it, every node's count within
    5 standard deviations (binomial) of its expectation."""
    counts = np.bincount(draws, minlength=max(probability) + 1)
    if counts[[b for b in range(len(counts)) if b not in probability]].any():
        return False
    total = len(draws)
    for b, p in probability.items():
        mean = total * p
        if abs(counts[b] - mean) > 5 * math.sqrt(mean * (1 - p)) + 1:
            return False
    return True


def distances_match(draws, probability, source):
    """Whether the draws' distances from ``source`` fit ``probability``: the count at each
    distance within 5 standard deviations (binomial) of its expectation. Stronger than
    :func:`frequencies_match` against a shift between whole classes spread over many nodes."""
    n = max(probability) + 1
    counts = np.bincount(draws, minlength=n)
    total = len(draws)
    by_distance = {}
    for b in range(n):
        h = hops(source, b)
        want, seen = by_distance.get(h, (0.0, 0))
        by_distance[h] = (want + probability.get(b, 0.0), seen + int(counts[b]))
    for p, seen in by_distance.values():
        if abs(seen - total * p) > 5 * math.sqrt(total * p * (1 - p)) + 1:
            return False
    return True


CASES = [
    # n, pattern, radius, zeta, source
    (26, "uniform", 4, 0.8, 0),
    (26, "uniform", 4, 0.8, 25),
    (100, "sphere", 2, 0.7, 37),
    (1048, "sphere", 4, 0.8, 1047),
    (8, "sphere", 3, 0.8, 5),      # nothing farther than 3 hops: all inside
    (1048, "decreasing", 4, 0.8, 3),
    (1048, "decreasing", 4, 0.8, 1030),
    (6, "decreasing", 4, 0.8, 0),  # nothing 3 or more hops away: the rest scaled up
    (13, "decreasing", 4, 0.8, 12),
]
READINGS = ("literal", "exclusive")


def expected(n, name, radius, zeta, a, reading="literal"):
    if name == "uniform":
        return expected_uniform(n, a)
    if name == "sphere":
        return expected_sphere(n, a, radius, zeta, reading)
    return expected_decreasing(n, a, reading)


@pytest.mark.parametrize("reading", READINGS)
@pytest.mark.parametrize("n, name, radius, zeta, source", CASES)
def test_destination_frequencies(n, name, radius, zeta, source, reading):
    pattern = Pattern(n, name, radius, zeta, reading=reading)
    draws = sample(pattern, np.full(DRAWS, source), seed=n + source)
    probability = expected(n, name, radius, zeta, source, reading)
    assert frequencies_match(draws, probability)
    assert distances_match(draws, probability, source)


@pytest.mark.parametrize("reading", READINGS)
@pytest.mark.parametrize("n, name, radius, zeta, source", CASES)
def test_destination_table_is_exact(n, name, radius, zeta, source, reading):
    """The probability table (which the exact analysis reads) is the definition."""
    want = expected(n, name, radius, zeta, source, reading)
    row = Pattern(n, name, radius, zeta, reading=reading).matrix(exact=True)[source]
    assert [float(p) for p in row] == pytest.approx([want.get(b, 0) for b in range(n)],
                                                    rel=1e-12, abs=0)


def test_literal_is_the_default():
    assert (Pattern(100, "decreasing").matrix() ==
            Pattern(100, "decreasing", reading="literal").matrix()).all()


@pytest.mark.parametrize("n, name, wrong", [
    (26, "uniform", ("decreasing", 4, 0.8)),
    (1048, "sphere", ("uniform", 4, 0.8)),
    (1048, "sphere", ("sphere", 4, 0.7)),     # zeta off by 0.1
    (1048, "decreasing", ("sphere", 4, 0.8)),
    (6, "decreasing", ("uniform", 4, 0.8)),
])
def test_frequency_check_rejects_a_wrong_pattern(n, name, wrong):
    """Negative control: draws from another pattern do not pass as ``name``."""
    draws = sample(Pattern(n, *wrong), np.full(DRAWS, 5 % n), seed=1)
    assert not frequencies_match(draws, expected(n, name, 4, 0.8, 5 % n))


@pytest.mark.parametrize("n, name, source", [(1048, "sphere", 1047), (1048, "decreasing", 3),
                                             (13, "decreasing", 12)])
@pytest.mark.parametrize("reading", READINGS)
def test_frequency_check_rejects_the_other_reading(n, name, source, reading):
    """Negative control: draws of one reading do not pass as the other."""
    other = READINGS[1 - READINGS.index(reading)]
    draws = sample(Pattern(n, name, reading=other), np.full(DRAWS, source), seed=2)
    probability = expected(n, name, 4, 0.8, source, reading)
    assert not (frequencies_match(draws, probability)
                and distances_match(draws, probability, source))


@pytest.mark.parametrize("reading, near, far", [
    # Exclusive: 0.34 and 0.20 only (nothing 3+ hops away), scaled by 1 / 0.54.
    ("exclusive", 0.34 / 0.54 / 3, 0.20 / 0.54 / 2),
    # Literal: 0.34 over 1, 2, 4 and 0.20 over 3, 5, plus the spread 0.20 over all five, the
    # whole scaled by 1 / (0.34 + 0.20 + 0.20).
    ("literal", (0.34 / 3 + 0.20 / 5) / 0.74, (0.20 / 2 + 0.20 / 5) / 0.74),
])
def test_hand_worked_small_case(reading, near, far):
    """n = 6, source 0: nodes 1, 2, 4 are one hop away, 3 and 5 two, none farther."""
    pattern = Pattern(6, "decreasing", reading=reading)
    draws = sample(pattern, np.zeros(DRAWS, np.int64), seed=3)
    share = np.bincount(draws, minlength=6) / DRAWS
    assert share[0] == 0
    assert share[[1, 2, 4]] == pytest.approx([near] * 3, abs=0.005)
    assert share[[3, 5]] == pytest.approx([far] * 2, abs=0.005)


def test_every_source_draws_from_its_own_row():
    """Draws for many sources at once: never the source itself, and the distance mix of the
    uniform pattern matches the distance counts of a complete cube (binomial)."""
    n = 256
    sources = np.arange(DRAWS) % n
    draws = sample(Pattern(n, "uniform"), sources, seed=9)
    assert not (draws == sources).any()
    distance = np.array([hops(int(a), int(b)) for a, b in zip(sources, draws)])
    share = np.bincount(distance, minlength=9) / DRAWS
    assert share == pytest.approx([math.comb(8, k) / (n - 1) * (k > 0) for k in range(9)],
                                  abs=0.005)


def test_traffic_source_conserves_and_times_messages():
    """Every generated message is delivered, queued or in a buffer; the generation rate is
    as asked; at almost no load a message over h hops takes h + 1 cycles (docs/router.md: taken in
    cycle t, delivered in t + hops + 1, and taken in the cycle it was generated)."""
    n, rate, cycles = 64, 0.002, 20_000
    model = Model(n, payload_width=64, depth=2)
    source = TrafficSource(model, Pattern(n, "uniform"), rate, seed=4)
    got = source.run(cycles, record_links=True)
    assert got["generated"] == got["delivered"] + source.queued + model.occupancy.sum()
    mean = rate * n * cycles
    assert abs(got["generated"] - mean) < 5 * math.sqrt(mean)
    count, latency = got["by_hops"]
    for h in range(1, 7):
        assert latency[h] / count[h] == pytest.approx(h + 1, abs=0.05)
    assert count[0] == 0
    # From empty: the transfers are the delivered messages' hops and part of the rest's.
    assert got["transfers"] == got["link_count"].sum()
    in_fabric = model.occupancy.sum()
    assert 0 <= got["transfers"] - got["hops_sum"] <= 6 * in_fabric


def test_link_density_of_uniform_traffic():
    """On a complete 6-cube under uniform traffic at rate r, each of the 192 links carries
    r * n * (mean distance) / 192 messages per cycle on average, mean distance 6*32/63."""
    n, rate = 64, 0.1
    row = sweep.measure(sweep.Point(FabricSpec.of(n, depth=2), "uniform", rate),
                        sweep.Settings(warmup=500, window=4000, max_windows=2))
    assert not row["saturated"]
    assert row["mean_hops"] == pytest.approx(6 * 32 / 63, rel=0.02)
    assert row["mean_density"] == pytest.approx(rate * n * (6 * 32 / 63) / 192, rel=0.03)
    assert row["peak_density"] >= row["mean_density"]
    assert row["throughput"] == pytest.approx(rate, rel=0.03)


def test_saturation_is_detected():
    """Depth 1 injects at most every other cycle, so rate 0.6 must saturate; rate 0.05 must
    not, and converges."""
    settings = sweep.Settings(warmup=300, window=500, max_windows=5)
    high = sweep.measure(sweep.Point(FabricSpec(32), "uniform", 0.6), settings)
    low = sweep.measure(sweep.Point(FabricSpec(32), "uniform", 0.05), settings)
    assert high["saturated"] and high["mean_latency"] == "" and high["throughput"] <= 0.5
    assert not low["saturated"] and low["converged"] and low["mean_latency"] > 1


def test_saturation_command_with_link_stages(tmp_path, capsys):
    """``ihcube saturation --link-stages 1`` measures the fabric with a relay on each link:
    two cycles per hop at zero load, and rows that say so, in a file of their own; without
    the option one cycle per hop, in ``saturation.json``."""
    for stages, name, per_hop in ((1, "saturation_s1.json", 2.0),
                                  (0, "saturation.json", 1.0)):
        assert main(["saturation", "--sizes", "8", "--depths", "1,2", "--link-stages",
                     str(stages), "--jobs", "1", "--out", str(tmp_path)]) == 0
        data = json.loads((tmp_path / name).read_text())
        assert [row["link_stages"] for row in data["saturation"] + data["zero_load"]] == \
            [stages] * 4
        for zero in data["zero_load"]:
            assert zero["per_hop"] == pytest.approx(per_hop, abs=0.02)
        assert all(0 < row["throughput"] <= 1 for row in data["saturation"])
        out = capsys.readouterr().out
        assert ("Register stages: link stages 1 (a cycle more per hop)" in out) == bool(stages)


@pytest.mark.parametrize("value, message", [
    ("2", "Link stages must be 0 or 1, not 2"),
    ("-1", "Link stages must be 0 or 1, not -1"),
    ("one", "Link stages must be 0 or 1, not 'one'"),
])
def test_saturation_command_bad_link_stages(value, message, tmp_path, capsys):
    assert main(["saturation", "--sizes", "8", "--link-stages", value,
                 "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"ihcube saturation: error: {message}"]


def test_saturation_command_link_stages_are_not_wormhole(tmp_path, capsys):
    assert main(["saturation", "--switching", "wormhole", "--sizes", "8", "--link-stages", "1",
                 "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "ihcube saturation: error: Link stages are a packet-switching option, not taken with "
        "wormhole switching, not 1"]


def test_incomplete_cube_densities_use_existing_links():
    n = 26
    density, (a, i) = sweep.link_density(n, np.ones((n, 5), np.int64), 1)
    assert len(density) == sum(len(topology.links(n, x)) for x in range(n)) // 2
    assert ((a ^ (1 << i)) < n).all() and (density == 2).all()


@pytest.mark.parametrize("n", [1, 2, 3, 26, 64, 100, 1048])
def test_links_are_the_topologys_in_order(n):
    """The undirected links, built a dimension at a time, are those of ``topology.links``
    from the lower end, by node and then dimension (the order the densities are summed in)."""
    a, i = sweep._links(n)
    assert list(zip(a.tolist(), i.tolist())) == [
        (x, d) for x in range(n) for d in topology.links(n, x) if x < topology.neighbor(x, d)]


@pytest.mark.slow
def test_same_seed_same_csv_bytes(tmp_path):
    points = sweep.points([FabricSpec.of(n, depth=depth) for n in (26, 32) for depth in (1, 2)],
                          ("uniform", "decreasing"), (0.1, 0.4))
    settings = sweep.Settings(warmup=100, window=200, max_windows=3, seed=7)
    files = []
    for k, jobs in enumerate((2, 1, 2)):
        rows, _ = sweep.sweep(points, settings, jobs=jobs, progress=False)
        sweep.write_csv(tmp_path / f"{k}.csv", rows)
        files.append((tmp_path / f"{k}.csv").read_bytes())
    assert files[0] == files[1] == files[2]
    rows, _ = sweep.sweep(points, sweep.Settings(warmup=100, window=200, max_windows=3, seed=8),
                          jobs=2, progress=False)
    sweep.write_csv(tmp_path / "other.csv", rows)
    assert (tmp_path / "other.csv").read_bytes() != files[0]


@pytest.mark.slow
def test_sweep_command_writes_csv_and_pictures(tmp_path):
    code = main(["sweep", "--sizes", "16,20", "--depths", "2", "--patterns", "uniform,sphere",
                 "--rates", "0.1,0.3", "--warmup", "100", "--window", "200", "--out",
                 str(tmp_path), "--name", "t"])
    assert code == 0
    lines = (tmp_path / "t.csv").read_text().splitlines()
    assert lines[0].split(",") == list(sweep.CSV_COLUMNS) and len(lines) == 1 + 2 * 2 * 2
    for name in ("t_uniform.png", "t_sphere.png", "t_density.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "t.json").exists()


@pytest.mark.slow
@pytest.mark.parametrize("reading", READINGS)
def test_sweep_command_reading(tmp_path, reading):
    """``--reading`` reaches the traffic: the measured mean hops are the exact ones of that
    reading (n = 26, decreasing: the two are some 15% apart) and the JSON
    says which."""
    from ihcube.sim.analysis import analyze
    code = main(["sweep", "--sizes", "26", "--depths", "2", "--patterns", "decreasing",
                 "--rates", "0.1", "--warmup", "200", "--window", "4000", "--out",
                 str(tmp_path), "--name", "r", "--no-plots", "--reading", reading])
    assert code == 0
    row = dict(zip(*[line.split(",") for line in
                     (tmp_path / "r.csv").read_text().splitlines()]))
    assert float(row["mean_hops"]) == pytest.approx(analyze(26, "decreasing",
                                                            reading=reading).mean_hops, rel=0.03)
    assert json.loads((tmp_path / "r.json").read_text())["reading"] == reading


@pytest.mark.parametrize("args, message", [
    (["--sizes", "1"], "Sizes must be comma-separated integers of at least 2, not '1'"),
    (["--sizes", "abc"], "Sizes must be comma-separated integers of at least 2, not 'abc'"),
    (["--patterns", "hotspot"], "Patterns must be comma-separated names from uniform, sphere, "
                                "decreasing, not 'hotspot'"),
    (["--rates", "0.1,2"], "Rates must be comma-separated numbers from 0 to 1, not '0.1,2'"),
    (["--orders", "mid"], "Orders must be comma-separated names from msb, lsb, not 'mid'"),
    (["--set", "huge"],
     "Sweep set must be one of quick, full, wormhole-quick, wormhole, not 'huge'"),
    (["--zeta", "1.5"], "Sphere locality zeta must be a number from 0 to 1, not '1.5'"),
    (["--depths", "0"], "Depths must be comma-separated integers of at least 1, not '0'"),
    (["--sizes", "100000"], "Node count must be at most 65536 for the experiments, not 100000"),
    (["--reading", "both"], "Traffic reading must be one of 'literal' or 'exclusive', not 'both'"),
])
def test_sweep_errors_are_one_line(args, message, capsys):
    assert main(["sweep", *args]) == 2
    err = capsys.readouterr().err
    assert err == f"ihcube sweep: error: {message}\n"


def test_sweep_error_from_the_shell():
    run = subprocess.run([sys.executable, "-m", "ihcube", "sweep", "--rates", "x"],
                         capture_output=True, text=True)
    assert run.returncode == 2
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr


@pytest.mark.parametrize("command, option, value, message", [
    ("sweep", "--nodes", "16", "Node count (--nodes) is not taken: give --sizes"),
    ("sweep", "--depth", "2", "Buffer depth (--depth) is not taken: give --depths"),
    ("sweep", "--order", "lsb", "Routing order (--order) is not taken: give --orders"),
    ("sweep", "--width", "64", "Payload width (--width) is not taken: the experiments' "
                               "payloads carry each message's generation cycle"),
    ("sweep", "--ports", "2", "Port count (--ports) is not taken: the experiments' traffic "
                              "enters through one PE port a node"),
    ("saturation", "--nodes", "16", "Node count (--nodes) is not taken: give --sizes"),
    ("saturation", "--depth", "1", "Buffer depth (--depth) is not taken: give --depths"),
    ("saturation", "--width", "32", "Payload width (--width) is not taken: the experiments' "
                                    "payloads carry each message's generation cycle"),
    ("saturation", "--ports", "1", "Port count (--ports) is not taken: the experiments' "
                                   "traffic enters through one PE port a node"),
    *((command, "--reconfigurable", None, "Reconfigurable (--reconfigurable) is not taken: "
                                          "the experiments measure fixed fabrics (a "
                                          "reconfigured fabric of n active nodes is the "
                                          "n-node fabric relabelled: give --sizes n)")
      for command in ("sweep", "saturation")),
])
def test_the_experiments_refuse_the_fabric_options_they_do_not_take(command, option, value,
                                                                   message, tmp_path, capsys):
    """The fabric option group's options that a list or the traffic replaces: one line, even
    at their default value, and nothing written."""
    given = [option] if value is None else [option, value]
    assert main([command, "--sizes", "16", *given, "--out", str(tmp_path)]) == 2
    assert capsys.readouterr() == ("", f"ihcube {command}: error: {message}\n")
    assert list(tmp_path.iterdir()) == []


#: Short saturation measurements for the command's tests.
SHORT_SATURATION = sweep.Settings(warmup=100, window=200, max_windows=3)


def test_saturation_takes_the_routing_order_of_the_fabric_options(tmp_path):
    """``--order`` is the fabric group's, and reaches the rows (the control of the refusals:
    an option the command takes is not refused)."""
    with mock.patch.object(sweep, "saturation", functools.partial(
            sweep.saturation, settings=SHORT_SATURATION, resolution=0.1)), \
            mock.patch.object(sweep, "zero_load", functools.partial(sweep.zero_load,
                                                                    cycles=1000)):
        assert main(["saturation", "--sizes", "8", "--depths", "2", "--order", "lsb",
                     "--jobs", "1", "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "saturation.json").read_text())
    assert [row["order"] for row in data["saturation"] + data["zero_load"]] == ["lsb"] * 2


def test_sweep_with_register_stages(tmp_path):
    """``ihcube sweep --link-stages 1 --switch-stages 1``: the packet model has the stages
    (two cycles more a hop at low load), and the files say so, in their name and summary;
    without stages, the names and summary of before."""
    base = ["sweep", "--sizes", "16", "--depths", "2", "--patterns", "uniform", "--rates",
            "0.05", "--warmup", "100", "--window", "400", "--no-plots", "--jobs", "1",
            "--out", str(tmp_path)]
    assert main(base) == 0
    assert main(base + ["--link-stages", "1", "--switch-stages", "1"]) == 0
    (plain,), (staged,) = (sweep.read_csv(tmp_path / name)
                           for name in ("sweep_quick_custom.csv",
                                        "sweep_quick_custom_s1_g1.csv"))
    assert staged["mean_latency"] > plain["mean_latency"] + 1.5 * plain["mean_hops"]
    summaries = [json.loads((tmp_path / name).read_text())
                 for name in ("sweep_quick_custom.json", "sweep_quick_custom_s1_g1.json")]
    assert "stages" not in summaries[0]
    assert summaries[1]["stages"] == {"link_stages": 1, "switch_stages": 1}


def test_a_custom_sweep_is_not_written_under_its_sets_name(tmp_path, monkeypatch):
    """A named set run as it is writes ``sweep_<set>.*``; the same set with any part changed
    (here the seed, then the rates) writes ``sweep_<set>_custom.*``, never the set's files."""
    tiny = dict(sizes=(4,), depths=(1,), orders=("msb",), patterns=("uniform",),
                rates=(0.1,), settings=sweep.Settings(warmup=10, window=10, max_windows=2))
    monkeypatch.setitem(sweep.SETS, "quick", tiny)
    base = ["sweep", "--no-plots", "--jobs", "1", "--out", str(tmp_path)]
    assert main(base) == 0
    assert sorted(path.name for path in tmp_path.iterdir()) == ["sweep_quick.csv",
                                                                "sweep_quick.json"]
    for changed in (["--seed", "2"], ["--rates", "0.1"]):
        before = (tmp_path / "sweep_quick.csv").stat().st_mtime_ns
        assert main(base + changed) == 0
        assert (tmp_path / "sweep_quick_custom.csv").is_file()
        assert (tmp_path / "sweep_quick.csv").stat().st_mtime_ns == before
