"""The board self-test (generators, fabric, checkers) in the Amaranth simulator, its report
line, the board tops, the FPGA build command line, and one real build of a tiny fabric."""

import json
import pathlib
import shutil
import time

import pytest
from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import wiring

from ihcube.boards import build
from ihcube.boards.checker import Checker, CheckerErrors
from ihcube.boards.selftest import SelfTest, SelfTestErrors
from ihcube.boards.traffic import (LFSR_SHARERS, SEQ_BITS, lfsr_step, payload_check,
                                   phase_shift, seed_of)
from ihcube.boards.uart import ReportLine, UARTTransmitter
from ihcube.rtl.message import Kind
from ihcube.spec import FabricSpec, Stages
from ihcube.verify.faults import RisingWriteChecker, faulty_router
from ihcube.verify.harness import simulate
from tiers import below, slow_unless

ROOT = pathlib.Path(__file__).resolve().parent.parent


def run_selftest(dut, cycles):
    """Run ``dut`` (a :class:`SelfTest`) for ``cycles`` cycles, counting in Python what its
    counters count (every injection and delivery handshake at the fabric's ports, and the
    deliveries still owed whenever a round ends). Returns (outputs, observed)."""
    fabric, n = dut.fabric, dut.n
    observed = {"sent": 0, "broadcasts": 0, "delivered": 0, "owed_at_round_end": []}
    outputs = {}

    async def testbench(ctx):
        owed = 0
        for _ in range(cycles):
            for port in fabric.inject:
                if ctx.get(port.valid) and ctx.get(port.ready):
                    observed["sent"] += 1
                    if ctx.get(port.payload.kind) == Kind.BROADCAST:
                        observed["broadcasts"] += 1
                        owed += n - 1
                    else:
                        owed += 1
            for port in fabric.eject:
                if ctx.get(port.valid) and ctx.get(port.ready):
                    observed["delivered"] += 1
                    owed -= 1
            if ctx.get(dut.round_done):
                observed["owed_at_round_end"].append(owed)
            await ctx.tick()
        for name in ("passed", "failed", "errors", "rounds", "sent", "delivered",
                     "broadcasts"):
            outputs[name] = ctx.get(getattr(dut, name))

    simulate(dut, testbench, "selftest")
    return outputs, observed


@pytest.mark.slow
@pytest.mark.parametrize("n, depth, cycles, width", slow_unless(
    [(5, 1, 2500, 32), (8, 2, 2000, 32), (8, 1, 2000, 24)], below(8)))
