"""``docs/howto-cocotb.md``'s example, run as the page writes it: its first code block saved as
``pe_tb.py``, its second run beside it (a native and an AXI4-Stream fabric of 5 nodes).
Negative control: the same testbench on a fabric whose buffers drop messages fails."""

import pathlib
import re
import shutil

import pytest

pytest.importorskip("cocotbext.axi", reason="needs cocotbext-axi (pip install -e '.[dev]')")
pytestmark = pytest.mark.skipif(shutil.which("iverilog") is None,
                                reason="needs Icarus Verilog (make system-tools installs it)")

PAGE = pathlib.Path(__file__).resolve().parents[1] / "docs" / "howto-cocotb.md"


def blocks():
    return re.findall(r"```py\n(.*?)```", PAGE.read_text(), re.S)


def test_the_page_has_the_testbench_and_its_run():
    testbench, running = blocks()
    assert "@cocotb.test()" in testbench and "run_testbench" in running


@pytest.mark.slow
def test_the_example_runs_as_written(tmp_path, monkeypatch):
    testbench, running = blocks()
    (tmp_path / "pe_tb.py").write_text(testbench)
    monkeypatch.chdir(tmp_path)
    exec(compile(running, str(PAGE), "exec"), {})


@pytest.mark.slow
def test_the_example_catches_a_fabric_that_drops(tmp_path):
    from ihcube.cocotb.runner import run_testbench
    from ihcube.generate import fabric_verilog
    from ihcube.spec import FabricSpec
    from ihcube.verify.faults import faulty_router
    testbench, _ = blocks()
    (tmp_path / "pe_tb.py").write_text(testbench)
    spec = FabricSpec(5)
    outcomes = run_testbench(spec, "pe_tb", tmp_path / "build", path=tmp_path,
                             verilog=fabric_verilog(spec, router=faulty_router("dropping-buffer")))
    assert [outcome.status for outcome in outcomes] == ["failed"], outcomes
