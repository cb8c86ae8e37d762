"""``ihcube ports`` and the generated file's header tell the truth about the Verilog: the
ports listed are those the top module declares, with their directions and widths, and the
payload fields tile each payload port."""

import json
import re

import pytest

from ihcube import generate, version
from ihcube.cli import main


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
    head = text.split("*/", 1)[0]
    assert f"written by ihcube {version()}" in head
    assert "nodes 5, payload width 16 bits, buffer depth 2, routing order lsb" in head
    assert "ihcube_n5_w16_d2_lsb" in head
