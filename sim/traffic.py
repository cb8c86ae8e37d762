"""Random traffic for the network experiments (Tzeng and Kumar, Section 5.1; SPEC section 6).

A destination pattern is, per source, the other nodes sorted into *classes* by their
distance (:func:`ihcube.topology.distances`, the unicast path length), each class with a
probability, and a destination is drawn by picking a class and then a node of it uniformly.
A class is a range of distances, the same for every source; the compiled loop of
:meth:`Model.advance <ihcube.sim.model.Model.advance>` (:class:`~ihcube.sim.model.
RandomTraffic`) finds the ``j``-th node of a class, in node-number order, from the source,
``n`` and the range (:mod:`.by_distance`), so that a pattern takes ``O(n * K)`` memory. The
same draws from a table of every source's nodes, class by class (:attr:`Pattern.dests`,
``n * (n - 1)`` entries), give the same nodes; the table is built only when asked for
(small ``n``: the exact analysis and the tests).

Patterns (``name``, classes):

- ``uniform``: one class, every other node.
- ``sphere`` (sphere of locality, radius ``B``, locality ``zeta``): the nodes within ``B``
  hops, and the nodes farther away.
- ``decreasing`` (decreasing probability): the nodes 1, 2, 3 and 4 hops away, and the nodes
  5 or more hops away.

Each pattern is a *local* weight per class and a *spread*: the weight of a class goes evenly
to its nodes; the spread goes evenly to every node other than the source. Two readings of
Tzeng and Kumar's remainder (:data:`READINGS`; SPEC section 6):

- ``literal`` (the default, their text): sphere: ``zeta`` within ``B``, spread ``1 - zeta``;
  decreasing: 0.34, 0.20, 0.16 and 0.10 on 1, 2, 3 and 4 hops, spread 0.20. The spread
  reaches the near nodes too, so a class's probability is its weight plus the spread times
  its share of the ``n - 1`` other nodes.
- ``exclusive``: the remainder goes only to the last class (beyond the sphere; 5 or more
  hops), as an earlier SPEC said.

A class with no nodes (in a small or incomplete cube a node may have nothing at some
distance) gets no messages: its weight is dropped, and the probabilities of the rest of that
source (its other classes' weights and the spread) are scaled up in proportion so that they
add up to 1. So a sphere with nothing outside it sends everything inside, and a node with
nothing 4 hops away splits that 0.10 among the rest in the ratio of their probabilities.
The probabilities are worked out exactly (:class:`fractions.Fraction`, the weights as
written in decimal) and rounded once for the sampler's tables.

:class:`TrafficSource` drives a :class:`~ihcube.sim.model.Model` with them: each node
generates a unicast with probability ``rate`` per cycle into an unbounded source queue whose
head its PE offers, and every PE accepts every cycle. It counts, per call, what was generated,
injected and delivered, the latency (generation to acceptance, source queueing included) and
hops of the delivered messages, and the messages that crossed each link direction.
"""

from fractions import Fraction

import numpy as np
from numba import njit

from .. import topology
from .by_distance import class_sizes, hops
from .model import RandomTraffic
from .model_kernel import draw_dest, splitmix, unit

__all__ = ["PATTERNS", "DECREASING", "READINGS", "check_pattern", "check_reading", "Pattern",
           "distance_table", "TrafficSource", "sample", "draw"]

PATTERNS = ("uniform", "sphere", "decreasing")
#: Decreasing probability: 1, 2, 3, 4 hops away, then everything farther.
DECREASING = (0.34, 0.20, 0.16, 0.10, 0.20)
#: Tzeng and Kumar's sphere of locality.
SPHERE_RADIUS = 4
SPHERE_ZETA = 0.8
#: How the remainder of sphere and decreasing is spread: over every other node (Tzeng and
#: Kumar's text, the default) or only over the last class (beyond the sphere, 5+ hops).
READINGS = ("literal", "exclusive")

#: Statistics that :meth:`TrafficSource.run` returns, in the order of the compiled loop's array.
STATS = ("generated", "injected", "delivered", "latency_sum", "hops_sum", "latency_max",
         "transfers")


def check_pattern(name):
    """Return ``name`` if it is one of :data:`PATTERNS`, else raise."""
    if name not in PATTERNS:
        raise ValueError(f"Traffic pattern must be one of 'uniform', 'sphere' or "
                         f"'decreasing', not {name!r}")
    return name


def check_reading(reading):
    """Return ``reading`` if it is one of :data:`READINGS`, else raise."""
    if reading not in READINGS:
        raise ValueError(f"Traffic reading must be one of 'literal' or 'exclusive', "
                         f"not {reading!r}")
    return reading


