"""Wormhole parameters: defaults stated once, the same names everywhere, and bad input refused
with one line (``docs/wormhole.md``, "Parameters")."""

import pathlib
import subprocess
import sys

import pytest

from ihcube import params
from ihcube.generate import fabric_name
from ihcube.params import (WORMHOLE_DEFAULTS, head_fields, header_bits, routing_bits,
                           wormhole_parameters)
from ihcube.spec import FabricSpec, Wormhole

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_the_defaults_are_stated_once_and_taken_when_nothing_is_given():
    assert wormhole_parameters(26) == Wormhole(**WORMHOLE_DEFAULTS)
    assert FabricSpec.of(26, switching="wormhole").wormhole == Wormhole(**WORMHOLE_DEFAULTS)
    assert FabricSpec.of(26).wormhole is None  # packet switching, the default


def test_the_header_is_two_addresses_and_a_kind_bit():
    # dest (or a broadcast's travel vector), src, kind: 2 * ceil(log2 n) + 1, at least 3.
    assert [header_bits(n) for n in (1, 2, 3, 26, 1024, 1025, 4096)] == [3, 3, 5, 11, 21, 23,
                                                                          25]


def test_the_routing_fields_are_an_address_and_a_kind_bit():
    assert [routing_bits(n) for n in (1, 2, 3, 26, 1024, 1025, 4096)] == [2, 2, 3, 6, 11, 12,
                                                                           13]


def test_a_header_that_fits_a_flit_is_dest_src_kind():
    fields = head_fields(26, 11)  # 5-bit addresses, the 11-bit header exactly
    assert (fields.kind_bit, fields.src_pieces, fields.free_bits) == (10, ((0, 5, 5, 0),), 0)
    assert head_fields(26, 16).free_bits == 5


def test_a_header_wider_than_a_flit_puts_src_after_the_routing_fields():
    # 26 nodes, 8-bit flits: dest bits 0-4 and kind bit 5 in the head flit; src's low two bits
    # in its bits 6-7, its high three in bits 0-2 of the second flit.
    fields = head_fields(26, 8)
    assert (fields.kind_bit, fields.src_pieces, fields.free_bits) == \
        (5, ((0, 6, 2, 0), (1, 0, 3, 2)), 0)
    assert [fields.src_width(k) for k in range(3)] == [2, 3, 0]
    # src = 0b10110: 0b10 into the head, 0b101 into the second flit; other bits kept.
    assert fields.stamp(0, 0b00_1_10011, 0b10110) == 0b10_1_10011
    assert fields.stamp(1, 0b11111_000, 0b10110) == 0b11111_101
    assert fields.stamp(2, 0xA5, 0b10110) == 0xA5
    assert fields.src_of([0b10_1_10011, 0b11111_101]) == 0b10110
    # The narrowest flit: the routing fields alone, src whole in the second flit.
    assert head_fields(26, 6).src_pieces == ((1, 0, 5, 0),)


@pytest.mark.parametrize("call, error, message", [
    (lambda: wormhole_parameters(26, flits=0), ValueError,
     "Flit count must be a positive integer, not 0"),
    (lambda: wormhole_parameters(26, flits=65), ValueError,
     "Flit count must be an integer from 1 to 64, not 65"),
    (lambda: wormhole_parameters(26, vcs=0), ValueError,
     "Virtual channel count must be a positive integer, not 0"),
    (lambda: wormhole_parameters(26, vc_depth=0), ValueError,
     "Virtual channel depth must be a positive integer, not 0"),
    (lambda: wormhole_parameters(26, flit_width=44), ValueError,
     r"Flit width must be an integer from 6 \(the head flit's routing fields, destination and "
     r"kind\) to 43 \(the whole message: header 11 \+ payload 32 bits\) for 26 nodes, not 44"),
    (lambda: wormhole_parameters(26, flit_width=5), ValueError,
     r"Flit width must be an integer from 6 .* not 5"),
    (lambda: wormhole_parameters(26, flit_width=8, flits=5), ValueError,
     "Flit count must be at least 6 to carry a 43-bit message in 8-bit flits, not 5"),
    (lambda: wormhole_parameters(26, flits=1), ValueError,
     "Flit count must be at least 2 to carry a 43-bit message in 32-bit flits, not 1"),
    (lambda: wormhole_parameters(26, flits=2.0), TypeError,
     "Flit count must be a positive integer, not 2.0"),
    (lambda: FabricSpec.of(26, 32, switching="packet", vcs=3), ValueError,
     r"Virtual channel count \(--vcs\) is a wormhole option, not taken with packet switching: "
     r"give switching 'wormhole' or leave it out"),
    (lambda: FabricSpec.of(26, 32, switching="packet", flits=20), ValueError,
     r"Flit count \(--flits\) is a wormhole option, not taken with packet switching: .*"),
    (lambda: FabricSpec.of(26, 32, switching="cut-through"), ValueError,
     "Switching must be one of 'packet' or 'wormhole', not 'cut-through'"),
    (lambda: fabric_name(26, switching="wormhole", ports=2), ValueError,
     "Port count must be 1 with wormhole switching, not 2"),
])
def test_wrong_parameters(call, error, message):
    with pytest.raises(error, match=f"^{message}$"):
        call()


