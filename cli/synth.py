"""Place and route the bare fabric on an FPGA: LUTs, FFs, RAM, Fmax.

``ihcube synth --nodes 26 [--family ecp5|ice40] [--width 32] [--depth 1] [--synth-opts OPTS]
[--placer heap|static|sa] [--router NODE [--strapped]] [--ports P] [--link-stages 0|1]
[--switch-stages 0|1] [--eject-stages 0|1] [--switching wormhole
--flits L --flit-width F --vcs V --vc-depth Q]`` (``make synth``) runs
:func:`ihcube.boards.build.synth`, prints one line and writes
``results/synth_<family>_<name>.json``; the build is in ``build/``. The exit status is 1 if
the design does not fit or a tool fails, 2 (one line) for a wrong parameter.
"""

import sys

from .. import topology
from ..params import WORMHOLE, check_depth, check_payload_width, wormhole_parameters
from .options import (add_build_options, add_pnr_minutes_option, add_ports_option,
                      add_stages_options, add_switching_options, build_options,
                      one_build_at_a_time, pnr_minutes, ports, stages, switching_options)
from .usage import UsageError, checked, command_parser, integer, run

__all__ = ["main"]

NAME = "synth"


def _parser():
    parser = command_parser(NAME, __doc__)
    parser.add_argument("--nodes", "-n", required=True, metavar="N", help="number of nodes")
    parser.add_argument("--family", default="ecp5", help="ecp5 (default) or ice40")
    parser.add_argument("--width", "-w", default="32", metavar="W",
                        help="payload width in bits (default 32)")
    parser.add_argument("--depth", "-d", default="1", metavar="DEPTH",
                        help="messages per input buffer (default 1)")
    add_build_options(parser, "nextpnr's, heap")
    add_pnr_minutes_option(parser)
    parser.add_argument("--router", default=None, metavar="NODE",
                        help="build only this node's router")
    parser.add_argument("--strapped", action="store_true",
                        help="with --router: build it as the fabric does (one module per "
                             "router class, the address tied)")
    add_ports_option(parser)
    add_switching_options(parser)
    add_stages_options(parser)
    return parser


def _synth(args):
    from ..boards import build
    family = checked(build.check_family, args.family)
    synth_opts, placer, out = build_options(args)
    n = integer(args.nodes, "Node count", topology.check_node_count)
    width = integer(args.width, "Payload width", check_payload_width)
    depth = integer(args.depth, "Buffer depth", check_depth)
    router = None
    if args.router is not None:
        router = integer(args.router, "Router node", lambda node: node)
        checked(topology.check_node, n, router, "Router node")
    pe_ports = ports(args, n)
    switching, flit_options = switching_options(args, n, width)
    staged = stages(args, switching)
    wormhole = None
    if switching == WORMHOLE:
        if depth != 1 or pe_ports != 1:
            raise UsageError("Wormhole switching takes --vc-depth, not --depth, and one PE "
                             "port")
        wormhole = wormhole_parameters(n, width, **flit_options)
    if args.strapped and (router is None or wormhole is not None):
        raise UsageError("--strapped builds one packet router: give --router NODE")
    with one_build_at_a_time():
        figures = build.synth(n, family, width, depth, out=out, synth_opts=synth_opts,
                              router=router, placer=placer, ports=pe_ports, wormhole=wormhole,
                              strapped=args.strapped, **staged,
                              pnr_minutes=pnr_minutes(args))
    print(build.summary(figures))
    return 0 if figures["fits"] else 1


def main(argv=None):
    """Run ``ihcube synth`` with ``argv`` (default: the process's); return the exit status."""
    return run(NAME, _parser(), _synth, argv)


if __name__ == "__main__":
    sys.exit(main())
