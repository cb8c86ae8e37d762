"""Benchmark: how fast the compiled wormhole model runs.

:func:`benchmark` (``ihcube bench-wormhole [--nodes N ...] [--out FILE]``, ``make
bench-wormhole``) measures router-cycles per second (nodes times cycles, per second) of
:class:`ihcube.sim.wormhole_fast.FastWormholeModel` under saturating uniform traffic: Tzeng
and Kumar's 20-flit messages on 3 virtual channels (the other parameters the defaults of
:data:`ihcube.params.WORMHOLE_DEFAULTS`), every PE offered more messages than it can inject,
each to a node drawn uniformly from the others, every PE taking a flit every cycle. The
clock starts after a warm-up that fills the fabric. It prints the figures and writes them,
with the machine's facts, to a JSON file; rates are per CPU second (the steadier figure on a
shared machine) and per wall second, best of a few runs. For comparison it times the plain
Python :class:`~ihcube.sim.wormhole_model.WormholeModel` on a few cycles at the first size.
It checks nothing; ``tests/test_wormhole_fast.py`` does that.
"""

import os
import pathlib
import statistics
import time

import numpy as np

from . import machine, write_results

__all__ = ["saturating_messages", "measure", "measure_reference", "benchmark"]

#: Fabric sizes, message length and virtual channels (Tzeng and Kumar's), and the run.
SIZES = (1024, 1048, 2048)
FLITS = 20
VCS = 3
#: Cycles before the clock starts, router-cycles of each timed run, runs (the best counts).
WARMUP = 300
ROUTER_CYCLES = 4_000_000
REPEATS = 3
#: Cycles of the reference model's run.
REFERENCE_CYCLES = 3

#: Where the figures go, relative to the current directory.
OUT = "results/bench_wormhole_model.json"


def saturating_messages(n, wormhole, cycles, seed):
    """Messages for ``cycles`` cycles of saturation: per PE one more than it can inject
    (one flit a cycle), each a unicast to a uniformly drawn other node; returns ``(nodes,
    words)`` for :meth:`~ihcube.sim.wormhole_fast.FastWormholeModel.offer`."""
    from ..params import header_bits

    rng = np.random.default_rng(seed)
    per = cycles // wormhole.flits + 2
    nodes = np.repeat(np.arange(n, dtype=np.int64), per)
    dests = rng.integers(0, n - 1, len(nodes))
    dests += dests >= nodes
    words = rng.integers(0, 1 << wormhole.flit_width, (len(nodes), wormhole.flits))
    free = wormhole.flit_width - header_bits(n)
    # The head: dest, src 0 (the router stamps it), kind unicast, then the message's number.
    words[:, 0] = dests | (np.arange(len(nodes)) & ((1 << free) - 1)) << header_bits(n)
    return nodes, words


