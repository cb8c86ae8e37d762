"""Measure zero-load latency per hop and saturation throughput (model).

``ihcube saturation [--sizes 1024,1048] [--depths 1,2,3] [--order msb] [--link-stages 0]
[--switch-stages 0] [--eject-stages 0]`` (``make saturation``; the fabric options of
:func:`~.options.add_fabric_options` but ``--nodes --depth --width --ports
--reconfigurable``) runs
:func:`ihcube.sim.sweep.saturation` and :func:`ihcube.sim.sweep.zero_load` for each size and
depth under uniform traffic, prints a Markdown table and writes ``<out>/saturation.json``,
each row with its ``link_stages``. With ``--link-stages 1`` (``make saturation
LINK_STAGES=1``) the fabric has a relay on each link (:class:`ihcube.sim.model.Model`'s
``link_stages``, ``docs/model.md``) and the file is ``<out>/saturation_s1.json``;
with all three stages (``make saturation LINK_STAGES=1 SWITCH_STAGES=1 EJECT_STAGES=1``)
``<out>/saturation_s1_g1_e1.json``. With ``--switching wormhole`` (and ``--flits --vcs
--vc-depth --flit-width``) it measures the wormhole fast model instead (``--depths`` is then
``--vc-depth``; the bisection's resolution is ``0.01 / flits`` messages per node per cycle)
and writes ``<out>/saturation_wormhole.json`` (other message lengths, virtual channel
counts and depths: :func:`ihcube.sim.sweep.saturation_results_name`). The measurements run
on ``--jobs`` local Dask worker processes, or on the cluster of ``--scheduler ADDRESS``
(:mod:`ihcube.sim.cluster`), each packet model on ``--threads`` threads (at most one a
node; the file is the same for any number).
"""

import json
import sys
import time

from .options import (add_run_options, ints, model_depth, node_count, run_options, started,
                      thread_count)
from .options import provenance_of
from .sweep import add_experiment_fabric_options, fabric_specs
from .usage import UsageError, command_parser, run

__all__ = ["main"]

NAME = "saturation"
#: The fabric options ``ihcube saturation`` refuses (:data:`ihcube.cli.sweep.REFUSALS`).
REFUSED = ("nodes", "depth", "width", "ports", "reconfigurable")


def _parser():
    parser = command_parser(NAME, __doc__)
    parser.add_argument("--sizes", default="1024,1048", metavar="N,...",
                        help="node counts (default 1024,1048)")
    parser.add_argument("--depths", default=None, metavar="D,...",
                        help="buffer depths (default 1,2,3; packet switching)")
    add_experiment_fabric_options(parser, REFUSED)
    add_run_options(parser)
    return parser


def _measure(task):
    from ..sim import sweep as sw
    kind, spec, threads = task
    if kind == "zero":
        return sw.zero_load(spec, threads=threads)
    return sw.saturation(spec, threads=threads)


def _saturation(args):
    from ..sim.sweep import saturation_results_name, wormhole_record
    sizes = ints(args.sizes, "Sizes", node_count, 2)
    specs = fabric_specs(args, sizes, REFUSED)
    first = specs[0]
    threads = thread_count(args.threads, first.mode)
    if first.packet:
        depths = ints("1,2,3" if args.depths is None else args.depths, "Depths", model_depth)
        specs = [spec.replace(depth=depth) for spec in specs for depth in depths]
    elif args.depths is not None:  # a wormhole fabric's buffers are its --vc-depth
        raise UsageError("Depths (--depths) are packet buffer depths, not taken with "
                         "wormhole switching: give --vc-depth")
    cluster, out = run_options(args)
    tasks = [(kind, spec, threads) for kind in ("saturation", "zero") for spec in specs]
    start = time.monotonic()
    with started(cluster):
        results = list(cluster.map(_measure, tasks, "saturation"))
    seconds = time.monotonic() - start
    sat = [r for (kind, *_), r in zip(tasks, results) if kind == "saturation"]
    zero = [r for (kind, *_), r in zip(tasks, results) if kind == "zero"]
    name = saturation_results_name(first)
    with open(out / name, "w") as f:
        json.dump(dict(saturation=sat, zero_load=zero, seconds=round(seconds, 1),
                       wormhole=wormhole_record(first),
                       provenance=provenance_of(args)), f, indent=1)
    # The tables differ: a wormhole message is flits, each column says both.
    if first.packet:
        if first.stages:
            print(f"Register stages: {first.stages.description}")
        print("| n | depth | zero-load latency per hop | + fixed | saturation throughput "
              "(highest unsaturated rate) | accepted with sources backlogged |")
        print("|---:|---:|---:|---:|---:|---:|")
        for s, z in zip(sat, zero):
            print(f"| {s['n']} | {s['depth']} | {z['per_hop']:.3f} | {z['overhead']:.2f} | "
                  f"{s['throughput']:.3f} ({s['highest_rate']:.3f}) | {s['backlogged']:.3f} |")
    else:
        print("| n | VC depth | zero-load latency per hop | + fixed | saturation throughput, "
              "messages (flits) per node per cycle (highest unsaturated rate) | accepted "
              "with sources backlogged, messages (flits) |")
        print("|---:|---:|---:|---:|---:|---:|")
        L = first.wormhole.flits
        for s, z in zip(sat, zero):
            print(f"| {s['n']} | {s['depth']} | {z['per_hop']:.3f} | {z['overhead']:.2f} | "
                  f"{s['throughput']:.4f} ({L * s['throughput']:.3f}) "
                  f"({s['highest_rate']:.4f}) | "
                  f"{s['backlogged']:.4f} ({L * s['backlogged']:.3f}) |")
    print(f"{seconds:.0f} s; wrote {out / name}")


def main(argv=None):
    """Run ``ihcube saturation`` with ``argv`` (default: the process's); return the exit
    status."""
    return run(NAME, _parser(), _saturation, argv)


if __name__ == "__main__":
    sys.exit(main())
