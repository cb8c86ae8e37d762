"""``ihcube ports`` and the generated file's header tell the truth about the Verilog: the
ports listed are those the top module declares, with their directions and widths, and the
payload fields tile each payload port."""

import json
import re

import pytest

from ihcube import generate, version
from ihcube.digest import design_digest
from ihcube.cli import main
from tiers import slow_unless


def declared_ports(text, top):
    """``{name: (direction, width)}`` of the ``input``/``output`` declarations of ``top``."""
    body = text[text.index(f"module {top}("):]
    body = body[:body.index("endmodule")]
    ports = {}
    for direction, msb, name in re.findall(r"^\s*(input|output)\s+(?:\[(\d+):0\]\s+)?(\w+);",
                                           body, re.M):
        ports[name] = ("in" if direction == "input" else "out", int(msb) + 1 if msb else 1)
    return ports


@pytest.mark.parametrize("n, width, pe_ports", [(1, 8, 1), (3, 32, 1), (5, 16, 1), (5, 8, 2),
                                                (8, 8, 4)])
def test_ports_are_those_the_top_module_declares(n, width, pe_ports, capsys):
    assert main(["ports", "--nodes", str(n), "--width", str(width), "--ports", str(pe_ports),
                 "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    text = generate.fabric_verilog(n, width, ports=pe_ports)
    declared = declared_ports(text, listed["top"])
    assert {port["name"]: (port["direction"], port["width"])
            for port in listed["port_list"]} == declared
    assert len(listed["port_list"]) == len(declared) == 2 + (2 + 6 * pe_ports) * n


@pytest.mark.parametrize("n, width", [(1, 8), (26, 32)])
def test_payload_fields_tile_each_payload_port(n, width, capsys):
    assert main(["ports", "--nodes", str(n), "--width", str(width), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    widths = {port["name"]: port["width"] for port in listed["port_list"]}
    for port, fields in listed["fields"].items():
        lsb = 0
        for field in fields:
            assert field["lsb"] == lsb
            lsb += field["width"]
        assert lsb == widths[f"{port}__0__payload"]
        assert fields[-1] == {"name": "payload", "lsb": lsb - width, "width": width}


def test_the_table_names_every_port_of_node_k_once(capsys):
    assert main(["ports", "--nodes", "26"]) == 0
    lines = capsys.readouterr().out.splitlines()
    names = [line.split()[0] for line in lines[1:]]
    assert names == ["clk", "rst", "inject__<k>__payload", "inject__<k>__valid",
                     "inject__<k>__ready", "eject__<k>__payload", "eject__<k>__valid",
                     "eject__<k>__ready", "refused__<k>", "refused_count__<k>"]
    assert "dest[4:0] kind[5] payload[37:6]" in lines[3]  # A = 5 address bits, W = 32


def test_the_table_with_several_pe_ports(capsys):
    assert main(["ports", "--nodes", "5", "--ports", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("PE port p = 0 .. 1:")
    names = [line.split()[0] for line in lines[1:]]
    assert names[2:5] == ["inject__<k>__<p>__payload", "inject__<k>__<p>__valid",
                          "inject__<k>__<p>__ready"]
    assert names[-2:] == ["refused__<k>", "refused_count__<k>"]


def test_the_header_names_version_and_parameters():
    text = generate.fabric_verilog(5, 16, 2, "lsb")
    head = text.split(" */\n", 1)[0]
    assert f"written by ihcube {version()}" in head
    assert "nodes 5, payload width 16 bits, buffer depth 2, routing order lsb" in head
    assert "ihcube_n5_w16_d2_lsb" in head
    # The last line, the design digest of what follows (tests/test_digest.py), says what it
    # covers and how to check it.
    assert head.splitlines()[-1] == (
        f" * Design digest: {design_digest(text)} (the first 16 hex digits of the SHA-256 of "
        f"the text below this comment: the same digest, the same circuit, whatever the "
        f"version; `ihcube verilog --check FILE` checks it).")
    assert generate.header(5, 16, 2, "lsb") == "\n".join(head.splitlines()[:-1]) + "\n */\n"


@pytest.mark.parametrize("n, flit_width", slow_unless([(2, 8), (5, 6), (5, 32)],
                                                      lambda config: config[0] < 3))
def test_wormhole_ports_are_those_the_top_module_declares(n, flit_width, capsys):
    """``ihcube ports --switching wormhole --json`` lists exactly the ports the generated
    wormhole top module declares, with their directions and widths. Negative control: the
    packet fabric's top module of the same size declares other ports."""
    from ihcube.spec import FabricSpec
    assert main(["ports", "--nodes", str(n), "--switching", "wormhole", "--flit-width",
                 str(flit_width), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    spec = FabricSpec.of(n, switching="wormhole", flit_width=flit_width)
    assert listed["top"] == spec.name
    ports = {port["name"]: (port["direction"], port["width"]) for port in listed["port_list"]}
    assert ports == declared_ports(generate.fabric_verilog(spec), spec.name)
    assert ports != declared_ports(generate.fabric_verilog(n), FabricSpec(n).name)


@pytest.mark.parametrize("n, flit_width", [(1, 8), (5, 6), (26, 8), (26, 32), (1024, 21)])
def test_wormhole_flit_fields_tile_the_flit(n, flit_width, capsys):
    """The eject port's fields tile its payload port; the head flit's fields tile the flit
    from bit 0 without overlap, and with the second flit's they hold the whole header."""
    from ihcube.params import header_bits
    assert main(["ports", "--nodes", str(n), "--switching", "wormhole", "--flit-width",
                 str(flit_width), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    widths = {port["name"]: port["width"] for port in listed["port_list"]}
    for part, total in (("eject", widths["eject__0__payload"]), ("head", flit_width)):
        lsb = 0
        for field in listed["flit_fields"][part]:
            assert field["lsb"] == lsb, (part, listed["flit_fields"][part])
            lsb += field["width"]
        assert lsb == total
    header = sum(field["width"] for part in ("head", "second")
                 for field in listed["flit_fields"][part] if field["name"] != "payload")
    assert header == header_bits(n)


def test_the_wormhole_table(capsys):
    assert main(["ports", "--nodes", "26", "--switching", "wormhole", "--flit-width", "8"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ihcube_n26_wormhole_f8_l20_v3: 26 nodes, wormhole: 20 flits of 8 "
                          "bits")
    assert "head flit dest[4:0] kind[5] src[7:6], second flit src[2:0]" in out
    assert "payload[7:0] head[8] tail[9]" in out
