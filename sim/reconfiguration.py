"""The experiment the literature argues but never measured: reconfigured incomplete cube
against the largest fault-free complete subcube, after random faults (SPEC section 9).

For an ``N``-router fabric and each fault count ``f``, ``draws`` fault sets are drawn (seeded:
the same sets for the same arguments). For each, three fabrics are compared:

- the reconfigured incomplete cube of the hardware (:func:`ihcube.reconfigure.
  best_configuration`, XOR masks, exact);
- the same with dimension permutations too (every automorphism, exact; not in the hardware);
- the largest fault-free complete subcube (:func:`ihcube.reconfigure.largest_healthy_subcube`).

A configured fabric of ``n`` active nodes is, up to the relabelling of its routers, the
``n``-node incomplete cube: the routers route in logical addresses over links that keep
their logical dimensions (:mod:`ihcube.configured_deadlock` checks that its channels and
dependencies are the ``n``-node fabric's, relabelled). Its traffic figures are therefore the
``n``-node fabric's, and those of a subcube of ``2**k`` nodes the ``2**k``-node cube's: the
exact analysis (:func:`ihcube.sim.analysis.analyze`, uniform traffic) gives each draw's
saturation bound and mean hops; the fast model (:func:`ihcube.sim.sweep.measure`, every
source backlogged, as :func:`ihcube.sim.sweep.saturation` measures it) the throughput at the
median size of each fabric per fault count. (The model takes a node count, not a
configuration: the relabelling is the argument, not a model run.)

:func:`exhaustive` compares XOR masks with every automorphism over every fault set of one to
three faults of small fabrics: the numbers that decide whether permutations are worth a port
multiplexer per router.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools

import numpy as np

from .. import topology
from ..reconfigure import best_configuration, largest_healthy_subcube, upper_bound
from ..spec import FabricSpec
from . import analysis, sweep

__all__ = ["FAULT_COUNTS", "SETTINGS", "draw_faults", "experiment", "exhaustive"]

#: The fault counts of the issue's experiment.
FAULT_COUNTS = (1, 2, 4, 8, 16, 32)
#: The model's windows (those of the quick sweep).
SETTINGS = sweep.Settings(warmup=1000, window=1000, min_windows=4, max_windows=4)
#: The fabrics compared, in the order the results list them.
FABRICS = ("xor", "permutations", "subcube")


def draw_faults(N, f, draws, seed):
    """``draws`` sets of ``f`` distinct faulty routers of ``N``, each a sorted tuple; the same
    for the same arguments."""
    rng = np.random.default_rng([seed, N, f])
    return [tuple(sorted(int(q) for q in rng.choice(N, size=f, replace=False)))
            for _ in range(draws)]


@functools.lru_cache(maxsize=None)
def _analysis(n):
    """Mean hops and the links' saturation bound per node (``1 / peak direction load``) of
    uniform traffic on ``n`` nodes (None for one node, which has no links)."""
    if n < 2:
        return 0.0, None
    found = analysis.analyze(n, "uniform", exact=False)
    return found.mean_hops, found.saturation_bound


def _summary(values):
    values = np.asarray(values, dtype=float)
    return dict(mean=float(values.mean()), min=float(values.min()),
                median=float(np.median(values)), max=float(values.max()))


def _model(n, seed):
    """The fast model's throughput per node at ``n`` nodes, every source backlogged."""
    spec = FabricSpec.of(n)
    point = sweep.Point(spec, "uniform", min(1.0, sweep.injection_limit(spec)))
    row = sweep.measure(point, dataclasses.replace(SETTINGS, seed=seed))
    return row["throughput"]


def _sizes(N, faulty):
    return dict(xor=best_configuration(N, faulty).active_nodes,
                permutations=best_configuration(N, faulty, permutations=True).active_nodes,
                subcube=largest_healthy_subcube(N, faulty).size)


def experiment(N=1024, fault_counts=FAULT_COUNTS, draws=100, seed=1, model=True,
               progress=None):
    """Run the comparison; return a JSON-ready dict with a row per fault count.

    Each row has, per fabric (``xor``, ``permutations``, ``subcube``), the nodes kept, the
    fraction of the healthy ones kept, the analysis' link saturation bound per node and for
    the whole machine (``n`` times it: messages per cycle), the mean hops (each a mean, min, median,
    max over the draws), and with ``model`` the model's throughput at the median size.
    """
    N = topology.check_fabric_node_count(N)
    rows = []
    for f in fault_counts:
        sets = draw_faults(N, f, draws, seed)
        kept = {fabric: [] for fabric in FABRICS}
        for faulty in sets:
            for fabric, n in _sizes(N, faulty).items():
                kept[fabric].append(n)
            if progress is not None:
                progress()
        healthy = upper_bound(N, sets[0])
        row = dict(faults=f, healthy=healthy)
        for fabric in FABRICS:
            sizes = kept[fabric]
            hops, bound = zip(*(_analysis(max(n, 2)) for n in sizes))
            entry = dict(kept=_summary(sizes),
                         kept_fraction=float(np.mean(sizes)) / healthy,
                         bound_per_node=_summary(bound),
                         machine_bound=_summary([n * b for n, b in zip(sizes, bound)]),
                         mean_hops=_summary(hops))
            if model:
                median = int(sorted(sizes)[len(sizes) // 2])
                per_node = _model(median, seed)
                entry["model"] = dict(n=median, throughput_per_node=per_node,
                                      machine_throughput=per_node * median,
                                      bound_per_node=_analysis(median)[1])
            row[fabric] = entry
        rows.append(row)
    single = [best_configuration(N, [q]).active_nodes for q in range(N)]
    return dict(nodes=N, draws=draws, seed=seed, pattern="uniform",
                fault_counts=list(fault_counts),
                model_settings=dataclasses.asdict(SETTINGS) if model else None, rows=rows,
                single_fault=dict(faults_tried=N, least_kept=min(single),
                                  most_kept=max(single)))


def exhaustive(N, max_faults=3):
    """XOR masks against every automorphism over every set of 1 to ``max_faults`` faulty
    routers of ``N``: per fault count, the mean nodes each keeps, the share of the sets where
    permutations keep more, and the largest gain."""
    rows = []
    for f in range(1, max_faults + 1):
        xor, anymap, cubes = [], [], []
        for faulty in itertools.combinations(range(N), f):
            if f >= N:
                continue
            sizes = _sizes(N, faulty)
            xor.append(sizes["xor"])
            anymap.append(sizes["permutations"])
            cubes.append(sizes["subcube"])
        xor, anymap = np.array(xor), np.array(anymap)
        rows.append(dict(nodes=N, faults=f, sets=len(xor), healthy=N - f,
                         xor_mean=float(xor.mean()), xor_min=int(xor.min()),
                         permutations_mean=float(anymap.mean()),
                         permutations_min=int(anymap.min()),
                         subcube_mean=float(np.mean(cubes)),
                         permutations_better=float((anymap > xor).mean()),
                         largest_gain=int((anymap - xor).max())))
    return rows
