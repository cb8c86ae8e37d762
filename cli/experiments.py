"""The network-experiment commands of ``ihcube``: ``sweep``, ``saturation``, ``collectives``.

They parse and check their arguments here (a mistake is a :class:`UsageError`, one line at
the command line), run :mod:`ihcube.sim.sweep` and :mod:`ihcube.sim.collectives`, and write
CSV, JSON and PNG files into an output directory (``results`` by default).
"""

import dataclasses
import json
import multiprocessing
import pathlib
import sys
import time

from .. import topology
from ..params import check_depth
from .usage import UsageError

__all__ = ["UsageError", "add_commands", "COMMANDS", "run"]


def _ints(text, what, check, at_least=1):
    values = []
    for part in str(text).split(","):
        try:
            value = int(part.strip(), 10)
        except ValueError:
            raise UsageError(f"{what} must be comma-separated integers of at least {at_least}, "
                             f"not {text!r}") from None
        if value < at_least:
            raise UsageError(f"{what} must be comma-separated integers of at least {at_least}, "
                             f"not {text!r}")
        try:
            values.append(check(value))
        except (TypeError, ValueError) as error:
            raise UsageError(str(error)) from None
    return tuple(values)


def _floats(text, what, low, high):
    values = []
    for part in str(text).split(","):
        try:
            value = float(part.strip())
        except ValueError:
            value = None
        if value is None or not low <= value <= high:
            raise UsageError(f"{what} must be comma-separated numbers from {low:g} to {high:g}, "
                             f"not {text!r}")
        values.append(value)
    return tuple(values)


def _choices(text, what, allowed):
    values = tuple(part.strip() for part in str(text).split(","))
    for value in values:
        if value not in allowed:
            raise UsageError(f"{what} must be comma-separated names from "
                             f"{', '.join(allowed)}, not {text!r}")
    return values


def _one(text, what, kind, low, high=None):
    try:
        value = kind(text)
    except ValueError:
        value = None
    if value is None or value < low or (high is not None and value > high):
        allowed = f"from {low:g} to {high:g}" if high is not None else f"at least {low:g}"
        raise UsageError(f"{what} must be a number {allowed}, not {text!r}")
    return value


def _out_dir(text):
    out = pathlib.Path(text)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UsageError(f"cannot create output directory {str(out)!r}: {error.strerror}") \
            from None
    return out


def add_commands(commands):
    """Add the experiment subcommands to ``commands`` (an argparse subparsers object)."""
    sweep = commands.add_parser("sweep", help="latency-throughput sweep of the fabric model")
    sweep.add_argument("--set", default="quick", metavar="SET",
                       help="named set: quick or full (default quick); the options "
                            f"below override its parts")
    sweep.add_argument("--sizes", metavar="N,...", help="node counts, at least 2")
    sweep.add_argument("--depths", metavar="D,...", help="buffer depths")
    sweep.add_argument("--orders", metavar="O,...", help="routing orders: msb, lsb")
    sweep.add_argument("--patterns", metavar="P,...",
                       help="traffic: uniform, sphere, decreasing")
    sweep.add_argument("--rates", metavar="R,...", help="generation rates, 0 to 1")
    sweep.add_argument("--radius", default="4", metavar="B",
                       help="sphere of locality radius in hops (default 4)")
    sweep.add_argument("--zeta", default="0.8", metavar="Z",
                       help="sphere of locality: probability of a node within B (default 0.8)")
    sweep.add_argument("--warmup", metavar="CYCLES", help="warm-up cycles")
    sweep.add_argument("--window", metavar="CYCLES", help="measurement window, cycles")
    sweep.add_argument("--max-windows", metavar="K", help="most measurement windows")
    sweep.add_argument("--tolerance", metavar="F",
                       help="convergence and saturation tolerance (default 0.02)")
    sweep.add_argument("--seed", default="1", metavar="S", help="random seed (default 1)")
    sweep.add_argument("--jobs", "-j", default="2", metavar="J", help="processes (default 2)")
    sweep.add_argument("--out", "-o", default="results", metavar="DIR",
                       help="directory to write into (default results)")
    sweep.add_argument("--name", metavar="NAME",
                       help="file name prefix (default sweep_<set>)")
    sweep.add_argument("--no-plots", action="store_true", help="write the CSV only")

    sat = commands.add_parser("saturation",
                              help="zero-load latency per hop and saturation throughput")
    sat.add_argument("--sizes", default="1024,1048", metavar="N,...",
                     help="node counts (default 1024,1048)")
    sat.add_argument("--depths", default="1,2,3", metavar="D,...",
                     help="buffer depths (default 1,2,3)")
    sat.add_argument("--order", default=topology.MSB_FIRST, help="routing order (default msb)")
    sat.add_argument("--jobs", "-j", default="2", metavar="J", help="processes (default 2)")
    sat.add_argument("--out", "-o", default="results", metavar="DIR",
                     help="directory to write into (default results)")

    col = commands.add_parser("collectives",
                              help="broadcast, scatter and total exchange against their bounds")
    col.add_argument("--dims", default="2,3,4,5,6,7,8,9,10,11", metavar="d,...",
                     help="complete cubes 2**d (default 2 ... 11)")
    col.add_argument("--sizes", default="6,13,26,100,300,1048,1114,1818", metavar="N,...",
                     help="incomplete sizes (default 6,13,26,100,300,1048,1114,1818)")
    col.add_argument("--depths", default="1,2,3", metavar="D,...",
                     help="buffer depths (default 1,2,3)")
    col.add_argument("--jobs", "-j", default="2", metavar="J", help="processes (default 2)")
    col.add_argument("--out", "-o", default="results", metavar="DIR",
                     help="directory to write into (default results)")