def test_selftest_passes_and_counts_right(n, depth, cycles, width):
    run, drain = 300, 200
    dut = SelfTest(n, width, depth=depth, run_cycles=run, drain_cycles=drain, rate=8,
                   broadcast_share=2)
    outputs, observed = run_selftest(dut, cycles)
    assert outputs["errors"] == 0
    assert (outputs["passed"], outputs["failed"]) == (1, 0)
    # Each round is run_cycles of traffic and a drain no longer than drain_cycles.
    assert cycles // (run + drain) <= outputs["rounds"] <= cycles // run
    assert outputs["rounds"] == len(observed["owed_at_round_end"])
    assert observed["owed_at_round_end"] == [0] * outputs["rounds"]
    for name in ("sent", "broadcasts", "delivered"):
        assert outputs[name] == observed[name], name
    # Real traffic: well over a message per node every 10 cycles, broadcasts among them.
    assert observed["sent"] > n * cycles // 10
    assert observed["broadcasts"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("router, complaint", [
    # Buffers that break every seventh message; the corrupted bit is a payload check bit.
    (faulty_router("dropping-buffer", every=7, first=7), SelfTestErrors.LOST),
    (faulty_router("duplicating-buffer", every=7, first=7), SelfTestErrors.ORDER),
    (faulty_router("corrupting-buffer", every=7, first=7, bit=20), SelfTestErrors.CORRUPT),
    (faulty_router("broken-travel"), SelfTestErrors.LOST),
])
@pytest.mark.parametrize("width", slow_unless([32, 24], lambda width: width == 32))
def test_selftest_fails_on_a_broken_fabric(router, complaint, width):
    dut = SelfTest(5, width, router=router, run_cycles=300, drain_cycles=200,
                   broadcast_share=4)
    outputs, _ = run_selftest(dut, 1200)
    assert (outputs["passed"], outputs["failed"]) == (0, 1)
    assert outputs["errors"] >> complaint & 1, f"errors {outputs['errors']:#b}"


class _CheckerBench(wiring.Component):
    """A :class:`Checker` of node ``node`` fed unicasts from ``src`` whose payload is the
    sequence number ``seq`` and its :func:`payload_check`, as the generator makes it."""

    def __init__(self, checker, n, node):
        self.checker, self._n, self._node = checker, n, node
        self.valid, self.src, self.seq = Signal(), Signal(range(n)), Signal(SEQ_BITS)
        super().__init__({})

    def elaborate(self, platform):
        m = Module()
        checker = m.submodules.checker = self.checker
        message = checker.eject.payload
        m.d.comb += [
            checker.eject.valid.eq(self.valid),
            message.src.eq(self.src),
            message.dest.eq(self._node),
            message.kind.eq(Kind.UNICAST),
            message.payload.eq(Cat(self.seq, payload_check(
                self._n, 32, message.src, self.seq, message.kind, message.dest))),
        ]
        return m


def deliver(checker_class, deliveries, n=8, node=3):
    """Offer ``deliveries`` (each ``(src, seq)``, or None for an idle cycle) to a checker
    that is always ready, one a cycle; return its errors."""
    bench = _CheckerBench(checker_class(n, node), n, node)
    result = {}

    async def testbench(ctx):
        ctx.set(bench.checker.chance, 0)  # below ready_rate: always ready
        for delivery in deliveries:
            ctx.set(bench.valid, delivery is not None)
            if delivery is not None:
                ctx.set(bench.src, delivery[0])
                ctx.set(bench.seq, delivery[1])
            await ctx.tick()
        ctx.set(bench.valid, 0)
        await ctx.tick().repeat(3)
        result["errors"] = ctx.get(bench.checker.errors)

    simulate(bench, testbench, "checker")
    return result["errors"]


# Deliveries one a cycle, back to back from one source (5) and between two (5 and 6).
IN_ORDER = [(5, 1), (5, 2), (5, 3), (6, 9), (5, 4), (5, 7), None, (5, 8), (6, 10)]
BACK_TO_BACK_DUPLICATE = [(5, 1), (5, 2), (5, 2), (5, 3)]
BACK_TO_BACK_OLDER = [(6, 9), (5, 4), (5, 3)]
DUPLICATE_AFTER_A_GAP = [(5, 1), (5, 2), None, (5, 2)]
DUPLICATE_AFTER_ANOTHER_SOURCE = [(5, 1), (5, 2), (6, 7), (5, 2)]


def test_checker_takes_sequence_numbers_in_order_back_to_back():
    assert deliver(Checker, IN_ORDER) == 0


@pytest.mark.parametrize("deliveries", [BACK_TO_BACK_DUPLICATE, BACK_TO_BACK_OLDER,
                                        DUPLICATE_AFTER_A_GAP, DUPLICATE_AFTER_ANOTHER_SOURCE])
def test_checker_catches_a_duplicate_or_an_older_number(deliveries):
    assert deliver(Checker, deliveries) == 1 << CheckerErrors.ORDER


def test_a_checker_that_writes_its_table_on_the_rising_edge_misses_back_to_back_duplicates():
    # Negative control of the falling-edge write: the same deliveries, the table written
    # as it is read; the duplicate (or older number) right after its source's last delivery
    # reads the word from before that delivery and passes. With a cycle between, it is caught.
    assert deliver(RisingWriteChecker, IN_ORDER) == 0
    assert deliver(RisingWriteChecker, BACK_TO_BACK_DUPLICATE) == 0
    assert deliver(RisingWriteChecker, BACK_TO_BACK_OLDER) == 0
    assert deliver(RisingWriteChecker, DUPLICATE_AFTER_A_GAP) == 1 << CheckerErrors.ORDER


def lfsr_views(view, cycles=600):
    """The bits each of the :data:`LFSR_SHARERS` nodes sees of one LFSR over ``cycles`` cycles,
    ``view(state, phase)`` giving a node's view: ``{(phase, bit): tuple of bits}``."""
    state = Signal(32, init=seed_of(0))
    views = [Signal(32, name=f"view{phase}") for phase in range(LFSR_SHARERS)]
    m = Module()
    m.d.sync += state.eq(lfsr_step(state))
    m.d.comb += [v.eq(view(state, phase)) for phase, v in enumerate(views)]
    seen = {(phase, bit): [] for phase in range(LFSR_SHARERS) for bit in range(32)}

    async def testbench(ctx):
        for _ in range(cycles):
            for phase, v in enumerate(views):
                value = ctx.get(v)
                for bit in range(32):
                    seen[phase, bit].append(value >> bit & 1)
            await ctx.tick()

    simulate(m, testbench, "lfsr")
    return {key: tuple(bits) for key, bits in seen.items()}


def delayed_copies(views, lags=64):
    """Pairs of different nodes one of whose bits repeats a bit of the other up to ``lags``
    cycles later."""
    starts = {}
    for (phase, _bit), bits in views.items():
        for lag in range(lags + 1):
            starts.setdefault(bits[lag:lag + 400], set()).add(phase)
    return {frozenset(phases) for phases in starts.values() if len(phases) > 1}


def test_nodes_sharing_an_lfsr_do_not_see_each_others_bits_delayed():
    assert delayed_copies(lfsr_views(phase_shift)) == set()


def test_windows_of_one_lfsr_would_be_delayed_copies():
    # Negative control: each node a rotation of the same state (a window of one register),
    # not an XOR of two of its bits. Node k's bits are then node 0's a few cycles later.
    def rotated(state, phase):
        return Cat(state[phase:], state[:phase]) if phase else state
    assert len(delayed_copies(lfsr_views(rotated))) > 0


def test_xor_at_distances_one_and_two_would_repeat_node_0_a_cycle_later():
    # Negative control of the distances phase_shift leaves out (1 and 2: the LFSR's taps).
    def near(state, phase):
        return state ^ Cat(state[phase:], state[:phase]) if phase else state
    assert frozenset({0, 1}) in delayed_copies(lfsr_views(near))


class _Reporter(wiring.Component):
    def __init__(self, template, divisor):
        self.line = ReportLine(template)
        self.uart = UARTTransmitter(divisor)
        super().__init__({})

    def elaborate(self, platform):
        m = Module()
        m.submodules.line, m.submodules.uart = self.line, self.uart
        wiring.connect(m, self.line.data, self.uart.data)
        return m


def test_report_line_on_the_uart():
    divisor = 5
    dut = _Reporter(["n=26 sent=", ("sent", 32), " err=", ("err", 7), " ok=", ("ok", 1),
                     "\r\n"], divisor)
    received = bytearray()

    async def testbench(ctx):
        ctx.set(dut.line.sent, 0x00C0FFEE)
        ctx.set(dut.line.err, 0x45)
        ctx.set(dut.line.ok, 1)
        ctx.set(dut.line.start, 1)
        await ctx.tick()
        ctx.set(dut.line.start, 0)
        ctx.set(dut.line.sent, 0)  # taken at the start pulse, not later
        line = 0
        for _ in range(40 * 10 * divisor):
            previous, line = line, ctx.get(dut.uart.tx)
            if previous == 1 and line == 0:  # a start bit's falling edge: sample mid-bit
                await ctx.tick().repeat(divisor // 2)
                assert ctx.get(dut.uart.tx) == 0
                value = 0
                for bit in range(8):
                    await ctx.tick().repeat(divisor)
                    value |= ctx.get(dut.uart.tx) << bit
                await ctx.tick().repeat(divisor)
                assert ctx.get(dut.uart.tx) == 1, "stop bit"
                received.append(value)
                line = 1
            await ctx.tick()

    simulate(dut, testbench, "report")
    assert received.decode() == "n=26 sent=00C0FFEE err=45 ok=1\r\n"


@pytest.mark.parametrize("board", sorted(build.BOARDS))
def test_board_tops_elaborate(board):
    from ihcube.boards.top import BoardTop
    plan = build.board_platform(board).build(BoardTop(3), name="top", do_build=False)
    files = plan.files
    constraints = files.get("top.lpf") or files.get("top.pcf")
    assert constraints is not None
    text = constraints.decode() if isinstance(constraints, bytes) else constraints
    assert "uart" in text and "led" in text


@pytest.mark.parametrize("args, message", [
    (["bitstream", "--board", "nexys", "--nodes", "5"],
     "Board must be one of ulx3s-85f, ulx3s-45f, ulx3s-25f, icebreaker, not 'nexys'"),
    (["synth", "--family", "xilinx", "--nodes", "5"],
     "Family must be one of ecp5, ice40, not 'xilinx'"),
    (["synth", "--nodes", "0"], "Node count must be a positive integer, not 0"),
    (["synth", "--nodes", "abc"], "Node count must be a positive integer, not 'abc'"),
    (["bitstream", "--board", "icebreaker", "--nodes", "-3"],
     "Node count must be a positive integer, not -3"),
    (["synth", "--nodes", "5", "--placer", "fast"],
     "Placer must be one of heap, static, sa, not 'fast'"),
    (["bitstream", "--board", "ulx3s-85f", "--nodes", "5", "--placer", ""],
     "Placer must be one of heap, static, sa, not ''"),
    (["synth", "--nodes", "26", "--switching", "wormhole", "--flit-width", "5"],
     "Flit width must be an integer from 6 (the head flit's routing fields, destination and "
     "kind) to 43 (the whole message: header 11 + payload 32 bits) for 26 nodes, not 5"),
    (["synth", "--nodes", "26", "--switching", "wormhole", "--depth", "2"],
     "Buffer depth is a packet-switching option, not taken with wormhole switching (its "
     "buffers are vc_depth flits), not 2"),
    (["synth", "--nodes", "5", "--ports", "99"],
     "Port count must be an integer from 1 to 4 (D + 1) for 5 nodes, not 99"),
    (["synth", "--nodes", "26", "--router", "26"],
     "Router node must be an integer from 0 to 25, not 26"),
    (["synth", "--nodes", "26", "--router", "0", "--strapped", "--switching", "wormhole"],
     "--strapped builds one packet router: give --router NODE"),
    (["bitstream", "--board", "ulx3s-85f", "--nodes", "5", "--switching", "wormhole"],
     "Switching must be packet for the self-test, not 'wormhole'"),
    (["bitstream", "--board", "ulx3s-85f", "--nodes", "5", "--ports", "2"],
     "Port count must be 1 for the self-test, not 2"),
    (["bitstream", "--board", "ulx3s-85f", "--nodes", "5", "--order", "lsb"],
     "Routing order must be msb for the self-test, not 'lsb'"),
    (["bitstream", "--board", "ulx3s-85f", "--nodes", "5", "--depth", "0"],
     "Buffer depth must be a positive integer, not 0"),
    (["synth-table", "--depths", "1,0"], "Buffer depth must be a positive integer, not 0"),
    (["synth-table", "--staged", "link,2"],
     "Staged rows must be comma-separated names from link, all, not 'link,2'"),
    (["synth-table", "--staged", ""],
     "Staged rows must be comma-separated names from link, all, not ''"),
    (["synth-table", "--pnr-minutes", "0"],
     "Place-and-route time limit must be a positive number of minutes, not '0'"),
    (["synth", "--nodes", "5", "--pnr-minutes", "an hour"],
     "Place-and-route time limit must be a positive number of minutes, not 'an hour'"),
    (["synth", "--nodes", "26", "--strapped"],
     "--strapped builds one packet router: give --router NODE"),
    (["bitstream", "--board", "icebreaker", "--nodes", "8", "--width", "20"],
     "Payload width must be at least 24 for the self-test, not 20"),
    (["bitstream", "--board", "icebreaker", "--nodes", "8", "--width", "wide"],
     "Payload width must be a positive integer, not 'wide'"),
])
def test_bad_parameters_are_one_line_and_status_2(capsys, args, message):
    from ihcube.cli import main
    assert main(args) == 2
    captured = capsys.readouterr()
    assert captured.err == f"ihcube {args[0]}: error: {message}\n"
    assert captured.out == ""


def test_make_bitstream_with_an_unknown_board_lists_the_known_ones():
    import subprocess
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    result = subprocess.run(["make", "-s", "bitstream", "BOARD=nexys", "N=5"], cwd=ROOT,
                            capture_output=True, text=True)
    assert result.returncode != 0
    assert "Board must be one of ulx3s-85f, ulx3s-45f, ulx3s-25f, icebreaker, not 'nexys'" \
        in result.stderr


def test_bitstreams_ask_for_their_placer(monkeypatch, tmp_path):
    """ECP5 self-tests are placed by nextpnr's electrostatic placer unless told otherwise
    (the default one leaves the 26-node ULX3S self-test unroutable)."""
    asked = []

    def fake_build(family, top, name, build_dir, platform, synth_opts="",
                   placer=None):
        asked.append(placer)
        return {"fits": False}
    monkeypatch.setattr(build, "_build", fake_build)
    build.bitstream("ulx3s-85f", FabricSpec(3), out=tmp_path)
    build.bitstream("ulx3s-85f", FabricSpec(3), out=tmp_path, placer="heap")
    build.bitstream("icebreaker", FabricSpec(3), out=tmp_path)
    assert asked == ["static", "heap", None]


def test_a_narrower_self_test_is_asked_for_and_named(monkeypatch, tmp_path):
    """A payload narrower than 32 bits is an option of the bitstream, in its name and figures;
    32 stays the default and its name has no width."""
    built = []

    def fake_build(family, top, name, build_dir, platform, synth_opts="",
                   placer=None):
        built.append((name, len(top.selftest.fabric.inject[0].payload.payload)))
        return {"fits": False}
    monkeypatch.setattr(build, "_build", fake_build)
    figures = build.bitstream("icebreaker", FabricSpec(8, 24), out=tmp_path)
    build.bitstream("icebreaker", FabricSpec(8), out=tmp_path)
    assert built == [("ihcube_selftest_n8_w24", 24), ("ihcube_selftest_n8", 32)]
    assert figures["payload_width"] == 24


@pytest.mark.slow
def test_a_tiny_fabric_synthesises_and_places_on_ice40(tmp_path):
    # An explicit placer, so that the option reaches nextpnr and is taken.
    figures = build.synth(FabricSpec(2), "ice40", out=tmp_path / "results",
                          build_root=tmp_path / "build", placer="heap")
    assert figures["fits"], figures.get("error")
    assert figures["placer"] == "heap"
    # Two one-link routers: their buffers alone hold 2 x 2 x 32 payload bits of flip-flops.
    assert figures["ffs"] >= 2 * 2 * 32
    # Outputs that are constants at n = 2 (the delivered `dest` and `travel`, and with no
    # refusals `refused` and `refused_count`) leave no shell flip-flop to subtract.
    assert figures["shell_ffs"] < figures["shell_ffs_declared"]
    assert figures["luts"] > 100
    assert figures["fmax_mhz"] > 10
    assert (tmp_path / "results" / "synth_ice40_ihcube_n2_w32_heap.json").exists()



class _Ports(wiring.Component):
    """Four inputs and six outputs. With ``registered``, three flip-flops, two outputs that
    are constants and one that is another's bit again, so a shell around it keeps three of
    its six capture flip-flops; without, no flip-flop and six different outputs, so the
    shell keeps all six."""

    def __init__(self, registered):
        self._registered = registered
        super().__init__({"a": wiring.In(4), "q": wiring.Out(3), "zero": wiring.Out(2),
                          "again": wiring.Out(1)})

    def elaborate(self, platform):
        m = Module()
        mixed = self.a[:3] ^ self.a[1:]
        if self._registered:
            r = Signal(3)
            m.d.sync += r.eq(mixed)
            m.d.comb += [self.q.eq(r), self.zero.eq(0), self.again.eq(r[0])]
        else:
            m.d.comb += [self.q.eq(mixed), self.zero.eq(self.a[:2] & self.a[2:]),
                         self.again.eq(self.a.all())]
        return m


@pytest.mark.slow
def test_a_build_counts_the_component_s_flip_flops_not_the_shell_s(tmp_path):
    """The flip-flops of a build are the component's own (and the platform's reset logic):
    the shell's that Yosys removed (constant outputs, an output bit shared) are not
    subtracted. Counting every port bit's shell flip-flop, as builds once did, finds the
    three flip-flops of the registered component as none."""
    from ihcube.boards.shell import SynthShell
    figures = {}
    for registered in (False, True):
        shell = SynthShell(_Ports(registered))
        assert shell.shell_ffs == 10 and shell.input_ffs == 4
        figures[registered] = build._build("ice40", shell, f"ports_{int(registered)}",
                                           tmp_path / f"build{int(registered)}",
                                           build.board_platform("icebreaker", 60))
        assert figures[registered]["fits"], figures[registered].get("error")
    assert figures[False]["shell_ffs"] == 4 + 6
    assert figures[True]["shell_ffs"] == 4 + 3
    # The platform's reset logic is in both; the registered component has three more.
    assert figures[True]["ffs"] == figures[False]["ffs"] + 3
    assert figures[True]["yosys_ffs"] == figures[False]["yosys_ffs"] + 3


def test_a_failed_yosys_run_records_no_figures(monkeypatch, tmp_path):
    """When Yosys fails, the build says so and records no cell counts (it once wrote 0 LUTs
    and minus the shell's flip-flops)."""
    monkeypatch.setenv("YOSYS", shutil.which("false") or "false")
    figures = build.synth(FabricSpec(2), "ice40", out=tmp_path / "results",
                          build_root=tmp_path / "build")
    assert not figures["fits"]
    assert figures["error"].startswith("Yosys failed")
    for key in ("yosys_luts", "yosys_ffs", "cells_estimate", "luts", "ffs", "fmax_mhz",
                "luts_per_router", "ffs_per_router"):
        assert key not in figures, key
    line = build.summary(figures)
    assert "Yosys failed" in line and "FFs" not in line and "logic cells" not in line

# --- make synth-table: its builds, resuming, and the table ---------------------------------

def test_synth_table_builds_cheap_rows_first_and_says_why_a_row_cannot_be_built():
    jobs = build.table_jobs([4, 26, 32], depths=(1, 2), router_sizes=(26,),
                            flit_widths=(5, 16), vcs=(1, 3), staged=())

    def what(job):
        spec = job.get("spec")
        if spec is None:
            return (job["nodes"], 1, job["router"], job["flit_width"], job["vcs"], False)
        wormhole = spec.wormhole
        return (spec.nodes, spec.depth, job["router"], wormhole and wormhole.flit_width,
                wormhole and wormhole.vcs, wormhole is not None)
    what = [what(job) for job in jobs]
    assert what == [
        (26, 1, 0, None, None, False), (26, 2, 0, None, None, False),
        (4, 1, None, None, None, False), (26, 1, None, None, None, False),
        (26, 1, 0, 5, 1, False), (26, 1, 0, 5, 3, False),
        (26, 1, 0, 16, 1, True), (26, 1, 0, 16, 3, True),
        (4, 2, None, None, None, False), (26, 2, None, None, None, False),
        (32, 1, None, None, None, False), (32, 2, None, None, None, False),
        # last, the wormhole fabrics, as the routers (the 5-bit one says why it is not built)
        (26, 1, None, 5, 1, False), (26, 1, None, 5, 3, False),
        (26, 1, None, 16, 1, True), (26, 1, None, 16, 3, True),
    ]
    # A 5-bit flit cannot hold the 6-bit routing fields of a 26-node fabric: the row says so.
    assert jobs[4]["error"] == ("Flit width must be an integer from 6 (the head flit's "
                                "routing fields, destination and kind) to 43 (the whole "
                                "message: header 11 + payload 32 bits) for 26 nodes, not 5")
    # An 8-bit flit holds them (src runs on into the second flit): the table's rows are built.
    assert not any("error" in job for job in build.table_jobs([], router_sizes=(26,)))
    assert jobs[12]["error"] == jobs[4]["error"]
    assert jobs[6]["spec"].wormhole.flit_width == 16 and jobs[7]["spec"].wormhole.vcs == 3
    assert jobs[14]["spec"] == jobs[6]["spec"]
    # With link stages, the router of node 0 and the fabric come again, staged, after the
    # wormhole routers and before the large packet fabrics.
    staged = build.table_jobs([4, 26, 32], depths=(1, 2), router_sizes=(26,),
                              flit_widths=(16,), vcs=(1,), staged=[Stages(link=1)])
    assert [(job["spec"].nodes, job["spec"].depth, job["router"], job["spec"].stages.link)
            for job in staged[5:9]] == [(26, 1, 0, 1), (26, 2, 0, 1),
                                         (26, 1, None, 1), (26, 2, None, 1)]
    assert not any(job["spec"].stages for job in staged[:5] + staged[9:])


def _fake_builds(monkeypatch, fmax=100.0, stop=(), fail=None):
    """Replace the tools by a fake that records what it builds (and, as the real one does,
    the digest of the plan it was given); builds named in ``stop`` are stopped by the time
    limit, as :func:`build._build` records one; builds named in ``fail`` (a dict) fail with
    that exit status, as a tool that reports an error or cannot run does."""
    built = []

    def fake_build(family, top, name, build_dir, platform, synth_opts="",
                   placer=None, pnr_minutes=None, place=True):
        built.append(name)
        digest = build.design_digest(build._plan(top, name, platform, synth_opts, placer))
        if not place:  # Yosys only, as build._build records it
            return {"fits": True, "placed": False, "cells_estimate": 5000, "yosys_luts": 5000,
                    "yosys_ffs": 400, "yosys_ram": 0, "seconds_yosys": 1.0,
                    "seconds_total": 1.0, "design_digest": digest, "placer": "default"}
        if fail and name in fail:
            return {"fits": False, "exit_status": fail[name], "seconds_yosys": 1.0,
                    "seconds_total": 1.0, "error": f"exit status {fail[name]}",
                    "design_digest": digest}
        if name in stop:
            assert pnr_minutes is not None
            return {"fits": False, "stopped": True, "cells_estimate": 5000, "yosys_luts": 5000,
                    "yosys_ffs": 400, "yosys_ram": 0, "seconds_yosys": 1.0,
                    "seconds_nextpnr": pnr_minutes * 60, "seconds_total": 1 + pnr_minutes * 60,
                    "error": f"stopped after {pnr_minutes:g} min", "design_digest": digest}
        return {"fits": True, "luts": 1000, "ffs": 400, "fmax_mhz": fmax, "ram": 0,
                "luts_available": 83640, "target_mhz": 150.0, "seconds_yosys": 1.0,
                "seconds_nextpnr": 2.0, "seconds_total": 3.0, "design_digest": digest,
                "placer": placer or "default"}  # as build._build records it
    monkeypatch.setattr(build, "_build", fake_build)
    return built


def test_synth_table_builds_a_row_stopped_by_its_time_limit_again(monkeypatch, tmp_path,
                                                                   capsys):
    """A row whose place and route was stopped (``--pnr-minutes``) shows so, and the next run
    builds it again, while a finished row is kept."""
    built = _fake_builds(monkeypatch, stop={"ihcube_n3_w32"})
    options = dict(out=tmp_path, depths=(1,), router_sizes=(), previous=None, pnr_minutes=30)
    build.table("ecp5", [2, 3], **options)
    assert built == ["ihcube_n2_w32", "ihcube_n3_w32"]
    assert "| 3 nodes, fabric, depth 1 | >= 5,000 (Yosys) / - / not placed in 30 min " \
        "(stopped) |" in capsys.readouterr().out
    build.table("ecp5", [2, 3], **options)
    assert built[2:] == ["ihcube_n3_w32"]
    # --kept-only shows the stopped row as it is and builds nothing.
    build.table("ecp5", [2, 3], only_kept=True, **options)
    assert len(built) == 3
    assert "not placed in 30 min (stopped)" in capsys.readouterr().out


@pytest.mark.slow
def test_synth_table_file_keeps_the_rows_of_earlier_runs(monkeypatch, tmp_path):
    """A run for a few sizes adds its rows to the table file of an earlier run, each build's
    row in its place, instead of replacing the file (a complete table took a day of place and
    route). A file that is not a table is replaced."""
    built = _fake_builds(monkeypatch)
    options = dict(out=tmp_path, depths=(1,), router_sizes=(), previous=None,
                   wormhole_fabric=False, staged=())
    path = tmp_path / "synth_table_ecp5_nowidelut.json"

    def tags():
        return [row["tag"] for row in json.loads(path.read_text())]

    build.table("ecp5", [2, 3], **options)
    assert tags() == ["synth_ecp5_ihcube_n2_w32_nowidelut", "synth_ecp5_ihcube_n3_w32_nowidelut"]
    build.table("ecp5", [4], **options)
    assert tags() == ["synth_ecp5_ihcube_n2_w32_nowidelut", "synth_ecp5_ihcube_n3_w32_nowidelut",
                      "synth_ecp5_ihcube_n4_w32_nowidelut"]
    # Built again with another outcome: the row changes in its place, the others stay.
    _fake_builds(monkeypatch, fmax=50.0)
    build.table("ecp5", [3], redo=True, **options)
    rows = json.loads(path.read_text())
    assert [row["fmax_mhz"] for row in rows] == [100.0, 50.0, 100.0]
    assert built == ["ihcube_n2_w32", "ihcube_n3_w32", "ihcube_n4_w32"]
    path.write_text("{not a table")
    build.table("ecp5", [2], only_kept=True, **options)
    assert tags() == ["synth_ecp5_ihcube_n2_w32_nowidelut"]
    # A row that cannot be built has no tag: its label is its key.
    old = [{"nodes": 26, "router_only": 0, "flit_width": 5, "vcs": 1, "error": "too narrow"}]
    assert build.merge_table_rows(old, [{**old[0], "error": "still"}]) == [
        {**old[0], "error": "still"}]


@pytest.mark.slow
def test_synth_table_builds_a_row_whose_tool_could_not_run_again(monkeypatch, tmp_path):
    """A build whose place and route could not start (exit status 127: the tool was not
    found) or was killed (137) says nothing about the design: the next table builds it again.
    Negative control: a tool's own error on the design (nextpnr exits 125 when it cannot place;
    Yosys 1) is a result, kept as a fit is."""
    assert build.tools_finished({"fits": True})
    assert build.tools_finished({"exit_status": 125}) and build.tools_finished({"exit_status": 1})
    for status in (126, 127, 137, -9):
        assert not build.tools_finished({"exit_status": status}), status
    built = _fake_builds(monkeypatch, fail={"ihcube_n2_w32": 127, "ihcube_n3_w32": 125,
                                            "ihcube_n4_w32": 137})
    options = dict(out=tmp_path, depths=(1,), router_sizes=(), previous=None,
                   wormhole_fabric=False, staged=())
    build.table("ecp5", [2, 3, 4, 5], **options)
    assert built == ["ihcube_n2_w32", "ihcube_n3_w32", "ihcube_n4_w32", "ihcube_n5_w32"]
    build.table("ecp5", [2, 3, 4, 5], **options)
    assert built[4:] == ["ihcube_n2_w32", "ihcube_n4_w32"]


def test_synth_table_places_fabrics_from_26_nodes_with_the_static_placer(monkeypatch,
                                                                        tmp_path, capsys):
    """HeAP does not place the 64-node fabric (docs/fpga.md "64 nodes") and places the
    26-node one more slowly and about 10 % lower in Fmax: with no placer asked for, the table
    places packet fabrics from 26 nodes with the electrostatic placer, whose legaliser has a
    bound, and says so in the row; smaller fabrics and routers keep nextpnr's default, and a
    placer asked for is used for every row."""
    # The rule itself, at its real size: fabrics only, from 26 nodes, ECP5 only.
    def job(n, router=None, **options):
        return {"spec": FabricSpec.of(n, **options), "router": router}
    assert build.table_placer("ecp5", job(64)) == "static"
    assert build.table_placer("ecp5", job(26)) == "static"
    assert build.table_placer("ecp5", job(16)) is None
    assert build.table_placer("ecp5", job(26, router=0)) is None
    assert build.table_placer("ice40", job(64)) is None
    # Negative control: a wormhole fabric keeps nextpnr's default, as it was measured.
    assert build.table_placer("ecp5", job(26, switching="wormhole")) is None
    placers = []
    real_plan = build._plan

    def plan(top, name, platform, synth_opts="", placer=None):
        placers.append((name, placer))
        return real_plan(top, name, platform, synth_opts, placer)
    monkeypatch.setattr(build, "_plan", plan)
    built = _fake_builds(monkeypatch)
    options = dict(out=tmp_path, depths=(1,), router_sizes=(), previous=None,
                   wormhole_fabric=False, staged=())
    monkeypatch.setattr(build, "TABLE_STATIC_FROM", {"ecp5": 3})  # small enough to build
    build.table("ecp5", [2, 3], **options)
    assert built == ["ihcube_n2_w32", "ihcube_n3_w32"]
    assert dict(placers) == {"ihcube_n2_w32": None, "ihcube_n3_w32": "static"}
    assert (tmp_path / "synth_ecp5_ihcube_n3_w32_nowidelut_static.json").exists()
    assert "| 3 nodes, fabric, depth 1, static placer |" in capsys.readouterr().out
    # Negative control: a placer asked for is every row's.
    placers.clear()
    build.table("ecp5", [2, 3], placer="sa", **options)
    assert dict(placers) == {"ihcube_n2_w32": "sa", "ihcube_n3_w32": "sa"}


def test_the_static_placer_bounds_its_legaliser():
    """``--placer static`` goes with the legaliser bound of ``PLACER_OPTIONS`` in the build
    script nextpnr is run from; nextpnr's default placer and HeAP get no such option."""
    def script(placer):
        shell, name, _, platform = build._synth_design(FabricSpec(2), "ecp5", "-nowidelut",
                                                       None, placer, False)
        files = build._plan(shell, name, platform, "-nowidelut", placer).files
        return files[f"build_{name}.sh"]
    bound = build.PLACER_OPTIONS["static"]
    assert bound.startswith("--placer-heap-cell-placement-timeout ")
    assert f"--placer static {bound}" in script("static")
    # Negative controls: the other placers' scripts have no bound.
    for placer in (None, "heap", "sa"):
        assert "--placer-heap-cell-placement-timeout" not in script(placer)


def _fake_nextpnr(tmp_path, seconds, status):
    """A stand-in for nextpnr that takes ``seconds`` and exits with ``status``."""
    script = tmp_path / "nextpnr.sh"
    script.write_text(f"#!/bin/sh\nsleep {seconds}\nexit {status}\n")
    script.chmod(0o755)
    return str(script)


@pytest.mark.slow
def test_a_build_whose_folder_another_build_holds_is_one_line(monkeypatch, tmp_path, capsys):
    """Two builds of the same design at once would share a build folder (each empties it and
    writes its files): the second stops at once with one line, and its results file is not
    written. Once the first lets go, the same build runs."""
    import fcntl

    from ihcube.cli import main
    monkeypatch.chdir(tmp_path)
    _, tag = build.synth_name(FabricSpec(2), "ice40")
    (tmp_path / "build").mkdir()
    lock = tmp_path / "build" / f"{tag}.lock"
    argv = ["synth", "-n", "2", "--family", "ice40", "--out", str(tmp_path / "results")]
    with open(lock, "w") as held:  # another build, as far as the lock can tell
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert main(argv) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"ihcube synth: error: Another build is running in build/{tag} (it holds "
        f"build/{tag}.lock): wait for it to end, or stop it"]
    assert not (tmp_path / "results" / f"{tag}.json").exists()
    # Negative control: with the lock free, the same build runs and writes its figures.
    assert main(argv) == 0, capsys.readouterr().err
    assert json.loads((tmp_path / "results" / f"{tag}.json").read_text())["fits"]


@pytest.mark.slow
def test_place_and_route_over_its_time_limit_is_stopped_and_says_so(monkeypatch, tmp_path):
    """With ``pnr_minutes`` nextpnr is stopped after that long: the build records
    ``stopped``, why, and Yosys's counts, and its summary says so. The build folder is given
    relative to the working directory, as ``make synth`` gives it (the limited tool's script
    was once named by a relative path the build script, run in the build folder, could not
    find: every build failed at once)."""
    monkeypatch.setenv("NEXTPNR_ICE40", _fake_nextpnr(tmp_path, 30, 0))
    monkeypatch.chdir(tmp_path)
    started = time.monotonic()
    figures = build.synth(FabricSpec(2), "ice40", out=tmp_path / "results", build_root="build",
                          pnr_minutes=0.02)
    assert figures["stopped"] and not figures["fits"]
    assert figures["error"].startswith("stopped after 0.02 min of place and route")
    assert figures["seconds_nextpnr"] < 25 and time.monotonic() - started < 60
    assert figures["yosys_luts"] > 100 and figures["cells_estimate"] > 100
    assert "stopped after 0.02 min" in build.summary(figures)
    assert "(stopped)" in build.markdown_table([figures])
    # Negative control: a nextpnr that fails by itself within the limit is a failure, not a
    # stop; and one that finishes within it is not stopped.
    monkeypatch.setenv("NEXTPNR_ICE40", _fake_nextpnr(tmp_path, 0, 3))
    failed = build.synth(FabricSpec(2), "ice40", out=tmp_path / "results",
                         build_root=tmp_path / "build", pnr_minutes=1)
    assert not failed["fits"] and "stopped" not in failed and failed["exit_status"] == 3
    assert not failed["error"].startswith("stopped")


@pytest.mark.slow
def test_a_build_not_placed_runs_yosys_only_and_says_so(monkeypatch, tmp_path, capsys):
    """``ihcube synth --no-place`` stops after Yosys: the figures are Yosys's (no placed LUTs,
    no Fmax), the results file's name ends in ``_yosys`` (it never stands for a placed
    build), and the line and the table say "not placed". A nextpnr that fails shows that
    place and route is not run; the negative control, a placed build with that nextpnr,
    fails."""
    from ihcube.cli import main
    monkeypatch.setenv("NEXTPNR_ICE40", _fake_nextpnr(tmp_path, 0, 3))
    argv = ["synth", "-n", "2", "--family", "ice40", "--no-place", "--out",
            str(tmp_path / "results")]
    assert main(argv) == 0, capsys.readouterr().err
    assert "not placed (Yosys only)" in capsys.readouterr().out
    _, tag = build.synth_name(FabricSpec(2), "ice40", place=False)
    assert tag.endswith("_yosys") and tag != build.synth_name(FabricSpec(2), "ice40")[1]
    figures = json.loads((tmp_path / "results" / f"{tag}.json").read_text())
    assert figures["fits"] and figures["placed"] is False
    assert figures["cells_estimate"] > 100 and figures["yosys_ffs"] >= 2 * 2 * 32
    for key in ("luts", "ffs", "fmax_mhz", "seconds_nextpnr"):
        assert key not in figures, key
    assert build.markdown_table([figures]).splitlines()[-1].startswith(
        f"| 2 nodes, fabric, depth 1 | {figures['cells_estimate']:,} (Yosys) / "
        f"{figures['yosys_ffs']:,} / not placed |")
    # Negative control: placed, the same build runs that nextpnr, and fails.
    placed = build.synth(FabricSpec(2), "ice40", out=tmp_path / "results",
                         build_root=tmp_path / "build")
    assert not placed["fits"] and placed["exit_status"] == 3 and "placed" not in placed


def test_synth_table_has_the_reconfigurable_rows(monkeypatch, tmp_path, capsys):
    """With ``reconfigurable_sizes`` the table has, for each size, the router of node 0
    fixed and reconfigurable (placed) and the reconfigurable fabric through Yosys only, each
    labelled as such; a build asked for twice (the fixed router of node 0 of 26 is also a
    ``router_sizes`` row) runs once."""
    jobs = build.table_jobs([], depths=(1, 2), router_sizes=(26,), flit_widths=(), vcs=(),
                            staged=(), reconfigurable_sizes=(26, 64))
    what = [(job["spec"].nodes, job["spec"].depth, job["spec"].reconfigurable, job["router"],
             job.get("place", True)) for job in jobs]
    assert what == [(26, 1, False, 0, True), (26, 2, False, 0, True), (26, 1, True, 0, True),
                    (26, 1, True, None, False), (64, 1, False, 0, True),
                    (64, 1, True, 0, True), (64, 1, True, None, False)]
    # A fabric not placed needs no placer, even where the table would place with static.
    assert build.table_placer("ecp5", jobs[3]) is None
    assert build.table_placer("ecp5", {**jobs[3], "place": True}) == "static"
    built = _fake_builds(monkeypatch)
    build.table("ecp5", [], out=tmp_path, depths=(1,), router_sizes=(), previous=None,
                reconfigurable_sizes=(4,))
    assert built == ["ihcube_n4_w32_router0", "ihcube_n4_w32_reconf_router0",
                     "ihcube_n4_w32_reconf"]
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(" | ")[0] for line in lines if line.startswith("| 4 nodes")] == [
        "| 4 nodes, router 0, depth 1", "| 4 nodes, router 0, depth 1, reconfigurable",
        "| 4 nodes, fabric, depth 1, reconfigurable"]
    assert "| 5,000 (Yosys) / 400 / not placed |" in lines[-1]
    assert (tmp_path / "synth_ecp5_ihcube_n4_w32_reconf_nowidelut_yosys.json").exists()
    # Negative control: without the sizes, none of those rows.
    build.table("ecp5", [], out=tmp_path, depths=(1,), router_sizes=(), previous=None)
    assert "reconfigurable" not in capsys.readouterr().out


