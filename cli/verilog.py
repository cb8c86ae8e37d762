"""Write the Verilog of an n-node fabric.

``ihcube verilog --nodes 26 [--width 32] [--depth 1] [--order msb] [--out gen]`` (``make
verilog N=26``) writes ``<out>/<name>.v``, named by :func:`ihcube.generate.fabric_name`, with
:func:`ihcube.generate.fabric_verilog`, and prints one line. Amaranth loads only once the
options are checked.
"""

import sys

from .options import add_fabric_options, fabric_parameters, out_dir
from .usage import UsageError, command_parser, run

__all__ = ["main"]

NAME = "verilog"


def _parser():
    parser = command_parser(NAME, __doc__)
    add_fabric_options(parser)
    parser.add_argument("--out", "-o", default="gen", metavar="DIR",
                        help="directory to write into (default gen)")
    return parser


def _verilog(args):
    n, width, depth, order = fabric_parameters(args)
    from ..generate import fabric_name, fabric_verilog  # Amaranth loads only when needed
    path = out_dir(args.out) / f"{fabric_name(n, width, depth, order)}.v"
    try:
        text = fabric_verilog(n, width, depth, order)
    except ValueError as error:  # a routing that can deadlock (ihcube.deadlock)
        raise UsageError(str(error)) from None
    path.write_text(text)
    print(f"wrote {path} ({n} nodes, payload {width} bits, depth {depth}, order {order}, "
          f"{len(text):,} bytes)")


def main(argv=None):
    """Run ``ihcube verilog`` with ``argv`` (default: the process's); return the exit status."""
    return run(NAME, _parser(), _verilog, argv)


if __name__ == "__main__":
    sys.exit(main())
