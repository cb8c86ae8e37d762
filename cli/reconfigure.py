"""The configuration that keeps the most healthy nodes after faults, and the subcube beside it.

``ihcube reconfigure --nodes N --faulty 3,17,200 [--permutations] [--json]`` (``make
reconfigure N=.. FAULTY=..``) prints the best configuration of the ``N``-router fabric
(:func:`ihcube.reconfigure.best_configuration`, exact over XOR masks, the mappings the
hardware takes): its active size ``n`` and mask, the healthy nodes it keeps against the bound
``N - f``, and what the largest fault-free complete subcube keeps
(:func:`ihcube.reconfigure.largest_healthy_subcube`). ``--permutations`` adds the best over
every automorphism, dimension permutations too (which the hardware does not take); ``--json``
prints the same as one JSON object.
"""

import json
import sys

from .. import topology
from .usage import UsageError, checked, command_parser, integer, parse_number, run

__all__ = ["main"]

NAME = "reconfigure"


def _parser():
    parser = command_parser(NAME, __doc__)
    parser.add_argument("--nodes", "-n", required=True, metavar="N",
                        help="physical routers of the fabric, 1 to 4096")
    parser.add_argument("--faulty", required=True, metavar="A,B,...",
                        help="the faulty routers, distinct, each from 0 to N-1")
    parser.add_argument("--permutations", action="store_true",
                        help="also the best over dimension permutations (not in the hardware)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    return parser


def _faulty(text):
    """The comma-separated node numbers of ``--faulty``, as integers (checked later)."""
    try:
        return [parse_number(part, int) for part in str(text).split(",")]
    except ValueError:
        raise UsageError(f"--faulty must be comma-separated node numbers such as 3,17,200, "
                         f"not {text!r}") from None


def _reconfigure(args):
    N = integer(args.nodes, "Node count", topology.check_fabric_node_count)
    from .. import reconfigure  # NumPy loads only when needed

    faulty = checked(reconfigure.check_faulty, N, _faulty(args.faulty))
    best = reconfigure.best_configuration(N, faulty)
    reconfigure.check_configuration(N, faulty, best)
    subcube = reconfigure.largest_healthy_subcube(N, faulty)
    healthy = reconfigure.upper_bound(N, faulty)
    result = dict(nodes=N, faulty=list(faulty), healthy=healthy,
                  active_nodes=best.active_nodes, mask=best.mask, kept=best.active_nodes,
                  bound=healthy, gap=healthy - best.active_nodes,
                  subcube=dict(size=subcube.size, base=subcube.base, free=subcube.free))
    if args.permutations:
        any_map = reconfigure.best_configuration(N, faulty, permutations=True)
        reconfigure.check_configuration(N, faulty, any_map, permutations=True)
        result["permutations"] = dict(active_nodes=any_map.active_nodes, mask=any_map.mask,
                                      permutation=list(any_map.permutation))
    if args.json:
        print(json.dumps(result, indent=1))
        return
    width = max(topology.dimensions(N), 1)
    print(f"Fabric of {N} routers, {len(faulty)} faulty, {healthy} healthy.")
    print(f"Reconfigured incomplete hypercube (XOR mask): active n = {best.active_nodes}, "
          f"mask {best.mask} (0b{best.mask:0{width}b}); keeps {best.active_nodes} of "
          f"{healthy} healthy nodes (gap {healthy - best.active_nodes} to the bound N - f)")
    if args.permutations:
        perm = result["permutations"]
        print(f"With dimension permutations (not in the hardware): active n = "
              f"{perm['active_nodes']}, mask {perm['mask']}, logical dimension i on physical "
              f"port {perm['permutation']}[i]")
    print(f"Largest fault-free complete subcube: {subcube.size} nodes (base {subcube.base}, "
          f"free bits 0b{subcube.free:0{width}b}); keeps {subcube.size} of {healthy}")


def main(argv=None):
    """Run ``ihcube reconfigure`` with ``argv`` (default: the process's); return the exit
    status."""
    return run(NAME, _parser(), _reconfigure, argv)


if __name__ == "__main__":
    sys.exit(main())