def _check_radius(radius):
    if not isinstance(radius, int) or isinstance(radius, bool) or radius < 1:
        raise ValueError(f"Sphere radius must be a positive integer, not {radius!r}")
    return radius


def _check_zeta(zeta):
    if not isinstance(zeta, (int, float)) or isinstance(zeta, bool) or not 0 <= zeta <= 1:
        raise ValueError(f"Sphere locality must be a number from 0 to 1, not {zeta!r}")
    return float(zeta)


def distance_table(n):
    """The hops between every two nodes, an ``(n, n)`` int8 array (from the topology)."""
    return np.array([topology.distances(n, a) for a in range(n)], np.int8)


class Pattern:
    """The destination classes of a traffic pattern on ``n`` nodes.

    Parameters
    ----------
    n : int
        Number of nodes (at least 2: a single node has nowhere to send).
    name : str
        One of :data:`PATTERNS`.
    radius, zeta :
        The sphere of locality's ``B`` and ``zeta`` (ignored by the other patterns).
    reading : str
        One of :data:`READINGS`: where the remainder of sphere and decreasing goes (ignored
        by uniform).

    Members
    -------
    classes : ndarray of int64, shape ``(K, 2)``
        Class ``k`` of every source ``a`` is the nodes ``classes[k, 0]`` to
        ``classes[k, 1]`` hops from ``a``.
    start : ndarray of int64, shape ``(n, K + 1)``
        Running sums of the class sizes: class ``k`` of source ``a`` has
        ``start[a, k + 1] - start[a, k]`` nodes.
    cumulative : ndarray of float64, shape ``(n, K)``
        Running sums of the class probabilities; 2.0 from the last nonempty class on.
    probability : ndarray of float64, shape ``(n, K)``
        Each class's probability (0 for an empty class).
    share : ndarray of float64, shape ``(n, K)``
        What a source sends to each node of a class: its probability over its size.
    exact : ndarray of Fraction, shape ``(n, K)``
        The same probabilities exactly; :attr:`probability` is them rounded.
    dests : ndarray of int32, shape ``(n, n - 1)``
        Row ``a``: the nodes other than ``a``, class by class (by node number in a class),
        so that class ``k`` is ``dests[a, start[a, k]:start[a, k + 1]]``; built when first
        read (``n * (n - 1)`` entries: small ``n``).
    distances : ndarray of int8, shape ``(n, n)``
        :func:`distance_table` of ``n``; built when first read.
    """

    def __init__(self, n, name, radius=SPHERE_RADIUS, zeta=SPHERE_ZETA, reading="literal"):
        topology.check_node_count(n)
        if n < 2:
            raise ValueError(f"Node count must be at least 2 for traffic, not {n!r}")
        self.n, self.name = n, check_pattern(name)
        self.radius, self.zeta = _check_radius(radius), _check_zeta(zeta)
        self.reading = check_reading(reading)
        self._distances, self._dests = None, None
        D = topology.dimensions(n)
        # Weights as written in decimal, so that 0.8 is 4/5 and 1 - 0.8 is 1/5 exactly.
        exact = [Fraction(str(w)) for w in DECREASING]
        if name == "uniform":
            local, spread = [Fraction(0)], Fraction(1)
            ranges = [(1, D)]
        elif name == "sphere":
            zeta = Fraction(str(self.zeta))
            local, spread = [zeta, Fraction(0)], 1 - zeta
            inner = min(radius, D)  # a radius beyond the diameter leaves nothing outside
            ranges = [(1, inner), (inner + 1, max(D, inner + 1))]
        else:
            local, spread = exact[:-1] + [Fraction(0)], exact[-1]
            last = len(DECREASING)
            ranges = [(h, h) for h in range(1, last)] + [(last, max(D, last))]
        if reading == "exclusive":
            local[-1], spread = local[-1] + spread, Fraction(0)
        classes = len(local)
        self.classes = np.array(ranges, np.int64)
        sizes = class_sizes(n, self.classes)
        self.start = np.zeros((n, classes + 1), np.int64)
        self.start[:, 1:] = np.cumsum(sizes, axis=1)
        # Per source: a class's weight if it has nodes, plus the spread's share of its nodes;
        # then scaled to add up to 1. Sources with the same class sizes share the result.
        rows, inverse = np.unique(sizes, axis=0, return_inverse=True)
        exact_rows = []
        for row in rows.tolist():
            p = [(w if size else 0) + spread * Fraction(size, n - 1)
                 for w, size in zip(local, row)]
            total = sum(p)
            exact_rows.append([x / total for x in p])
        self.exact = np.array(exact_rows, dtype=object)[inverse.reshape(-1)]
        self.probability = np.array([[float(x) for x in row] for row in exact_rows],
                                    np.float64)[inverse.reshape(-1)]
        cumulative = np.cumsum(self.probability, axis=1)
        last = classes - 1 - np.argmax((sizes > 0)[:, ::-1], axis=1)
        cumulative[np.arange(classes) >= last[:, None]] = 2.0  # no rounding gap at the end
        self.cumulative = cumulative

    @property
    def distances(self):
        if self._distances is None:
            self._distances = distance_table(self.n)
        return self._distances

    @property
    def dests(self):
        if self._dests is None:
            n, hops_of = self.n, self.distances
            key = np.full((n, n), len(self.classes), np.int64)  # no class: sorts last
            for k, (lo, hi) in enumerate(self.classes.tolist()):
                key[(hops_of >= lo) & (hops_of <= hi)] = k
            order = np.argsort(key, axis=1, kind="stable")
            self._dests = np.ascontiguousarray(order[:, :n - 1], np.int32)
        return self._dests

    @property
    def tables(self):
        """``(dests, start, cumulative)``, :class:`~ihcube.sim.model.RandomTraffic`'s tables
        (:attr:`dests` is built: small ``n``)."""
        return self.dests, self.start, self.cumulative

    def traffic(self, rate, state=0):
        """A :class:`~ihcube.sim.model.RandomTraffic` of this pattern at generation ``rate``
        from SplitMix64 ``state``, drawing by :attr:`classes` (no table): the same
        destinations as one of :attr:`tables`."""
        return RandomTraffic(self.n, rate, None, self.start, self.cumulative, state,
                             classes=self.classes)

    @property
    def share(self):
        """What source ``a`` sends to each node of its class ``k``, float64 ``(n, K)``: the
        class's probability over its size (0 for an empty class). :meth:`matrix` spreads it
        over the nodes; :func:`ihcube.sim.analysis.pattern_loads` reads it without the
        table."""
        return self.probability / np.maximum(np.diff(self.start, axis=1), 1)

    def matrix(self, exact=False):
        """The probability that source ``a`` sends to ``d``, as an ``(n, n)`` array ``[a, d]``.

        Each class's probability spread evenly over its nodes, as :func:`sample` draws them:
        float64, or :class:`~fractions.Fraction` objects if ``exact`` (small ``n``).
        """
        n, classes = self.n, self.start.shape[1] - 1
        sizes = np.diff(self.start, axis=1)
        column = np.arange(n - 1)
        of = (column[None, :, None] >= self.start[:, None, 1:classes]).sum(axis=2)
        source = np.arange(n)[:, None]
        if exact:
            share = np.array([[p / s if s else 0 for p, s in zip(ps, ss)]
                              for ps, ss in zip(self.exact, sizes.tolist())], dtype=object)
            out = np.zeros((n, n), dtype=object)
            out[:] = Fraction(0)
        else:
            share = self.share
            out = np.zeros((n, n), np.float64)
        out[source, self.dests] = share[source, of]
        return out


