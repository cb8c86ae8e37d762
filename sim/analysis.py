"""Exact link loads of a traffic pattern, computed from the routes alone (SPEC section 6).

Under a destination distribution ``P[s, d]`` (:meth:`ihcube.sim.traffic.Pattern.matrix`, the
table the simulator draws from) every node generating one message per cycle puts, on the link
direction ``a -(i)-> a XOR 2**i``, the expected number of messages per cycle

    ``load[a, i] = sum of P[s, d] over the pairs whose route leaves a on link i``.

At generation rate ``r`` the link carries ``r * load[a, i]`` messages per cycle: the loads
are *per unit rate*. A link direction carries at most one message per cycle, so no rate above
``1 / max(load)`` can be sustained: :attr:`Analysis.saturation_bound` is an upper bound on the
throughput per node that the topology and routing allow (the router's one-message buffers
halve a link's rate, SPEC section 3; the bound does not count that). The mean hops are the
total load over ``n`` (every hop of a message is one link crossing).

How: the routes to one destination ``d`` form a tree (the route depends only on the node
and ``d``). Each step clears one bit of ``a XOR d`` (Katseff, Theorem 1), so the next node
has a smaller ``a XOR d``, and visiting the nodes by decreasing ``x = a XOR d`` visits every
node before its next hop: the flow through ``a`` (what ``a`` sends to ``d`` plus what passes
through it) is complete when ``a`` is reached, and is added to the link it leaves on and to
the flow of the next node. That is ``n * 2**D`` steps for all destinations, about a second
at ``n = 2048``.

- :func:`exact_loads`: :class:`~fractions.Fraction` arithmetic, the route of every step from
  :func:`ihcube.topology.route_step`; for small ``n`` (a few hundred).
- :func:`link_loads`: float64, compiled; the route of every step from the route selector
  that the RTL and the model use, a table of :func:`ihcube.topology.first_set_bit` indexed
  by ``(a XOR d) AND exists_mask(a)`` (``exists_mask`` from
  :func:`ihcube.deadlock.link_tables`). The tests check the two against each other and the
  routes against :func:`ihcube.topology.route_step` for every pair.
- :func:`pattern_loads`: :func:`link_loads` of a pattern from its distance classes, each
  source's share of a destination worked out as the flow is, without the ``n x n`` table
  (what :func:`analyze` uses when not exact).
- :func:`pair_counts`: the number of (source, destination) pairs routed over each link
  direction, integers; the uniform pattern's load is these over ``n - 1``, which
  :func:`scan` uses for every ``n`` up to 4096 without building ``n * n`` tables.
"""

from __future__ import annotations

import dataclasses
import functools
from fractions import Fraction

import numpy as np
from numba import njit

from .. import deadlock, topology
from .by_distance import hops
from .traffic import SPHERE_RADIUS, SPHERE_ZETA, Pattern, check_reading

__all__ = ["Analysis", "analyze", "exact_loads", "link_loads", "pattern_loads", "pair_counts",
           "route_selector", "undirected", "scan", "LITERATURE_SIZES"]

#: Tzeng and Kumar's sizes (SPEC section 6).
LITERATURE_SIZES = (1024, 1048, 1114, 1818, 2048)


@functools.lru_cache(maxsize=4)
def route_selector(n, order=topology.MSB_FIRST):
    """The route selector of ``n`` nodes: ``(exists, select)`` such that a message at ``a``
    for ``d`` leaves on link ``select[(a ^ d) & exists[a]]`` (``-1``: deliver).

    ``exists`` is :func:`ihcube.deadlock.link_tables`' link-existence vector, ``select`` the
    priority encoder :func:`ihcube.topology.first_set_bit` of every ``D``-bit value, as
    :class:`ihcube.rtl.RouteSelect` and :class:`ihcube.sim.model.Model` use it.
    """
    topology.check_routing_order(order)
    exists, _ = deadlock.link_tables(n)
    select = [topology.first_set_bit(bits, order) for bits in range(1 << topology.dimensions(n))]
    return exists, np.array([-1 if i is None else i for i in select], np.int8)


