"""Run synth for several builds, one at a time, and print the table of docs/fpga.md.

``ihcube synth-table [--family ecp5|ice40] [--sizes 4,8,16,26,32,64] [--depths 1,2]
[--routers 26] [--flit-widths 8,16,32] [--vcs 1,3] [--no-wormhole-fabric] [--staged link,all]
[--reconfigurable-sizes 26,32,64] [--redo]
[--kept-only] [--previous REV|none] [--synth-opts OPTS] [--placer heap|static|sa]
[--pnr-minutes MIN]``
(``make synth-table``) runs :func:`ihcube.boards.build.table`: the router of node 0 of each
``--routers`` size (packet at each depth, wormhole at each flit width and virtual channel
count), the packet fabrics of ``--sizes`` at each depth, and the wormhole fabric of each
``--routers`` size at each flit width and virtual channel count, the router of node 0 and
the fabric of each ``--routers`` size again with register stages (``--staged``: ``link``, a
relay on each link; ``all``, link, switch and eject stages), and for each
``--reconfigurable-sizes`` size the router of node 0 fixed and reconfigurable and the
reconfigurable fabric through Yosys only (not placed); a line per build as
``ihcube synth`` prints it, then a Markdown table, also written to
``results/synth_table_<family>.json``. A build whose results file was made from today's
design (the same files for the tools) is kept, so an interrupted table resumes (``--redo``
builds everything again; ``--kept-only`` builds nothing and prints the table so far).
``--pnr-minutes`` stops each place and route after that long; such a row shows as stopped
and is built again by the next run. Every option is checked before any build starts (and
before the output directory is made); ``--nodes N,...``, the old spelling of ``--sizes``,
still works with a one-line notice.
"""

import sys

from .. import topology
from ..params import MAX_FABRIC_PAYLOAD_WIDTH, MAX_VCS, check_at_most, check_fabric_depth
from .options import (add_build_options, add_old_spelling, add_pnr_minutes_option,
                      build_options, check_out, choices, one_build_at_a_time, pnr_minutes,
                      renamed)
from .usage import checked, command_parser, integer, run

__all__ = ["main"]

NAME = "synth-table"
#: The fabric sizes of the table.
SIZES = "4,8,16,26,32,64"
#: The sizes of the table's reconfigurable rows (docs/reconfiguration-hardware.md).
RECONFIGURABLE_SIZES = "26,32,64"


def _parser():
    from ..boards.build import PREVIOUS_DESIGN, TABLE_FLIT_WIDTHS, TABLE_VCS
    parser = command_parser(NAME, __doc__)
    parser.add_argument("--family", default="ecp5", help="ecp5 (default) or ice40")
    parser.add_argument("--sizes", default=None, metavar="N,...",
                        help=f"node counts of the fabrics (default {SIZES})")
    add_old_spelling(parser, ["--nodes"], "old_nodes")
    parser.add_argument("--depths", default="1,2", metavar="DEPTH,...",
                        help="buffer depths of the packet builds (default 1,2)")
    parser.add_argument("--routers", default="26", metavar="N,...",
                        help="node counts whose router of node 0 is built alone, and whose "
                             "wormhole fabric is built (default 26; 'none' for none)")
    parser.add_argument("--flit-widths", default=",".join(map(str, TABLE_FLIT_WIDTHS)),
                        metavar="F,...", help="flit widths of the wormhole router rows")
    parser.add_argument("--vcs", default=",".join(map(str, TABLE_VCS)), metavar="V,...",
                        help="virtual channel counts of the wormhole router rows")
    parser.add_argument("--no-wormhole-fabric", action="store_true",
                        help="leave out the wormhole fabric rows")
    parser.add_argument("--staged", default="link,all", metavar="NAME,...",
                        help="the router of node 0 and the fabric of each --routers size at "
                             "each depth again with register stages: link (a relay on each "
                             "link), all (link, switch and eject stages), or none (default "
                             "link,all)")
    parser.add_argument("--reconfigurable-sizes", default=RECONFIGURABLE_SIZES, metavar="N,...",
                        help=f"node counts whose router of node 0 is built fixed and "
                             f"reconfigurable, and whose reconfigurable fabric goes through "
                             f"Yosys only (default {RECONFIGURABLE_SIZES}; 'none' for none)")
    parser.add_argument("--redo", action="store_true",
                        help="build every row again, even one built from today's design")
    parser.add_argument("--kept-only", action="store_true",
                        help="build nothing: print the table of what is already built")
    parser.add_argument("--previous", default=PREVIOUS_DESIGN, metavar="REV",
                        help=f"git revision whose results/ are the previous design's "
                             f"(default {PREVIOUS_DESIGN}; 'none' for no such columns)")
    add_build_options(parser, "nextpnr's, heap")
    add_pnr_minutes_option(parser)
    return parser


def _list(text, what, check):
    if text.strip() == "none":
        return []
    return [integer(part, what, check) for part in text.split(",")]


def _synth_table(args):
    from ..boards import build
    family = checked(build.check_family, args.family)
    check_out(args.out)  # made (build_options) only once every option is checked
    nodes = renamed(args, "old_nodes", "sizes", "--nodes N,...", "--sizes N,...")
    sizes = _list(SIZES if nodes is None else nodes, "Node count",
                  topology.check_fabric_node_count)
    depths = _list(args.depths, "Buffer depth", check_fabric_depth)
    routers = _list(args.routers, "Node count", topology.check_fabric_node_count)
    reconfigurable = _list(args.reconfigurable_sizes, "Node count",
                           topology.check_fabric_node_count)
    widths = _list(args.flit_widths, "Flit width",
                   lambda value: check_at_most(value, MAX_FABRIC_PAYLOAD_WIDTH, "Flit width"))
    vcs = _list(args.vcs, "Virtual channel count",
                lambda value: check_at_most(value, MAX_VCS, "Virtual channel count"))
    staged = [] if args.staged.strip() == "none" else \
        [build.STAGE_SETS[name] for name in choices(args.staged, "Staged rows",
                                                    tuple(build.STAGE_SETS))]
    previous = None if args.previous == "none" else args.previous
    minutes = pnr_minutes(args)
    synth_opts, placer, out = build_options(args)
    with one_build_at_a_time():
        return build.table(family, sizes, out=out, synth_opts=synth_opts, placer=placer,
                           depths=depths, router_sizes=routers, flit_widths=widths, vcs=vcs,
                           wormhole_fabric=not args.no_wormhole_fabric, redo=args.redo,
                           previous=previous, only_kept=args.kept_only,
                           staged=staged, pnr_minutes=minutes,
                           reconfigurable_sizes=reconfigurable)


def main(argv=None):
    """Run ``ihcube synth-table`` with ``argv`` (default: the process's); return the exit
    status."""
    return run(NAME, _parser(), _synth_table, argv)


if __name__ == "__main__":
    sys.exit(main())