@njit(cache=True)
def _uniforms(count, rng):
    """``count`` pairs ``(u, v)`` of uniform numbers from SplitMix64 at ``rng[0]``, as the
    compiled loop draws them for a message (:func:`~.model_kernel.draw_dest`)."""
    u = np.empty(count, np.float64)
    v = np.empty(count, np.float64)
    x = rng[0]
    for i in range(count):
        x, bits = splitmix(x)
        u[i] = unit(bits)
        x, bits = splitmix(x)
        v[i] = unit(bits)
    rng[0] = x
    return u, v


@njit(cache=True)
def _draw(dests, start, cumulative, classes, sources, u, v):
    out = np.empty(len(sources), np.int64)
    for i in range(len(sources)):
        out[i] = draw_dest(dests, start, cumulative, classes, sources[i], u[i], v[i])
    return out


def draw(pattern, sources, u, v, table=False):
    """The destinations :func:`~.model_kernel.draw_dest` draws for ``sources`` from
    ``pattern`` (a :class:`Pattern`) with the uniform numbers ``u`` (class) and ``v`` (node):
    by its classes, or from its :attr:`~Pattern.tables` if ``table`` (small ``n``)."""
    if table:
        forms = (*pattern.tables, np.zeros((0, 2), np.int64))
    else:
        forms = (np.zeros((0, 0), np.int32), pattern.start, pattern.cumulative,
                 pattern.classes)
    sources = np.ascontiguousarray(sources, np.int64)
    return _draw(*forms, sources, np.ascontiguousarray(u, np.float64),
                 np.ascontiguousarray(v, np.float64))


