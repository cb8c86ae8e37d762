"""Time broadcast, scatter, multinode broadcast and total exchange against their bounds
(model).

``ihcube collectives [--dims 2,...,11] [--sizes 6,13,...] [--depths 1,2,3]
[--ports 1,full] [--collectives broadcast,...,segment]`` (``make collectives``) runs
:func:`ihcube.sim.collectives.run_all` on the complete cubes ``2**d`` and the incomplete sizes
(with each number of PE ports; ``full`` is ``D + 1`` at each size; every collective unless
``--collectives`` names some: ``relay`` is the multinode broadcast by one-hop relays,
``segment`` by relays whose hops are unicasts of any length), prints the
table of :func:`ihcube.sim.collectives.table` and writes
``<out>/collectives.csv`` and ``<out>/collectives.json``. The sizes run on ``--jobs`` local
Dask worker processes, or on the cluster of ``--scheduler ADDRESS``
(:mod:`ihcube.sim.cluster`), each model on ``--threads`` threads (at most one a node; the
files are the same for any number).
"""

import json
import sys
import time

from .. import params
from .options import (MAX_COLLECTIVE_NODES, add_run_options, choices, collective_node_count,
                      ints, model_depth, run_options, started, thread_count)
from .options import provenance_of
from .usage import UsageError, checked, command_parser, run

__all__ = ["main"]

NAME = "collectives"


def _parser():
    parser = command_parser(NAME, __doc__)
    parser.add_argument("--dims", default="2,3,4,5,6,7,8,9,10,11", metavar="d,...",
                        help="complete cubes 2**d (default 2 ... 11)")
    parser.add_argument("--sizes", default="6,13,26,100,300,1048,1114,1818", metavar="N,...",
                        help="more sizes, any n >= 2 (default 6,13,26,100,300,1048,1114,1818)")
    parser.add_argument("--depths", default="1,2,3", metavar="D,...",
                        help="buffer depths (default 1,2,3)")
    parser.add_argument("--ports", default="1", metavar="P,...",
                        help="PE ports per node, 1 to D + 1, or 'full' for D + 1 at each size "
                             "(default 1)")
    parser.add_argument("--collectives", default=None, metavar="NAME,...",
                        help="which to run: broadcast, scatter, multinode, exchange, relay, "
                             "segment (default all)")
    add_run_options(parser)
    return parser


def _collectives(args):
    from ..sim import collectives
    dims = ints(args.dims, "Dimensions", lambda d: d, 1) if args.dims else ()
    most = MAX_COLLECTIVE_NODES.bit_length() - 1  # the largest complete cube it takes
    if any(d > most for d in dims):
        raise UsageError(f"Dimensions must be comma-separated integers from 1 to {most}, "
                         f"not {args.dims!r}")
    sizes = ints(args.sizes, "Sizes", collective_node_count, 2) if args.sizes else ()
    depths = ints(args.depths, "Depths", model_depth)
    threads = thread_count(args.threads)
    cluster, out = run_options(args)
    # A size that is a power of two is a complete cube, run once even if --dims names it too.
    ns = [1 << d for d in dims] + [n for n in sizes if n not in {1 << d for d in dims}]
    if not ns:
        raise UsageError("No sizes: give --dims or --sizes")
    ports = [None if part.strip() == "full" else ints(part, "Port counts", lambda p: p)[0]
             for part in args.ports.split(",")]
    which = (collectives.COLLECTIVES if args.collectives is None
             else choices(args.collectives, "Collectives", collectives.COLLECTIVES))
    tasks = []
    for n in ns:
        full = params.max_ports(n)
        for count in dict.fromkeys(full if p is None else checked(
                lambda p, n=n: params.check_ports(n, p), p) for p in ports):
            tasks += [(n, depth, count, which, threads) for depth in depths]
    start = time.monotonic()
    with started(cluster):
        results = list(cluster.map(collectives.run_all, tasks, "collectives"))
    seconds = time.monotonic() - start
    rows = [row for result in results for row in result]
    collectives.write_csv(out / "collectives.csv", rows)
    with open(out / "collectives.json", "w") as f:
        json.dump(dict(rows=rows, seconds=round(seconds, 1),
                       provenance=provenance_of(args)), f, indent=1)
    print(collectives.table(rows))
    print(f"{seconds:.0f} s; wrote {out / 'collectives.csv'}, {out / 'collectives.json'}")


def main(argv=None):
    """Run ``ihcube collectives`` with ``argv`` (default: the process's); return the exit
    status."""
    return run(NAME, _parser(), _collectives, argv)


if __name__ == "__main__":
    sys.exit(main())
