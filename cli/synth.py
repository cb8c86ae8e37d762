"""Place and route the bare fabric on an FPGA: LUTs, FFs, RAM, Fmax.

``ihcube synth --nodes 26 [--family ecp5|ice40] [the fabric options: --width --depth --order
--ports --link-stages --switch-stages --eject-stages, or --switching wormhole --flits L
--flit-width F --vcs V --vc-depth Q] [--synth-opts OPTS] [--placer heap|static|sa]
[--router NODE [--strapped]] [--no-place]`` (``make synth``) runs
:func:`ihcube.boards.build.synth`, prints one line and writes
``results/synth_<family>_<name>.json``; the build is in ``build/``. ``--no-place``
(``NO_PLACE=1``) stops after Yosys: LUTs and FFs from its netlist, no Fmax, the name ending
in ``_yosys``. The exit status is 1 if the design does not fit or a tool fails, 2 (one line)
for a wrong parameter.
"""

import sys

from .. import topology
from .options import (add_build_options, add_fabric_options, add_pnr_minutes_option,
                      build_options, fabric_spec, one_build_at_a_time, pnr_minutes, require)
from .usage import checked, command_parser, integer, run

__all__ = ["main"]

NAME = "synth"


def _parser():
    parser = command_parser(NAME, __doc__)
    add_fabric_options(parser)
    parser.add_argument("--family", default="ecp5", help="ecp5 (default) or ice40")
    add_build_options(parser, "nextpnr's, heap")
    add_pnr_minutes_option(parser)
    parser.add_argument("--router", default=None, metavar="NODE",
                        help="build only this node's router")
    parser.add_argument("--strapped", action="store_true",
                        help="packet switching, with --router: build it as the fabric does "
                             "(one module per router class, the address tied)")
    parser.add_argument("--no-place", action="store_true",
                        help="stop after Yosys: LUTs and FFs from its netlist, no place and "
                             "route, no Fmax (the results file's name ends in _yosys)")
    return parser


def _synth(args):
    from ..boards import build
    family = checked(build.check_family, args.family)
    spec = fabric_spec(args)
    require(spec, spec.interface == "native",
            "ihcube synth builds the Amaranth fabric, whose ports are native; the "
            "AXI4-Stream top adds no logic (docs/axis.md#cost): leave out --interface")
    router = None
    if args.router is not None:
        router = integer(args.router, "Router node", lambda node: node)
        checked(topology.check_node, spec.nodes, router, "Router node")
    require(spec, not args.strapped or router is not None and spec.packet,
            "--strapped builds one packet router: give --router NODE")
    minutes = pnr_minutes(args)
    synth_opts, placer, out = build_options(args)  # the output directory made last
    with one_build_at_a_time():
        figures = build.synth(spec, family, out=out, synth_opts=synth_opts, router=router,
                              placer=placer, strapped=args.strapped, pnr_minutes=minutes,
                              place=not args.no_place)
    print(build.summary(figures))
    return 0 if figures["fits"] else 1


def main(argv=None):
    """Run ``ihcube synth`` with ``argv`` (default: the process's); return the exit status."""
    return run(NAME, _parser(), _synth, argv)


if __name__ == "__main__":
    sys.exit(main())
