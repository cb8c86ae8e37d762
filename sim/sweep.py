"""Latency-throughput sweeps of the fabric model (Tzeng and Kumar, Section 5; SPEC section 6).

A *point* is one fabric (a :class:`~ihcube.spec.FabricSpec`: ``n``, buffer depth, routing
order, register stages, or the wormhole options) under one traffic pattern (:mod:`.traffic`)
at one generation rate. :func:`measure` runs it on the fast model of the spec's switching
mode, fed by that mode's traffic source (:meth:`ihcube.modes.Mode.traffic`):

1. a warm-up of ``warmup`` cycles from empty, not counted;
2. measurement windows of ``window`` cycles, at least ``min_windows`` and at most
   ``max_windows``. The run stops when the mean latency of the last window is within
   ``tolerance`` (relative) of the window before it (*converged*), or when the point is
   saturated.

A wormhole point's rates are messages of ``flits`` flits per node per cycle, its latency runs
to the tail's delivery, its densities count flits, and its row adds the flits accepted
(``docs/wormhole.md``, "Experiments").

A point is *saturated* when, over the measurement windows so far, the fabric accepted fewer
than ``1 - tolerance`` of the messages generated, or the source queues grew by more than
``tolerance`` of them: the queues then grow without bound and a latency would only say how
long the run was. Saturated points report throughput (what the fabric accepted) but no
latency or hops.

Measures, over all measurement windows: mean latency (generation to acceptance, source
queueing included), throughput (messages accepted per node per cycle), mean hops of the
delivered messages, and per-link traffic density (messages crossing a link per cycle, both
directions together) with its mean, its peak and the fraction of links above 1.0.

:func:`sweep` runs a list of points as tasks of a :class:`~.cluster.Cluster` (a Dask cluster,
local or not) and :func:`write_csv` writes them; each point's random seed is derived from the
sweep's seed and the point's parameters alone, so the same seed gives the same CSV bytes
however many workers run the points, wherever, in whatever order. ``threads`` (the packet
model's, :class:`~.model.Model`) is how a point runs, like the workers: it is in no point,
seed or row, and any number gives the same rows.
"""

import dataclasses
import functools
import math
import zlib

import numpy as np

from .. import topology
from ..modes import mode_of
from ..spec import FabricSpec
from .cluster import Cluster, Progress
from .traffic import SPHERE_RADIUS, SPHERE_ZETA, Pattern

__all__ = ["Point", "Settings", "RATES", "QUICK", "FULL", "SETS", "injection_limit", "points",
           "WORMHOLE_RATES",
           "measure", "sweep", "write_csv", "CSV_COLUMNS", "link_density", "Progress",
           "zero_load", "saturation", "saturation_results_name", "wormhole_record",
           "read_csv"]

#: Generation rates of the sweeps; at depth 1 only those up to the injection limit 0.5 (an
#: injection buffer of one message takes a message every other cycle).
RATES = (0.02, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.65, 0.7, 0.75, 0.8)


@dataclasses.dataclass(frozen=True)
class Point:
    """One sweep point: the fabric ``spec`` (whose payload width does not matter: the
    traffic's payloads carry the generation cycle) under the traffic ``pattern`` (with
    ``radius``, ``zeta`` and ``reading``, those of :class:`~.traffic.Pattern`) at generation
    ``rate``, messages per node per cycle."""
    spec: FabricSpec
    pattern: str
    rate: float
    radius: int = SPHERE_RADIUS
    zeta: float = SPHERE_ZETA
    reading: str = "literal"

    @property
    def n(self):
        return self.spec.nodes

    @property
    def order(self):
        return self.spec.order

    @property
    def depth(self):
        """The buffer depth of the records (a wormhole point's: its virtual channels')."""
        return mode_of(self.spec).buffer_depth(self.spec)

    def seed(self, base):
        """The point's seed: a function of ``base`` and the parameters only."""
        text = f"{base}:{self.n}:{self.depth}:{self.order}:{self.pattern}:{self.rate!r}"
        if self.pattern == "sphere":
            text += f":{self.radius}:{self.zeta!r}"
        if self.reading != "literal" and self.pattern != "uniform":
            text += f":{self.reading}"
        wormhole, stages = self.spec.wormhole, self.spec.stages
        if wormhole is not None:
            text += (f":wormhole:{wormhole.flits}:{wormhole.flit_width}:{wormhole.vcs}:"
                     f"{wormhole.vc_depth}")
        if stages.link:  # the seeds of the points without link stages are as before
            text += f":stages:{stages.link}"
        if stages.switch or stages.eject:  # and those with link stages only
            text += f":switch:{stages.switch}:eject:{stages.eject}"
        return zlib.crc32(text.encode())


