"""Lint a fabric's Verilog with Verilator -Wall and the project's waivers.

``ihcube lint --nodes 26 [the fabric options] [--out build/lint]`` (``make lint N=26
[FABRIC='--switching wormhole --vcs 1']``; the fabric options are those of ``ihcube
verilog``, every one of them), writes the fabric's Verilog into ``OUT/<top>.v`` and lints it
with
:func:`ihcube.verify.lint.lint_fabric`; ``ihcube lint --verilog FILE [--top MODULE]`` lints
``FILE``, whose top module is named after the file unless ``--top`` says otherwise. The exit
status is 0 when Verilator reports nothing, 1 when it reports a warning or an error (all
printed), and 2 (one line on standard error) for a wrong parameter or a missing
``verilator``.
"""

import sys
from pathlib import Path

from .options import add_fabric_options, check_out, fabric_spec
from .usage import UsageError, command_parser, run

__all__ = ["main"]

NAME = "lint"


def _parser():
    parser = command_parser(NAME, __doc__)
    add_fabric_options(parser, nodes_required=False)
    parser.add_argument("--out", "-o", default="build/lint", metavar="DIR",
                        help="where to write the Verilog (default build/lint)")
    parser.add_argument("--verilog", metavar="FILE", help="lint this file instead")
    parser.add_argument("--top", metavar="MODULE",
                        help="top module of --verilog FILE (default: the file's name)")
    return parser


def _lint(args):
    from ..verify.lint import lint_fabric, lint_file, require_verilator
    if (args.nodes is None) == (args.verilog is None):
        raise UsageError("give either --nodes or --verilog")
    if args.verilog is None:
        if args.top is not None:
            raise UsageError("--top names the top module of --verilog FILE; a fabric's top "
                             "is its name")
        spec = fabric_spec(args)
    elif not Path(args.verilog).is_file():
        raise UsageError(f"no such file: {args.verilog!r}")
    if args.verilog is None:
        check_out(args.out)  # before the work, not after it
    try:
        require_verilator()
    except FileNotFoundError as error:
        raise UsageError(str(error)) from None
    if args.verilog is None:
        try:
            result = lint_fabric(spec, out=args.out)
        except ValueError as error:  # a fabric the generator refuses: one that can deadlock
            raise UsageError(str(error)) from None
    else:
        result = lint_file(args.verilog, args.top)
    waivers = ", ".join(map(str, result.waivers))
    if result.clean:
        print(f"{result.path}: Verilator -Wall clean (waivers: {waivers})")
        return 0
    print(result.output, end="" if result.output.endswith("\n") else "\n")
    print(f"{result.path}: {len(result.messages)} Verilator message(s) "
          f"(waivers: {waivers})")
    return 1


def main(argv=None):
    """Run ``ihcube lint`` with ``argv`` (default: the process's); return the exit status."""
    return run(NAME, _parser(), _lint, argv)


if __name__ == "__main__":
    sys.exit(main())
