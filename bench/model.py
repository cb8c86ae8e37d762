"""Benchmark: how fast the cycle-exact model runs, against the Amaranth simulation of the RTL.

:func:`benchmark` (``ihcube bench-model [--nodes N ...] [--out FILE]``, ``make
bench-model``) measures router-cycles per second (nodes times cycles, per second) of
:class:`ihcube.sim.model.Model` under uniform random traffic (Tzeng and Kumar's model: each
node generates a message with probability 0.4 per cycle into an unbounded source queue) with
one-message buffers, after the compiled code is loaded; the same figure for the Amaranth
simulation of the 26-node fabric driven by :class:`~ihcube.verify.harness.FabricHarness`; the
peak memory of a child process that builds a 65,536-node model; and a million-node model
(``n`` = 2**20) run for 1,000 cycles in a child process, its speed and peak memory; and the
model on ``threads`` threads against one at 1,024, 8,192 and 65,536 nodes
(:func:`measure_threads`: both in one process, run after run). It prints
the figures and writes them, with the machine's facts, to a JSON file. Rates are given both
per CPU second of this process and per wall-clock second, best of a few runs: on a shared
machine the CPU figure is the steadier one. It checks nothing; ``tests/test_model.py`` does that.
"""

import json
import os
import pathlib
import random
import statistics
import subprocess
import sys
import time

from . import machine, write_results

__all__ = ["measure_model", "measure_threads", "measure_rtl", "measure_memory", "measure_large",
           "benchmark"]

#: Fabric sizes of the model's figures, the traffic, and the buffer depth.
SIZES = (26, 256, 1024, 2048)
RATE = 0.4
DEPTH = 1
#: Router-cycles of each timed model run, and how many runs (the best is reported).
ROUTER_CYCLES = 20_000_000
REPEATS = 3
#: The Amaranth simulation: its size, and the cycles of its two runs (their difference in
#: time is the simulation without the simulator's construction).
RTL_NODES = 26
RTL_CYCLES = (40, 240)
#: The model whose memory is measured.
MEMORY_NODES = 65_536
#: The large model (the most nodes the model takes, MAX_ADDRESS_BITS) and its run's cycles.
LARGE_NODES = 1 << 20
LARGE_CYCLES = 1000

#: The threaded model's sizes, its threads, and the pairs of runs (one thread, then several)
#: of each size.
THREAD_SIZES = (1024, 8192, 65_536)
THREADS = 2
THREAD_PAIRS = 5

#: Where the figures go, relative to the current directory.
OUT = "results/bench_model.json"


