"""The ``ihcube`` command line.

A wrong parameter is one line on standard error, ``ihcube: error: ...``, and exit status 2;
never a traceback.
"""

import sys

from .. import topology
from . import experiments
from ..params import check_fabric_depth, check_fabric_payload_width
from .usage import Parser, UsageError, integer

__all__ = ["main"]


def _parser():
    parser = Parser(prog="ihcube", description="Incomplete-hypercube router generator.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    commands.required = True

    verilog = commands.add_parser("verilog", help="write the Verilog of an n-node fabric")
    verilog.add_argument("--nodes", "-n", required=True, metavar="N",
                         help="number of nodes, 1 to 4096")
    verilog.add_argument("--width", "-w", default="32", metavar="W",
                         help="payload width in bits, 1 to 1024 (default 32)")
    verilog.add_argument("--depth", "-d", default="1", metavar="DEPTH",
                         help="messages per input buffer, 1 to 16 (default 1)")
    verilog.add_argument("--order", default=topology.MSB_FIRST,
                         help="routing order: msb (default) or lsb")
    verilog.add_argument("--out", "-o", default="gen", metavar="DIR",
                         help="directory to write into (default gen)")
    experiments.add_commands(commands)
    return parser


def _verilog(args):
    n = integer(args.nodes, "Node count", topology.check_fabric_node_count)
    width = integer(args.width, "Payload width", check_fabric_payload_width)
    depth = integer(args.depth, "Buffer depth", check_fabric_depth)
    try:
        order = topology.check_routing_order(args.order)
    except ValueError as error:
        raise UsageError(str(error)) from None

    from ..generate import OutputError, write_fabric  # Amaranth loads only when needed
    try:
        path, size = write_fabric(args.out, n, width, depth, order)
    except (ValueError, OutputError) as error:  # a routing that can deadlock, or no room
        raise UsageError(str(error)) from None
    print(f"wrote {path} ({n} nodes, payload {width} bits, depth {depth}, order {order}, "
          f"{size:,} bytes)")


def main(argv=None):
    try:
        args = _parser().parse_args(argv)
        if args.command == "verilog":
            _verilog(args)
        elif args.command in experiments.COMMANDS:
            experiments.run(args)
    except UsageError as error:
        print(f"ihcube: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