@njit(cache=True)
def _flow(n, dims, exists, select, weight, share, classes, loads, received):
    """Add the flow of every destination's route tree to ``loads`` (``(n, max(D, 1))``), and
    what each destination receives to ``received``.

    What ``s`` sends to ``d``: ``weight[d, s]`` if ``weight`` has rows (transposed, so that
    a destination's column is contiguous); else, if ``share`` has rows, ``share[s, k]`` for
    the class ``k`` of :class:`~.traffic.Pattern` whose distance range ``classes[k]`` holds
    ``d``'s distance from ``s`` (no ``n x n`` table); else 1 from every ``s != d``.
    Returns False if a step did not clear a bit of ``a XOR d`` (the order would be wrong).
    """
    flow = np.empty(n, np.float64)
    for d in range(n):
        total = lost = 0.0  # compensated (Neumaier): n shares of 1 / (n - 1) add up to 1
        for s in range(n):
            if s == d:
                sent = 0.0
            elif weight.shape[0]:
                sent = weight[d, s]
            elif share.shape[0]:
                sent = 0.0
                h = hops(s, d)
                for k in range(classes.shape[0]):
                    if classes[k, 0] <= h <= classes[k, 1]:
                        sent = share[s, k]
                        break
            else:
                sent = 1.0
            flow[s] = sent
            added = total + sent
            lost += (total - added) + sent if abs(total) >= abs(sent) else \
                (sent - added) + total
            total = added
        received[d] += total + lost
        for x in range((1 << dims) - 1, 0, -1):
            a = d ^ x
            if a >= n:
                continue
            i = select[x & exists[a]]
            if i < 0 or not (x >> i) & 1:
                return False
            loads[a, i] += flow[a]
            flow[a ^ (1 << i)] += flow[a]
    return True


def _run_flow(n, order, weight=None, share=None, classes=None):
    """:func:`_flow` of ``weight``, or of ``share`` and ``classes``, or of one message from
    each source to each other node: ``(loads, received)``."""
    exists, select = route_selector(n, order)
    dims = topology.dimensions(n)
    loads = np.zeros((n, max(dims, 1)), np.float64)
    received = np.zeros(n, np.float64)
    none = np.zeros((0, 0), np.float64)
    if not _flow(n, dims, exists, select, none if weight is None else weight,
                 none if share is None else share,
                 np.zeros((0, 2), np.int64) if classes is None else classes,
                 loads, received):  # pragma: no cover
        raise AssertionError(f"a route step did not clear a bit of a XOR d (n={n}, {order})")
    return loads, received


def link_loads(n, probability, order=topology.MSB_FIRST):
    """The load of every link direction per unit rate, float64 ``(n, max(D, 1))``.

    ``probability`` is ``P[s, d]`` (:meth:`~ihcube.sim.traffic.Pattern.matrix`); entry
    ``[a, i]`` is the expected messages per cycle on ``a -(i)-> a XOR 2**i`` when every node
    generates one message per cycle (0 where the link does not exist).
    """
    topology.check_node_count(n)
    weight = np.ascontiguousarray(np.asarray(probability, np.float64).T)
    if weight.shape != (n, n):
        raise ValueError(f"Probability table must be {n} by {n}, not {weight.shape}")
    return _run_flow(n, order, weight=weight)[0]


def pattern_loads(pattern, order=topology.MSB_FIRST):
    """:func:`link_loads` of a :class:`~ihcube.sim.traffic.Pattern` from its classes, without
    its ``n x n`` :meth:`~ihcube.sim.traffic.Pattern.matrix`: ``(loads, received)``, the
    latter what each node receives per cycle per unit rate (a column sum of the matrix).
    Memory ``O(n * D)``; time ``O(n * 2**D)``, as :func:`link_loads`."""
    return _run_flow(pattern.n, order, share=np.ascontiguousarray(pattern.share),
                     classes=np.ascontiguousarray(pattern.classes, np.int64))


def pair_counts(n, order=topology.MSB_FIRST):
    """How many (source, destination) pairs are routed over each link direction, int64
    ``(n, max(D, 1))``; the uniform pattern's :func:`link_loads` times ``n - 1``."""
    topology.check_node_count(n)
    counts, _ = _run_flow(n, order)
    return np.rint(counts).astype(np.int64)  # sums of ones: exact in float64 below 2**53