def sample(pattern, sources, seed=0):
    """Draw one destination for each entry of ``sources`` from ``pattern`` (a :class:`Pattern`)."""
    u, v = _uniforms(len(sources), np.array([seed], np.uint64))
    return draw(pattern, sources, u, v)


#: Cycles a :meth:`Model.advance <ihcube.sim.model.Model.advance>` call of the traffic
#: covers: the records of its deliveries stay in the caches until they are tallied.
CHUNK = 64


@njit(cache=True)
def _tally(deliveries, stats, by_hops):
    """Add the latencies (the delivery's cycle less the generation cycle in its payload) and
    hops of ``deliveries`` (DELIVERY records) to ``stats`` (:data:`STATS`) and
    ``by_hops``."""
    for k in range(len(deliveries)):
        delivery = deliveries[k]
        latency = delivery.cycle - np.int64(delivery.payload)
        h = hops(np.int64(delivery.src), np.int64(delivery.node))
        stats[3] += latency
        stats[4] += h
        stats[5] = max(stats[5], latency)
        by_hops[0, h] += 1
        by_hops[1, h] += latency


class TrafficSource:
    """Random traffic from a :class:`Pattern` into a :class:`~ihcube.sim.model.Model`.

    The model's payload must be 64 bits wide: the payload carries the generation cycle.
    Successive :meth:`run` calls continue the same traffic (queues and random stream). The
    messages are a :class:`~ihcube.sim.model.RandomTraffic` of the pattern's classes, which
    :meth:`~ihcube.sim.model.Model.advance` generates into the PEs' source queues in its
    compiled loop, :data:`CHUNK` cycles a call.

    Parameters
    ----------
    model : :class:`~ihcube.sim.model.Model`
    pattern : :class:`Pattern` with the model's ``n``
    rate : float
        Generation probability per node per cycle, from 0 to 1.
    seed : int
    """

    def __init__(self, model, pattern, rate, seed=0):
        if model.payload_width != 64:
            raise ValueError("Traffic needs a model with 64-bit payloads (the generation cycle)")
        if pattern.n != model.n:
            raise ValueError(f"Pattern is for {pattern.n} nodes, the model has {model.n}")
        if not isinstance(rate, (int, float)) or not 0.0 <= rate <= 1.0:
            raise ValueError(f"Generation rate must be from 0 to 1, not {rate!r}")
        self.model, self.pattern, self.rate = model, pattern, float(rate)
        mixed = (int(seed) * 0x2545F4914F6CDD1D ^ 0x6A09E667F3BCC909) & ((1 << 64) - 1)
        self._traffic = pattern.traffic(self.rate, mixed)
        self._columns = max(topology.dimensions(model.n), 1)
        self._taken_late = 0  # taken in the last cycle of the previous call

    @property
    def queued(self):
        """Messages in the source queues, not yet taken by the fabric."""
        return self.model.queued

    def run(self, cycles, record_links=False):
        """Simulate ``cycles`` cycles.

        Returns
        -------
        dict
            The counts of :data:`STATS` for these cycles (``injected`` counts a message
            taken in a call's last cycle in the next call); ``by_hops``, an array ``(2, D + 1)``
            of the delivered messages' count and latency sum by hops; ``link_count``, an
            array ``(n, D)`` of messages sent on each link direction (zeros unless
            ``record_links``); ``queued`` at the end.
        """
        model = self.model
        stats = np.zeros(len(STATS), np.int64)
        by_hops = np.zeros((2, self._columns + 1), np.int64)
        links_before, transfers_before = model.link_counts, model.transfers
        if cycles:
            stats[1] = self._taken_late
        end = model.cycle + cycles
        while model.cycle < end:
            offered = model.offered
            run = model.advance(min(CHUNK, end - model.cycle), count_links=record_links,
                                traffic=self._traffic)
            stats[0] += model.offered - offered
            stats[1] += len(run.injections)
            stats[2] += len(run.deliveries)
            _tally(run.deliveries, stats, by_hops)
            if model.cycle == end:
                self._taken_late = int((run.injections["cycle"] == end - 1).sum())
                stats[1] -= self._taken_late
        stats[6] = model.transfers - transfers_before
        out = dict(zip(STATS, map(int, stats)))
        out["by_hops"] = by_hops
        out["link_count"] = model.link_counts - links_before
        out["queued"] = self.queued
        return out