def test_a_place_and_route_time_limit_must_be_a_positive_number():
    for minutes in (0, -1, float("nan"), float("inf"), "5", True):
        with pytest.raises(ValueError, match="^Place-and-route time limit must be a positive "
                                             "number of minutes, not "):
            build.check_pnr_minutes(minutes)
    assert build.check_pnr_minutes(None) is None
    assert build.check_pnr_minutes(0.5) == 0.5
    assert build.check_pnr_minutes(build.MAX_PNR_MINUTES) == build.MAX_PNR_MINUTES
    with pytest.raises(ValueError, match=r"^Place-and-route time limit must be at most 10080 "
                                         r"minutes \(a week\), not 10081$"):
        build.check_pnr_minutes(10081)


@pytest.mark.slow
def test_synth_table_resumes_and_rebuilds_what_the_sources_no_longer_make(monkeypatch,
                                                                          tmp_path, capsys):
    built = _fake_builds(monkeypatch)
    options = dict(out=tmp_path, depths=(1,), router_sizes=(), previous=None)
    build.table("ecp5", [2, 3], **options)
    assert built == ["ihcube_n2_w32", "ihcube_n3_w32"]
    # Run again: both results files were made from today's design, so nothing is built.
    build.table("ecp5", [2, 3], **options)
    assert len(built) == 2
    assert "(kept)" in capsys.readouterr().out
    # Negative control: a results file of another design (another digest) is built again,
    # so is one that records no digest, and everything with redo.
    path = tmp_path / "synth_ecp5_ihcube_n3_w32_nowidelut.json"
    figures = json.loads(path.read_text())
    path.write_text(json.dumps({**figures, "design_digest": "0" * 16}))
    build.table("ecp5", [2, 3], **options)
    assert built[2:] == ["ihcube_n3_w32"]
    figures = json.loads(path.read_text())
    path.write_text(json.dumps({key: value for key, value in figures.items()
                                if key != "design_digest"}))
    build.table("ecp5", [2, 3], **options)
    assert built[3:] == ["ihcube_n3_w32"]
    build.table("ecp5", [2, 3], redo=True, **options)
    assert built[4:] == ["ihcube_n2_w32", "ihcube_n3_w32"]
    # With kept_only nothing is built and a missing row says so.
    build.table("ecp5", [2, 3, 4], only_kept=True, **options)
    assert len(built) == 6
    assert "| 4 nodes, fabric, depth 1 | not built: not run yet (make synth-table resumes) |" \
        in capsys.readouterr().out
    # A missing row with link stages says so too (it read as the row without them).
    build.table("ecp5", [2], out=tmp_path, depths=(1,), router_sizes=(2,), flit_widths=(),
                previous=None, staged=[Stages(link=1)], only_kept=True)
    assert len(built) == 6
    shown = capsys.readouterr().out
    for row in ("2 nodes, router 0, depth 1, 1 link stage", "2 nodes, fabric, depth 1, "
                "1 link stage"):
        assert f"| {row} | not built: not run yet" in shown


