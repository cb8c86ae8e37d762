"""Run the system's ``yosys-abc`` for SymbiYosys's ``abc`` engine (``abc pdr``, ``abc bmc3``).

Run as ``python -m ihcube.verify.formal.abc_compat -c SCRIPT``; :mod:`.toolchain` points
SymbiYosys's ``ABC`` variable here. The ABC that SymbiYosys expects ships with Yosys, but the
WebAssembly Yosys from PyPI has no ``yosys-abc`` program, so the one of the system's Yosys
package (``apt-get install yosys``: Debian 12 has Yosys 0.23) is used. It is older than
``yowasp-sby`` in two ways, which this wrapper bridges:

- SymbiYosys calls ``pdr -v -l``; this ABC has no ``-l`` (it only changes what is printed),
  so it is dropped.
- ``write_cex -a`` writes the counterexample without the AIGER witness header (status line
  ``1`` and the failed property ``b<k>``) and with one latch more, the one that ABC's
  ``fold`` adds for the constraints, at the end. SymbiYosys's converter reads the header, so
  it is written here from ABC's "Output k ... was asserted" line, and the initial state cut
  to the design's latches (``model/design_aiger.ywa``). SymbiYosys then replays the trace in
  its SMT model, which checks that the assertion does fail: a trace mangled here would end
  the job in ERROR, not in a false FAIL.
"""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["ABC_MISSING", "find_abc", "main"]

#: What the abc engine says when the system has no ``yosys-abc``.
ABC_MISSING = ("yosys-abc not found: the abc engine needs the system's Yosys package "
               "(make system-tools as root, or apt-get install -y yosys)")


def find_abc():
    """The path of the system's ``yosys-abc``, or None."""
    return shutil.which("yosys-abc")


def _fix_trace(path, failed_output, ywa):
    """Rewrite ABC's counterexample ``path`` in the AIGER witness format SymbiYosys reads."""
    # It ends with a comment ("# DONE") on the last frame's line.
    lines = [line.split("#")[0].strip() for line in path.read_text().splitlines()]
    lines = [line for line in lines if line]
    if not lines or lines[0] == "1":
        return  # empty, or already in the witness format
    latches = json.loads(ywa.read_text())["latch_count"]
    initial, frames = lines[0][:latches], lines[1:]
    path.write_text("\n".join(["1", f"b{failed_output}", initial, *frames, "."]) + "\n")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    abc = find_abc()
    if abc is None:
        print(ABC_MISSING, file=sys.stderr)
        return 127
    argv = [re.sub(r"\bpdr -v -l\b", "pdr -v", arg) for arg in argv]
    proc = subprocess.Popen([abc, *argv], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    failed_output = None
    for line in proc.stdout:
        sys.stdout.write(line)
        sys.stdout.flush()
        match = re.match(r"Output (\d+) of miter .* was asserted in frame", line)
        if match and failed_output is None:
            failed_output = int(match.group(1))
    returncode = proc.wait()
    script = " ".join(argv)
    trace = re.search(r"write_cex -a (\S+?)(?:;|$)", script)
    if failed_output is not None and trace:
        path = Path(trace.group(1))
        ywa = Path("model/design_aiger.ywa")
        if path.exists() and ywa.exists():
            _fix_trace(path, failed_output, ywa)
    return returncode


if __name__ == "__main__":
    sys.exit(main())
