"""Lint the emitted Verilog of a fabric with Verilator.

:func:`lint_fabric` generates the fabric with :func:`ihcube.generate.fabric_verilog` into
``out/<top>.v``; :func:`lint_file` runs ``verilator --lint-only -Wall`` on a file with the
waivers of ``verify/verilator.vlt``, which lists and explains each one. ``ihcube lint``
(:mod:`ihcube.cli.lint`, ``make lint``) is the command line.
"""


import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .. import topology

__all__ = ["WAIVERS", "LintResult", "require_verilator", "lint_file", "lint_fabric"]

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


def require_verilator():
    """Raise ``FileNotFoundError``, saying how to install it, if ``verilator`` is not on the
    ``PATH``."""
    if shutil.which("verilator") is None:
        raise FileNotFoundError("verilator not found; install it (Debian/Ubuntu: "
                                "apt-get install verilator), or run `make system-tools`")


def lint_file(path, top=None, waivers=WAIVERS):
    """Run ``verilator --lint-only -Wall`` on ``path`` (top module ``top``, by default the file's
    name) with ``waivers``; return a :class:`LintResult`."""
    path = Path(path)
    require_verilator()
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


def lint_fabric(n, payload_width=32, depth=1, order=topology.MSB_FIRST, out="build/lint",
                **switching):
    """Write the Verilog of an ``n``-node fabric into ``out`` and lint it; ``switching`` are
    :func:`ihcube.generate.fabric_verilog`'s ``switching`` and flit-level options."""
    from ..generate import fabric_name, fabric_verilog  # Amaranth loads only when needed
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{fabric_name(n, payload_width, depth, order, **switching)}.v"
    path.write_text(fabric_verilog(n, payload_width, depth, order, **switching))
    return lint_file(path)
