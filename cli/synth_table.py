"""Run synth for several sizes, one at a time, and print the README's table.

``ihcube synth-table [--family ecp5|ice40] [--nodes 4,8,16,26,32,64] [--synth-opts OPTS]
[--placer heap|static|sa]`` (``make synth-table``) runs :func:`ihcube.boards.build.table`: a
line per size as ``ihcube synth`` prints it, then a Markdown table, also written to
``results/synth_table_<family>.json``.
"""

import sys

from .. import topology
from .options import add_build_options, build_options
from .usage import checked, command_parser, integer, run

__all__ = ["main"]

NAME = "synth-table"


def _parser():
    parser = command_parser(NAME, __doc__)
    parser.add_argument("--family", default="ecp5", help="ecp5 (default) or ice40")
    parser.add_argument("--nodes", default="4,8,16,26,32,64", metavar="N,...",
                        help="node counts (default 4,8,16,26,32,64)")
    add_build_options(parser, "nextpnr's, heap")
    return parser


def _synth_table(args):
    from ..boards import build
    family = checked(build.check_family, args.family)
    synth_opts, placer, out = build_options(args)
    sizes = [integer(part, "Node count", topology.check_node_count)
             for part in args.nodes.split(",")]
    return build.table(family, sizes, out=out, synth_opts=synth_opts, placer=placer)


def main(argv=None):
    """Run ``ihcube synth-table`` with ``argv`` (default: the process's); return the exit
    status."""
    return run(NAME, _parser(), _synth_table, argv)


if __name__ == "__main__":
    sys.exit(main())
