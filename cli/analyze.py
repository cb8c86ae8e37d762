"""Exact link loads, mean hops and the saturation bound of a traffic pattern (no simulation).

``ihcube analyze --sizes N[,N...] [--pattern P,...] [--order msb|lsb,...] [--reading
literal|exclusive,...] [--radius B --zeta Z] [--saturation FILE] [--out DIR]`` runs
:func:`ihcube.sim.analysis.analyze` for every combination and prints a Markdown table: mean
hops, the peak link load (both directions) per unit generation rate and where it is, and the
rate at which the busiest link direction saturates. ``--saturation`` puts the measured
saturation throughputs of ``ihcube saturation``'s JSON beside that bound. ``ihcube analyze
--scan MAX`` (``make analysis``) gives the uniform pattern's peak link load for every ``n``
from 2 to ``MAX``, and the sizes where the largest occurs. With ``--out DIR`` the results are
also written as JSON, ``DIR/analysis.json`` (``DIR/analysis_scan.json`` for a scan). The old
spellings ``--nodes N,...`` and ``--json FILE`` still work, each with a one-line notice.
"""

import json
import pathlib
import sys
import time

from .. import topology
from .options import (add_old_spelling, analysis_node_count, check_out, choices, deprecated,
                      ints, number, renamed)
from .options import provenance_of
from .usage import UsageError, command_parser, run

__all__ = ["main"]

NAME = "analyze"


def _parser():
    parser = command_parser(NAME, __doc__)
    parser.add_argument("--sizes", metavar="N,...", help="node counts, at least 2")
    add_old_spelling(parser, ["--nodes", "-n"], "old_nodes")
    parser.add_argument("--pattern", default="uniform", metavar="P,...",
                        help="traffic: uniform (default), sphere, decreasing")
    parser.add_argument("--order", default=topology.MSB_FIRST, metavar="O,...",
                        help="routing order: msb (default), lsb")
    parser.add_argument("--reading", default="literal", metavar="R,...",
                        help="where the remainder of sphere and decreasing goes: literal "
                             "(every other node; default) or exclusive (beyond the sphere, "
                             "5+ hops)")
    parser.add_argument("--radius", default="4", metavar="B",
                        help="sphere of locality radius in hops (default 4)")
    parser.add_argument("--zeta", default="0.8", metavar="Z",
                        help="sphere of locality: probability of a node within B (default 0.8)")
    parser.add_argument("--scan", metavar="MAX",
                        help="instead: the uniform peak link load of every n from 2 to MAX")
    parser.add_argument("--saturation", metavar="FILE",
                        help="saturation.json of `ihcube saturation`: its throughputs beside "
                             "the bound")
    parser.add_argument("--out", "-o", metavar="DIR",
                        help="also write the results as JSON into DIR: analysis.json "
                             "(analysis_scan.json with --scan)")
    add_old_spelling(parser, ["--json"], "old_json")
    return parser


def _write(path, data):
    path = pathlib.Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w") as f:
            json.dump(data, f, indent=1)
            f.write("\n")
    except OSError as error:
        raise UsageError(f"cannot write {str(path)!r}: {error.strerror}") from None
    return path


def _where(at):
    a, i = at
    return f"{a}-{a ^ (1 << i)} (dim {i})"


def _table(results):
    lines = ["| n | pattern | order | reading | mean hops | peak link load per unit rate | "
             "where (links at peak) | saturation bound 1 / peak direction load |",
             "|---:|---|---|---|---:|---:|---|---:|"]
    for r in results:
        lines.append(f"| {r.n} | {r.pattern} | {r.order} | {r.reading} | {r.mean_hops:.4f} | "
                     f"{r.peak_link:.4f} | {_where(r.peak_link_at)} ({r.peak_link_count}) | "
                     f"{r.saturation_bound:.4f} |")
    return "\n".join(lines)