def exact_loads(n, probability, order=topology.MSB_FIRST):
    """:func:`link_loads` in :class:`~fractions.Fraction` arithmetic, routed step by step
    with :func:`ihcube.topology.route_step`: a dict ``{(a, i): load}`` of every existing
    link direction."""
    topology.check_routing_order(order)
    loads = {(a, i): Fraction(0) for a in range(n) for i in topology.links(n, a)}
    dims = topology.dimensions(n)
    for d in range(n):
        flow = [Fraction(probability[s][d]) if s != d else Fraction(0) for s in range(n)]
        for x in range((1 << dims) - 1, 0, -1):
            a = d ^ x
            if a >= n:
                continue
            i = topology.route_step(n, a, d, order)
            loads[a, i] += flow[a]
            flow[topology.neighbor(a, i)] += flow[a]
    return loads


def undirected(n, loads):
    """Both directions of every link added: ``(load, a, i)`` arrays over the links
    ``a -- a XOR 2**i`` with ``a < a XOR 2**i``, by ``a`` then ``i``."""
    a, i = np.nonzero(_existing(n))
    keep = a < (a ^ (1 << i))
    a, i = a[keep], i[keep]
    return loads[a, i] + loads[a ^ (1 << i), i], a, i


def _existing(n):
    """Bool ``(n, max(D, 1))``: link ``i`` exists from node ``a``."""
    exists, _ = deadlock.link_tables(n)
    return (exists[:, None] >> np.arange(max(topology.dimensions(n), 1))) & 1 == 1


@dataclasses.dataclass
class Analysis:
    """The exact analysis of one pattern on ``n`` nodes in one routing order.

    Members
    -------
    loads : ndarray, shape ``(n, max(D, 1))``
        Messages per cycle per unit rate on each link direction ``a -(i)-> a XOR 2**i``.
    link_loads, link_a, link_i : ndarray
        Both directions of each link together (:func:`undirected`): a link's traffic density
        per unit rate, the density that :func:`ihcube.sim.sweep.link_density` measures,
        divided by the rate.
    mean_hops : float
        Expected hops of a message.
    peak : float
        The largest load of a link direction; ``peak_at`` the first ``(a, i)`` with it (by
        node, then dimension), ``peak_count`` how many have it.
    peak_link : float
        The largest load of a link; ``peak_link_at`` the first such ``(a, i)``,
        ``peak_link_count`` how many links have it.
    ejection : float
        The most messages per cycle per unit rate that one PE receives.
    exact : dict or None
        ``mean_hops``, ``peak`` and ``peak_link`` as :class:`~fractions.Fraction` when the
        analysis was exact.
    """
    n: int
    pattern: str
    order: str
    reading: str
    radius: int
    zeta: float
    loads: np.ndarray
    link_loads: np.ndarray
    link_a: np.ndarray
    link_i: np.ndarray
    mean_hops: float
    peak: float
    peak_at: tuple
    peak_count: int
    peak_link: float
    peak_link_at: tuple
    peak_link_count: int
    ejection: float
    exact: dict | None = None

    @property
    def saturation_bound(self):
        """The generation rate at which the busiest link direction is busy every cycle:
        ``1 / peak``, an upper bound on the throughput per node."""
        return 1.0 / self.peak

    @property
    def bound(self):
        """The throughput bound with the PEs counted: one message per cycle into a PE
        (``1 / ejection``) and out of it (1), and :attr:`saturation_bound`."""
        return min(self.saturation_bound, 1.0 / self.ejection, 1.0)

    def summary(self):
        """A JSON-ready dict of the scalars (and the exact ones as strings)."""
        out = dict(n=self.n, complete=int(self.n & (self.n - 1) == 0), pattern=self.pattern,
                   order=self.order, reading=self.reading)
        if self.pattern == "sphere":
            out.update(radius=self.radius, zeta=self.zeta)
        out.update(mean_hops=self.mean_hops, peak_direction_load=self.peak,
                   peak_direction=dict(node=self.peak_at[0], dim=self.peak_at[1],
                                       to=self.peak_at[0] ^ (1 << self.peak_at[1])),
                   directions_at_peak=self.peak_count,
                   peak_link_load=self.peak_link,
                   peak_link=dict(node=self.peak_link_at[0], dim=self.peak_link_at[1],
                                  to=self.peak_link_at[0] ^ (1 << self.peak_link_at[1])),
                   links_at_peak=self.peak_link_count,
                   mean_link_load=float(self.link_loads.mean()),
                   peak_ejection=self.ejection,
                   saturation_bound=self.saturation_bound, bound=self.bound)
        if self.exact:
            names = dict(mean_hops="mean_hops", peak="peak_direction_load",
                         peak_link="peak_link_load", ejection="peak_ejection")
            out["exact"] = {names[key]: str(value) for key, value in self.exact.items()}
        return out