class _Plan:
    def __init__(self, files):
        self.files = files


def test_the_digest_follows_the_design_not_where_its_sources_are():
    rtlil = ('attribute \\src "/work/main/rtl/router.py:12"\nmodule \\top\n'
             '  attribute \\src "/work/main/rtl/router.py:40"\n  wire width 3 \\count\nend\n')
    plan = _Plan({"top.il": rtlil, "top.ys": "read_ilang top.il\nsynth_ecp5 -nowidelut\n"})
    digest = build.design_digest(plan)
    # Another checkout, other line numbers: the same design, the same digest.
    moved = rtlil.replace("/work/main", "/tmp/clone").replace(":40", ":41")
    assert build.design_digest(_Plan({**plan.files, "top.il": moved})) == digest
    # Negative controls: a changed design, or a changed Yosys script, differ.
    wider = rtlil.replace("width 3", "width 4")
    assert build.design_digest(_Plan({**plan.files, "top.il": wider})) != digest
    assert build.design_digest(_Plan({**plan.files, "top.ys": "synth_ecp5\n"})) != digest


def test_every_row_of_the_table_names_a_results_file_it_has():
    """The table's builds are named from their specs as they were named from keywords: each
    row of ``make synth-table`` (ECP5, its placers) names a results file in ``results/``, so
    that those files stay the table's (kept while their design digest is today's)."""
    tags = []
    for job in build.table_jobs([4, 8, 16, 26, 32, 64]):
        assert "error" not in job, job
        placer = build.table_placer("ecp5", job)
        tags.append(build.synth_name(job["spec"], "ecp5", router=job["router"],
                                     placer=placer)[1])
    missing = [tag for tag in tags if not (ROOT / "results" / f"{tag}.json").exists()]
    assert not missing
    assert "synth_ecp5_ihcube_n26_w32_s1_g1_e1_nowidelut_static" in tags
    assert "synth_ecp5_ihcube_n26_wormhole_f16_l20_v3_router0_nowidelut" in tags
    # Negative control: a fabric the table does not build names no such file.
    lsb = build.synth_name(FabricSpec.of(26, order="lsb"), "ecp5")[1]
    assert lsb == "synth_ecp5_ihcube_n26_w32_lsb_nowidelut"
    assert not (ROOT / "results" / f"{lsb}.json").exists()


