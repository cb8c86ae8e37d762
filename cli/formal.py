"""Run the formal checks of the router and the fabric with SymbiYosys.

``python -m ihcube.cli.formal [--fast] [--list] [--jobs N] [--solver yices|z3] [--keep DIR]
[--timeout SECONDS] [NAME ...]`` runs the jobs of :func:`ihcube.verify.formal.jobs` (``make
formal`` runs them all), reports each as it ends and a summary; the exit status is 1 if a job
did not get the verdict it expects. A wrong parameter, or a missing tool, is one line on
standard error and exit status 2.
"""

import shutil
import signal
import sys
import tempfile
import time

from .options import MAX_JOBS, number, out_dir
from .usage import Parser, UsageError

#: The longest a job may run, in seconds (a day).
MAX_TIMEOUT = 24 * 3600

__all__ = ["main"]

#: The name the messages give the command.
PROG = "ihcube formal"


def _parser(solvers):
    parser = Parser(prog=PROG, description=__doc__.splitlines()[0])
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--all", action="store_true", help="run every job (the default)")
    which.add_argument("--fast", action="store_true", help="run the fast subset only")
    parser.add_argument("--list", action="store_true", help="list the jobs and exit")
    parser.add_argument("--jobs", "-j", default="2", metavar="J",
                        help=f"run J jobs at once, 1 to {MAX_JOBS} (default 2, as every "
                             f"command's --jobs)")
    parser.add_argument("--solver", choices=sorted(solvers), default=None,
                        help="SMT solver (default: yices if installed, else z3)")
    parser.add_argument("--keep", metavar="DIR", default=None,
                        help="keep the job directories (models, logs, traces) under DIR")
    parser.add_argument("--timeout", default="7200", metavar="SECONDS",
                        help=f"give up on a job after this long, 1 to {MAX_TIMEOUT} "
                             f"(default 7200)")
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help="run only the jobs whose names contain one of these")
    return parser


def _report(result):
    """Print one line for a job that has ended (two if it failed, or caught its fault)."""
    status = "PASS" if result.ok else "FAIL"
    note = f"{result.job.describe()}, sby {result.verdict}"
    if result.job.expect != "PASS":
        note += f" (negative control, expects {result.job.expect})"
    print(f"{status}  {result.job.name:40} {result.seconds:7.1f} s  {note}", flush=True)
    if not result.ok:
        print(f"      {result.detail}\n      see {result.workdir}", flush=True)
    elif result.detail:  # a negative control: say what caught it
        print(f"      {result.detail}", flush=True)


def _terminate(signum, frame):
    raise KeyboardInterrupt  # as for Ctrl-C: the runner ends the solvers too


def _run(args):
    from ..verify import formal
    from ..verify.formal import abc_compat

    parallel = int(number(args.jobs, "Jobs", int, 1, MAX_JOBS))
    timeout = number(args.timeout, "Timeout", float, 1, MAX_TIMEOUT)
    workdir = None if args.keep is None else str(out_dir(args.keep))
    selected = formal.fast_jobs() if args.fast else formal.jobs()
    if args.names:
        selected = [job for job in selected if any(name in job.name for name in args.names)]
    if args.list:
        for job in selected:
            print(f"{job.name:40} {job.describe():32} expect {job.expect}"
                  f"{'  (fast)' if job.fast else ''}")
        return 0
    if not selected:
        wanted = " ".join(repr(name) for name in args.names)
        raise UsageError(f"no job matches {wanted}")
    try:
        toolchain = formal.find_toolchain(args.solver)
    except formal.ToolchainMissing as error:
        raise UsageError(str(error)) from None
    needing_abc = [job.name for job in selected if job.needs_abc]
    if needing_abc and toolchain.abc is None:
        raise UsageError(f"{abc_compat.ABC_MISSING}; jobs that need it: "
                         f"{', '.join(needing_abc)}")

    workdir = workdir or tempfile.mkdtemp(prefix="ihcube-formal-")
    engines = f"smtbmc {toolchain.solver}" + (", abc" if needing_abc else "")
    print(f"{len(selected)} jobs, {engines}, in {workdir}", flush=True)
    signal.signal(signal.SIGTERM, _terminate)

    started = time.monotonic()
    # The long jobs first, so that the short ones fill the other slots meanwhile. Ctrl-C
    # ends the solvers (run_jobs) and reaches the dispatcher: `ihcube: interrupted`, 130.
    order = sorted(selected, key=lambda job: not job.slow)
    results = formal.run_jobs(order, toolchain, workdir, parallel, _report, timeout)
    failed = [result for result in results if not result.ok]
    print(f"{len(results) - len(failed)} passed, {len(failed)} failed "
          f"in {time.monotonic() - started:.1f} s", flush=True)
    for result in failed:
        print(f"failed: {result.job.name} (sby {result.verdict}, expected {result.job.expect})")
    if args.keep is None and not failed:
        shutil.rmtree(workdir, ignore_errors=True)
    return 1 if failed else 0


def main(argv=None) -> int:
    """Run ``ihcube formal`` with ``argv`` (the arguments after the subcommand's name);
    return the exit status."""
    from ..verify.formal.toolchain import SOLVERS
    try:
        return _run(_parser(SOLVERS).parse_args(argv))
    except UsageError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
