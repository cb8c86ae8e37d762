"""A FuseSoC core file for a generated fabric (``ihcube verilog ... --fusesoc``;
``docs/fusesoc.md``).

:func:`core_text` is the CAPI2 description of ``<name>.v``: the core
``ihcube:fabric:<name>:<version>``, its file set (the Verilog, and Verilator's waivers for
the lint), the top module, and three targets: ``default`` (the file set and the top, for a
design that uses the core), ``lint`` (Verilator ``--lint-only -Wall`` with the waivers) and
``sim`` (Icarus Verilog, the flags the project's own simulations use). :func:`write_core`
writes it beside the Verilog with the waivers, as ``<name>.core`` and ``<name>.vlt``.
"""

import pathlib

from .modes import mode_of

__all__ = ["VENDOR", "LIBRARY", "core_name", "core_text", "write_core"]

#: The vendor and library parts of the core's VLNV name.
VENDOR, LIBRARY = "ihcube", "fabric"


def core_name(spec, version):
    """The core's VLNV name: ``ihcube:fabric:<top>:<version>``."""
    return f"{VENDOR}:{LIBRARY}:{spec.name}:{version}"


def core_text(spec, version):
    """The CAPI2 core file of the fabric ``spec`` (a checked
    :class:`~ihcube.spec.FabricSpec`) whose Verilog is ``<name>.v`` beside it."""
    top = spec.name
    return "\n".join([
        "CAPI=2:",
        f"# Written by ihcube {version} (ihcube verilog --fusesoc) beside {top}.v: "
        "docs/fusesoc.md.",
        f"name: {core_name(spec, version)}",
        f"description: ihcube incomplete-hypercube fabric {top}",
        "",
        "filesets:",
        "  rtl:",
        "    files:",
        f"      - {top}.v",
        "    file_type: verilogSource",
        "  waivers:",
        "    files:",
        f"      - {top}.vlt",
        "    file_type: vlt",
        "",
        "targets:",
        "  default: &default",
        "    filesets: [rtl]",
        f"    toplevel: {top}",
        "  lint:",
        "    <<: *default",
        "    filesets: [rtl, waivers]",
        "    default_tool: verilator",
        "    tools:",
        "      verilator:",
        "        mode: lint-only",
        "        verilator_options: [-Wall]",
        "  sim:",
        "    <<: *default",
        "    default_tool: icarus",
        "    tools:",
        "      icarus:",
        # Verilog-2005: the initialisation of Yosys's `reg x = 0` is then an event
        # (ihcube.verify.cocotb_runner.BUILD_ARGS).
        "        iverilog_options: [-g2005]",
        ""])


def write_core(folder, spec):
    """Write ``<name>.core`` and the Verilator waivers ``<name>.vlt`` (the spec's mode's
    waiver files, one after another) into ``folder``, beside ``<name>.v``; return the core
    file's path."""
    from . import version
    folder = pathlib.Path(folder)
    waivers = "\n".join(pathlib.Path(path).read_text()
                        for path in mode_of(spec).lint_waivers)
    (folder / f"{spec.name}.vlt").write_text(waivers)
    core = folder / f"{spec.name}.core"
    core.write_text(core_text(spec, version()))
    return core
