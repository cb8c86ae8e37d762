"""Destinations drawn by distance class without tables (``ihcube.sim.by_distance``, issue 17).

The reference is the table a pattern used to draw from: each source's other nodes sorted
class by class, in node-number order within a class, the classes worked out here from SPEC
section 6 and :func:`ihcube.topology.distances`. Every node of every class of every source,
and the edges of the uniform numbers, are drawn both ways, for every ``n`` from 2 to 70 and a
few larger ones; a wrong order or an off-by-one in the reference is shown to be caught. The
same points measured with the table and without give the same rows.
"""

import functools

import numpy as np
import pytest

from ihcube import topology
from ihcube.sim import sweep, traffic
from ihcube.sim.by_distance import class_member, class_size, hops
from ihcube.sim.model import Model, RandomTraffic
from ihcube.sim.traffic import Pattern, draw
from ihcube.spec import FabricSpec

SIZES = [*range(2, 71), 100, 129, 1000]
#: name, radius, reading
PATTERNS = [("uniform", 4, "literal"), ("sphere", 2, "literal"), ("sphere", 4, "exclusive"),
            ("decreasing", 4, "literal"),
            ("decreasing", 4, "exclusive")]


@functools.lru_cache(maxsize=None)
def hop_table(n):
    return np.array([topology.distances(n, a) for a in range(n)], np.int64)


def spec_key(n, name, radius, order="class"):
    """Each destination's class (SPEC section 6), the source itself last; with ``order``
    "distance", a wrong reference that sorts a class by distance before node number."""
    h = hop_table(n)
    if name == "uniform":
        key = np.zeros((n, n), np.int64)
    elif name == "sphere":
        key = (h > radius).astype(np.int64)
    else:
        key = np.minimum(h, 5) - 1
    if order == "distance":
        key = key * 64 + h
    np.fill_diagonal(key, np.iinfo(np.int64).max)
    return key


def reference_table(n, name, radius, order="class"):
    """The table: row ``a`` the other nodes by class, by node number within a class."""
    return np.argsort(spec_key(n, name, radius, order), axis=1, kind="stable")[:, :n - 1]


def draws_to_check(pattern):
    """``(sources, u, v)`` that reach every node of every class with a probability, and the
    edges: ``u`` at and just below each running sum, ``v`` at ``j / size``, just below
    ``(j + 1) / size`` and just below 1."""
    sizes = np.diff(pattern.start, axis=1)
    cumulative = np.minimum(pattern.cumulative, 1.0)
    below = np.concatenate([np.zeros((pattern.n, 1)), cumulative[:, :-1]], axis=1)
    a, k = np.nonzero((sizes > 0) & (cumulative > below))
    size = sizes[a, k]
    first = np.repeat(np.cumsum(size) - size, size)
    j = np.arange(size.sum()) - first
    of = np.repeat(np.arange(len(a)), size)  # each member's (a, k)
    mid = (below[a, k] + cumulative[a, k]) / 2
    edge = len(a)
    sources = np.concatenate([a[of]] * 3 + [a] * 3)
    u = np.concatenate([mid[of]] * 3 + [mid, below[a, k], np.nextafter(cumulative[a, k], 0)])
    s = size[of]
    v = np.concatenate([(j + 0.5) / s, j / s, np.nextafter((j + 1) / s, 0),
                        np.full(edge, 1 - 2.0 ** -53), np.zeros(edge), np.full(edge, 0.5)])
    return sources, u, v


def table_draws(pattern, table, sources, u, v, shift=0):
    """draw_dest from ``table``, in NumPy: the first class whose running sum exceeds ``u``,
    then node ``int(size * v)`` of it (``shift`` places on: a wrong, off-by-one draw)."""
    k = (u[:, None] >= pattern.cumulative[sources]).sum(axis=1)
    lo = pattern.start[sources, k]
    size = pattern.start[sources, k + 1] - lo
    j = (size * v).astype(np.int64)
    return table[sources, lo + (j + shift) % size]


def mismatches(name, radius, reading, order="class", shift=0, sizes=SIZES):
    """The ``sizes`` where the draws by class differ from those of the reference table (or of
    a wrong one: ``order``, ``shift``)."""
    out = []
    for n in sizes:
        pattern = Pattern(n, name, radius, reading=reading)
        table = reference_table(n, name, radius, order)
        key = spec_key(n, name, radius)
        classes = pattern.start.shape[1] - 1
        counts = np.stack([(key == k).sum(axis=1) for k in range(classes)], axis=1)
        sources, u, v = draws_to_check(pattern)
        want = table_draws(pattern, table, sources, u, v, shift)
        if (not np.array_equal(np.diff(pattern.start, axis=1), counts)
                or not np.array_equal(draw(pattern, sources, u, v), want)):
            out.append(n)
    return out


@pytest.mark.parametrize("name, radius, reading", PATTERNS)
def test_draws_by_class_are_the_table_draws(name, radius, reading):
    assert mismatches(name, radius, reading) == []


@pytest.mark.parametrize("wrong", [dict(order="distance"), dict(shift=1), dict(shift=-1)])
def test_a_wrong_reference_is_caught(wrong):
    """Negative controls: a class ordered by distance, then node number, and every member one
    place off, differ for most sizes."""
    assert len(mismatches("uniform", 4, "literal", **wrong, sizes=SIZES[:-1])) > 60
    assert len(mismatches("decreasing", 4, "literal", **wrong, sizes=SIZES[:-1])) > 30