def measure_model(n, rate=RATE, depth=DEPTH, router_cycles=ROUTER_CYCLES, repeats=REPEATS):
    """Time :meth:`Model.run_uniform` on fresh ``n``-node models.

    Returns
    -------
    dict
        ``nodes``, ``depth``, ``rate``, ``cycles`` per run, ``runs``; router-cycles per
        second per CPU second and per wall second, best and median
        (``cpu_best``, ``cpu_median``, ``wall_best``, ``wall_median``); and what the fabric
        did in the last run (``throughput``, ``mean_latency``, ``queued``).
    """
    from ..sim.model import Model

    Model(n, depth=depth).run_uniform(rate, 4, seed=0)  # load (or compile) the code
    cycles = max(200, router_cycles // n)
    cpu, wall = [], []
    for seed in range(repeats):
        model = Model(n, depth=depth)
        start_cpu, start_wall = time.process_time(), time.perf_counter()
        stats = model.run_uniform(rate, cycles, seed=seed)
        cpu.append(n * cycles / (time.process_time() - start_cpu))
        wall.append(n * cycles / (time.perf_counter() - start_wall))
    return {"nodes": n, "depth": depth, "rate": rate, "cycles": cycles, "runs": repeats,
            "cpu_best": round(max(cpu)), "cpu_median": round(statistics.median(cpu)),
            "wall_best": round(max(wall)), "wall_median": round(statistics.median(wall)),
            "throughput": round(stats["throughput"], 4),
            "mean_latency": round(stats["mean_latency"], 1), "queued": stats["queued"]}


def measure_threads(n, threads=THREADS, rate=RATE, depth=DEPTH, router_cycles=ROUTER_CYCLES,
                    pairs=THREAD_PAIRS):
    """Time :meth:`Model.run_uniform` on one thread and on ``threads``, run after run in this
    process (the compiled code of both loaded first), on fresh ``n``-node models.

    Returns
    -------
    dict
        ``nodes``, ``threads``, ``depth``, ``rate``, ``cycles`` per run, ``pairs``;
        router-cycles per wall second of one thread and of ``threads`` (``wall_one``,
        ``wall_threads``: medians), the medians of the pairs' ratios of wall time
        (``speedup``) and of process CPU time (``cpu_ratio``, the CPU time of ``threads``
        over one's: the barriers' cost), and ``load_average`` at the start; ``same`` is
        whether every pair's figures were equal (they must be).
    """
    from ..sim.model import Model

    for count in (1, threads):
        Model(n, depth=depth, threads=count).run_uniform(rate, 4, seed=0)
    cycles = max(200, router_cycles // n)
    load = [round(value, 2) for value in os.getloadavg()]
    walls = {1: [], threads: []}
    cpus = {1: [], threads: []}
    same = True
    for seed in range(pairs):
        stats = []
        for count in (1, threads):
            model = Model(n, depth=depth, threads=count)
            start_cpu, start_wall = time.process_time(), time.perf_counter()
            stats.append(model.run_uniform(rate, cycles, seed=seed))
            cpus[count].append(time.process_time() - start_cpu)
            walls[count].append(time.perf_counter() - start_wall)
        same &= stats[0] == stats[1]
    speedup = statistics.median(a / b for a, b in zip(walls[1], walls[threads]))
    cpu_ratio = statistics.median(b / a for a, b in zip(cpus[1], cpus[threads]))
    return {"nodes": n, "threads": threads, "depth": depth, "rate": rate, "cycles": cycles,
            "pairs": pairs,
            "wall_one": round(n * cycles / statistics.median(walls[1])),
            "wall_threads": round(n * cycles / statistics.median(walls[threads])),
            "speedup": round(speedup, 3), "cpu_ratio": round(cpu_ratio, 3),
            "load_average": load, "same": bool(same)}


def print_threads(row):
    """Print a row of :func:`measure_threads`."""
    print(f"{row['nodes']:>7} {row['cycles']:>7} {row['wall_one'] / 1e6:>9.2f}M "
          f"{row['wall_threads'] / 1e6:>9.2f}M {row['speedup']:>8.2f} {row['cpu_ratio']:>8.2f}"
          f"  {' '.join(map(str, row['load_average']))}  {'same' if row['same'] else 'DIFFER'}",
          flush=True)


def measure_rtl(n=RTL_NODES, rate=RATE, depth=DEPTH, cycles=RTL_CYCLES, seed=1):
    """Time the Amaranth simulation of an ``n``-node fabric under the same traffic, twice for
    different numbers of cycles; the difference cancels elaboration and the simulator's setup.

    Returns
    -------
    dict
        ``nodes``, ``depth``, ``rate``, ``cycles`` (the two runs), ``setup_seconds`` (the
        construction, estimated), ``cpu`` and ``wall`` router-cycles per second.
    """
    from ..rtl import Fabric
    from ..verify.harness import FabricHarness, Request

    timings = []
    for length in cycles:
        rng = random.Random(seed)
        harness = FabricHarness(Fabric(n, depth=depth))
        payload = 0
        for cycle in range(length):
            for node in range(n):
                if rng.random() < rate:
                    dest = rng.randrange(n - 1)
                    harness.send(node, Request(payload=payload, dest=dest + (dest >= node),
                                               at=cycle))
                    payload += 1
        start_cpu, start_wall = time.process_time(), time.perf_counter()
        harness.run(length)
        timings.append((time.process_time() - start_cpu, time.perf_counter() - start_wall))
        if harness.cycles != length:
            raise RuntimeError(f"the harness stopped after {harness.cycles} of {length} cycles")
    extra = n * (cycles[1] - cycles[0])
    cpu = extra / (timings[1][0] - timings[0][0])
    wall = extra / (timings[1][1] - timings[0][1])
    setup = timings[0][0] - n * cycles[0] / cpu
    return {"nodes": n, "depth": depth, "rate": rate, "cycles": list(cycles),
            "setup_seconds": round(setup, 1), "cpu": round(cpu, 1), "wall": round(wall, 1)}


def _child_peak(code):
    """Run ``code`` in a child Python; return its peak resident memory (KiB) and its output."""
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT)
    output = child.stdout.read()
    # wait4, not wait: it gives this child's own resource usage, peak memory included.
    _, status, usage = os.wait4(child.pid, 0)
    child.stdout.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"child failed:\n{output.decode(errors='replace')}")
    return usage.ru_maxrss, output.decode().strip()


