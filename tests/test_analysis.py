"""Exact link loads and mean hops from the routes alone (issue 15; SPEC section 6).

Checked against cases worked out by hand here, the complete cube's closed form, a brute-force
sum over :func:`ihcube.topology.path`, and the fabric model's measured link densities; each
comparison with the simulation is shown to reject a wrong order, pattern, reading or load.
"""

import json
from fractions import Fraction

import numpy as np
import pytest

from ihcube import deadlock, topology
from ihcube.cli import main
from ihcube.sim import analysis, sweep
from ihcube.sim.traffic import Pattern
from ihcube.spec import FabricSpec

F = Fraction


# --- Worked by hand (uniform traffic: each source sends 1 / (n - 1) to each other node) ---
#
# n = 2: one link 0-1; each node sends everything over it. Each direction carries 1, the link
#   2; every message takes 1 hop; the direction saturates at rate 1.
# n = 3 (D = 2): links 0-1 (dim 0) and 0-2 (dim 1); 1-3 and 2-3 are missing. 1 -> 2: bit 1 of
#   1 XOR 2 = 3 has no link at 1 (3 >= n), so 1 -> 0 -> 2; 2 -> 1: 2 -> 0 (bit 1) -> 1. In
#   either order the same (only one usable bit at each step). Direction 0 -> 1 carries 0's
#   1/2 and 2's 1/2 = 1; likewise 1 -> 0, 0 -> 2, 2 -> 0. Hops: four pairs of 1 and two of 2,
#   8 / 6 = 4/3. Peak direction 1, peak link 2, 4 directions and 2 links at the peak.
# n = 4: the complete 2-cube. From each node two others are 1 hop away and one 2, mean 4/3;
#   the total load n * 4/3 = 16/3 is shared by the 8 directions alike (see the closed form
#   below): 2/3 each, 4/3 per link.
# n = 6 (D = 3, msb): links dim 0 0-1 2-3 4-5, dim 1 0-2 1-3, dim 2 0-4 1-5. Sums of the
#   Hamming distances from 0..5: 7, 7, 9, 9, 9, 9 = 50 over 30 pairs, mean 5/3. Direction
#   0 -> 2 carries 0 -> 2, 0 -> 3 (0 -> 2 -> 3), 4 -> 2 and 4 -> 3 (4 -> 0 first: bit 2 from
#   4 exists) but not 1 -> 2 (1 -> 3 -> 2) nor 5 -> 2, 5 -> 3 (5 -> 1 first): 4 pairs, 4/5.
HAND = [
    # n, order, mean hops, peak direction, peak link, directions at peak, links at peak
    (2, "msb", F(1), F(1), F(2), 2, 1),
    (3, "msb", F(4, 3), F(1), F(2), 4, 2),
    (3, "lsb", F(4, 3), F(1), F(2), 4, 2),
    (4, "msb", F(4, 3), F(2, 3), F(4, 3), 8, 4),
    (4, "lsb", F(4, 3), F(2, 3), F(4, 3), 8, 4),
]


@pytest.mark.parametrize("n, order, hops, peak, peak_link, directions, links", HAND)
def test_hand_worked_uniform(n, order, hops, peak, peak_link, directions, links):
    result = analysis.analyze(n, "uniform", order, exact=True)
    assert result.exact["mean_hops"] == hops
    assert result.exact["peak"] == peak and result.exact["peak_link"] == peak_link
    assert (result.peak_count, result.peak_link_count) == (directions, links)
    assert result.saturation_bound == pytest.approx(1 / peak)


def test_hand_worked_six_nodes():
    result = analysis.analyze(6, "uniform", "msb", exact=True)
    assert result.exact["mean_hops"] == F(5, 3)
    assert result.exact["peak"] == F(4, 5)
    assert result.loads[0, 1] == pytest.approx(4 / 5)  # 0 -> 2, dim 1