def test_a_build_asks_the_spec_s_mode_what_to_build_and_record():
    """The component a build measures and what its results file records come from the spec's
    mode (:mod:`ihcube.modes`), not from branches in the build."""
    from ihcube.boards.strapped import StrappedRouter
    from ihcube.modes import mode_of
    from ihcube.rtl import Fabric, Router, WormholeFabric, WormholeRouter
    packet = FabricSpec.of(5, depth=2, link_stages=1)
    wormhole = FabricSpec.of(5, switching="wormhole", vcs=1)
    build_packet, build_wormhole = (mode_of(packet).build_component,
                                    mode_of(wormhole).build_component)
    assert type(build_packet(packet)) is Fabric and type(build_packet(packet, 4)) is Router
    assert type(build_packet(packet, 4, strapped=True)) is StrappedRouter
    assert type(build_wormhole(wormhole)) is WormholeFabric
    assert type(build_wormhole(wormhole, 4)) is WormholeRouter
    assert mode_of(packet).figures(packet) == {"payload_width": 32, "depth": 2, "ports": 1,
                                               "link_stages": 1}
    assert mode_of(wormhole).figures(wormhole) == {
        "payload_width": 32, "switching": "wormhole", "flits": 20, "flit_width": 32, "vcs": 1,
        "vc_depth": 2, "depth": None, "ports": 1}
    # Negative controls: no strapped wormhole router alone, no strapped fabric, no keywords.
    with pytest.raises(ValueError, match="^A strapped router is built alone with packet "
                                         "switching only, not with wormhole switching$"):
        build.synth_digest(wormhole, router=0, strapped=True)
    with pytest.raises(ValueError, match="^A strapped build is of one router: give the "
                                         "router's node$"):
        build.synth_digest(packet, strapped=True)
    with pytest.raises(TypeError, match=r"^Fabric must be a FabricSpec \(FabricSpec.of"):
        build.synth_name(26)