def measure_memory(n=MEMORY_NODES, depth=DEPTH, cycles=20):
    """Peak memory of child processes that import the model, build an ``n``-node model, and
    build one and run ``cycles`` cycles of uniform traffic on it.

    Returns
    -------
    dict
        ``nodes``, ``depth``, ``import_kib``, ``build_kib`` and ``run_kib`` (peak resident
        memory of each child), ``state_bytes`` (the model's arrays) and ``build_seconds``.
    """
    imports = "import time; from ihcube.sim.model import Model"
    build = (f"{imports}; start = time.perf_counter(); model = Model({n}, depth={depth}); "
             f"print(model.nbytes, time.perf_counter() - start)")
    run = f"{imports}; Model({n}, depth={depth}).run_uniform({RATE}, {cycles})"
    import_kib, _ = _child_peak(imports)
    build_kib, output = _child_peak(build)
    run_kib, _ = _child_peak(run)
    state_bytes, seconds = output.split()
    return {"nodes": n, "depth": depth, "import_kib": import_kib, "build_kib": build_kib,
            "run_kib": run_kib, "run_cycles": cycles, "state_bytes": int(state_bytes),
            "build_seconds": round(float(seconds), 2)}


def measure_large(n=LARGE_NODES, cycles=LARGE_CYCLES, rate=RATE, depth=DEPTH, seed=1):
    """Build an ``n``-node model and run ``cycles`` cycles of uniform traffic on it, in a
    child process (after a small model has loaded the compiled code), and measure the child's
    peak memory.

    Returns
    -------
    dict
        ``nodes``, ``depth``, ``rate``, ``cycles``; ``build_seconds``; ``cpu`` and ``wall``
        router-cycles per second of the run; ``peak_kib`` (the child's peak resident
        memory), ``state_bytes`` (the model's arrays); and what the fabric did
        (``throughput``, ``mean_latency``, ``queued``).
    """
    code = (f"import json, time; from ihcube.sim.model import Model; "
            f"Model(1024, depth={depth}).run_uniform({rate}, 4); "
            f"start = time.perf_counter(); model = Model({n}, depth={depth}); "
            f"built = time.perf_counter() - start; "
            f"cpu, wall = time.process_time(), time.perf_counter(); "
            f"stats = model.run_uniform({rate}, {cycles}, seed={seed}); "
            f"cpu, wall = time.process_time() - cpu, time.perf_counter() - wall; "
            f"print(json.dumps(dict(built=built, cpu=cpu, wall=wall, state=model.nbytes, "
            f"throughput=stats['throughput'], latency=stats['mean_latency'], "
            f"queued=stats['queued'])))")
    peak, output = _child_peak(code)
    got = json.loads(output.splitlines()[-1])
    return {"nodes": n, "depth": depth, "rate": rate, "cycles": cycles,
            "build_seconds": round(got["built"], 2),
            "cpu": round(n * cycles / got["cpu"]), "wall": round(n * cycles / got["wall"]),
            "peak_kib": peak, "state_bytes": got["state"],
            "throughput": round(got["throughput"], 4),
            "mean_latency": round(got["latency"], 1), "queued": got["queued"]}


