"""Flits and payload bits per node per µs at saturation: router 0's Fmax x the model's throughput.

``ihcube throughput [--folder results] [--family ecp5] [--size 1024] [--out DIR]`` (``make
throughput``) runs :func:`ihcube.boards.throughput.figure` on the results files in
``--folder``: for each router of node 0 of 26 that ``synth-table`` builds alone (wormhole at
each flit width and virtual channel count, packet at each depth and register stages, and
the packet router of any other payload width with a results file), its placed Fmax times the
fast model's saturation throughput at ``--size`` nodes, uniform traffic, from ``make
saturation``'s files. It prints a Markdown table and writes ``<out>/throughput_per_us.json``
and ``.md``; a row from a synth result not of today's design, or a saturation file of a
model that behaves otherwise, is marked stale, and one without a placed result or a
saturation row says "not measured" and the command that measures it. It builds and
simulates nothing.
"""

import json
import pathlib
import sys

from .options import add_out_option, check_out, node_count, out_dir
from .usage import UsageError, checked, command_parser, integer, run

__all__ = ["main"]

NAME = "throughput"
#: The files it writes, without their extension.
FILE = "throughput_per_us"


def _parser():
    from ..boards.throughput import SIZE
    parser = command_parser(NAME, __doc__)
    parser.add_argument("--folder", default="results", metavar="DIR",
                        help="the results folder to read (default results)")
    parser.add_argument("--family", default="ecp5", help="ecp5 (default) or ice40")
    parser.add_argument("--size", default=str(SIZE), metavar="N",
                        help=f"the node count of the saturation throughput (default {SIZE})")
    add_out_option(parser)
    return parser


def _throughput(args):
    from ..boards import build, throughput
    family = checked(build.check_family, args.family)
    size = integer(args.size, "Size", node_count)
    check_out(args.out)  # made only once every option is checked
    folder = pathlib.Path(args.folder)
    if not args.folder.strip() or not folder.is_dir():
        raise UsageError(f"--folder must name a folder of results, not {args.folder!r}")
    out = out_dir(args.out)
    rows = throughput.figure(folder, family, size)
    table = throughput.markdown(rows, family, size)
    record = {"family": family, "routers": throughput.ROUTERS, "saturation_nodes": size,
              "command": args.command_line, "rows": rows}
    (out / f"{FILE}.json").write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    (out / f"{FILE}.md").write_text(table + "\n")
    print(table)
    print(f"wrote {out / FILE}.json, .md")
    return 0


def main(argv=None):
    """Run ``ihcube throughput`` with ``argv`` (default: the process's); return the exit
    status."""
    return run(NAME, _parser(), _throughput, argv)


if __name__ == "__main__":
    sys.exit(main())
