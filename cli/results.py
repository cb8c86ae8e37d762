"""Which results files today's code would write otherwise (stale), and how to make them again.

``ihcube results [--folder results] [--check]`` (``make results``) lists each results file of
the experiments (saturation, sweeps, stress campaigns, collectives, analysis, reconfiguration)
as ``current``, ``stale`` (made by code that behaves differently from today's: its behaviour
digests, :mod:`ihcube.sim.provenance`, are not today's) or ``unstamped`` (made before the
files recorded them), with the command that made it. With ``--check`` the exit status is 1
when any file is not current. Benchmarks and FPGA builds are not listed: ``ihcube
synth-table`` checks the builds by their design digest.
"""

import pathlib
import sys

from .usage import UsageError, command_parser, run

__all__ = ["main"]

NAME = "results"


def _parser():
    parser = command_parser(NAME, __doc__)
    parser.add_argument("--folder", default="results", metavar="DIR",
                        help="the results folder (default results)")
    parser.add_argument("--check", action="store_true",
                        help="exit status 1 if any file is stale or unstamped")
    return parser


def _results(args):
    folder = pathlib.Path(args.folder)
    if not folder.is_dir():
        raise UsageError(f"--folder must name a folder of results, not {args.folder!r}")
    from ..sim import provenance
    rows = provenance.status(folder)
    if not rows:
        print(f"no results files of the experiments in {folder}")
        return 0
    width = max(len(name) for name, _, _ in rows)
    for name, state, command in rows:
        print(f"{name:<{width}}  {state:<9}  {command or '(not recorded)'}")
    behind = [name for name, state, _ in rows if state != "current"]
    print(f"\n{len(rows) - len(behind)} of {len(rows)} current", end="")
    print("; make the others again with the command each lists" if behind else "")
    return 1 if behind and args.check else 0


def main(argv=None):
    """Run ``ihcube results`` with ``argv`` (default: the process's); return the exit
    status."""
    return run(NAME, _parser(), _results, argv)


if __name__ == "__main__":
    sys.exit(main())
