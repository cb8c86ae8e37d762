"""Sweep the fabric model's latency against throughput.

``ihcube sweep [--set quick|full|wormhole-quick|wormhole] [--sizes N,...] [--depths D,...]
[--orders O,...] [--patterns P,...] [--rates R,...] [--reading literal|exclusive] ...`` (``make
sweep``, ``make sweep-full``, ``make sweep-wormhole``) runs the points of
:func:`ihcube.sim.sweep.points` with :func:`ihcube.sim.sweep.sweep` and writes
``<out>/<name>.csv``, ``.json`` and, unless ``--no-plots``, the PNG pictures of
:mod:`ihcube.sim.plots`. A named set gives every part the options leave out. The fabric options
(:func:`~.options.add_fabric_options`) but ``--nodes --depth --order --width --ports`` (lists, or
the traffic, give those here) and ``--reconfigurable`` (refused: fixed fabrics) describe each
point's fabric: with ``--switching wormhole`` (or a wormhole set) and ``--flits --vcs --vc-depth
--flit-width`` the points run the wormhole fast model (``docs/wormhole.md``, "Experiments"), and
``--beside`` a packet sweep's CSV draws its curves beside the wormhole ones; with register stages
(``--link-stages`` ...) the packet model has them, and the files' names end in their suffix
(``sweep_quick_s1.csv``). A set run with any of its parts changed (``--sizes``, ``--rates``,
``--seed``, ...) is a custom sweep, written as ``sweep_<set>_custom.*``. The points run on
``--jobs`` local Dask worker processes,
or on the cluster of ``--scheduler ADDRESS`` (:mod:`ihcube.sim.cluster`), each packet point's
model on ``--threads`` threads (at most one a node); the CSV is the same bytes either way.
"""

import argparse
import dataclasses
import json
import os
import sys
import time

from .. import topology
from .options import (add_fabric_options, add_run_options, choices, fabric_spec, floats,
                      ints, file_name, model_depth, node_count, number, run_options,
                      started, thread_count)
from .options import provenance_of
from .usage import UsageError, checked, command_parser, run

__all__ = ["main", "add_experiment_fabric_options", "fabric_specs"]

NAME = "sweep"
#: The fabric options an experiment may refuse: what to give instead, and the value its specs
#: take in the option's place (the sizes, depths and orders are replaced by the lists'; a
#: wormhole message carries 32 payload bits, what the flit options are checked against, as
#: ``ihcube verilog`` checks them at its default payload width).
REFUSALS = {"nodes": ("Node count (--nodes) is not taken: give --sizes", None),
            "depth": ("Buffer depth (--depth) is not taken: give --depths", "1"),
            "width": ("Payload width (--width) is not taken: the experiments' payloads carry "
                      "each message's generation cycle", "32"),
            "ports": ("Port count (--ports) is not taken: the experiments' traffic enters "
                      "through one PE port a node", "1"),
            "order": ("Routing order (--order) is not taken: give --orders", "msb"),
            "reconfigurable": ("Reconfigurable (--reconfigurable) is not taken: the experiments "
                               "measure fixed fabrics (a reconfigured fabric of n active nodes "
                               "is the n-node fabric relabelled: give --sizes n)", False)}
#: The fabric options ``ihcube sweep`` refuses: every one of :data:`REFUSALS`.
REFUSED = tuple(REFUSALS)
#: The options that change a part of a named set: a sweep given any of them is a custom one,
#: and its files are named ``sweep_<set>_custom``, never the set's own.
SET_PARTS = ("sizes", "depths", "orders", "patterns", "rates", "warmup", "window",
             "max_windows", "tolerance")
#: Ceilings of the sweep's numbers, so that a mistyped one is refused, not run for days: a
#: radius beyond any diameter (the model takes 2**20 nodes), cycles of a warm-up or window,
#: windows, and a seed that fits a 64-bit word.
MAX_RADIUS = 20
MAX_CYCLES = 10 ** 8
MAX_WINDOWS = 1000
MAX_SEED = (1 << 63) - 1