@dataclasses.dataclass(frozen=True)
class Settings:
    """Windows and convergence of every point of a sweep."""
    warmup: int = 2000
    window: int = 2000
    min_windows: int = 2
    max_windows: int = 6
    tolerance: float = 0.02
    seed: int = 1


#: A named set: sizes, depths, orders, patterns, rates, settings.
SETS = {
    "quick": dict(sizes=(1024, 1048), depths=(1, 3), orders=("msb",),
                  patterns=("uniform", "sphere", "decreasing"),
                  rates=(0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8),
                  settings=Settings(warmup=1000, window=1000, max_windows=4)),
    "full": dict(sizes=(1024, 1048, 1114, 1818, 2048), depths=(1, 3), orders=("msb",),
                 patterns=("uniform", "sphere", "decreasing"), rates=RATES,
                 settings=Settings()),
}
#: Wormhole sets (Tzeng and Kumar's 20 flits, 3 virtual channels; the other parameters
#: :data:`ihcube.params.WORMHOLE_DEFAULTS`): rates in messages per node per cycle, up to the
#: injection limit ``1 / flits`` (0.05).
WORMHOLE_RATES = (0.0025, 0.005, 0.01, 0.015, 0.02, 0.025, 0.03, 0.035, 0.04, 0.05)
SETS["wormhole-quick"] = dict(sizes=(1048,), depths=(2,), orders=("msb",),
                              patterns=("uniform",), rates=(0.005, 0.01, 0.015, 0.02, 0.03),
                              settings=Settings(warmup=1000, window=1000, max_windows=4),
                              switching="wormhole")
SETS["wormhole"] = dict(sizes=(1024, 1048, 1114, 1818, 2048), depths=(2,), orders=("msb",),
                        patterns=("uniform", "sphere", "decreasing"), rates=WORMHOLE_RATES,
                        settings=Settings(warmup=1000, window=1000, max_windows=4),
                        switching="wormhole")
QUICK, FULL = SETS["quick"], SETS["full"]


def injection_limit(spec):
    """The most messages per cycle a PE of ``spec`` can inject: every other cycle at depth 1;
    in wormhole mode one flit a cycle, so one message every ``flits`` cycles."""
    return mode_of(spec).injection_limit(spec)


def points(fabrics, patterns, rates, radius=SPHERE_RADIUS, zeta=SPHERE_ZETA,
           reading="literal"):
    """The points of a sweep: each of ``fabrics`` (:class:`~ihcube.spec.FabricSpec`, in the
    order of their sizes) under each pattern at each rate up to its injection limit, grouped
    by size (so that a process reuses its patterns); ``reading`` is
    :class:`~.traffic.Pattern`'s."""
    out = []
    for n in dict.fromkeys(spec.nodes for spec in fabrics):
        for pattern in patterns:
            for spec in fabrics:
                if spec.nodes == n:
                    out += [Point(spec, pattern, rate, radius, zeta, reading) for rate in rates
                            if rate <= injection_limit(spec)]
    return out


@functools.lru_cache(maxsize=3)
def _pattern(n, name, radius, zeta, reading="literal"):
    return Pattern(n, name, radius, zeta, reading=reading)


@functools.lru_cache(maxsize=2)
def _links(n):
    """The undirected links of ``n`` nodes as arrays ``(a, i)`` with ``a < a XOR 2**i``, by
    ``a`` and then ``i``.

    :func:`ihcube.topology.link_exists` holds elementwise on an array of nodes, a dimension
    at a time (a Python loop over every node took about 20 s at ``2**20``)."""
    nodes = np.arange(n, dtype=np.int64)
    D = topology.dimensions(n)
    upper = np.zeros((n, D), bool)
    for i in range(D):
        far = topology.neighbor(nodes, i)
        upper[:, i] = np.asarray(topology.link_exists(n, nodes, i), bool) & (nodes < far)
    a, i = np.nonzero(upper)
    return a.astype(np.int64), i.astype(np.int64)