#: Largest ``n`` analysed in fractions when ``exact`` is None.
EXACT_UP_TO = 64


def analyze(n, pattern="uniform", order=topology.MSB_FIRST, reading="literal",
            radius=SPHERE_RADIUS, zeta=SPHERE_ZETA, exact=None):
    """Analyse ``pattern`` (a name of :data:`ihcube.sim.traffic.PATTERNS`) on ``n`` nodes.

    Exact (fractions) if ``exact``, or if None and ``n <= EXACT_UP_TO``; float64 otherwise.
    Returns an :class:`Analysis`.
    """
    topology.check_routing_order(order)
    check_reading(reading)
    table = Pattern(n, pattern, radius, zeta, reading=reading)
    exact = n <= EXACT_UP_TO if exact is None else exact
    existing = _existing(n)
    if exact:
        probability = table.matrix(exact=True)
        found = exact_loads(n, probability, order)
        loads_q = np.zeros(existing.shape, dtype=object)
        loads_q[:] = Fraction(0)
        for (a, i), value in found.items():
            loads_q[a, i] = value
        both_q, _, _ = undirected(n, loads_q)
        exact_values = dict(mean_hops=sum(found.values()) / n, peak=max(found.values()),
                            peak_link=max(both_q),
                            ejection=max(sum(probability[:, d]) for d in range(n)))
        loads = loads_q.astype(np.float64)
        peak_mask = loads_q == exact_values["peak"]
        link_mask = both_q == exact_values["peak_link"]
        ejection = float(exact_values["ejection"])
    else:
        loads, received = pattern_loads(table, order)
        exact_values = None
        # Rounded: a column sum of float64 shares that is 1 exactly may come out 1 + 1e-15.
        ejection = round(float(received.max()), 12)
    both, a, i = undirected(n, loads)
    if not exact:
        # Ties within rounding count as ties (a complete cube's links are all equal).
        peak_mask = existing & (loads >= loads[existing].max() * (1 - 1e-12))
        link_mask = both >= both.max() * (1 - 1e-12)
    peak_at = tuple(int(v) for v in np.argwhere(peak_mask)[0])
    k = int(np.flatnonzero(link_mask)[0])
    return Analysis(
        n=n, pattern=pattern, order=order, reading=reading, radius=radius, zeta=zeta,
        loads=loads, link_loads=both, link_a=a, link_i=i,
        mean_hops=float(exact_values["mean_hops"]) if exact else float(loads.sum() / n),
        peak=float(loads[peak_at]), peak_at=peak_at, peak_count=int(peak_mask.sum()),
        peak_link=float(both[k]), peak_link_at=(int(a[k]), int(i[k])),
        peak_link_count=int(link_mask.sum()), ejection=ejection, exact=exact_values)


def scan(max_nodes, order=topology.MSB_FIRST, progress=None):
    """The uniform pattern's peak link load (both directions) per unit rate for every
    ``n`` from 2 to ``max_nodes``, from :func:`pair_counts` in integers.

    Returns a list of dicts ``n``, ``peak_link`` (a :class:`~fractions.Fraction`: the pair
    count over ``n - 1``), ``peak_direction`` (likewise, one direction) and ``at`` (the
    first peak link ``(a, i)``). ``progress(n)``, if given, is called after each size.
    """
    rows = []
    for n in range(2, max_nodes + 1):
        counts = pair_counts(n, order)
        both, a, i = undirected(n, counts)
        k = int(np.argmax(both))
        rows.append(dict(n=n, peak_link=Fraction(int(both[k]), n - 1),
                         peak_direction=Fraction(int(counts.max()), n - 1),
                         at=(int(a[k]), int(i[k]))))
        if progress is not None:
            progress(n)
    return rows
