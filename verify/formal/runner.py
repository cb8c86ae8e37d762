"""Running SymbiYosys jobs: the ``.sby`` file, the verdict, what failed.

Each :class:`Job` builds a *check* (an elaboratable with its ``ports``), writes it as RTLIL
with an ``.sby`` file, and runs SymbiYosys with one of two engines:

- ``smtbmc`` on Yices or Z3 (:mod:`.toolchain`), for the router's k-induction proofs, the
  covers and the shallower BMCs.
- ``abc``: ABC's ``pdr`` (property directed reachability, IC3), which proves a fabric's safety
  for every cycle, with no depth; and ABC's ``bmc3``, which takes the fabric BMCs of n = 5 and
  6 to depth 20 in 2 to 3 and 5 to 9 minutes (smtbmc's time per step doubled with every step: it
  took 15.8 min to reach depth 20 for n = 5, and 7.4 min to depth 14 for n = 6). It runs the
  system's ``yosys-abc`` through :mod:`.abc_compat`.

A job *passes* when SymbiYosys gives the verdict it expects: ``PASS`` for the real design,
``FAIL`` for the negative controls, which run the same check on a variant that is broken on
purpose (:mod:`ihcube.verify.faults`), with a bound one too small, or a cover too shallow.
"""

import concurrent.futures
import dataclasses
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

from amaranth.back import rtlil

from . import abc_compat

__all__ = ["Job", "Result", "run_job", "run_jobs"]


@dataclasses.dataclass(frozen=True)
class Job:
    """One SymbiYosys run.

    ``build`` returns the check (an elaboratable with a ``ports`` list). ``mode`` is ``prove``
    (``depth`` = k for k-induction), ``bmc`` or ``cover`` (``depth`` = cycles). ``engine`` is
    ``"smtbmc"`` (with the toolchain's SMT solver), ``"abc pdr"`` (property directed
    reachability, a ``prove`` without a depth: the proof holds for every cycle) or ``"abc
    bmc3"`` (ABC's bounded model checker, many times faster than smtbmc on the deep fabric
    BMCs). ``expect`` is the verdict that makes the job pass: ``"FAIL"`` for a negative
    control.
    """
    name: str
    build: object
    mode: str
    depth: int
    expect: str = "PASS"
    fast: bool = False   # in the CI subset (tests/test_formal.py)
    slow: bool = False   # takes many minutes: started first
    engine: str = "smtbmc"

    @property
    def needs_abc(self):
        return self.engine.startswith("abc")

    def describe(self):
        """What the job runs, for reports: ``k-induction depth 4``, ``PDR``, ..."""
        if self.engine == "abc pdr":
            return "PDR (unbounded)"
        what = "k-induction" if self.mode == "prove" else self.mode
        using = " (abc bmc3)" if self.engine == "abc bmc3" else ""
        return f"{what} depth {self.depth}{using}"


@dataclasses.dataclass(frozen=True)
class Result:
    job: Job
    verdict: str    # what SymbiYosys said: PASS, FAIL, UNKNOWN, TIMEOUT, ERROR
    seconds: float
    detail: str     # the failed property, or the tail of the log
    workdir: str

    @property
    def ok(self):
        """SymbiYosys gave the verdict the job expects."""
        return self.verdict == self.job.expect


def _sby_text(job, solver):
    return "\n".join([
        "[options]",
        f"mode {job.mode}",
        f"depth {job.depth}",
        "",
        "[engines]",
        f"smtbmc {solver}" if job.engine == "smtbmc" else job.engine,
        "",
        "[script]",
        "read_rtlil top.il",
        "prep -flatten -top top",
        # Case statements over constants become ROMs, whose contents only the initial state
        # would pin down: k-induction would see them as free. Make them logic.
        "memory_map",
        "",
        "[files]",
        "top.il",
        "",
    ])


def _failed_properties(jobdir, log):
    """The messages of the properties that SymbiYosys reports as failed or unreached."""
    messages = {}
    model = Path(jobdir) / "job" / "model" / "design.il"
    if model.exists():
        cells = r'cell \$check \\(\S+)\n(?:[^\n]*\n)*?\s*parameter \\FORMAT "(.*)"'
        for match in re.finditer(cells, model.read_text()):
            messages[match.group(1)] = match.group(2)
    found = []
    listing = None  # "unreached cover statements:" heads a list, one property a line
    for line in log.splitlines():
        match = re.search(r"summary:\s+(failed assertion|unreached cover statement) (\S+)", line)
        if match:
            kind, cell = match.groups()
        elif listing and (match := re.search(r"summary:\s+(top\.\S+) at ", line)):
            kind, cell = listing, match.group(1)
        else:
            listing = ("unreached cover statement"
                       if re.search(r"summary: unreached cover statements:", line) else None)
            continue
        cell = cell.removeprefix("top.")
        text = f"{kind}: {messages.get(cell) or cell}"
        if text not in found:
            found.append(text)
    return found


#: SymbiYosys processes under way, to end (with their solvers) if the run is interrupted.
_running = set()


def _stop_running():
    for proc in list(_running):
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass


def run_job(job, toolchain, workdir, timeout=7200):
    """Run ``job`` in a new directory under ``workdir``; return its :class:`Result`."""
    jobdir = Path(workdir) / job.name
    if jobdir.exists():
        shutil.rmtree(jobdir)
    jobdir.mkdir(parents=True)
    if job.needs_abc and toolchain.abc is None:
        return Result(job, "ERROR", 0.0, abc_compat.ABC_MISSING, str(jobdir))
    started = time.monotonic()
    check = job.build()
    (jobdir / "top.il").write_text(rtlil.convert(check, name="top", ports=check.ports))
    (jobdir / "job.sby").write_text(_sby_text(job, toolchain.solver))
    # Relative names: the WebAssembly Yosys sees files through its working directory. A session
    # of its own, so that a timeout or an interrupt ends the solver that SymbiYosys started too.
    proc = subprocess.Popen([toolchain.sby, "-f", "job.sby"], cwd=jobdir, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env=toolchain.environment(), start_new_session=True)
    _running.add(proc)
    try:
        log, _ = proc.communicate(timeout=timeout)
        match = re.search(r"DONE \((\w+), rc=\d+\)", log)
        verdict = match.group(1) if match else "ERROR"
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        log, _ = proc.communicate()
        verdict = "TIMEOUT"
    except BaseException:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait()
        raise
    finally:
        _running.discard(proc)
    (jobdir / "sby.log").write_text(log)
    seconds = time.monotonic() - started
    failed = _failed_properties(jobdir, log)
    if failed:
        detail = "; ".join(failed[:3])
    elif verdict in ("PASS", "FAIL"):
        detail = ""
    else:
        detail = "\n".join(log.splitlines()[-15:])
    return Result(job, verdict, seconds, detail, str(jobdir))


def run_jobs(jobs, toolchain, workdir, parallel=1, report=None, timeout=7200):
    """Run ``jobs``, ``parallel`` at a time; call ``report(result)`` as each ends; return the
    results in the order of ``jobs``."""
    results = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=parallel) as pool:
        futures = [pool.submit(run_job, job, toolchain, workdir, timeout) for job in jobs]
        try:
            for future in concurrent.futures.as_completed(futures):
                result = future.result()
                results[result.job.name] = result
                if report is not None:
                    report(result)
        except BaseException:
            for future in futures:
                future.cancel()
            _stop_running()
            raise
    return [results[job.name] for job in jobs]