COMMANDS = ("sweep", "saturation", "collectives")


def _node_count(n):
    topology.check_node_count(n)
    if n < 2:
        raise ValueError(f"Node count must be at least 2 for traffic, not {n!r}")
    if n > 1 << 16:
        raise ValueError(f"Node count must be at most 65536 for the experiments, not {n!r}")
    return n


def _model_depth(depth):
    check_depth(depth)
    if depth > 64:
        raise ValueError(f"Buffer depth must be at most 64 for the experiments, not {depth!r}")
    return depth


def _sweep(args):
    from ..sim import sweep as sw
    if args.set not in sw.SETS:
        raise UsageError(f"Sweep set must be one of {', '.join(sw.SETS)}, not {args.set!r}")
    base = sw.SETS[args.set]
    sizes = _ints(args.sizes, "Sizes", _node_count, 2) if args.sizes else base["sizes"]
    depths = _ints(args.depths, "Depths", _model_depth) if args.depths else base["depths"]
    orders = (_choices(args.orders, "Orders", topology.ROUTING_ORDERS) if args.orders
              else base["orders"])
    patterns = (_choices(args.patterns, "Patterns", ("uniform", "sphere", "decreasing"))
                if args.patterns else base["patterns"])
    rates = _floats(args.rates, "Rates", 0.0, 1.0) if args.rates else base["rates"]
    radius = int(_one(args.radius, "Sphere radius", int, 1))
    zeta = _one(args.zeta, "Sphere locality zeta", float, 0.0, 1.0)
    settings = base["settings"]
    changes = {}
    if args.warmup is not None:
        changes["warmup"] = _one(args.warmup, "Warm-up", int, 0)
    if args.window is not None:
        changes["window"] = _one(args.window, "Window", int, 1)
    if args.max_windows is not None:
        changes["max_windows"] = _one(args.max_windows, "Most windows", int, 2)
    if args.tolerance is not None:
        changes["tolerance"] = _one(args.tolerance, "Tolerance", float, 0.0, 1.0)
    changes["seed"] = _one(args.seed, "Seed", int, 0)
    settings = dataclasses.replace(settings, **changes)
    jobs = _one(args.jobs, "Jobs", int, 1)
    out = _out_dir(args.out)
    prefix = str(out / (args.name or f"sweep_{args.set}"))

    point_list = sw.points(sizes, depths, orders, patterns, rates, radius, zeta)
    if not point_list:
        raise UsageError("No points: every rate is above the injection limit of its depth")
    # The picture of per-link density: the first incomplete size (else the first), the
    # deepest buffers (where a link can carry more than one message per cycle), the first
    # order and pattern.
    picture_n = next((n for n in sizes if n & (n - 1)), sizes[0])
    picture = (picture_n, max(depths), orders[0], patterns[0])
    start = time.monotonic()
    rows, kept = sw.sweep(point_list, settings, jobs,
                          keep_links=lambda p: (p.n, p.depth, p.order, p.pattern) == picture)
    seconds = time.monotonic() - start
    sw.write_csv(prefix + ".csv", rows)
    written = [prefix + ".csv"]
    if not args.no_plots:
        from ..sim import plots
        written += plots.latency_plots(rows, prefix)
        unsaturated = [(p, kept[p]) for p in sorted(kept, key=lambda p: p.rate)
                       if not rows[point_list.index(p)]["saturated"]]
        if unsaturated:
            point, (density, ends) = unsaturated[-1]
            row = rows[point_list.index(point)]
            title = (f"n = {point.n}, depth {point.depth}, {point.order} first, {point.pattern} "
                     f"traffic, rate {point.rate:g} (throughput {row['throughput']:.3f}): "
                     f"peak {row['peak_density']:.2f}, "
                     f"{100 * row['links_above_1']:.1f}% of links above 1.0")
            written.append(plots.density_plot(point.n, density, ends, title,
                                              prefix + "_density.png"))
    summary = dict(set=args.set, settings=dataclasses.asdict(settings), sizes=sizes,
                   depths=depths, orders=orders, patterns=patterns, rates=rates,
                   radius=radius, zeta=zeta, jobs=jobs, points=len(rows),
                   seconds=round(seconds, 1), curves=_curves(rows))
    with open(prefix + ".json", "w") as f:
        json.dump(summary, f, indent=1)
    written.append(prefix + ".json")
    print(f"{len(rows)} points in {seconds:.0f} s; wrote {', '.join(written)}")


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