def test_hand_worked_decreasing_on_three_nodes():
    """n = 3, decreasing, literal: node 0 has 1 and 2 one hop away, so it splits evenly;
    node 1 has 0 one hop away and 2 two hops away: 0.34 + 0.20 / 2 to 0 and 0.20 + 0.20 / 2
    to 2, scaled by 1 / 0.74 (nothing 3 or 4 hops away, and the spread's 0.20 counts): 0.44 /
    0.74 = 22/37 to 0, 15/37 to 2; node 2 likewise. The route 1 -> 2 and 2 -> 1 pass through
    0 (n = 3 above). Direction 1 -> 0 carries all of node 1's traffic, 1; 0 -> 2 carries 0's
    1/2 and 1's 15/37; mean hops (1 + (22 + 2 * 15) / 37 * 2) / 3 = (1 + 104/37) / 3."""
    result = analysis.analyze(3, "decreasing", "msb", "literal", exact=True)
    assert result.exact["mean_hops"] == (1 + F(104, 37)) / 3
    assert result.loads[1, 0] == 1 and result.loads[0, 1] == pytest.approx(0.5 + 15 / 37)
    assert result.exact["peak"] == 1


# --- The complete cube's closed form ---------------------------------------------------------
#
# On the complete d-cube (n = 2**d) each bit differs between a node and n/2 of its n - 1
# others, so the distances from a node add up to d n / 2 and the mean is d n / (2 (n - 1)).
# A route crosses dimension i once iff the bit differs. XOR with a constant maps routes to
# routes (the cube looks the same from every node), so the n directions of dimension i carry
# the same load: the n (n/2) / (n - 1) crossings of dimension i per cycle over n directions,
# n / (2 (n - 1)) = mean hops / d, in either order.


@pytest.mark.parametrize("d", range(1, 9))
@pytest.mark.parametrize("order", topology.ROUTING_ORDERS)
def test_complete_cube_closed_form(d, order):
    n = 1 << d
    result = analysis.analyze(n, "uniform", order)
    assert result.mean_hops == pytest.approx(d * n / (2 * (n - 1)), rel=1e-12)
    assert result.loads == pytest.approx(np.full((n, d), n / (2 * (n - 1))), rel=1e-12)
    assert result.peak_count == n * d and result.peak_link_count == n * d // 2
    if result.exact:
        assert result.exact["peak"] == F(n, 2 * (n - 1))


def test_complete_cube_closed_form_at_1024():
    n, d = 1024, 10
    result = analysis.analyze(n, "uniform")
    assert result.peak == pytest.approx(n / (2 * (n - 1)), rel=1e-12)
    assert result.saturation_bound == pytest.approx(2 * (n - 1) / n, rel=1e-12)
    assert result.mean_hops == pytest.approx(d * n / (2 * (n - 1)), rel=1e-12)


# --- Against independent computations ---------------------------------------------------------


def brute_force_loads(n, probability, order):
    """Every pair's probability added along its path, from topology.path."""
    loads = {}
    for s in range(n):
        for d in range(n):
            if s != d:
                hops = topology.path(n, s, d, order)
                for a, b in zip(hops, hops[1:]):
                    i = (a ^ b).bit_length() - 1
                    loads[a, i] = loads.get((a, i), 0) + probability[s][d]
    return loads


@pytest.mark.parametrize("n", [5, 6, 13, 26])
@pytest.mark.parametrize("order", topology.ROUTING_ORDERS)
@pytest.mark.parametrize("name, reading", [("uniform", "literal"), ("sphere", "literal"),
                                           ("decreasing", "literal"),
                                           ("decreasing", "exclusive")])
def test_exact_loads_are_path_sums(n, order, name, reading):
    probability = Pattern(n, name, radius=2, reading=reading).matrix(exact=True)
    want = brute_force_loads(n, probability, order)
    got = analysis.exact_loads(n, probability, order)
    assert {key: value for key, value in got.items() if value} == want


@pytest.mark.parametrize("n", [7, 26, 40, 64])
@pytest.mark.parametrize("order", topology.ROUTING_ORDERS)
@pytest.mark.parametrize("name, reading", [("uniform", "literal"), ("sphere", "exclusive"),
                                           ("decreasing", "literal")])
def test_float_loads_equal_exact_loads(n, order, name, reading):
    exact = analysis.analyze(n, name, order, reading, exact=True)
    fast = analysis.analyze(n, name, order, reading, exact=False)
    assert fast.loads == pytest.approx(exact.loads, rel=1e-12, abs=1e-15)
    assert fast.mean_hops == pytest.approx(float(exact.exact["mean_hops"]), rel=1e-12)
    assert (fast.peak_at, fast.peak_count) == (exact.peak_at, exact.peak_count)
    assert (fast.peak_link_at, fast.peak_link_count) == (exact.peak_link_at,
                                                         exact.peak_link_count)


