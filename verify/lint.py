"""Lint the emitted Verilog of a fabric with Verilator.

    python -m ihcube.verify.lint --nodes 26 [--width 32] [--depth 1] [--order msb] [--out build/lint]
    python -m ihcube.verify.lint --verilog FILE [--top MODULE]

generates the fabric with :func:`ihcube.generate.fabric_verilog` into ``OUT/<top>.v`` (or takes
``FILE``, whose top module is named after the file unless ``--top`` says otherwise) and runs
``verilator --lint-only -Wall`` on it with the waivers of ``verify/verilator.vlt``, which lists
and explains each one. The exit status is 0 when Verilator reports nothing, 1 when it reports
a warning or an error (all printed), and 2 (one line on standard error) for a wrong parameter
or a missing ``verilator``.
"""


import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from .. import topology
from ..params import check_depth, check_payload_width

__all__ = ["WAIVERS", "LintResult", "lint_file", "lint_fabric", "main"]

#: The one file of Verilator waivers, each with its reason.
WAIVERS = Path(__file__).resolve().parent / "verilator.vlt"


@dataclass(frozen=True)
class LintResult:
    """What Verilator said about a file.

    ``messages`` holds the first line of each warning and error (``%Warning-WIDTH: file:1:2:
    ...``), without Verilator's closing ``Exiting due to`` line; ``output`` everything it
    printed.
    """
    path: Path
    returncode: int
    messages: tuple
    output: str

    @property
    def clean(self):
        return self.returncode == 0 and not self.messages


def lint_file(path, top=None, waivers=WAIVERS):
    """Run ``verilator --lint-only -Wall`` on ``path`` (top module ``top``, by default the file's
    name) with ``waivers``; return a :class:`LintResult`."""
    path = Path(path)
    if shutil.which("verilator") is None:
        raise FileNotFoundError("verilator not found; install it (Debian/Ubuntu: "
                                "apt-get install verilator), or run `make system-tools`")
    command = ["verilator", "--lint-only", "-Wall", "--top-module", top or path.stem,
               str(waivers), str(path)]
    result = subprocess.run(command, capture_output=True, text=True)
    output = result.stdout + result.stderr
    messages = tuple(line for line in output.splitlines()
                     if line.startswith(("%Warning", "%Error"))
                     and not line.startswith("%Error: Exiting due to"))
    if result.returncode != 0 and not messages:
        messages = (f"%Error: verilator exited with status {result.returncode}",)
    return LintResult(path, result.returncode, messages, output)


def lint_fabric(n, payload_width=32, depth=1, order=topology.MSB_FIRST, out="build/lint"):
    """Write the Verilog of an ``n``-node fabric into ``out`` and lint it."""
    from ..generate import fabric_name, fabric_verilog  # Amaranth loads only when needed
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{fabric_name(n, payload_width, depth, order)}.v"
    path.write_text(fabric_verilog(n, payload_width, depth, order))
    return lint_file(path)


def _parser():
    from ..cli.usage import Parser
    parser = Parser(prog="python -m ihcube.verify.lint",
                     description="Lint a fabric's Verilog with Verilator (-Wall, waivers in "
                                 "verify/verilator.vlt).")
    parser.add_argument("--nodes", "-n", metavar="N", help="number of nodes, any positive integer")
    parser.add_argument("--width", "-w", default="32", metavar="W",
                        help="payload width in bits (default 32)")
    parser.add_argument("--depth", "-d", default="1", metavar="DEPTH",
                        help="messages per input buffer (default 1)")
    parser.add_argument("--order", default=topology.MSB_FIRST,
                        help="routing order: msb (default) or lsb")
    parser.add_argument("--out", "-o", default="build/lint", metavar="DIR",
                        help="where to write the Verilog (default build/lint)")
    parser.add_argument("--verilog", metavar="FILE", help="lint this file instead")
    parser.add_argument("--top", metavar="MODULE",
                        help="top module of --verilog FILE (default: the file's name)")
    return parser


def main(argv=None):
    from ..cli.usage import UsageError, integer
    try:
        args = _parser().parse_args(argv)
        if (args.nodes is None) == (args.verilog is None):
            raise UsageError("give either --nodes or --verilog")
        if args.verilog is None:
            n = integer(args.nodes, "Node count", topology.check_node_count)
            width = integer(args.width, "Payload width", check_payload_width)
            depth = integer(args.depth, "Buffer depth", check_depth)
            try:
                order = topology.check_routing_order(args.order)
            except ValueError as error:
                raise UsageError(str(error)) from None
        elif not Path(args.verilog).is_file():
            raise UsageError(f"no such file: {args.verilog!r}")
        if shutil.which("verilator") is None:
            raise UsageError("verilator not found; install it (Debian/Ubuntu: apt-get install "
                             "verilator), or run `make system-tools`")
    except UsageError as error:
        print(f"ihcube.verify.lint: error: {error}", file=sys.stderr)
        return 2

    if args.verilog is None:
        try:
            result = lint_fabric(n, width, depth, order, args.out)
        except ValueError as error:  # a fabric the generator refuses, as one that can deadlock
            print(f"ihcube.verify.lint: error: {error}", file=sys.stderr)
            return 2
    else:
        result = lint_file(args.verilog, args.top)
    if result.clean:
        print(f"{result.path}: Verilator -Wall clean (waivers: {WAIVERS})")
        return 0
    print(result.output, end="" if result.output.endswith("\n") else "\n")
    print(f"{result.path}: {len(result.messages)} Verilator message(s) "
          f"(waivers: {WAIVERS})")
    return 1


if __name__ == "__main__":
    sys.exit(main())
