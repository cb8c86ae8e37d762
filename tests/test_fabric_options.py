"""Every command that builds a fabric takes the whole fabric option group (one group, made from
``ihcube.spec.OPTIONS``), and make passes the whole group to each of them."""

import importlib
import pathlib
import subprocess

import pytest

from ihcube.cli import COMMANDS
from ihcube.cli.options import add_fabric_options
from ihcube.cli.usage import Parser
from ihcube.spec import OPTIONS

ROOT = pathlib.Path(__file__).resolve().parent.parent

#: The commands that build a fabric (and the make targets that run them).
BUILDERS = {"verilog": "verilog", "lint": "lint", "cocotb": "cocotb", "ports": None,
            "stress": "stress", "synth": "synth", "bitstream": "bitstream"}
#: The experiments: every fabric option but the size (they take --sizes), which they refuse.
EXPERIMENTS = ("sweep", "saturation")


def flags(parser):
    """The long option flags a parser takes."""
    return {flag for action in parser._actions for flag in action.option_strings
            if flag.startswith("--")}


def missing_fabric_options(parser):
    """The fabric options ``parser`` does not take."""
    return sorted({option.flag for option in OPTIONS} - flags(parser))


def command_parser(command):
    module = importlib.import_module(f"ihcube.cli.{COMMANDS[command]}")
    parser = module._parser(*([{}] if command == "formal" else []))
    return parser


@pytest.mark.parametrize("command", [*BUILDERS, *EXPERIMENTS])
def test_a_command_that_builds_a_fabric_takes_every_fabric_option(command):
    assert missing_fabric_options(command_parser(command)) == []


def test_a_command_missing_an_option_is_found():
    """Negative control: a parser with the group less one option is reported."""
    whole = Parser(prog="x")
    add_fabric_options(whole)
    assert missing_fabric_options(whole) == []
    partial = Parser(prog="x")
    for option in OPTIONS:
        if option.flag != "--vcs":
            partial.add_argument(option.flag)
    assert missing_fabric_options(partial) == ["--vcs"]


@pytest.mark.parametrize("target", [target for target in BUILDERS.values() if target])
def test_make_passes_every_fabric_option_it_is_given(target):
    """``make lint SWITCHING=wormhole`` lints the wormhole fabric: each short form, and
    FABRIC as it is, reaches the command; nothing is passed that was not given."""
    given = ["W=16", "DEPTH=2", "ORDER=lsb", "PORTS=2", "SWITCHING=wormhole", "FLITS=4",
             "FLIT_WIDTH=16", "VCS=1", "VC_DEPTH=3", "LINK_STAGES=1", "SWITCH_STAGES=1",
             "EJECT_STAGES=1", "FABRIC=--order msb"]
    result = subprocess.run(["make", "-n", "--no-print-directory", target, "N=5", *given],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    for option in ("--nodes='5'", "--width='16'", "--depth='2'", "--order='lsb'",
                   "--ports='2'", "--switching='wormhole'", "--flits='4'", "--flit-width='16'",
                   "--vcs='1'", "--vc-depth='3'", "--link-stages='1'", "--switch-stages='1'",
                   "--eject-stages='1'", "--order msb"):
        assert option in result.stdout, (target, option)
    result = subprocess.run(["make", "-n", "--no-print-directory", target, "N=5"],
                            cwd=ROOT, capture_output=True, text=True)
    assert "--nodes='5'" in result.stdout
    assert not [option.flag for option in OPTIONS
                if option.flag != "--nodes" and option.flag in result.stdout]


def listed_flags(parser):
    """The long option flags ``parser``'s help lists."""
    help_text = parser.format_help()
    return {flag for flag in flags(parser) if f"{flag} " in help_text or f"{flag}," in help_text
            or help_text.rstrip().endswith(flag)}


@pytest.mark.parametrize("command", EXPERIMENTS)
def test_an_experiments_help_lists_only_the_options_it_takes(command, capsys):
    """The fabric options an experiment refuses are not in its ``--help``, and one given is
    still refused in one line, saying what to give instead."""
    from ihcube.cli import main
    refused = importlib.import_module(f"ihcube.cli.{COMMANDS[command]}").REFUSED
    refused_flags = {option.flag: option.kind for option in OPTIONS
                     if option.keyword in refused or option.dest in refused}
    assert refused_flags and not listed_flags(command_parser(command)) & set(refused_flags)
    for flag in sorted(refused_flags):
        given = [flag] if refused_flags[flag] == "flag" else [flag, "2"]
        status = main([command, "--sizes", "4", *given])
        err = capsys.readouterr().err
        assert status == 2 and err.count("\n") == 1, (flag, err)
        assert f"({flag}) is not taken" in err, (flag, err)


def test_a_help_listing_a_refused_option_is_found():
    """Negative control: the whole group, nothing left out, lists every flag."""
    whole = Parser(prog="x")
    add_fabric_options(whole, nodes_required=False)
    assert {option.flag for option in OPTIONS} <= listed_flags(whole)
    left = Parser(prog="x")
    add_fabric_options(left, nodes_required=False, leave_out=("nodes",))
    assert "--nodes" not in listed_flags(left) and "--width" in listed_flags(left)


@pytest.mark.parametrize("command", ["verilog", "ports", "lint", "stress", "synth"])
def test_a_payload_width_with_wormhole_switching_is_refused(command, tmp_path, capsys):
    """A wormhole fabric's hardware and names do not depend on a payload width (its messages
    carry the flits' bits): ``--width`` with ``--switching wormhole`` is one line, so that
    two different files never share a name. Negative controls: the same width with packet
    switching, and wormhole switching without it, are taken (``ports``: nothing built)."""
    from ihcube.cli import main
    out = [] if command in ("ports", "stress") else ["--out", str(tmp_path)]
    status = main([command, "--nodes", "5", "--switching", "wormhole", "--width", "64", *out])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1 and "(--width) is not taken with wormhole" in err
    assert list(tmp_path.iterdir()) == []
    assert main(["ports", "--nodes", "5", "--width", "64"]) == 0
    capsys.readouterr()
    from ihcube.cli.options import fabric_spec
    for given in ([], ["--width", "32"]):  # the default, given or not: the name of before
        args = command_parser("verilog").parse_args(["--nodes", "5", "--switching", "wormhole",
                                                     *given])
        assert fabric_spec(args).name == "ihcube_n5_wormhole_f32_l20_v3"
