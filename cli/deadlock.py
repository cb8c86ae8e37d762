"""Check that the routing's channel dependency graph is acyclic, every size.

``ihcube deadlock [--max-nodes 4096] [--order msb|lsb|both] [--unicast-only] [--cross-check
M]`` (``make deadlock``) runs :func:`ihcube.deadlock.sweep` over ``n = 1 .. N`` and prints, for
each routing order, the longest chain of dependencies or the smallest cycle with the messages
that close it; ``--cross-check M`` also compares the fast graph with the enumerated one
(:func:`ihcube.deadlock.cross_check`). The exit status is 1 if a graph has a cycle or the two
graphs differ.
"""

import sys
import time

from .. import topology
from ..params import check_at_most
from .usage import command_parser, integer, run

__all__ = ["main"]

NAME = "deadlock"


def _parser():
    parser = command_parser(NAME, __doc__)
    parser.add_argument("--max-nodes", default="4096", metavar="N",
                        help=f"check n = 1 .. N, N at most {MAX_NODES} (default 4096)")
    parser.add_argument("--order", choices=[*topology.ROUTING_ORDERS, "both"], default="both",
                        help="routing order to check (default both)")
    parser.add_argument("--unicast-only", action="store_true",
                        help="leave broadcasts (Algorithm 6) out of the graph")
    parser.add_argument("--cross-check", default="0", metavar="M",
                        help="also compare the fast graph with the enumerated one for every "
                             f"n <= M, M at most {MAX_CROSS_CHECK} (slow: n**2 route calls "
                             f"per size)")
    return parser


#: The largest ``--max-nodes``: the sizes' graphs take some minutes to 16,384 nodes (both
#: orders), a time that grows with the square of the size.
MAX_NODES = 1 << 14
#: The largest ``--cross-check``: the enumerated graph takes ``n**2`` route calls a size.
MAX_CROSS_CHECK = 512


def _deadlock(args):
    args.max_nodes = integer(args.max_nodes, "--max-nodes",
                             lambda n: check_at_most(n, MAX_NODES, "--max-nodes"))
    args.cross_check = integer(args.cross_check, "--cross-check",
                               lambda m: m if m == 0 else check_at_most(m, MAX_CROSS_CHECK,
                                                                        "--cross-check"))
    from .. import deadlock  # Numba loads only when needed

    orders = topology.ROUTING_ORDERS if args.order == "both" else (args.order,)
    broadcast = not args.unicast_only
    traffic = "unicast only" if args.unicast_only else "unicast and broadcast"
    print(f"Channel dependency graphs, n = 1 .. {args.max_nodes}, {traffic}:")
    status = 0
    from ..sim.cluster import Progress  # how far it is, on standard error: 80 s at 5,000
    bar = Progress(args.max_nodes * len(orders), "sizes checked")
    for result in deadlock.sweep(args.max_nodes, orders, broadcast=broadcast,
                                 progress=bar.step):
        if not result.cyclic and result.longest_chain[1] is None:
            print(f"  {result.order}: acyclic for all {result.sizes} sizes (no links)")
        elif not result.cyclic:
            chain, at = result.longest_chain
            print(f"  {result.order}: acyclic for all {result.sizes} sizes; longest dependency "
                  f"chain {chain} channels (n = {at}); {result.seconds:.1f} s")
        else:
            status = 1
            n, cycle = result.first_cycle
            print(f"  {result.order}: CYCLIC for {len(result.cyclic)} of {result.sizes} sizes; "
                  f"smallest n = {n}: {deadlock.format_cycle(cycle)}; {result.seconds:.1f} s")
            for phrase in deadlock.explain_cycle(n, cycle, deadlock.routing_for(result.order),
                                                 broadcast=broadcast):
                print(f"    {phrase}")
    if args.cross_check:
        started = time.perf_counter()
        for order, n in deadlock.cross_check(args.cross_check, orders, broadcast=broadcast):
            print(f"  cross-check: {order}, n = {n}: the graphs DIFFER")
            status = 1
        print(f"  cross-check against enumeration, n = 1 .. {args.cross_check}: done in "
              f"{time.perf_counter() - started:.1f} s")
    return status


def main(argv=None):
    """Run ``ihcube deadlock`` with ``argv`` (default: the process's); return the exit
    status."""
    return run(NAME, _parser(), _deadlock, argv)


if __name__ == "__main__":
    sys.exit(main())