def _parser():
    parser = command_parser(NAME, __doc__)
    parser.add_argument("--set", default=None, metavar="SET",
                        help="named set: quick, full, wormhole-quick or wormhole (default "
                             "quick, or wormhole-quick with --switching wormhole); the "
                             "options below override its parts")
    parser.add_argument("--sizes", metavar="N,...", help="node counts, at least 2")
    parser.add_argument("--depths", metavar="D,...", help="buffer depths (packet switching)")
    parser.add_argument("--orders", metavar="O,...", help="routing orders: msb, lsb")
    parser.add_argument("--patterns", metavar="P,...",
                        help="traffic: uniform, sphere, decreasing")
    parser.add_argument("--rates", metavar="R,...", help="generation rates, above 0, at most 1")
    parser.add_argument("--radius", default="4", metavar="B",
                        help="sphere of locality radius in hops (default 4)")
    parser.add_argument("--zeta", default="0.8", metavar="Z",
                        help="sphere of locality: probability of a node within B (default 0.8)")
    parser.add_argument("--reading", default="literal", metavar="R",
                        help="where the remainder of sphere and decreasing goes: literal "
                             "(every other node; default) or exclusive (beyond the sphere, "
                             "5+ hops)")
    parser.add_argument("--warmup", metavar="CYCLES", help="warm-up cycles")
    parser.add_argument("--window", metavar="CYCLES", help="measurement window, cycles")
    parser.add_argument("--max-windows", metavar="K", help="most measurement windows")
    parser.add_argument("--tolerance", metavar="F",
                        help="convergence and saturation tolerance (default 0.02)")
    parser.add_argument("--seed", default="1", metavar="S", help="random seed (default 1)")
    add_experiment_fabric_options(parser, REFUSED)
    add_run_options(parser)
    parser.add_argument("--name", metavar="NAME",
                        help="file name prefix (default sweep_<set>, sweep_<set>_custom "
                             "if any part of the set is changed, and the register stages' "
                             "suffix)")
    parser.add_argument("--no-plots", action="store_true", help="write the CSV only")
    parser.add_argument("--beside", metavar="CSV",
                        help="wormhole: a packet sweep's CSV whose curves (same sizes, "
                             "patterns, order) the pictures draw beside the wormhole ones")
    return parser