def test_the_file_name_says_the_wormhole_parameters_and_packet_names_are_unchanged():
    assert fabric_name(26) == "ihcube_n26_w32"
    assert fabric_name(26, switching="packet") == "ihcube_n26_w32"
    assert fabric_name(26, switching="wormhole", vcs=3, flits=20) == \
        "ihcube_n26_wormhole_f32_l20_v3"
    assert fabric_name(26, 16, order="lsb", switching="wormhole", flit_width=16, vcs=1,
                       vc_depth=4, flits=4) == "ihcube_n26_wormhole_f16_l4_v1_q4_lsb"


def ihcube(*args):
    return subprocess.run([sys.executable, "-m", "ihcube", *args], capture_output=True,
                          text=True)


@pytest.mark.parametrize("options, message", [
    (["--switching", "wormhole", "--flits", "0"], "Flit count must be a positive integer, not 0"),
    (["--switching", "wormhole", "--vcs", "0"],
     "Virtual channel count must be a positive integer, not 0"),
    (["--switching", "wormhole", "--flit-width", "64"],
     "Flit width must be an integer from 6 (the head flit's routing fields, destination and "
     "kind) to 43 (the whole message: header 11 + payload 32 bits) for 26 nodes, not 64"),
    (["--vcs", "3"], "Virtual channel count (--vcs) is a wormhole option, not taken with packet "
                     "switching: give switching 'wormhole' or leave it out"),
    (["--flit-width", "16"], "Flit width (--flit-width) is a wormhole option, not taken with "
                             "packet switching: give switching 'wormhole' or leave it out"),
    (["--switching", "wormhole", "--vc-depth", "two"],
     "Virtual channel depth must be a positive integer, not 'two'"),
    (["--switching", "wormhole", "--depth", "2"],
     "Buffer depth is a packet-switching option, not taken with wormhole switching (its buffers "
     "are vc_depth flits), not 2"),
])
def test_bad_options_are_one_line_and_status_2(tmp_path, options, message):
    result = ihcube("verilog", "--nodes", "26", *options, "--out", str(tmp_path))
    assert result.returncode == 2
    assert result.stderr == f"ihcube verilog: error: {message}\n"
    assert list(tmp_path.iterdir()) == []


def test_make_passes_the_wormhole_variables_by_the_same_names():
    result = subprocess.run(["make", "-n", "--no-print-directory", "verilog", "N=26",
                             "SWITCHING=wormhole", "VCS=3", "FLITS=20", "FLIT_WIDTH=16",
                             "VC_DEPTH=4"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0
    for option in ("--switching='wormhole'", "--vcs='3'", "--flits='20'",
                   "--flit-width='16'", "--vc-depth='4'"):
        assert option in result.stdout
    # Without them, no flit-level option is passed: the defaults live in ihcube.params.
    result = subprocess.run(["make", "-n", "--no-print-directory", "verilog", "N=26"],
                            cwd=ROOT, capture_output=True, text=True)
    assert "--vcs" not in result.stdout and "--flits" not in result.stdout


def test_make_reports_a_flit_option_with_packet_switching_in_one_line():
    result = subprocess.run(["make", "--no-print-directory", "-s", "verilog", "N=26", "VCS=3"],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode != 0
    assert ("ihcube verilog: error: Virtual channel count (--vcs) is a wormhole option, not "
            "taken with packet switching: give switching 'wormhole' or leave it out"
            in result.stderr.splitlines())
    assert "Traceback" not in result.stderr


def test_the_default_flit_width_fits_the_header_of_every_fabric_size():
    assert header_bits(params.MAX_FABRIC_NODES) <= WORMHOLE_DEFAULTS["flit_width"]
    assert wormhole_parameters(params.MAX_FABRIC_NODES).flit_width == 32
