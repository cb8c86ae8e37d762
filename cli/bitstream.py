"""Build a board's self-test bitstream (a generator and a checker per node).

``ihcube bitstream --board ulx3s-85f --nodes 26 [--depth 1] [--synth-opts OPTS] [--placer
heap|static|sa]`` (``make bitstream``) runs :func:`ihcube.boards.build.bitstream`, prints one
line and writes ``results/bitstream_<board>_<name>.json``; the bitstream is in ``build/``.
Nothing here programs a board. The exit status is 1 if the design does not fit or a tool
fails, 2 (one line) for a wrong parameter.
"""

import sys

from .. import topology
from ..params import check_depth
from .options import add_build_options, build_options
from .usage import checked, command_parser, integer, run

__all__ = ["main"]

NAME = "bitstream"


def _parser():
    from ..boards.build import BOARDS
    parser = command_parser(NAME, __doc__)
    parser.add_argument("--board", required=True, help=f"one of {', '.join(BOARDS)}")
    parser.add_argument("--nodes", "-n", required=True, metavar="N", help="number of nodes")
    parser.add_argument("--depth", "-d", default="1", metavar="DEPTH",
                        help="messages per input buffer (default 1)")
    add_build_options(parser, "static on ECP5, heap on iCE40")
    return parser


def _bitstream(args):
    from ..boards import build
    board = checked(build.check_board, args.board)
    synth_opts, placer, out = build_options(args)
    n = integer(args.nodes, "Node count", topology.check_node_count)
    depth = integer(args.depth, "Buffer depth", check_depth)
    figures = build.bitstream(board, n, depth, out=out, synth_opts=synth_opts, placer=placer)
    print(build.summary(figures))
    return 0 if figures["fits"] else 1


def main(argv=None):
    """Run ``ihcube bitstream`` with ``argv`` (default: the process's); return the exit
    status."""
    return run(NAME, _parser(), _bitstream, argv)


if __name__ == "__main__":
    sys.exit(main())
