"""Formal checks of the router and the fabric with SymbiYosys (``yowasp-sby``).

``ihcube formal`` (:mod:`ihcube.cli.formal`; ``make formal`` runs every job) runs the jobs of
the catalogue. Each job builds a *check*: the design under test wrapped in Amaranth
``Assert`` / ``Assume`` / ``Cover`` statements about one *tagged* message, and runs SymbiYosys
on it with smtbmc (Yices or Z3) or ABC (``pdr``, ``bmc3``). A job passes when SymbiYosys gives
the verdict it expects: ``PASS`` for the real design, ``FAIL`` for a negative control, the same
check on a part broken on purpose (:mod:`ihcube.verify.faults`), a bound one too small or a
cover too shallow.

One topic a module:

- :mod:`.router_check`: :class:`RouterCheck`, one router in a free environment, proved by
  k-induction (nothing lost, duplicated or altered; routed by the rules; fairness).
- :mod:`.fabric_check`: :class:`FabricCheck`, a whole fabric, by BMC (delivery bound, drain)
  or PDR (safety for every cycle).
- :mod:`.probe` (internal registers found by name, for the helper invariants),
  :mod:`.environment` (what both checks assume and count with) and
  :mod:`.arbiter_invariants` (what the router checks know of an arbiter's state).
- :mod:`.toolchain`: finding SymbiYosys, its Yosys, the SMT solver and ``yosys-abc``
  (:class:`Toolchain`, :class:`ToolchainMissing`).
- :mod:`.runner`: a :class:`Job`, its ``.sby`` file, running it (:func:`run_job`,
  :func:`run_jobs`) and its :class:`Result`.
- :mod:`.abc_compat`: the bridge to the system's older ``yosys-abc``, run by SymbiYosys as
  ``python -m ihcube.verify.formal.abc_compat``.
- :mod:`.jobs`: the catalogue (:func:`jobs`, :func:`fast_jobs`, and the tables
  :data:`FABRIC_CHECKS`, :data:`FABRIC_PROOFS`, :data:`FABRIC_DRAINS` behind the fabric jobs).

To add a formal check:

1. Assert the property in the check it is about (a method of :class:`RouterCheck` or a block
   of :class:`FabricCheck`), with a message that says what went wrong: it is what a failing
   job reports. If k-induction needs a helper invariant over an internal register, find the
   register with :class:`Probe` by the name the RTL gives it.
2. Add a :class:`Job` to :func:`jobs` (``fast=True`` if it takes seconds and CI should run
   it), and a negative control: the same job with ``expect="FAIL"`` on a part from
   :mod:`ihcube.verify.faults` that breaks the property (add the part there, registered in
   :data:`~ihcube.verify.faults.FAULTS`, if none does).
3. Run both with ``python -m ihcube.cli.formal NAME ...``; ``tests/test_formal.py`` runs the
   fast ones and checks that every kind of check has a negative control.
"""

from .fabric_check import FabricCheck
from .jobs import DRAIN_DEPTH, FABRIC_CHECKS, FABRIC_DRAINS, FABRIC_PROOFS, fast_jobs, jobs
from .probe import Probe
from .router_check import RouterCheck
from .runner import Job, Result, run_job, run_jobs
from .toolchain import SOLVERS, Toolchain, ToolchainMissing, find_toolchain

__all__ = [
    "RouterCheck", "FabricCheck", "Probe",
    "FABRIC_CHECKS", "FABRIC_PROOFS", "FABRIC_DRAINS", "DRAIN_DEPTH", "jobs", "fast_jobs",
    "Job", "Result", "run_job", "run_jobs",
    "SOLVERS", "Toolchain", "ToolchainMissing", "find_toolchain",
]
