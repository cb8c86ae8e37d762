"""Lint the emitted Verilog of a fabric with Verilator.

:func:`lint_fabric` generates the fabric with :func:`ihcube.generate.fabric_verilog` into
``out/<top>.v``; :func:`lint_file` runs ``verilator --lint-only -Wall`` on a file with the
waivers of ``verify/verilator.vlt`` (and, for a wormhole fabric, those of
``verify/verilator_wormhole.vlt``), which list and explain each one. ``ihcube lint``
(:mod:`ihcube.cli.lint`, ``make lint``) is the command line.
"""


import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..modes import mode_of


__all__ = ["WAIVERS", "WORMHOLE_WAIVERS", "LintResult", "require_verilator", "waivers_for",
           "lint_file", "lint_fabric"]

#: The Verilator waivers of every fabric, each with its reason.
WAIVERS = Path(__file__).resolve().parent / "verilator.vlt"
#: The waivers added for a wormhole fabric's routers only.
WORMHOLE_WAIVERS = WAIVERS.with_name("verilator_wormhole.vlt")
#: A wormhole router module, as ihcube.generate names it (``<top>_router_x<k>``, the top
#: named by ``fabric_name`` with ``_wormhole_`` in it).
_WORMHOLE_ROUTER = re.compile(r"^module \\?\w*_wormhole_\w*_router_x\d+\W", re.M)


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
    waivers: tuple = (WAIVERS,)

    @property
    def clean(self):
        return self.returncode == 0 and not self.messages


def require_verilator():
    """Raise ``FileNotFoundError``, saying how to install it, if ``verilator`` is not on the
    ``PATH``."""
    if shutil.which("verilator") is None:
        raise FileNotFoundError("verilator not found; install it (Debian/Ubuntu: "
                                "apt-get install verilator), or run `make system-tools`")


def waivers_for(text):
    """The waiver files for Verilog ``text``: :data:`WAIVERS`, and :data:`WORMHOLE_WAIVERS` if
    it holds a wormhole router module."""
    if _WORMHOLE_ROUTER.search(text):
        return (WAIVERS, WORMHOLE_WAIVERS)
    return (WAIVERS,)


def lint_file(path, top=None, waivers=None):
    """Run ``verilator --lint-only -Wall`` on ``path`` (top module ``top``, by default the file's
    name) with the waiver files ``waivers`` (by default :func:`waivers_for` the file); return a
    :class:`LintResult`."""
    path = Path(path)
    require_verilator()
    if waivers is None:
        waivers = waivers_for(path.read_text())
    waivers = tuple(waivers)
    command = ["verilator", "--lint-only", "-Wall", "--top-module", top or path.stem,
               *map(str, waivers), str(path)]
    result = subprocess.run(command, capture_output=True, text=True)
    output = result.stdout + result.stderr
    messages = tuple(line for line in output.splitlines()
                     if line.startswith(("%Warning", "%Error"))
                     and not line.startswith("%Error: Exiting due to"))
    if result.returncode != 0 and not messages:
        messages = (f"%Error: verilator exited with status {result.returncode}",)
    return LintResult(path, result.returncode, messages, output, waivers)


def lint_fabric(spec, *args, out="build/lint", **keywords):
    """Write the Verilog of the fabric ``spec`` (a :class:`~ihcube.spec.FabricSpec`, or the
    keyword form of :func:`ihcube.generate.fabric_name`) into ``out`` and lint it."""
    from ..generate import fabric_spec, fabric_verilog  # Amaranth loads only when needed
    spec = fabric_spec(spec, *args, **keywords)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{spec.name}.v"
    path.write_text(fabric_verilog(spec))
    return lint_file(path, waivers=mode_of(spec).lint_waivers)