@pytest.mark.parametrize("n", [2, 26, 64, 100])
def test_table_form_and_class_form_of_the_kernel(n):
    """The compiled draw from the pattern's own table and by class: the same nodes."""
    pattern = Pattern(n, "sphere", 2)
    sources, u, v = draws_to_check(pattern)
    assert np.array_equal(draw(pattern, sources, u, v, table=True),
                          draw(pattern, sources, u, v))


def test_class_members_beyond_the_patterns():
    """Every range of distances, against the topology: the members in order, the size, and
    the compiled hops."""
    for n in [1, 2, 3, 5, 8, 26, 33, 64]:
        h = hop_table(n)
        for a in range(n):
            assert [hops(a, b) for b in range(n)] == h[a].tolist()
            for lo in range(1, 9):
                for hi in range(lo, 9):
                    members = np.flatnonzero((h[a] >= lo) & (h[a] <= hi)).tolist()
                    assert class_size(n, a, lo, hi) == len(members)
                    assert [class_member(n, a, lo, hi, j) for j in range(len(members))] == members


@pytest.mark.parametrize("threads", [1, 2])
def test_random_traffic_by_class_in_the_model(threads):
    """Model.advance with the pattern's RandomTraffic by class and from its table: the same
    records, on one thread or two."""
    n = 100
    pattern = Pattern(n, "decreasing")
    runs = []
    for traffic_of in (pattern.traffic, lambda rate, state: RandomTraffic(
            n, rate, *pattern.tables, state=state)):
        model = Model(n, payload_width=64, depth=2, threads=threads)
        run = model.advance(200, traffic=traffic_of(0.3, 11), record_hops=True)
        runs.append((run.injections.tobytes(), run.deliveries.tobytes(), run.hops.tobytes()))
    assert runs[0] == runs[1]


@pytest.mark.parametrize("arguments, message", [
    (dict(dests=np.zeros((5, 4))),
     "Destinations come from a table or from classes by distance, not both"),
    (dict(classes=np.array([[0, 3]])),
     "Classes by distance must be 1 rows of the least and most hops, from 1 up"),
    (dict(classes=np.array([[2, 1]])),
     "Classes by distance must be 1 rows of the least and most hops, from 1 up"),
    (dict(classes=np.array([[1, 1]])),
     "Class starts must count the nodes at each class's distances"),
])
def test_random_traffic_wrong_classes(arguments, message):
    """Classes the compiled loop would draw nodes from that do not exist are refused."""
    pattern = Pattern(5, "uniform")
    given = dict(dests=None, classes=pattern.classes) | arguments
    with pytest.raises(ValueError) as error:
        RandomTraffic(5, 0.1, given["dests"], pattern.start, pattern.cumulative,
                      classes=given["classes"])
    assert str(error.value) == message


def _by_table(monkeypatch, order="class"):
    """Make the sweeps draw from tables, as they did before issue 17: the patterns' own, or
    a wrong one, each class by distance and then node number."""
    def table(pattern):
        if order != "class":
            return reference_table(pattern.n, pattern.name, pattern.radius, order)
        return pattern.dests

    monkeypatch.setattr(Pattern, "traffic", lambda self, rate, state=0: RandomTraffic(
        self.n, rate, table(self), self.start, self.cumulative, state=state))
    monkeypatch.setattr(traffic, "draw", lambda pattern, sources, u, v: traffic._draw(
        table(pattern), pattern.start, pattern.cumulative, np.zeros((0, 2), np.int64),
        np.asarray(sources, np.int64), u, v))


WORMHOLE = FabricSpec.of(26, switching="wormhole", flits=4, vcs=2, vc_depth=2)


@pytest.mark.parametrize("point, order", [
    (sweep.Point(FabricSpec(26), "decreasing", 0.3), "class"),
    (sweep.Point(FabricSpec.of(100, depth=2, order="lsb"), "sphere", 0.4, radius=2,
                 reading="exclusive"), "class"),
    (sweep.Point(FabricSpec.of(100, depth=2), "uniform", 0.6), "class"),
    (sweep.Point(WORMHOLE, "sphere", 0.05), "class"),
    (sweep.Point(FabricSpec(26), "uniform", 0.3), "distance"),
    (sweep.Point(WORMHOLE, "sphere", 0.05), "distance"),
])
def test_a_point_measures_the_same_by_table(point, order, monkeypatch):
    """A sweep point's row and link densities by class and by the table: the same (and,
    the negative control, not by a table whose classes are in distance order)."""
    settings = sweep.Settings(warmup=200, window=300, max_windows=2)
    sweep._pattern.cache_clear()
    rows = [sweep.measure(point, settings, keep_links=True)]
    _by_table(monkeypatch, order)
    sweep._pattern.cache_clear()
    rows.append(sweep.measure(point, settings, keep_links=True))
    sweep._pattern.cache_clear()
    (a, (density_a, _)), (b, (density_b, _)) = rows
    assert (a == b and np.array_equal(density_a, density_b)) == (order == "class")
    assert a["delivered"] > 100
