"""Measure zero-load latency per hop and saturation throughput (model).

``ihcube saturation [--sizes 1024,1048] [--depths 1,2,3] [--order msb] [--link-stages 0]
[--switch-stages 0] [--eject-stages 0]`` (``make saturation``) runs
:func:`ihcube.sim.sweep.saturation` and :func:`ihcube.sim.sweep.zero_load` for each size and
depth under uniform traffic, prints a Markdown table and writes ``<out>/saturation.json``,
each row with its ``link_stages``. With ``--link-stages 1`` (``make saturation
LINK_STAGES=1``) the fabric has a relay on each link (:class:`ihcube.sim.model.Model`'s
``link_stages``, ``docs/model.md``) and the file is ``<out>/saturation_link_stages.json``;
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

from .. import topology
from ..params import PACKET, WORMHOLE
from .options import (add_run_options, add_stages_options, add_switching_options, ints,
                      model_depth, node_count, run_options, stages, started, thread_count)
from .sweep import wormhole_of
from .usage import UsageError, checked, command_parser, run

__all__ = ["main"]

NAME = "saturation"


def _parser():
    parser = command_parser(NAME, __doc__)
    parser.add_argument("--sizes", default="1024,1048", metavar="N,...",
                        help="node counts (default 1024,1048)")
    parser.add_argument("--depths", default=None, metavar="D,...",
                        help="buffer depths (default 1,2,3; packet switching)")
    parser.add_argument("--order", default=topology.MSB_FIRST,
                        help="routing order (default msb)")
    add_stages_options(parser)
    add_switching_options(parser)
    add_run_options(parser)
    return parser


def _measure(task):
    from ..sim import sweep as sw
    kind, n, depth, order, wormhole, staged, threads = task
    if kind == "zero":
        return sw.zero_load(n, depth, order, wormhole=wormhole, threads=threads, **staged)
    return sw.saturation(n, depth, order, wormhole=wormhole, threads=threads, **staged)


def _saturation(args):
    sizes = ints(args.sizes, "Sizes", node_count, 2)
    wormhole = wormhole_of(args, sizes)
    switching = PACKET if wormhole is None else WORMHOLE
    staged = stages(args, switching)
    threads = thread_count(args.threads, switching)
    if wormhole is not None:
        if args.depths is not None:
            raise UsageError("Depths (--depths) are packet buffer depths, not taken with "
                             "wormhole switching: give --vc-depth")
        depths = (wormhole.vc_depth,)
    else:
        depths = ints("1,2,3" if args.depths is None else args.depths, "Depths", model_depth)
    order = checked(topology.check_routing_order, args.order)
    cluster, out = run_options(args)
    tasks = [(kind, n, depth, order, wormhole, staged, threads)
             for kind in ("saturation", "zero") for n in sizes for depth in depths]
    start = time.monotonic()
    with started(cluster):
        results = list(cluster.map(_measure, tasks, "saturation"))
    seconds = time.monotonic() - start
    sat = [r for (kind, *_), r in zip(tasks, results) if kind == "saturation"]
    zero = [r for (kind, *_), r in zip(tasks, results) if kind == "zero"]
    from ..sim.sweep import saturation_results_name
    name = saturation_results_name(wormhole, staged)
    with open(out / name, "w") as f:
        json.dump(dict(saturation=sat, zero_load=zero, seconds=round(seconds, 1),
                       wormhole=None if wormhole is None else dict(
                           flits=wormhole.flits, flit_width=wormhole.flit_width,
                           vcs=wormhole.vcs, vc_depth=wormhole.vc_depth)), f, indent=1)
    if wormhole is None:
        if staged:
            from ..params import describe_stages
            print(f"Register stages: {describe_stages(staged)}")
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
        L = wormhole.flits
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
