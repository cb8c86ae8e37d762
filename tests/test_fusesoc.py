"""``ihcube verilog --fusesoc``: the FuseSoC core beside the Verilog, built by FuseSoC itself
(from the package index, the dev extra) with its Verilator lint target and its Icarus
simulation target, for a native and an AXI4-Stream fabric. Negative control: a Verilog file
with a width mismatch fails the core's lint target."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ihcube import version
from ihcube.fusesoc import core_name
from ihcube.spec import FabricSpec

FUSESOC = Path(sys.executable).parent / "fusesoc"
pytestmark = [
    pytest.mark.skipif(not FUSESOC.exists(), reason="needs fusesoc (pip install -e '.[dev]')"),
    pytest.mark.skipif(shutil.which("verilator") is None or shutil.which("iverilog") is None,
                       reason="needs Verilator and Icarus Verilog (make system-tools)")]


def generate(folder, *options):
    from ihcube.cli import main
    assert main(["verilog", "--nodes", "5", *options, "--fusesoc", "--out", str(folder)]) == 0


def fusesoc(tmp_path, cores, target, spec):
    """Run ``fusesoc run --target <target>`` on the core of ``spec`` in ``cores``; return
    ``(status, output)``. FuseSoC's configuration and caches stay under ``tmp_path``."""
    home = tmp_path / "home"
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / "config"),
           "XDG_CACHE_HOME": str(home / "cache"), "XDG_DATA_HOME": str(home / "data")}
    result = subprocess.run(
        [str(FUSESOC), "--cores-root", str(cores), "run", "--build-root",
         str(tmp_path / f"build-{target}"), "--target", target,
         core_name(spec, version())], capture_output=True, text=True, env=env, timeout=300)
    return result.returncode, result.stdout + result.stderr


@pytest.mark.slow
@pytest.mark.parametrize("options, spec", [
    ((), FabricSpec(5)),
    (("--interface", "axis"), FabricSpec(5, interface="axis")),
], ids=["native", "axis"])
def test_fusesoc_lints_and_simulates_the_core(tmp_path, options, spec):
    cores = tmp_path / "cores"
    generate(cores, *options)
    assert sorted(path.name for path in cores.iterdir()) == [
        f"{spec.name}.{suffix}" for suffix in ("core", "v", "vlt")]
    for target, tool in (("lint", "verilator"), ("sim", "icarus")):
        status, output = fusesoc(tmp_path, cores, target, spec)
        assert status == 0, output[-3000:]
        assert f"{target}-{tool}" in output  # the build folder FuseSoC ran the tool in


def test_the_lint_target_catches_a_width_mismatch(tmp_path):
    spec = FabricSpec(5)
    cores = tmp_path / "cores"
    generate(cores)
    verilog = cores / f"{spec.name}.v"
    text = verilog.read_text()
    marker = f"module {spec.name}("
    verilog.write_text(text.replace("  input clk;\n", "  input clk;\n  wire [1:0] bad = clk;\n")
                       if marker in text else text)
    status, output = fusesoc(tmp_path, cores, "lint", spec)
    assert status != 0 and "%Warning-WIDTH" in output, output[-3000:]


@pytest.mark.slow
def test_the_flag_without_options_changes_nothing_else(tmp_path, capsys):
    """The Verilog is the same with or without ``--fusesoc``; the core names the top."""
    from ihcube.cli import main
    generate(tmp_path / "with")
    assert main(["verilog", "--nodes", "5", "--out", str(tmp_path / "without")]) == 0
    name = FabricSpec(5).name
    assert ((tmp_path / "with" / f"{name}.v").read_bytes()
            == (tmp_path / "without" / f"{name}.v").read_bytes())
    core = (tmp_path / "with" / f"{name}.core").read_text()
    assert core.startswith("CAPI=2:\n") and f"toplevel: {name}\n" in core