def link_density(n, link_count, cycles):
    """Messages per cycle on each undirected link (both directions together).

    ``link_count`` is ``(n, D)``, messages sent on each link direction. Returns the densities
    and the link ends ``(a, i)`` they belong to.
    """
    a, i = _links(n)
    both = link_count[a, i] + link_count[a ^ (1 << i), i]
    return both / cycles, (a, i)


def _source(point, seed, threads=1):
    """The traffic source of ``point`` (its mode's, :meth:`ihcube.modes.Mode.traffic`) on
    ``threads`` threads."""
    pattern = _pattern(point.n, point.pattern, point.radius, point.zeta, point.reading)
    return mode_of(point.spec).traffic(point.spec, pattern, point.rate, seed, threads)


def _wormhole_option(spec, name, missing):
    """The wormhole option ``name`` of ``spec``, or ``missing`` with packet switching: the
    cells of a record that packet switching leaves empty."""
    return getattr(spec.wormhole, name, missing)


def measure(point, settings=Settings(), keep_links=False, threads=1):
    """Run one point (its packet model on ``threads`` threads); return its CSV row as a dict
    (and the link densities if ``keep_links``)."""
    seed = point.seed(settings.seed)
    source = _source(point, seed, threads)
    source.run(settings.warmup)
    queued_start = source.queued
    D = max(topology.dimensions(point.n), 1)
    totals = dict(generated=0, delivered=0, latency_sum=0, hops_sum=0, transfers=0,
                  flits_ejected=0)
    links = np.zeros((point.n, D), np.int64)
    means = []
    windows = 0
    converged = saturated = False
    while windows < settings.max_windows:
        got = source.run(settings.window, record_links=True)
        windows += 1
        for key in totals:
            totals[key] += got.get(key, 0)
        links += got["link_count"]
        means.append(got["latency_sum"] / got["delivered"] if got["delivered"] else math.inf)
        if windows < settings.min_windows:
            continue
        slack = settings.tolerance * max(totals["generated"], 1)
        saturated = (totals["generated"] - totals["delivered"] > slack
                     or source.queued - queued_start > slack)
        if saturated:
            break
        if abs(means[-1] - means[-2]) <= settings.tolerance * means[-2]:
            converged = True
            break
    cycles = windows * settings.window
    density, ends = link_density(point.n, links, cycles)
    delivered = totals["delivered"]
    spec = point.spec
    row = dict(
        n=point.n, complete=int(point.n & (point.n - 1) == 0), depth=point.depth,
        order=point.order, pattern=point.pattern,
        radius=point.radius if point.pattern == "sphere" else "",
        zeta=point.zeta if point.pattern == "sphere" else "",
        rate=point.rate, seed=seed, warmup=settings.warmup, cycles=cycles, windows=windows,
        converged=int(converged), saturated=int(saturated),
        throughput=delivered / (point.n * cycles),
        mean_latency="" if saturated or not delivered else totals["latency_sum"] / delivered,
        mean_hops="" if saturated or not delivered else totals["hops_sum"] / delivered,
        mean_density=float(density.mean()) if len(density) else 0.0,
        peak_density=float(density.max()) if len(density) else 0.0,
        links_above_1=float((density > 1.0).mean()) if len(density) else 0.0,
        queued=source.queued, generated=totals["generated"], delivered=delivered,
        switching=spec.mode, flits=_wormhole_option(spec, "flits", ""),
        vcs=_wormhole_option(spec, "vcs", ""),
        flit_width=_wormhole_option(spec, "flit_width", ""),
        flit_throughput=(totals["flits_ejected"] / (point.n * cycles)
                         if "flits_ejected" in got else ""),  # where the source counts flits
    )
    if keep_links:
        return row, (density, ends)
    return row