def _pool_map(function, items, jobs, what):
    from ..sim.sweep import Progress
    bar = Progress(len(items), what)
    results = []
    if jobs <= 1:
        for item in items:
            results.append(function(item))
            bar.step()
        return results
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        for result in pool.imap(function, items, chunksize=1):
            results.append(result)
            bar.step()
    return results


def _saturation_one(task):
    from ..sim import sweep as sw
    kind, n, depth, order = task
    if kind == "zero":
        return sw.zero_load(n, depth, order)
    return sw.saturation(n, depth, order)


def _saturation(args):
    sizes = _ints(args.sizes, "Sizes", _node_count, 2)
    depths = _ints(args.depths, "Depths", _model_depth)
    try:
        order = topology.check_routing_order(args.order)
    except ValueError as error:
        raise UsageError(str(error)) from None
    jobs = _one(args.jobs, "Jobs", int, 1)
    out = _out_dir(args.out)
    tasks = [(kind, n, depth, order) for kind in ("saturation", "zero") for n in sizes
             for depth in depths]
    start = time.monotonic()
    results = _pool_map(_saturation_one, tasks, jobs, "saturation")
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


def _collectives(args):
    from ..sim import collectives
    dims = _ints(args.dims, "Dimensions", lambda d: d, 1) if args.dims else ()
    if any(d > 16 for d in dims):
        raise UsageError(f"Dimensions must be comma-separated integers from 1 to 16, "
                         f"not {args.dims!r}")
    sizes = _ints(args.sizes, "Sizes", _node_count, 2) if args.sizes else ()
    depths = _ints(args.depths, "Depths", _model_depth)
    jobs = _one(args.jobs, "Jobs", int, 1)
    out = _out_dir(args.out)
    ns = [1 << d for d in dims] + [n for n in sizes if n & (n - 1)]
    tasks = [(n, depth) for n in ns for depth in depths]
    start = time.monotonic()
    results = _pool_map(collectives.run_all, tasks, jobs, "collectives")
    seconds = time.monotonic() - start
    rows = [row for result in results for row in result]
    collectives.write_csv(out / "collectives.csv", rows)
    with open(out / "collectives.json", "w") as f:
        json.dump(dict(rows=rows, seconds=round(seconds, 1)), f, indent=1)
    print(collectives.table(rows))
    print(f"{seconds:.0f} s; wrote {out / 'collectives.csv'}, {out / 'collectives.json'}")


def run(args):
    """Run the experiment subcommand ``args.command``."""
    {"sweep": _sweep, "saturation": _saturation, "collectives": _collectives}[args.command](args)
    sys.stdout.flush()
