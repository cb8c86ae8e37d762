"""Measure zero-load latency per hop and saturation throughput (model).

``ihcube saturation [--sizes 1024,1048] [--depths 1,2,3] [--order msb]`` (``make
saturation``) runs :func:`ihcube.sim.sweep.saturation` and :func:`ihcube.sim.sweep.zero_load`
for each size and depth under uniform traffic, prints a Markdown table and writes
``<out>/saturation.json``. The measurements run on ``--jobs`` local Dask worker processes, or
on the cluster of ``--scheduler ADDRESS`` (:mod:`ihcube.sim.cluster`).
"""

import json
import sys
import time

from .. import topology
from .options import add_run_options, ints, model_depth, node_count, run_options, started
from .usage import checked, command_parser, run

__all__ = ["main"]

NAME = "saturation"


def _parser():
    parser = command_parser(NAME, __doc__)
    parser.add_argument("--sizes", default="1024,1048", metavar="N,...",
                        help="node counts (default 1024,1048)")
    parser.add_argument("--depths", default="1,2,3", metavar="D,...",
                        help="buffer depths (default 1,2,3)")
    parser.add_argument("--order", default=topology.MSB_FIRST,
                        help="routing order (default msb)")
    add_run_options(parser)
    return parser


def _measure(task):
    from ..sim import sweep as sw
    kind, n, depth, order = task
    if kind == "zero":
        return sw.zero_load(n, depth, order)
    return sw.saturation(n, depth, order)


def _saturation(args):
    sizes = ints(args.sizes, "Sizes", node_count, 2)
    depths = ints(args.depths, "Depths", model_depth)
    order = checked(topology.check_routing_order, args.order)
    cluster, out = run_options(args)
    tasks = [(kind, n, depth, order) for kind in ("saturation", "zero") for n in sizes
             for depth in depths]
    start = time.monotonic()
    with started(cluster):
        results = list(cluster.map(_measure, tasks, "saturation"))
    seconds = time.monotonic() - start
    sat = [r for (kind, *_), r in zip(tasks, results) if kind == "saturation"]
    zero = [r for (kind, *_), r in zip(tasks, results) if kind == "zero"]
    with open(out / "saturation.json", "w") as f:
        json.dump(dict(saturation=sat, zero_load=zero, seconds=round(seconds, 1)), f, indent=1)
    print("| n | depth | zero-load latency per hop | + fixed | saturation throughput "
          "(highest unsaturated rate) | accepted with sources backlogged |")
    print("|---:|---:|---:|---:|---:|---:|")
    for s, z in zip(sat, zero):
        print(f"| {s['n']} | {s['depth']} | {z['per_hop']:.3f} | {z['overhead']:.2f} | "
              f"{s['throughput']:.3f} ({s['highest_rate']:.3f}) | {s['backlogged']:.3f} |")
    print(f"{seconds:.0f} s; wrote {out / 'saturation.json'}")


def main(argv=None):
    """Run ``ihcube saturation`` with ``argv`` (default: the process's); return the exit
    status."""
    return run(NAME, _parser(), _saturation, argv)


if __name__ == "__main__":
    sys.exit(main())