CSV_COLUMNS = ("n", "complete", "depth", "order", "pattern", "radius", "zeta", "rate", "seed",
               "warmup", "cycles", "windows", "converged", "saturated", "throughput",
               "mean_latency", "mean_hops", "mean_density", "peak_density", "links_above_1",
               "queued", "generated", "delivered", "switching", "flits", "vcs", "flit_width",
               "flit_throughput")


def _format(value):
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def write_csv(path, rows):
    """Write ``rows`` (dicts with :data:`CSV_COLUMNS`) as CSV; the same rows give the same bytes."""
    with open(path, "w", newline="") as out:
        out.write(",".join(CSV_COLUMNS) + "\n")
        for row in rows:
            out.write(",".join(_format(row[column]) for column in CSV_COLUMNS) + "\n")


#: The columns :func:`read_csv` reads as numbers (the rest are text or empty).
_INTEGER_COLUMNS = ("n", "complete", "depth", "seed", "warmup", "cycles", "windows",
                    "converged", "saturated", "queued", "generated", "delivered", "flits",
                    "vcs", "flit_width", "radius")


def read_csv(path):
    """The rows of a sweep CSV (:func:`write_csv`) as dicts of numbers and text, an empty
    cell as ``""``; a CSV written before wormhole switching reads as packet switching."""
    import csv
    rows = []
    with open(path, newline="") as f:
        for raw in csv.DictReader(f):
            row = {}
            for key, text in raw.items():
                if text == "" or key in ("order", "pattern", "switching"):
                    row[key] = text
                elif key in _INTEGER_COLUMNS:
                    row[key] = int(text)
                else:
                    row[key] = float(text)
            row.setdefault("switching", "packet")
            rows.append(row)
    return rows


def _work(task):
    index, point, settings, keep, threads = task
    if keep:
        row, links = measure(point, settings, keep_links=True, threads=threads)
        return index, row, links
    return index, measure(point, settings, threads=threads), None


def sweep(point_list, settings=Settings(), jobs=2, keep_links=lambda point: False,
          progress=True, scheduler=None, cluster=None, threads=1):
    """Measure every point, as tasks of a :class:`~.cluster.Cluster`.

    The points run on ``cluster`` if given (an entered :class:`~.cluster.Cluster`), else on
    the Dask scheduler at ``scheduler``, else on ``jobs`` local worker processes (here if
    ``jobs`` is 1), each point's packet model on ``threads`` threads. Returns the rows in the
    order of ``point_list`` and a dict from point to link densities for the points where
    ``keep_links(point)`` is true; both are the same wherever and on however many threads the
    points ran.
    """
    if cluster is None:
        with Cluster(jobs, scheduler) as cluster:
            return sweep(point_list, settings, keep_links=keep_links, progress=progress,
                         cluster=cluster, threads=threads)
    tasks = [(k, point, settings, bool(keep_links(point)), threads)
             for k, point in enumerate(point_list)]
    rows = [None] * len(tasks)
    kept = {}
    for index, row, links in cluster.map(_work, tasks, "sweep", progress):
        rows[index] = row
        if links is not None:
            kept[point_list[index]] = links
    return rows, kept