def measure(n, flits=FLITS, vcs=VCS, router_cycles=ROUTER_CYCLES, repeats=REPEATS,
            warmup=WARMUP):
    """Time ``repeats`` saturated runs of a fresh ``n``-node fast model.

    Returns
    -------
    dict
        ``nodes``, the wormhole parameters, ``cycles`` timed per run after ``warmup``,
        ``build_seconds``; router-cycles per CPU and per wall second, best and median;
        what the fabric did in the last run: ``flits_accepted`` (flits taken by the PEs per
        node per cycle), ``messages_accepted``, ``link_load`` (flits per link per cycle).
    """
    from ..sim.wormhole_fast import FastWormholeModel
    from ..spec import FabricSpec

    spec = FabricSpec.of(n, switching="wormhole", flits=flits, vcs=vcs)
    wormhole = spec.wormhole
    FastWormholeModel(FabricSpec.of(4, switching="wormhole", flits=2)).advance(2)  # load the code
    cycles = max(200, router_cycles // n)
    cpu, wall, builds = [], [], []
    for seed in range(repeats):
        start = time.perf_counter()
        model = FastWormholeModel(spec)
        builds.append(time.perf_counter() - start)
        model.offer(*saturating_messages(n, wormhole, warmup + cycles, seed))
        model.advance(warmup)
        ejected, delivered, transfers = model.ejected, model.delivered, model.transfers
        start_cpu, start_wall = time.process_time(), time.perf_counter()
        model.advance(cycles)
        cpu.append(n * cycles / (time.process_time() - start_cpu))
        wall.append(n * cycles / (time.perf_counter() - start_wall))
        if model.queued == 0:
            raise RuntimeError("the source queues ran dry: the traffic was not saturating")
    return {"nodes": n, "flits": wormhole.flits, "vcs": wormhole.vcs,
            "vc_depth": wormhole.vc_depth, "flit_width": wormhole.flit_width,
            "warmup": warmup, "cycles": cycles, "runs": repeats,
            "build_seconds": round(min(builds), 2),
            "cpu_best": round(max(cpu)), "cpu_median": round(statistics.median(cpu)),
            "wall_best": round(max(wall)), "wall_median": round(statistics.median(wall)),
            "flits_accepted": round((model.ejected - ejected) / (n * cycles), 4),
            "messages_accepted": round((model.delivered - delivered) / (n * cycles), 5),
            "link_load": round((model.transfers - transfers) / (model.links * cycles), 4)}


def measure_reference(n, flits=FLITS, vcs=VCS, cycles=REFERENCE_CYCLES, warmup=WARMUP):
    """Router-cycles per CPU second of the plain Python reference model, stepped through
    ``cycles`` cycles from the state of a fast model after ``warmup`` saturated cycles (the
    fabric full; the PEs offer nothing more)."""
    from ..sim.wormhole_fast import FastWormholeModel
    from ..sim.wormhole_model import WormholeModel
    from ..spec import FabricSpec

    spec = FabricSpec.of(n, switching="wormhole", flits=flits, vcs=vcs)
    fast = FastWormholeModel(spec)
    fast.offer(*saturating_messages(n, spec.wormhole, warmup + cycles, 0))
    fast.advance(warmup)
    reference = WormholeModel(spec)
    for name in vars(reference):
        value = getattr(fast, name)
        if isinstance(value, np.ndarray) and name in vars(fast):
            setattr(reference, name, value.astype(np.int64))
    reference.cycle = fast.cycle
    start = time.process_time()
    for _ in range(cycles):
        reference.step([0] * n, [0] * n, [1] * n)
    return {"nodes": n, "cycles": cycles,
            "cpu": round(n * cycles / (time.process_time() - start))}


def benchmark(sizes=SIZES, out=OUT):
    """Measure the fast model at each of ``sizes`` (:func:`measure`) and the reference at the
    first (:func:`measure_reference`); print the figures and write them, with
    :func:`machine`, to the JSON file ``out``.

    Returns
    -------
    dict
        What was written.
    """
    out = pathlib.Path(out)
    results = {"machine": machine(), "model": [], "reference": None}
    print(f"Fast wormhole model, {FLITS} flits, {VCS} virtual channels, saturating uniform "
          f"traffic: router-cycles per second (best of {REPEATS}; median)")
    print(f"{'nodes':>6} {'cycles':>7} {'per CPU s':>18} {'per wall s':>18} "
          f"{'flits/node/cycle':>17} {'link load':>9}")
    for n in sizes:
        row = measure(n)
        results["model"].append(row)
        print(f"{n:>6} {row['cycles']:>7} {row['cpu_best'] / 1e6:>8.2f}M "
              f"({row['cpu_median'] / 1e6:>5.2f}M) {row['wall_best'] / 1e6:>8.2f}M "
              f"({row['wall_median'] / 1e6:>5.2f}M) {row['flits_accepted']:>17.3f} "
              f"{row['link_load']:>9.3f}", flush=True)
    if sizes:
        reference = results["reference"] = measure_reference(sizes[0])
        print(f"\nReference WormholeModel (plain Python), n={reference['nodes']}, "
              f"{reference['cycles']} saturated cycles: {reference['cpu']:,} router-cycles "
              f"per CPU s")
        results["speedup"] = round(results["model"][0]["cpu_best"] / reference["cpu"])
        print(f"fast / reference at n={reference['nodes']}: {results['speedup']:,}x")
    results["machine"]["load_average_end"] = [round(load, 2) for load in os.getloadavg()]
    write_results(results, out)
    return results
