"""Build a board's self-test bitstream (a generator and a checker per node).

``ihcube bitstream --board ulx3s-85f --nodes 26 [--depth 1] [--width 32] [--link-stages 0]
[--switch-stages 0] [--eject-stages 0] [--clock-mhz MHZ] [--synth-opts OPTS]
[--placer heap|static|sa]`` (``make bitstream``) runs :func:`ihcube.boards.build.bitstream`,
prints one line and writes ``results/bitstream_<board>_<name>.json``; the bitstream is in
``build/``. It takes the fabric options (:func:`~.options.add_fabric_options`) and refuses
in one line those the self-test cannot use: wormhole switching, more than one PE port, the
order lsb. Nothing here programs a board. The exit status is 1 if the design does not fit
or a tool fails, 2 (one line) for a wrong parameter.
"""

import sys

from .options import (add_build_options, add_fabric_options, build_options, fabric_spec,
                      one_build_at_a_time, require)
from .usage import UsageError, checked, command_parser, parse_number, run

__all__ = ["main"]

NAME = "bitstream"


def _parser():
    from ..boards.build import BOARDS
    parser = command_parser(NAME, __doc__)
    parser.add_argument("--board", required=True, help=f"one of {', '.join(BOARDS)}")
    add_fabric_options(parser)
    parser.add_argument("--clock-mhz", metavar="MHZ",
                        help="run on the board's PLL at the highest frequency it makes that "
                             "is not above MHZ (default: the board's oscillator, no PLL)")
    add_build_options(parser, "static on ECP5, heap on iCE40")
    return parser


def _bitstream(args):
    from ..boards import build
    from ..boards.selftest import check_selftest_spec
    from ..boards.traffic import check_selftest_payload_width
    board = checked(build.check_board, args.board)
    spec = fabric_spec(args)
    require(spec, spec.interface == "native",
            "ihcube bitstream builds the Amaranth fabric, whose ports are native; the "
            "AXI4-Stream top adds no logic (docs/axis.md#cost): leave out --interface")
    checked(check_selftest_spec, spec)
    checked(check_selftest_payload_width, spec.payload_width)
    clock_mhz = None
    if args.clock_mhz is not None:
        try:
            clock_mhz = parse_number(args.clock_mhz, float)
        except ValueError:
            raise UsageError(f"Clock must be a number of MHz, not {args.clock_mhz!r}") from None
        checked(build.check_clock, board, clock_mhz)
    synth_opts, placer, out = build_options(args)  # the output directory made last
    with one_build_at_a_time():
        figures = build.bitstream(board, spec, out=out, synth_opts=synth_opts, placer=placer,
                                  clock_mhz=clock_mhz)
    print(build.summary(figures))
    return 0 if figures["fits"] else 1


def main(argv=None):
    """Run ``ihcube bitstream`` with ``argv`` (default: the process's); return the exit
    status."""
    return run(NAME, _parser(), _bitstream, argv)


if __name__ == "__main__":
    sys.exit(main())