def zero_load(spec, rate=None, cycles=20000, seed=1, threads=1):
    """Latency per hop at (almost) zero load, uniform traffic, on the fabric ``spec`` (its
    fast model on ``threads`` threads).

    Fits ``latency = overhead + per_hop * hops`` by least squares to every delivered message
    of ``cycles`` cycles at generation rate ``rate`` (default ``0.002 / flits``: a flit load
    of 0.002 per node per cycle whatever the switching) (after ``cycles // 10`` of warm-up).
    Returns ``per_hop``, ``overhead``, ``mean_latency``, ``mean_hops``, ``messages`` and
    ``by_hops`` (mean latency of the messages that took ``h`` hops, ``h = 0 .. D``), then what
    the mode's records add (:meth:`ihcube.modes.Mode.record`: a packet row's ``link_stages``,
    and the other stages that are not 0), and the fastest latency of each hop count where the
    traffic measures it (wormhole: ``fastest_by_hops``, a message that met no other worm).
    """
    mode = mode_of(spec)
    if rate is None:
        rate = 0.002 / mode.flits(spec)
    source = _source(Point(spec, "uniform", rate), seed, threads)
    source.run(cycles // 10)
    got = source.run(cycles)
    count, latency = got["by_hops"]
    hops = np.arange(len(count))
    used = count > 0
    per_hop, overhead = np.polyfit(hops[used], latency[used] / count[used], 1,
                                   w=np.sqrt(count[used]))
    fastest = {} if "fastest_by_hops" not in got else dict(
        fastest_by_hops=[int(got["fastest_by_hops"][h]) if count[h] else None
                         for h in range(len(count))])
    return dict(n=spec.nodes, depth=mode.buffer_depth(spec), order=spec.order, rate=rate,
                cycles=cycles, switching=spec.mode, flits=_wormhole_option(spec, "flits", None),
                per_hop=float(per_hop), overhead=float(overhead),
                mean_latency=got["latency_sum"] / got["delivered"],
                mean_hops=got["hops_sum"] / got["delivered"], messages=got["delivered"],
                by_hops=[float(latency[h] / count[h]) if count[h] else None
                         for h in range(len(count))],
                **mode.record(spec), **fastest)


def saturation(spec, pattern="uniform", settings=Settings(), resolution=None, threads=1):
    """Saturation throughput of the fabric ``spec``, two ways (its fast model on ``threads``
    threads for each measurement). ``resolution`` is in messages per node per cycle; by
    default ``0.01 / flits`` (0.01 flits per node per cycle).

    ``backlogged``: what the fabric accepts per node per cycle when every source always has a
    message waiting (generation rate 1; in wormhole mode the injection limit ``1 / flits``,
    which keeps a source's queue from emptying as well), over ``max_windows`` windows after
    the warm-up.
    ``highest_rate``, ``throughput``: the highest generation rate, to within ``resolution``,
    at which :func:`measure` does not find the point saturated (bisection from the injection
    limit down), and the throughput measured there. The record ends with what the mode's
    records add (:meth:`ihcube.modes.Mode.record`).
    """
    mode = mode_of(spec)
    flits, limit = mode.flits(spec), mode.injection_limit(spec)
    if resolution is None:
        resolution = 0.01 / flits
    backlogged = measure(Point(spec, pattern, min(1.0, limit)),
                         dataclasses.replace(settings, min_windows=settings.max_windows),
                         threads=threads)
    low, high = 0.0, limit
    best = None
    while high - low > resolution:
        rate = round((low + high) / 2, 6)
        row = measure(Point(spec, pattern, rate), settings, threads=threads)
        if row["saturated"]:
            high = rate
        else:
            low, best = rate, row
    return dict(n=spec.nodes, depth=mode.buffer_depth(spec), order=spec.order,
                pattern=pattern, switching=spec.mode,
                flits=_wormhole_option(spec, "flits", None),
                backlogged=backlogged["throughput"], highest_rate=low,
                backlogged_flits=backlogged["throughput"] * flits,
                throughput=best["throughput"] if best else 0.0,
                latency_there=best["mean_latency"] if best else None,
                **mode.record(spec))


def saturation_results_name(spec):
    """The results file of ``ihcube saturation`` on ``spec`` (any of its sizes): ``saturation.json``
    for packet switching, with register stages their suffix (:attr:`ihcube.spec.Stages.suffix`,
    as in the fabric's name): ``saturation_s1.json`` with a relay on each link,
    ``saturation_s1_g1_e1.json`` with link, switch and eject stages; for wormhole,
    ``saturation_wormhole.json`` at the default message length, virtual channels and their
    depth, else with them in the name (``saturation_wormhole_l20_v1_q2.json``). The flit width
    changes no cycle (:meth:`ihcube.modes.Mode.results_suffix`)."""
    return f"saturation{mode_of(spec).results_suffix(spec)}.json"


def wormhole_record(spec):
    """The wormhole options of ``spec`` as the results files record them (``flits``,
    ``flit_width``, ``vcs``, ``vc_depth``); None with packet switching."""
    return None if spec.wormhole is None else dataclasses.asdict(spec.wormhole)
