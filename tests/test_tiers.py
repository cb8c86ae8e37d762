"""The test tiers: ``make check`` (the tests not marked ``slow``) and ``make test`` (all).

``make check`` must keep a test of every topic (each test file), the lockstep of model and
RTL, a formal job and a cocotb run among them; ``make test`` must run every test the files
hold but the opt-in ``long`` ones; and no tier may hang on an environment variable.
"""

import os
import pathlib
import re
import subprocess
import sys

import pytest

from tiers import shared

ROOT = pathlib.Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"


@shared
def collected(*options):
    """The node ids pytest collects from ``tests/`` with ``options`` (e.g. ``-m 'not slow'``),
    once a run (:func:`tiers.shared`: the xdist workers share it)."""
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q",
         *options, str(TESTS)], cwd=ROOT, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return {line for line in result.stdout.splitlines() if "::" in line}


@pytest.fixture(scope="module")
def tiers():
    """``(every test, the check tier, the long tier)``: what ``make test``, ``make check``
    and ``make test-long`` select."""
    return collected(), collected("-m", "not slow"), collected("-m", "long")


def recipe(target):
    """The pytest options of the Makefile's ``target`` (its command lines, ``python -m pytest``
    left out)."""
    text = (ROOT / "Makefile").read_text()
    block = re.search(rf"^{target}:.*\n((?:\t.*\n)+)", text, re.M)
    assert block, f"no target {target} in the Makefile"
    assert "$(BIN)/python -m pytest " in block.group(1)
    return block.group(1).replace("$(BIN)/python -m pytest ", "")


def test_make_check_and_make_test_select_their_tiers():
    assert "-m 'not slow'" in recipe("check")
    assert " -m " not in recipe("test") and recipe("test").strip().endswith(" tests")
    assert "-m long" in recipe("test-long")
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^make test$", ci, re.M)


def files_of(nodes):
    """The test files of pytest node ids."""
    return {node.split("::")[0].split("/")[-1] for node in nodes}


@pytest.mark.slow
def test_every_file_has_tests_in_the_check_tier(tiers):
    everything, check, _ = tiers
    files = {path.name for path in TESTS.glob("test_*.py")}
    assert files_of(everything) == files
    assert files_of(check) == files


def test_a_file_left_out_of_the_check_tier_is_seen():
    """Negative control: a file whose every test is slow is missing from the check tier's."""
    everything = {"tests/test_a.py::test_x", "tests/test_b.py::test_y[1]"}
    assert files_of(everything - {"tests/test_b.py::test_y[1]"}) != files_of(everything)


@pytest.mark.slow
def test_the_check_tier_is_a_real_part_of_the_suite(tiers):
    """The check tier leaves tests out (the slow ones) and keeps the comparisons that matter
    for an edit: model against RTL, a formal job, a cocotb run on the emitted Verilog."""
    everything, check, long = tiers
    assert check < everything
    assert not long & everything
    for wanted in ("test_model.py::test_lockstep_with_rtl[",
                   "test_wormhole_model.py::test_lockstep_with_rtl[",
                   "test_formal.py::test_formal_job[", "test_cocotb.py::test_verilog_fabric["):
        assert any(wanted in node for node in check), wanted
        assert any(wanted in node for node in everything - check), wanted


@pytest.mark.slow
def test_the_long_tier_holds_only_what_make_test_leaves_out(tiers):
    everything, _, long = tiers
    assert long and not long & everything


def test_no_tier_is_an_environment_variable():
    """The tiers are markers: no test reads an ``IHCUBE_*LOCKSTEP`` variable any more."""
    for path in TESTS.glob("*.py"):
        assert not re.search(r"IHCUBE_\w*LOCKSTEP", path.read_text()), path.name


_CALLS = []


@shared
def _counted(nodes, depth=1):
    """A shared function that counts its runs (in this process: the run's cache file keeps
    the result for the other workers)."""
    _CALLS.append((nodes, depth))
    return nodes * depth


def test_shared_runs_once_however_the_call_is_spelt():
    """Positional, keyword and default spellings of one call share one run (the lockstep
    tests ask for their RTL record in several spellings); another call runs again."""
    key = os.getpid()  # a value no other worker asks for, so this process runs it
    assert _counted(key) == _counted(key, 1) == _counted(nodes=key, depth=1) == key
    assert _CALLS.count((key, 1)) == 1
    assert _counted(key, 2) == 2 * key and _CALLS.count((key, 2)) == 1
