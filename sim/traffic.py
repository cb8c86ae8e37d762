"""Random traffic for the network experiments (Tzeng and Kumar, Section 5.1; SPEC section 6).

A destination pattern is a table per source: the other nodes sorted into *classes* by their
distance (:func:`ihcube.topology.distances`, the unicast path length), each class with a
probability, and a destination is drawn by picking a class and then a node of it uniformly.
The tables are NumPy arrays that the compiled loop of
:meth:`Model.advance <ihcube.sim.model.Model.advance>` reads
(:class:`~ihcube.sim.model.RandomTraffic`).

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
from .model import RandomTraffic
from .model_kernel import draw_dest, splitmix, unit

__all__ = ["PATTERNS", "DECREASING", "READINGS", "check_pattern", "check_reading", "Pattern",
           "distance_table",
           "TrafficSource", "sample"]

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
    """The destination table of a traffic pattern on ``n`` nodes.

    Parameters
    ----------
    n : int
        Number of nodes (at least 2: a single node has nowhere to send).
    name : str
        One of :data:`PATTERNS`.
    radius, zeta :
        The sphere of locality's ``B`` and ``zeta`` (ignored by the other patterns).
    distances : ndarray, optional
        :func:`distance_table` of ``n``, if already at hand.
    reading : str
        One of :data:`READINGS`: where the remainder of sphere and decreasing goes (ignored
        by uniform).

    Members
    -------
    dests : ndarray of int32, shape ``(n, n - 1)``
        Row ``a``: the nodes other than ``a``, class by class (by node number in a class).
    start : ndarray of int64, shape ``(n, K + 1)``
        Class ``k`` of source ``a`` is ``dests[a, start[a, k]:start[a, k + 1]]``.
    cumulative : ndarray of float64, shape ``(n, K)``
        Running sums of the class probabilities; 2.0 from the last nonempty class on.
    probability : ndarray of float64, shape ``(n, K)``
        Each class's probability (0 for an empty class).
    exact : ndarray of Fraction, shape ``(n, K)``
        The same probabilities exactly; :attr:`probability` is them rounded.
    distances : ndarray of int8, shape ``(n, n)``
        :func:`distance_table` of ``n``.
    """

    def __init__(self, n, name, radius=SPHERE_RADIUS, zeta=SPHERE_ZETA, distances=None,
                 reading="literal"):
        topology.check_node_count(n)
        if n < 2:
            raise ValueError(f"Node count must be at least 2 for traffic, not {n!r}")
        self.n, self.name = n, check_pattern(name)
        self.radius, self.zeta = _check_radius(radius), _check_zeta(zeta)
        self.reading = check_reading(reading)
        hops = distance_table(n) if distances is None else distances
        # Weights as written in decimal, so that 0.8 is 4/5 and 1 - 0.8 is 1/5 exactly.
        exact = [Fraction(str(w)) for w in DECREASING]
        if name == "uniform":
            local, spread = [Fraction(0)], Fraction(1)
            key = np.zeros((n, n), np.int64)
        elif name == "sphere":
            zeta = Fraction(str(self.zeta))
            local, spread = [zeta, Fraction(0)], 1 - zeta
            key = (hops > radius).astype(np.int64)
        else:
            local, spread = exact[:-1] + [Fraction(0)], exact[-1]
            key = np.minimum(hops, len(DECREASING)).astype(np.int64) - 1
        if reading == "exclusive":
            local[-1], spread = local[-1] + spread, Fraction(0)
        classes = len(local)
        np.fill_diagonal(key, classes)  # the source itself sorts last and is cut off
        order = np.argsort(key, axis=1, kind="stable")
        self.dests = np.ascontiguousarray(order[:, :n - 1], np.int32)
        sizes = np.stack([(key == k).sum(axis=1) for k in range(classes)], axis=1)
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
        self.distances = hops

    @property
    def tables(self):
        return self.dests, self.start, self.cumulative

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
            share = self.probability / np.maximum(sizes, 1)
            out = np.zeros((n, n), np.float64)
        out[source, self.dests] = share[source, of]
        return out


@njit(cache=True)
def _sample(dests, start, cumulative, sources, rng):
    out = np.empty(len(sources), np.int64)
    x = rng[0]
    for i in range(len(sources)):
        x, u = splitmix(x)
        x, v = splitmix(x)
        out[i] = draw_dest(dests, start, cumulative, sources[i], unit(u), unit(v))
    rng[0] = x
    return out


def sample(pattern, sources, seed=0):
    """Draw one destination for each entry of ``sources`` from ``pattern`` (a :class:`Pattern`)."""
    rng = np.array([seed], np.uint64)
    return _sample(*pattern.tables, np.ascontiguousarray(sources, np.int64), rng)


#: Cycles a :meth:`Model.advance <ihcube.sim.model.Model.advance>` call of the traffic
#: covers: the records of its deliveries stay in the caches until they are tallied.
CHUNK = 64


@njit(cache=True)
def _tally(deliveries, hops_of, stats, by_hops):
    """Add the latencies (the delivery's cycle less the generation cycle in its payload) and
    hops of ``deliveries`` (DELIVERY records) to ``stats`` (:data:`STATS`) and
    ``by_hops``."""
    for k in range(len(deliveries)):
        delivery = deliveries[k]
        latency = delivery.cycle - np.int64(delivery.payload)
        h = hops_of[delivery.src, delivery.node]
        stats[3] += latency
        stats[4] += h
        stats[5] = max(stats[5], latency)
        by_hops[0, h] += 1
        by_hops[1, h] += latency


class TrafficSource:
    """Random traffic from a :class:`Pattern` into a :class:`~ihcube.sim.model.Model`.

    The model's payload must be 64 bits wide: the payload carries the generation cycle.
    Successive :meth:`run` calls continue the same traffic (queues and random stream). The
    messages are a :class:`~ihcube.sim.model.RandomTraffic` of the pattern's tables, which
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
        self._traffic = RandomTraffic(model.n, self.rate, *pattern.tables, state=mixed)
        self._hops_of = np.ascontiguousarray(pattern.distances, np.int8)
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
            _tally(run.deliveries, self._hops_of, stats, by_hops)
            if model.cycle == end:
                self._taken_late = int((run.injections["cycle"] == end - 1).sum())
                stats[1] -= self._taken_late
        stats[6] = model.transfers - transfers_before
        out = dict(zip(STATS, map(int, stats)))
        out["by_hops"] = by_hops
        out["link_count"] = model.link_counts - links_before
        out["queued"] = self.queued
        return out
