"""Write the Verilog of an n-node fabric.

``ihcube verilog --nodes 26 [--width 32] [--depth 1] [--order msb] [--ports 1]
[--link-stages 0] [--switch-stages 0] [--eject-stages 0] [--out gen]`` (``make verilog N=26
[PORTS=2] [LINK_STAGES=1 SWITCH_STAGES=1 EJECT_STAGES=1]``), or with
``--switching wormhole [--flits 20] [--flit-width 32] [--vcs 3] [--vc-depth 2]`` (``make
verilog N=26 SWITCHING=wormhole VCS=3 FLITS=20``), writes ``<out>/<name>.v``, named by
:func:`ihcube.generate.fabric_name`, with :func:`ihcube.generate.fabric_verilog`, and prints
one line. Amaranth loads only once the options are checked.
"""

import sys

from .options import (add_fabric_options, add_ports_option, add_stages_options,
                      add_switching_options, fabric_parameters, ports, stages,
                      switching_options)
from .usage import UsageError, command_parser, run

__all__ = ["main"]

NAME = "verilog"


def _parser():
    parser = command_parser(NAME, __doc__)
    add_fabric_options(parser)
    add_ports_option(parser)
    add_switching_options(parser)
    add_stages_options(parser)
    parser.add_argument("--out", "-o", default="gen", metavar="DIR",
                        help="directory to write into (default gen)")
    return parser


def _verilog(args):
    n, width, depth, order = fabric_parameters(args)
    pe_ports = ports(args, n)
    switching, flit_options = switching_options(args, n, width)
    staged = stages(args, switching)
    from ..generate import OutputError, write_fabric  # Amaranth loads only when needed
    try:
        # Checks the folder first, writes a temporary file and renames it: a failed write
        # leaves nothing half-written under the final name.
        path, size = write_fabric(args.out, n, width, depth, order, pe_ports,
                                  switching=switching, **staged, **flit_options)
    except (ValueError, OutputError) as error:  # e.g. a routing that can deadlock
        raise UsageError(str(error)) from None
    if switching == "wormhole":
        from ..params import wormhole_parameters
        wh = wormhole_parameters(n, width, **flit_options)
        print(f"wrote {path} ({n} nodes, wormhole: {wh.flits} flits of {wh.flit_width} bits, "
              f"{wh.vcs} virtual channel{'s' if wh.vcs != 1 else ''} of {wh.vc_depth} flits, "
              f"order {order}, "
              f"{size:,} bytes)")
        return
    more = "" if pe_ports == 1 else f", {pe_ports} PE ports"
    if staged:
        from ..params import stages_label
        more += f", {stages_label(staged)}"
    print(f"wrote {path} ({n} nodes, payload {width} bits, depth {depth}, order {order}{more}, "
          f"{size:,} bytes)")


def main(argv=None):
    """Run ``ihcube verilog`` with ``argv`` (default: the process's); return the exit status."""
    return run(NAME, _parser(), _verilog, argv)


if __name__ == "__main__":
    sys.exit(main())