def _sweep(args):
    from ..sim import sweep as sw
    if args.set is None:
        args.set = "wormhole-quick" if args.switching == "wormhole" else "quick"
    if args.set not in sw.SETS:
        raise UsageError(f"Sweep set must be one of {', '.join(sw.SETS)}, not {args.set!r}")
    base = sw.SETS[args.set]
    # An option given, even empty, is parsed (an empty list is an error); one left out
    # takes the set's.
    sizes = ints(args.sizes, "Sizes", node_count, 2) if args.sizes is not None else base["sizes"]
    if args.switching == "packet" and base.get("switching") == "wormhole":
        args.switching = "wormhole"  # the set's switching, as its other parts
    specs = fabric_specs(args, sizes, REFUSED)
    first = specs[0]
    threads = thread_count(args.threads, first.mode)
    if not first.packet and args.depths is not None:
        raise UsageError("Depths (--depths) are packet buffer depths, not taken with wormhole "
                         "switching: give --vc-depth")
    depths = (ints(args.depths, "Depths", model_depth) if args.depths is not None
              else base["depths"])
    orders = (choices(args.orders, "Orders", topology.ROUTING_ORDERS)
              if args.orders is not None else base["orders"])
    patterns = (choices(args.patterns, "Patterns", ("uniform", "sphere", "decreasing"))
                if args.patterns is not None else base["patterns"])
    rates = floats(args.rates, "Rates", 0.0, 1.0) if args.rates is not None else base["rates"]
    if 0.0 in rates:  # no messages: no latency to measure, nothing to plot
        raise UsageError(f"Rates must be above 0 (a rate of 0 sends no messages), not "
                         f"{args.rates!r}")
    radius = int(number(args.radius, "Sphere radius", int, 1, MAX_RADIUS))
    zeta = number(args.zeta, "Sphere locality zeta", float, 0.0, 1.0)
    from ..sim.traffic import check_reading
    reading = checked(check_reading, args.reading)
    settings = base["settings"]
    changes = {}
    if args.warmup is not None:
        changes["warmup"] = number(args.warmup, "Warm-up", int, 0, MAX_CYCLES)
    if args.window is not None:
        changes["window"] = number(args.window, "Window", int, 1, MAX_CYCLES)
    if args.max_windows is not None:
        changes["max_windows"] = number(args.max_windows, "Most windows", int, 2, MAX_WINDOWS)
    if args.tolerance is not None:
        changes["tolerance"] = number(args.tolerance, "Tolerance", float, 0.0, 1.0)
    changes["seed"] = number(args.seed, "Seed", int, 0, MAX_SEED)
    settings = dataclasses.replace(settings, **changes)
    # A set run as it is writes the set's files; one with any part changed, its own.
    custom = (any(getattr(args, part) is not None for part in SET_PARTS)
              or settings.seed != base["settings"].seed)
    name = (file_name(args.name) if args.name is not None
            else f"sweep_{args.set}{'_custom' if custom else ''}{first.stages.suffix}")
    cluster, out = run_options(args)
    prefix = str(out / name)

    from ..modes import mode_of
    from ..sim import plots
    beside = None
    if args.beside is not None:
        if first.packet:
            raise UsageError("Beside (--beside) draws packet curves beside wormhole ones: "
                             "give --switching wormhole")
        try:
            beside = [row for row in sw.read_csv(args.beside) if row["switching"] == "packet"]
        except (OSError, KeyError, ValueError) as error:
            raise UsageError(f"Beside (--beside) must be a sweep CSV: {args.beside}: "
                             f"{error}") from None
    if not args.no_plots:
        plots.require_matplotlib()  # before the work, not after it
    # --depths is packet switching's: a wormhole fabric's buffers are its --vc-depth.
    by_depth = [dict(depth=depth) for depth in depths] if first.packet else [{}]
    fabrics = [spec.replace(order=order, **depth) for spec in specs for depth in by_depth
               for order in orders]
    point_list = sw.points(fabrics, patterns, rates, radius, zeta, reading)
    if not point_list:
        if not first.packet:
            raise UsageError(f"No points: every rate is above the injection limit 1/"
                             f"{first.wormhole.flits} (one flit a cycle)")
        raise UsageError("No points: every rate is above the injection limit of its depth")
    # The picture of per-link density: the first incomplete size (else the first), the
    # deepest buffers (where a link can carry more than one message per cycle), the first
    # order and pattern.
    picture_n = next((n for n in sizes if n & (n - 1)), sizes[0])
    picture = (picture_n, max(p.depth for p in point_list), orders[0], patterns[0])
    start = time.monotonic()
    with started(cluster):
        rows, kept = sw.sweep(point_list, settings, cluster=cluster, threads=threads,
                              keep_links=lambda p: (p.n, p.depth, p.order, p.pattern) == picture)
    seconds = time.monotonic() - start
    sw.write_csv(prefix + ".csv", rows)
    written = [prefix + ".csv"]
    if not args.no_plots:
        if beside is not None:
            written += plots.switching_plots(rows, beside, prefix)
        else:
            written += plots.latency_plots(rows, prefix)
        unsaturated = [(p, kept[p]) for p in sorted(kept, key=lambda p: p.rate)
                       if not rows[point_list.index(p)]["saturated"]]
        if unsaturated:
            point, (density, ends) = unsaturated[-1]
            row = rows[point_list.index(point)]
            mode = mode_of(point.spec)
            title = (f"n = {point.n}, {mode.buffers(point.spec)}, {point.order} first, "
                     f"{point.pattern} traffic, rate {point.rate:g} (throughput "
                     f"{row['throughput']:.3g}): peak {row['peak_density']:.2f}, "
                     f"{100 * row['links_above_1']:.1f}% of links above 1.0")
            written.append(plots.density_plot(point.n, density, ends, title,
                                              prefix + "_density.png", mode.unit))
    for stale in plots.stale_pictures(prefix, written):
        os.remove(stale)  # an earlier run's picture that this run did not redraw
    summary = dict(set=args.set, settings=dataclasses.asdict(settings), sizes=sizes,
                   depths=depths, orders=orders, patterns=patterns, rates=rates,
                   radius=radius, zeta=zeta, reading=reading, jobs=cluster.jobs,
                   scheduler=cluster.scheduler, points=len(rows), switching=first.mode,
                   wormhole=sw.wormhole_record(first),
                   **({"stages": first.stages.keywords()} if first.stages else {}),
                   seconds=round(seconds, 1), curves=_curves(rows),
                   provenance=provenance_of(args))
    with open(prefix + ".json", "w") as f:
        json.dump(summary, f, indent=1)
    written.append(prefix + ".json")
    print(f"{len(rows)} points in {seconds:.0f} s; wrote {', '.join(written)}")