def _read_saturation(path):
    """The measured rows of ``path``, ``ihcube saturation``'s JSON."""
    try:
        with open(path) as f:
            measured = json.load(f)["saturation"]
        for m in measured:
            m["n"], m["depth"], m["order"], m["throughput"], m["backlogged"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        reason = getattr(error, "strerror", None) or f"{type(error).__name__}: {error}"
        raise UsageError(f"cannot read saturation results from {path!r}: {reason}") from None
    return measured


def _saturation_rows(measured, radius, zeta):
    """``measured`` (:func:`_read_saturation`) with the analytic bound beside."""
    from ..sim.analysis import analyze
    rows, cache = [], {}
    for m in measured:
        key = (m["n"], m.get("pattern", "uniform"), m["order"])
        if key not in cache:
            cache[key] = analyze(key[0], key[1], key[2], radius=radius, zeta=zeta)
        bound = cache[key].saturation_bound
        # A one-message buffer takes a message every other cycle (SPEC section 3).
        link_rate = 0.5 if m["depth"] == 1 else 1.0
        rows.append(dict(n=m["n"], depth=m["depth"], order=m["order"], pattern=key[1],
                         throughput=m["throughput"], backlogged=m["backlogged"],
                         bound=bound, bound_at_link_rate=bound * link_rate,
                         ratio=m["throughput"] / bound,
                         ratio_at_link_rate=m["throughput"] / (bound * link_rate)))
    return rows


def _json_file(args, name):
    """Where to write the JSON: ``name`` in the directory ``--out``, or the file of the old
    spelling ``--json FILE`` (with a notice); None for neither. Checked, nothing created."""
    if args.old_json is not None:
        if args.out is not None:
            raise UsageError("Give --out alone: --json is its old spelling")
        path = check_out(args.old_json, "--json", file=True)
        deprecated("--json FILE", "--out DIR")
        return path
    if args.out is None:
        return None
    return check_out(args.out) / name


def _analyze(args):
    from ..sim.analysis import analyze, scan
    from ..sim.traffic import PATTERNS, READINGS
    nodes = renamed(args, "old_nodes", "sizes", "--nodes N,...", "--sizes N,...")
    if args.scan is not None:
        if nodes is not None:
            raise UsageError("Give --sizes or --scan, not both")
        return _scan(args, scan)
    if nodes is None:
        raise UsageError("the following arguments are required: --sizes (or --scan)")
    sizes = ints(nodes, "Node counts", analysis_node_count, 2)
    patterns = choices(args.pattern, "Patterns", PATTERNS)
    orders = choices(args.order, "Orders", topology.ROUTING_ORDERS)
    readings = choices(args.reading, "Readings", READINGS)
    radius = int(number(args.radius, "Sphere radius", int, 1, 20))
    zeta = number(args.zeta, "Sphere locality zeta", float, 0.0, 1.0)
    measured = _read_saturation(args.saturation) if args.saturation is not None else None
    path = _json_file(args, "analysis.json")
    start = time.monotonic()
    results = []
    for n in sizes:
        for pattern in patterns:
            for order in orders:
                # Uniform traffic has no remainder: one reading says it all.
                for reading in readings if pattern != "uniform" else readings[:1]:
                    results.append(analyze(n, pattern, order, reading, radius, zeta))
    print(_table(results))
    saturation = _saturation_rows(measured, radius, zeta) if measured is not None else None
    if saturation:
        print()
        print("| n | depth | order | measured saturation throughput | bound (link rate 1) | "
              "ratio | bound at the depth's link rate | ratio |")
        print("|---:|---:|---|---:|---:|---:|---:|---:|")
        for s in saturation:
            print(f"| {s['n']} | {s['depth']} | {s['order']} | {s['throughput']:.3f} | "
                  f"{s['bound']:.4f} | {s['ratio']:.3f} | {s['bound_at_link_rate']:.4f} | "
                  f"{s['ratio_at_link_rate']:.3f} |")
    if path is not None:
        data = dict(analyses=[r.summary() for r in results],
                    seconds=round(time.monotonic() - start, 1))
        if saturation is not None:
            data["saturation"] = saturation
        data["provenance"] = provenance_of(args)
        print(f"wrote {_write(path, data)}")


def _scan(args, scan):
    limit = int(number(args.scan, "Scan limit", int, 2, 1 << 16))
    orders = choices(args.order, "Orders", topology.ROUTING_ORDERS)
    path = _json_file(args, "analysis_scan.json")
    start = time.monotonic()
    data = dict(pattern="uniform", max_nodes=limit, orders={})
    for order in orders:
        rows = scan(limit, order)
        top = max(r["peak_link"] for r in rows)
        where = [r["n"] for r in rows if r["peak_link"] == top]
        complete = [r for r in rows if r["n"] & (r["n"] - 1) == 0]
        data["orders"][order] = dict(
            largest_peak_link=float(top), largest_peak_link_exact=str(top), sizes=where,
            peak_links=[[r["n"], str(r["peak_link"]), r["at"][0], r["at"][1]] for r in rows],
            complete=[[r["n"], str(r["peak_link"])] for r in complete])
        print(f"{order}: the largest peak link load per unit rate, n = 2 .. {limit}, uniform: "
              f"{float(top):.6f} ({top}) at n = {', '.join(map(str, where))}")
    data["seconds"] = round(time.monotonic() - start, 1)
    if path is not None:
        data["provenance"] = provenance_of(args)
        print(f"wrote {_write(path, data)}")


def main(argv=None):
    """Run ``ihcube analyze`` with ``argv`` (default: the process's); return the exit
    status."""
    return run(NAME, _parser(), _analyze, argv)


if __name__ == "__main__":
    sys.exit(main())