@pytest.mark.parametrize("n", [2, 100, 300])
@pytest.mark.parametrize("order", topology.ROUTING_ORDERS)
@pytest.mark.parametrize("name, reading", [("uniform", "literal"), ("sphere", "literal"),
                                           ("sphere", "exclusive"), ("decreasing", "literal")])
def test_loads_from_classes_equal_loads_from_the_table(n, order, name, reading):
    """:func:`analysis.pattern_loads` (each source's share worked out from the classes, no
    ``n x n`` table) against :func:`analysis.link_loads` of the pattern's table, and what
    each node receives against the table's column sums."""
    pattern = Pattern(n, name, radius=2, reading=reading)
    table = pattern.matrix()
    loads, received = analysis.pattern_loads(pattern, order)
    assert loads == pytest.approx(analysis.link_loads(n, table, order), rel=1e-12, abs=1e-15)
    assert received == pytest.approx(table.sum(axis=0), rel=1e-12)


def test_analysis_builds_no_table(monkeypatch):
    """Beyond the exact sizes :func:`analysis.analyze` reads no ``n x n`` table (the
    experiments' sizes go to 65,536 nodes): the same figures with the tables made to fail."""
    want = analysis.analyze(300, "decreasing", exact=False).summary()

    def no_table(*args, **kwargs):
        raise AssertionError("an n x n table was built")
    monkeypatch.setattr(Pattern, "matrix", no_table)
    monkeypatch.setattr(Pattern, "dests", property(no_table))
    monkeypatch.setattr(Pattern, "distances", property(no_table))
    assert analysis.analyze(300, "decreasing", exact=False).summary() == want
    with pytest.raises(AssertionError, match="table was built"):
        analysis.analyze(30, "decreasing", exact=True)


@pytest.mark.parametrize("n", [1, 2, 3, 6, 26, 70])
@pytest.mark.parametrize("order", topology.ROUTING_ORDERS)
def test_route_selector_is_the_route_step(n, order):
    exists, select = analysis.route_selector(n, order)
    table = deadlock.route_table(n, deadlock.routing_for(order))
    for a in range(n):
        for d in range(n):
            step = topology.route_step(n, a, d, order)
            got = select[(a ^ d) & exists[a]]
            assert got == (-1 if step is None else step) == table[a, d]


@pytest.mark.parametrize("n", [2, 6, 26, 100, 263])
def test_pair_counts_are_uniform_loads(n):
    loads = analysis.analyze(n, "uniform", exact=False).loads
    assert analysis.pair_counts(n) == pytest.approx(loads * (n - 1), rel=1e-12)
    row = analysis.scan(n)[-1]
    assert row["n"] == n
    assert float(row["peak_link"]) == pytest.approx(analysis.analyze(n).peak_link, rel=1e-12)


def test_mean_hops_are_the_distances():
    """The mean hops (total load over n) against the Hamming distances, Pattern's weights."""
    n = 100
    pattern = Pattern(n, "sphere")
    want = (pattern.matrix() * pattern.distances).sum() / n
    assert analysis.analyze(n, "sphere").mean_hops == pytest.approx(want, rel=1e-12)


# --- Against the simulation -------------------------------------------------------------------


def loads_match(counts, cycles, rate, load):
    """Whether measured link counts fit the exact load: each link's count within 5 standard
    deviations of ``rate * cycles * load``. A link's messages are many independent rare
    events (each generated message crosses it or not), so the count is close to Poisson,
    variance = mean; the + 2 allows for the few messages in flight at the window's ends."""
    expected = rate * cycles * load
    return bool((np.abs(counts - expected) <= 5 * np.sqrt(expected) + 2).all())


N, RATE = 26, 0.2
SETTINGS = sweep.Settings(warmup=500, window=10_000, min_windows=4, max_windows=4)


@pytest.fixture(scope="module")
def measured():
    """n = 26 (incomplete), decreasing literal traffic at rate 0.2, msb, depth 2: well below
    the bound 1 / 0.65 of the busiest direction. The link counts of 40,000 cycles."""
    point = sweep.Point(FabricSpec.of(N, depth=2), "decreasing", RATE)
    row, (density, ends) = sweep.measure(point, SETTINGS, keep_links=True)
    assert not row["saturated"]
    return row, density * row["cycles"], ends


