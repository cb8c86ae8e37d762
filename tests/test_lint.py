"""Verilator lint of the emitted Verilog: ``-Wall`` reports nothing beyond the waivers of
``verify/verilator.vlt`` (and ``verilator_wormhole.vlt`` for a wormhole fabric), each of which is
for a habit of Amaranth's output."""

import re
import shutil

import pytest

from ihcube.generate import fabric_name, fabric_verilog
from ihcube.verify.lint import WAIVERS, WORMHOLE_WAIVERS, lint_file, waivers_for
from ihcube.rtl import message_layout
from tiers import below, slow_unless

pytestmark = pytest.mark.skipif(shutil.which("verilator") is None,
                                reason="needs Verilator (make system-tools installs it)")


def lint_text(tmp_path, n, text):
    path = tmp_path / f"{fabric_name(n)}.v"
    path.write_text(text)
    return lint_file(path)


@pytest.mark.parametrize("n", slow_unless([1, 5, 26], below(13)))
def test_emitted_verilog_is_lint_clean(tmp_path, n):
    result = lint_text(tmp_path, n, fabric_verilog(n))
    assert result.clean, "Verilator -Wall:\n" + "\n".join(result.messages)


@pytest.fixture(scope="module")
def verilog5():
    return fabric_verilog(5)


def edit(text, old, new):
    """Replace every ``old`` (a regex) in ``text``; fail if there is none."""
    edited, count = re.subn(old, new, text)
    assert count, f"the Verilog has no {old!r} to edit"
    return edited


def test_lint_catches_a_width_mismatch_at_a_router_instance(tmp_path, verilog5):
    """Negative control: the fabric wires PE 2's eject port 32 bits wide to the router's 42."""
    top = message_layout(5).size - 1
    text = edit(verilog5, rf"\[{top}:0\] eject__2__payload;", "[31:0] eject__2__payload;")
    result = lint_text(tmp_path, 5, text)
    assert any(message.startswith("%Warning-WIDTH") and "'eject__2__payload'" in message
               for message in result.messages), result.output


def test_lint_catches_a_blocking_assignment_to_a_flip_flop(tmp_path, verilog5):
    """Negative control: the buffers' count flip-flops are assigned with ``=``, a race."""
    text = edit(verilog5, r"count <= ", "count = ")
    result = lint_text(tmp_path, 5, text)
    assert any(message.startswith("%Warning-BLKSEQ") for message in result.messages), \
        result.output


def test_lint_catches_an_undriven_output(tmp_path, verilog5):
    """Negative control: router 2's refusal flag is left unconnected."""
    text = edit(verilog5, r"\.refused\(refused__2\)", ".refused()")
    result = lint_text(tmp_path, 5, text)
    assert any("'refused__2'" in message for message in result.messages), result.output


def test_wormhole_waivers_apply_to_wormhole_fabrics_only():
    """A wormhole fabric's Verilog gets both waiver files, a packet fabric's the first only."""
    assert waivers_for(fabric_verilog(2)) == (WAIVERS,)
    wormhole = fabric_verilog(2, switching="wormhole", flits=2, vcs=1)
    assert waivers_for(wormhole) == (WAIVERS, WORMHOLE_WAIVERS)


def test_packet_lint_reports_a_signal_the_wormhole_waivers_would_hide(tmp_path, verilog5):
    """Negative control: an unused wire named ``free`` in a packet router (a name waived for
    the wormhole router's allocator) is reported, and the wormhole waivers would hide it."""
    text = edit(verilog5, r"\n  input clk;", "\n  input clk;\n  wire free = 1'b0;")
    result = lint_text(tmp_path, 5, text)
    assert result.waivers == (WAIVERS,)
    assert any("Signal is not used: 'free'" in message for message in result.messages), \
        result.output
    assert lint_file(result.path, waivers=(WAIVERS, WORMHOLE_WAIVERS)).clean


# --- Command line ---------------------------------------------------------------------------

@pytest.mark.slow
def test_command_line_lints_a_fabric_and_a_file(tmp_path, capsys, verilog5):
    """``ihcube lint`` (``make lint``): 0 and one line for clean Verilog, 1 and every
    message for Verilog with a blocking assignment to a flip-flop."""
    from ihcube.cli import main
    assert main(["lint", "--nodes", "5", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{tmp_path / fabric_name(5)}.v: Verilator -Wall clean (waivers: ")
    broken = tmp_path / "broken" / f"{fabric_name(5)}.v"
    broken.parent.mkdir()
    broken.write_text(edit(verilog5, r"count <= ", "count = "))
    assert main(["lint", "--verilog", str(broken)]) == 1
    out = capsys.readouterr().out
    assert "%Warning-BLKSEQ" in out
    assert re.search(rf"^{re.escape(str(broken))}: \d+ Verilator message\(s\) ", out, re.M)


@pytest.mark.parametrize("args, message", [
    ([], "give either --nodes or --verilog"),
    (["--nodes", "3", "--verilog", "x.v"], "give either --nodes or --verilog"),
    (["--verilog", "no/such.v"], "no such file: 'no/such.v'"),
    (["--nodes", "0"], "Node count must be a positive integer, not 0"),
    (["--nodes", "3", "--order", "up"], "Routing order must be one of 'msb' or 'lsb', not 'up'"),
])
def test_command_line_errors_are_one_line(capsys, args, message):
    from ihcube.cli import main
    assert main(["lint", *args]) == 2
    captured = capsys.readouterr()
    assert captured.err == f"ihcube lint: error: {message}\n"
    assert captured.out == ""
