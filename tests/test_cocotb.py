"""The emitted Verilog in Icarus Verilog: the cocotb regression of
``verify/cocotb_tb/fabric_tb.py``.

For every size the fabric's Verilog is generated and compiled once, and all of its cocotb tests
run in one simulator run (starting the simulator costs more than most tests); the case fails
with the message of every cocotb test that failed or never reported. One case per size keeps
the xdist workers from waiting for each other's simulator. ``ihcube cocotb --nodes N [--test
NAME]`` runs the same regression by hand.
"""

import ast
import re
import shutil

import pytest

from ihcube.verify.cocotb_runner import (RECONFIGURABLE_ONLY, TESTBENCH_PATH, TESTS, Settings,
                                         applicable, build, run)
from ihcube.generate import fabric_verilog
from ihcube.verify.faults import faulty_router

pytest.importorskip("cocotb_tools.runner", reason="needs cocotb (pip install -e '.[dev]')")
pytestmark = pytest.mark.skipif(shutil.which("iverilog") is None,
                                reason="needs Icarus Verilog (make system-tools installs it)")

# Largest first, so that the longest runs start early.
SIZES = (32, 26, 13, 8, 5, 3, 2, 1)


def regression(tmp_path, settings, *, verilog=None, tests=None):
    """Build the fabric of ``settings`` (or ``verilog``) in ``tmp_path`` and run ``tests``;
    return a failure report of the cocotb tests that did not pass, empty if all did."""
    build(settings, tmp_path, verilog=verilog)
    outcomes = run(settings, tmp_path, tests=tests)
    return "\n\n".join(f"cocotb test {outcome.name} {outcome.status}:\n{outcome.message}"
                       for outcome in outcomes if not outcome.passed)


def test_the_runner_knows_every_cocotb_test():
    """``ihcube.verify.cocotb_runner.TESTS`` names the testbench's cocotb tests, all of them."""
    source = (TESTBENCH_PATH / "cocotb_tb" / "fabric_tb.py").read_text()
    tests = [node.name for node in ast.parse(source).body
             if isinstance(node, ast.AsyncFunctionDef)
             and any("cocotb.test" in ast.unparse(decorator) for decorator in node.decorator_list)]
    assert tuple(tests) == TESTS


def expect_passed(report, what, where):
    """Fail the pytest case if a cocotb test did not pass."""
    if report:
        pytest.fail(f"on {what} ({where / 'results.xml'}):\n{report}", pytrace=False)


@pytest.mark.parametrize("n", [n if n == 5 else pytest.param(n, marks=pytest.mark.slow)
                               for n in SIZES])  # make check: one run
def test_verilog_fabric(tmp_path, n):
    """Route selection, all-pairs unicast, broadcast from every source, random stress under
    eject backpressure, refusal of bad destinations and zero-load latency (see
    ``verify/cocotb_tb/fabric_tb.py``), checked by :func:`ihcube.verify.scoreboard.check_run`."""
    expect_passed(regression(tmp_path, Settings(n)), f"the {n}-node fabric", tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("router, test, complaint", [
    # n = 5: node 1 to node 4 differs in bits 2 and 0; link 2 does not exist from node 1.
    (faulty_router("mask-blind-route"), "route_selection",
     r"router chose wrong:\n\s*\(1, 4, \[0\], \[\]\)"),
    (faulty_router("broken-travel"), "broadcast_from_every_source",
     r"the scoreboard found problems"),
])
def test_cocotb_catches_a_broken_fabric(tmp_path, router, test, complaint):
    """A broken router in the Verilog fails its cocotb test, and so the pytest case, with a
    message that says how."""
    n = 5
    report = regression(tmp_path, Settings(n), verilog=fabric_verilog(n, router=router),
                        tests=[test])
    assert re.search(f"cocotb test {test} failed:", report), report
    with pytest.raises(pytest.fail.Exception, match=complaint):
        expect_passed(report, f"a {n}-node fabric of {router.__name__}", tmp_path)


@pytest.mark.parametrize("args, message", [
    (["--nodes", "0"], "Node count must be a positive integer, not 0"),
    (["--nodes", "3", "--width", "x"], "Payload width must be a positive integer, not 'x'"),
    (["--nodes", "3", "--seed", "0"], "Seed must be a positive integer, not 0"),
    (["--nodes", "3", "--stress", "-1"],
     "Stress request count must be a positive integer, not -1"),
])
def test_bad_parameters_are_one_line_and_status_2(capsys, args, message):
    """``make cocotb`` with a bad parameter: one line and status 2, before anything runs."""
    from ihcube.cli import main
    assert main(["cocotb", *args]) == 2
    captured = capsys.readouterr()
    assert captured.err == f"ihcube cocotb: error: {message}\n"


def test_the_reconfiguration_tests_apply_to_reconfigurable_fabrics_only():
    """A fixed fabric's regression leaves out the tests that take a reconfigurable one (they
    would pass without checking anything); a reconfigurable fabric's runs them all."""
    assert set(RECONFIGURABLE_ONLY) <= set(TESTS)
    assert not set(applicable(Settings(6))) & set(RECONFIGURABLE_ONLY)
    assert applicable(Settings(6, reconfigurable=True)) == TESTS


@pytest.mark.slow
def test_reconfiguration_tests_asked_for_on_a_fixed_fabric_are_skipped(tmp_path):
    """Asked for by name on a fixed fabric, ``fault`` and ``reconfiguration`` report
    ``skipped``, not ``passed``."""
    settings = Settings(3)
    build(settings, tmp_path)
    outcomes = run(settings, tmp_path, tests=RECONFIGURABLE_ONLY)
    assert [(outcome.name, outcome.status) for outcome in outcomes] == \
        [(name, "skipped") for name in RECONFIGURABLE_ONLY]


@pytest.mark.slow
def test_verilog_reconfigurable_fabric(tmp_path, n=6):
    """The reconfiguration procedure on the emitted Verilog of a reconfigurable fabric
    (``reconfiguration`` in ``verify/cocotb_tb/fabric_tb.py``): a shrink under a mask and a
    grow under another, every phase checked by the scoreboard in logical addresses; and a
    fail-stop fault (``fault``): a reset in the middle of traffic, the configuration of
    ``ihcube reconfigure`` loaded in the first cycle after it, traffic on the survivors."""
    settings = Settings(n, reconfigurable=True)
    expect_passed(regression(tmp_path, settings, tests=("reconfiguration", "fault")),
                  f"the {n}-router reconfigurable fabric", tmp_path)


@pytest.mark.slow
def test_verilog_reconfiguration_catches_a_router_without_its_mask(tmp_path):
    """Negative control: in Verilog whose router 0 reads mask 0 instead of the
    configuration's, the cocotb reconfiguration and fault tests fail."""
    settings = Settings(6, reconfigurable=True)
    head, router0 = fabric_verilog(settings.spec).split(" router0 (\n")
    broken = head + " router0 (\n" + router0.replace(".mask(mask)", ".mask(3'h0)", 1)
    report = regression(tmp_path, settings, verilog=broken, tests=("reconfiguration", "fault"))
    assert "cocotb test reconfiguration failed" in report, report
    assert "cocotb test fault failed" in report, report