def test_the_digest_of_a_build_is_its_designs():
    """Each design has its own digest: the packet router and a wormhole router differ, a
    router's depth changes its digest, and elaborating it again does not."""
    router = build.synth_digest(FabricSpec(5), router=0)
    assert build.synth_digest(FabricSpec(5), router=0) == router
    deeper = build.synth_digest(FabricSpec.of(5, depth=2), router=0)
    assert deeper != router
    wormhole = build.synth_digest(FabricSpec.of(5, switching="wormhole"), router=0)
    assert wormhole not in (router, deeper)


def test_synth_table_rows_give_fmax_times_saturation_throughput():
    """msg/node/µs is Fmax (MHz) x messages per node per cycle at saturation (n = 1024)."""
    new = {"nodes": 26, "router_only": None, "depth": 2, "ports": 1, "fits": True,
           "luts": 20000, "ffs": 9000, "fmax_mhz": 80.0, "luts_per_router": 769.2,
           "seconds_yosys": 100.0, "seconds_nextpnr": 400.0, "seconds_total": 500.0,
           "previous": {"fits": True, "luts": 22000, "ffs": 8000, "fmax_mhz": 50.0}}
    table = build.markdown_table([new], {2: (1.0, 0.5)}, previous="abc123")
    lines = table.splitlines()
    assert lines[0] == ("| build | LUTs / FFs / Fmax (MHz) | previous (abc123) | LUTs/router | "
                        "cycles/hop | msg/node/µs | previous msg/node/µs | "
                        "Yosys + nextpnr (s) |")
    assert lines[2] == ("| 26 nodes, fabric, depth 2 | 20,000 / 9,000 / 80.0 | "
                        "22,000 / 8,000 / 50.0 | 769.2 | 1.00 | 40.0 | 25.0 | 100 + 400 |")
    # A build that does not fit has no Fmax and no throughput.
    big = {**new, "fits": False, "luts": None, "cells_estimate": 90000, "previous": None}
    assert "| >= 90,000 (Yosys) / - / does not fit | - | 769.2 | 1.00 | - | - |" in \
        build.markdown_table([big], {2: (1.0, 0.5)}, previous="abc123")
    # A wormhole row takes the figures of its message length and virtual channels, not a
    # packet depth's.
    worm = {**new, "switching": "wormhole", "depth": None, "flits": 20, "flit_width": 8,
            "vcs": 1, "vc_depth": 2, "previous": None}
    rates = {2: (1.0, 0.5), ("wormhole", 20, 3, 2): (2.0, 0.02),
             ("wormhole", 20, 1, 2): (2.5, 0.01)}
    assert "| 769.2 | 2.50 | 0.8 | - |" in build.markdown_table([worm], rates, previous="abc")
    assert "| 769.2 | - | - | - |" in build.markdown_table([worm], {2: (1.0, 0.5)},
                                                          previous="abc")


