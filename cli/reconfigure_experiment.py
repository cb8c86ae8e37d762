"""Reconfigured incomplete cube against the largest fault-free subcube, after random faults.

``ihcube reconfigure-experiment [--nodes 1024] [--faults 1,2,4,8,16,32] [--draws 100] [--seed
1] [--small 16,26,32] [--no-model] [--no-plots] [--out DIR]`` (``make reconfiguration``, about
half a minute) runs :func:`ihcube.sim.reconfiguration.experiment`: for each fault count,
``--draws`` seeded random fault sets, and for each the nodes kept by the best XOR
configuration, by the best automorphism with dimension permutations and by the largest
fault-free complete subcube, with the exact analysis' saturation bound and mean hops and the
fast model's throughput at the median size. ``--small`` sizes also get every fault set of one
to three faults (:func:`ihcube.sim.reconfiguration.exhaustive`). It prints Markdown tables
and writes ``<out>/reconfiguration.json`` and ``<out>/reconfiguration.png``.
"""

import json
import sys

from .. import topology
from ..params import check_positive_integer
from .options import add_out_option, ints, number, out_dir, provenance_of
from .sweep import MAX_SEED
from .usage import UsageError, command_parser, integer, run

__all__ = ["main"]

NAME = "reconfigure-experiment"
#: Most draws per fault count, and the largest ``--small`` size (every fault set of three).
MAX_DRAWS = 10000
MAX_SMALL = 64


def _parser():
    parser = command_parser(NAME, __doc__)
    parser.add_argument("--nodes", "-n", default="1024", metavar="N",
                        help="physical routers, 2 to 4096 (default 1024)")
    parser.add_argument("--faults", default="1,2,4,8,16,32", metavar="F,...",
                        help="fault counts, each below N (default 1,2,4,8,16,32)")
    parser.add_argument("--draws", default="100", metavar="D",
                        help=f"random fault sets per count, 1 to {MAX_DRAWS} (default 100)")
    parser.add_argument("--seed", default="1", metavar="S", help="seed of the draws (default 1)")
    parser.add_argument("--small", default="16,26,32", metavar="N,...",
                        help=f"sizes whose every set of 1 to 3 faults is compared, each 4 to "
                             f"{MAX_SMALL} (default 16,26,32)")
    parser.add_argument("--no-model", action="store_true", help="leave the model's runs out")
    parser.add_argument("--no-plots", action="store_true", help="write no figure")
    add_out_option(parser)
    return parser


def _at_most(most, what):
    def check(value):
        if value > most:
            raise ValueError(f"{what} must be at most {most}, not {value}")
        return value
    return check


def _table(result):
    lines = ["| faults | healthy | kept: XOR (min) | with permutations (min) | subcube (min) | "
             "mean hops: XOR / perm. / subcube | machine link bound: XOR / perm. / subcube |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    for row in result["rows"]:
        x, p, s = (row[key] for key in ("xor", "permutations", "subcube"))
        lines.append(
            f"| {row['faults']} | {row['healthy']} "
            f"| {x['kept']['mean']:.1f} ({x['kept']['min']:.0f}) "
            f"| {p['kept']['mean']:.1f} ({p['kept']['min']:.0f}) "
            f"| {s['kept']['mean']:.1f} ({s['kept']['min']:.0f}) "
            f"| {x['mean_hops']['mean']:.2f} / {p['mean_hops']['mean']:.2f} / "
            f"{s['mean_hops']['mean']:.2f} "
            f"| {x['machine_bound']['mean']:.0f} / {p['machine_bound']['mean']:.0f} / "
            f"{s['machine_bound']['mean']:.0f} |")
    if all("model" in row["xor"] for row in result["rows"]):
        lines += ["", "Fast model, every source backlogged, at the median size "
                      "(messages per node per cycle; whole machine):", "",
                  "| faults | XOR: n, per node, machine | permutations | subcube |",
                  "|---:|---|---|---|"]
        for row in result["rows"]:
            cells = [f"{m['n']}, {m['throughput_per_node']:.3f}, {m['machine_throughput']:.0f}"
                     for m in (row[key]["model"] for key in ("xor", "permutations", "subcube"))]
            lines.append(f"| {row['faults']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _small_table(rows):
    lines = ["| N | faults | sets | healthy | XOR mean (min) | permutations mean (min) | "
             "subcube mean | sets where permutations keep more | largest gain |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['nodes']} | {r['faults']} | {r['sets']} | {r['healthy']} | "
                     f"{r['xor_mean']:.2f} ({r['xor_min']}) | {r['permutations_mean']:.2f} "
                     f"({r['permutations_min']}) | {r['subcube_mean']:.2f} | "
                     f"{100 * r['permutations_better']:.0f}% | {r['largest_gain']} |")
    return "\n".join(lines)


def _experiment(args):
    N = integer(args.nodes, "Node count", topology.check_fabric_node_count)
    if N < 2:
        raise UsageError(f"Node count must be at least 2 for faults and traffic, not {N}")
    faults = ints(args.faults, "--faults", _at_most(N - 1, "A fault count"))
    draws = integer(args.draws, "--draws", lambda d: _at_most(MAX_DRAWS, "--draws")(
        check_positive_integer(d, "--draws")))
    seed = number(args.seed, "--seed", int, 0, MAX_SEED)
    small = ints(args.small, "--small", _at_most(MAX_SMALL, "A --small size"), at_least=4)
    out = out_dir(args.out)
    if not args.no_plots:
        from ..sim.plots import require_matplotlib
        require_matplotlib()
    from ..sim import reconfiguration  # NumPy and Numba load only when needed
    from ..sim.cluster import Progress

    bar = Progress(len(faults) * draws, "fault sets")
    result = reconfiguration.experiment(N, faults, draws, seed, model=not args.no_model,
                                        progress=bar.step)
    result["exhaustive"] = [row for size in small for row in reconfiguration.exhaustive(size)]
    result["provenance"] = provenance_of(args)
    print(f"{N} nodes, {draws} random fault sets per count (seed {seed}), uniform traffic:\n")
    print(_table(result))
    single = result["single_fault"]
    print(f"\nOne fault, each of the {N} nodes in turn: {single['least_kept']} to "
          f"{single['most_kept']} nodes kept (XOR masks).")
    print("\nEvery set of 1 to 3 faults of the small sizes:\n")
    print(_small_table(result["exhaustive"]))
    path = out / "reconfiguration.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    print(f"\nwrote {path}")
    if not args.no_plots:
        from ..sim.plots import reconfiguration_plot
        print(f"wrote {reconfiguration_plot(result, out / 'reconfiguration.png')}")


def main(argv=None):
    """Run ``ihcube reconfigure-experiment`` with ``argv`` (default: the process's); return
    the exit status."""
    return run(NAME, _parser(), _experiment, argv)


if __name__ == "__main__":
    sys.exit(main())