def benchmark(sizes=SIZES, out=OUT, threads=THREADS, thread_sizes=THREAD_SIZES):
    """Measure the model at each of ``sizes`` (:func:`measure_model`), the Amaranth
    simulation (:func:`measure_rtl`), the memory of a large model (:func:`measure_memory`),
    a million-node run (:func:`measure_large`) and ``threads`` threads against one at each
    of ``thread_sizes`` (:func:`measure_threads`, none if ``threads`` is 1);
    print the figures and write them, with :func:`machine`, to the JSON file ``out``.

    Returns
    -------
    dict
        What was written.
    """
    out = pathlib.Path(out)
    results = {"machine": machine(), "model": [], "rtl": None, "memory": None, "large": None,
               "threads": []}
    print(f"Model, uniform traffic at rate {RATE}, depth {DEPTH}: router-cycles per second "
          f"(best of {REPEATS}; median)")
    print(f"{'nodes':>6} {'cycles':>7} {'per CPU s':>18} {'per wall s':>18} "
          f"{'accepted':>9} {'latency':>8}")
    for n in sizes:
        row = measure_model(n)
        results["model"].append(row)
        print(f"{n:>6} {row['cycles']:>7} {row['cpu_best'] / 1e6:>8.2f}M "
              f"({row['cpu_median'] / 1e6:>5.2f}M) {row['wall_best'] / 1e6:>8.2f}M "
              f"({row['wall_median'] / 1e6:>5.2f}M) {row['throughput']:>9.3f} "
              f"{row['mean_latency']:>8.1f}", flush=True)

    rtl = results["rtl"] = measure_rtl()
    print(f"\nAmaranth simulation, n={rtl['nodes']}, FabricHarness, {rtl['cycles'][0]} and "
          f"{rtl['cycles'][1]} cycles: {rtl['cpu']:,.0f} router-cycles per CPU s "
          f"({rtl['wall']:,.0f} per wall s; setup {rtl['setup_seconds']} s)")
    same = next((row for row in results["model"] if row["nodes"] == rtl["nodes"]), None)
    if same is not None:
        results["speedup"] = round(same["cpu_best"] / rtl["cpu"])
        print(f"model / Amaranth at n={rtl['nodes']}: {results['speedup']:,}x (CPU time)")

    memory = results["memory"] = measure_memory()
    print(f"\nModel({memory['nodes']}), depth {memory['depth']}: arrays "
          f"{memory['state_bytes'] / 2**20:.1f} MiB, built in {memory['build_seconds']} s; peak "
          f"memory {memory['build_kib'] / 1024:.0f} MiB (importing alone "
          f"{memory['import_kib'] / 1024:.0f} MiB; building and running "
          f"{memory['run_cycles']} cycles {memory['run_kib'] / 1024:.0f} MiB)")

    large = results["large"] = measure_large()
    print(f"\nModel({large['nodes']:,}), depth {large['depth']}, rate {large['rate']}, "
          f"{large['cycles']:,} cycles: {large['cpu'] / 1e6:.2f}M router-cycles per CPU s "
          f"({large['wall'] / 1e6:.2f}M per wall s), built in {large['build_seconds']} s, "
          f"peak memory {large['peak_kib'] / 2**20:.2f} GiB (arrays "
          f"{large['state_bytes'] / 2**30:.2f} GiB); accepted {large['throughput']:.3f}")

    if threads > 1:
        print(f"\nModel on {threads} threads against one, uniform traffic at rate {RATE}, depth "
              f"{DEPTH}: router-cycles per wall s (medians of {THREAD_PAIRS} pairs of runs)")
        print(f"{'nodes':>7} {'cycles':>7} {'1 thread':>10} {f'{threads} threads':>10} "
              f"{'speed-up':>8} {'CPU x':>8}  load average")
        for n in thread_sizes:
            row = measure_threads(n, threads)
            results["threads"].append(row)
            print_threads(row)

    results["machine"]["load_average_end"] = [round(load, 2) for load in os.getloadavg()]
    write_results(results, out)
    return results