def test_synth_table_reads_the_saturation_of_both_switching_modes(tmp_path):
    def measured(n, per_hop, backlogged, depth=2):
        return {"saturation": [{"n": n, "depth": depth, "order": "msb", "pattern": "uniform",
                                "backlogged": backlogged}],
                "zero_load": [{"n": n, "depth": depth, "order": "msb", "per_hop": per_hop}]}
    (tmp_path / "saturation.json").write_text(json.dumps(
        {**measured(1024, 1.0, 0.6), "wormhole": None}))
    (tmp_path / "saturation_wormhole.json").write_text(json.dumps(
        {**measured(1024, 2.0, 0.02), "wormhole": {"flits": 20, "vcs": 3, "vc_depth": 2}}))
    (tmp_path / "saturation_wormhole_l20_v1_q2.json").write_text(json.dumps(
        {**measured(1048, 2.0, 0.5), "wormhole": {"flits": 20, "vcs": 1, "vc_depth": 2}}))
    staged = measured(1024, 2.0, 0.7)
    for row in staged["saturation"] + staged["zero_load"]:
        row["link_stages"] = 1
    (tmp_path / "saturation_s1.json").write_text(json.dumps({**staged,
                                                                       "wormhole": None}))
    assert build._saturation(tmp_path) == {2: (1.0, 0.6), ("wormhole", 20, 3, 2): (2.0, 0.02),
                                           ("stages", "_s1", 2): (2.0, 0.7)}
    # A staged row takes the staged figures, an unstaged one the others.
    row = {"nodes": 26, "router_only": None, "depth": 2, "ports": 1, "fits": True,
           "luts": 20000, "ffs": 9000, "fmax_mhz": 100.0, "luts_per_router": 769.2,
           "seconds_yosys": 1.0, "seconds_nextpnr": 2.0, "seconds_total": 3.0}
    rates = build._saturation(tmp_path)
    assert "| 26 nodes, fabric, depth 2, 1 link stage | 20,000 / 9,000 / 100.0 | 769.2 | " \
        "2.00 | 70.0 |" in build.markdown_table([{**row, "link_stages": 1}], rates)
    assert "| 26 nodes, fabric, depth 2 | 20,000 / 9,000 / 100.0 | 769.2 | 1.00 | 60.0 |" \
        in build.markdown_table([row], rates)


def test_synth_table_takes_the_previous_design_from_git():
    """The previous design's figures are its results file at the given revision."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    previous = build._previous(build.PREVIOUS_DESIGN,
                               "synth_ecp5_ihcube_n26_w32_router0_nowidelut")
    assert previous is not None and previous["nodes"] == 26 and previous["luts"] > 0
    assert build._previous(build.PREVIOUS_DESIGN, "synth_ecp5_no_such_build") is None


def test_a_strapped_router_alone_has_the_ports_of_the_router_of_its_node():
    """``synth --router 0 --strapped`` builds the router as the fabric does (a module per link
    set, the address tied) behind the same ports as the router of that node."""
    from amaranth.back import rtlil
    from ihcube.boards.strapped import StrappedRouter
    from ihcube.rtl import Router
    strapped = StrappedRouter(26, 0)
    assert strapped.signature == Router(26, 0).signature
    text = rtlil.convert(strapped)
    assert "address" in text  # the strapped router inside, its address tied