def add_experiment_fabric_options(parser, refused):
    """Add the fabric options (:func:`~.options.add_fabric_options`, ``--nodes`` not
    required) to ``parser``, those named in ``refused`` (keys of :data:`REFUSALS`) left out of
    the help and without a default, so that :func:`fabric_specs` refuses them if given."""
    add_fabric_options(parser, nodes_required=False, leave_out=refused)


def fabric_specs(args, sizes, refused):
    """The checked :class:`~ihcube.spec.FabricSpec` of the fabric options
    (:func:`add_experiment_fabric_options`) at each of ``sizes``: an option of ``refused``
    given is a usage error, one line, and so are the fast model's limits."""
    for option in refused:
        if getattr(args, option) is not None:
            raise UsageError(REFUSALS[option][0])
    specs = []
    for n in sizes:
        options = {**vars(args), **{option: REFUSALS[option][1] for option in refused},
                   "nodes": str(n)}
        spec = fabric_spec(argparse.Namespace(**options), hardware=False)
        if not spec.packet:  # the wormhole model's int64 words: its own limits
            from ..sim.wormhole_fast import FastWormholeModel
            checked(_refuse, FastWormholeModel.beyond(n, spec.wormhole))
        specs.append(spec)
    return specs


def _refuse(why):
    if why:
        raise ValueError(why)


def _curves(rows):
    """Per curve: the highest rate not saturated and its throughput, latency, peak density."""
    out = []
    keys = sorted({(r["n"], r["depth"], r["order"], r["pattern"]) for r in rows},
                  key=lambda key: rows.index(next(r for r in rows
                                                  if (r["n"], r["depth"], r["order"],
                                                      r["pattern"]) == key)))
    for key in keys:
        curve = [r for r in rows if (r["n"], r["depth"], r["order"], r["pattern"]) == key]
        fine = [r for r in curve if not r["saturated"]]
        best = max(fine, key=lambda r: r["rate"]) if fine else None
        out.append(dict(n=key[0], depth=key[1], order=key[2], pattern=key[3],
                        highest_unsaturated_rate=best["rate"] if best else None,
                        throughput=best["throughput"] if best else None,
                        latency=best["mean_latency"] if best else None,
                        peak_density=best["peak_density"] if best else None,
                        max_throughput=max(r["throughput"] for r in curve)))
    return out


def main(argv=None):
    """Run ``ihcube sweep`` with ``argv`` (default: the process's); return the exit status."""
    return run(NAME, _parser(), _sweep, argv)


if __name__ == "__main__":
    sys.exit(main())