def test_simulated_density_matches_exact_load(measured):
    row, counts, ends = measured
    exact = analysis.analyze(N, "decreasing", "msb", "literal")
    assert np.array_equal(exact.link_a, ends[0]) and np.array_equal(exact.link_i, ends[1])
    assert loads_match(counts, row["cycles"], RATE, exact.link_loads)
    assert row["mean_hops"] == pytest.approx(exact.mean_hops, rel=0.01)
    assert row["peak_density"] / RATE == pytest.approx(exact.peak_link, rel=0.1)


@pytest.mark.parametrize("wrong", [
    dict(order="lsb"),
    dict(reading="exclusive"),
    dict(name="uniform"),
    dict(name="sphere"),
])
def test_simulated_density_rejects_a_wrong_analysis(measured, wrong):
    """Negative control: the same comparison fails for another order, reading or pattern."""
    row, counts, _ = measured
    setting = dict(name="decreasing", order="msb", reading="literal") | wrong
    exact = analysis.analyze(N, setting["name"], setting["order"], setting["reading"])
    assert not loads_match(counts, row["cycles"], RATE, exact.link_loads)


def test_simulated_density_rejects_a_perturbed_load(measured):
    """Negative control: one link's load 15% off is caught."""
    row, counts, _ = measured
    load = analysis.analyze(N, "decreasing").link_loads.copy()
    load[np.argmax(load)] *= 1.15
    assert not loads_match(counts, row["cycles"], RATE, load)


# --- The command ------------------------------------------------------------------------------


def test_command_prints_and_writes(tmp_path, capsys):
    out = tmp_path / "analysis.json"
    assert main(["analyze", "--sizes", "4,6", "--pattern", "uniform,decreasing",
                 "--reading", "literal,exclusive", "--out", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "| 4 | uniform | msb | literal | 1.3333 | 1.3333 |" in text
    data = json.loads(out.read_text())
    assert len(data["analyses"]) == 2 * (1 + 2)
    assert data["analyses"][0]["exact"]["peak_direction_load"] == "2/3"


def test_command_scan(tmp_path, capsys):
    assert main(["analyze", "--scan", "6", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "analysis_scan.json").is_file()
    # n = 2 and n = 3 both peak at 2 per link (above); 4: 4/3; 5, 6 lower than 2.
    assert "at n = 2, 3" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["--sizes", "1"], "Node counts must be comma-separated integers of at least 2, not '1'"),
    (["--sizes", "6", "--pattern", "ring"],
     "Patterns must be comma-separated names from uniform, sphere, decreasing, not 'ring'"),
    (["--sizes", "6", "--reading", "both"],
     "Readings must be comma-separated names from literal, exclusive, not 'both'"),
    (["--sizes", "6", "--order", "mid"],
     "Orders must be comma-separated names from msb, lsb, not 'mid'"),
    ([], "the following arguments are required: --sizes (or --scan)"),
    (["--sizes", "6", "--scan", "9"], "Give --sizes or --scan, not both"),
    (["--sizes", "65537"], "Node count must be at most 65536 for the exact analysis, not 65537"),
])
def test_command_errors(argv, message, capsys):
    assert main(["analyze", *argv]) == 2
    assert capsys.readouterr().err == f"ihcube analyze: error: {message}\n"


def test_command_saturation_ratio(tmp_path, capsys):
    """n = 4 uniform: bound 1 / (2/3) = 1.5 (above). A measured 0.75 is half of it; at depth 1
    a link takes a message every other cycle, so the bound there is 0.75 and the ratio 1."""
    measured = tmp_path / "saturation.json"
    measured.write_text(json.dumps(dict(saturation=[
        dict(n=4, depth=depth, order="msb", pattern="uniform", throughput=0.75,
             backlogged=0.75) for depth in (1, 2)])))
    out = tmp_path / "analysis.json"
    assert main(["analyze", "--sizes", "4", "--saturation", str(measured),
                 "--out", str(tmp_path)]) == 0
    rows = json.loads(out.read_text())["saturation"]
    assert [r["ratio"] for r in rows] == pytest.approx([0.5, 0.5])
    assert [r["ratio_at_link_rate"] for r in rows] == pytest.approx([1.0, 0.5])
