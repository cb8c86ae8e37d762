"""Property-based tests of every command's options: a bad value, whatever it is, is one line
``ihcube <command>: error: ...`` on standard error, exit status 2, and no work done.

The values are drawn by Hypothesis among what no option takes: text that is not a number,
non-finite numbers, negative and empty ones. Each command gets small, valid other options,
so that an option that let a bad value through would show as a run (status 0 or 1, output on
standard output) instead of a one-line error.
"""

import math

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from ihcube.cli import main

#: A packet router's register stages, options of several commands.
STAGES = ["--link-stages", "--switch-stages", "--eject-stages"]
#: The fabric options the experiments take beside their lists (the stages and the switching)
#: or refuse (those the lists or the traffic replace).
FABRIC = ["--nodes", "--width", "--depth", "--ports", "--switching", "--flits", "--flit-width",
          "--vcs", "--vc-depth"]

#: command -> (valid arguments around the option, the options that take a checked value)
COMMANDS = {
    "verilog": (["--nodes", "3", "--out", "{tmp}"], ["--nodes", "--width", "--depth", "--order",
                                                       "--ports", "--switching", "--flits",
                                                       "--flit-width", "--vcs", "--vc-depth",
                                                       *STAGES]),
    "ports": (["--nodes", "3"], ["--nodes", "--width", "--ports"]),
    "sweep": (["--sizes", "4", "--rates", "0.1", "--warmup", "10", "--window", "10",
               "--no-plots", "--out", "{tmp}"],
              ["--set", "--sizes", "--depths", "--orders", "--patterns", "--rates", "--radius",
               "--zeta", "--reading", "--warmup", "--window", "--max-windows", "--tolerance",
               "--seed", "--jobs", "--threads", *FABRIC, "--order", *STAGES]),
    "analyze": (["--nodes", "4"], ["--nodes", "--pattern", "--order", "--reading", "--radius",
                                   "--zeta", "--saturation"]),
    "saturation": (["--sizes", "4", "--depths", "1", "--out", "{tmp}"],
                   ["--sizes", "--depths", "--order", "--jobs", *STAGES, "--threads",
                    *FABRIC]),
    "collectives": (["--dims", "1", "--sizes", "3", "--depths", "1", "--out", "{tmp}"],
                    ["--dims", "--sizes", "--depths", "--jobs", "--threads"]),
    "stress": (["--nodes", "2", "--cycles", "10"],
               ["--nodes", "--width", "--ports", "--cycles", "--depth", "--order", "--seed",
                "--backend", "--broadcast", "--eject-ready", "--watchdog", "--switching",
                "--flits", "--vcs", "--vc-depth", "--flit-width", *STAGES, "--threads"]),
    "deadlock": (["--max-nodes", "4"], ["--max-nodes", "--order", "--cross-check"]),
    "lint": (["--nodes", "2", "--out", "{tmp}"], ["--nodes", "--width", "--depth", "--order",
                                                    "--switching", "--vcs", *STAGES]),
    "cocotb": (["--nodes", "2", "--out", "{tmp}"],
               ["--nodes", "--width", "--depth", "--order", "--stress", "--seed",
                *STAGES]),
    "synth": (["--nodes", "2", "--family", "ice40", "--out", "{tmp}"],
              ["--nodes", "--family", "--width", "--depth", "--placer", "--router",
               "--switching", "--flit-width", "--vcs", *STAGES, "--pnr-minutes"]),
    "bitstream": (["--board", "icebreaker", "--nodes", "2", "--out", "{tmp}"],
                  ["--board", "--nodes", "--depth", "--placer", *STAGES]),
    "synth-table": (["--family", "ice40", "--nodes", "2", "--out", "{tmp}"],
                    ["--family", "--nodes", "--placer", "--depths", "--routers",
                     "--flit-widths", "--vcs", "--pnr-minutes", "--staged"]),
    "bench": (["--nodes", "2", "--out", "{tmp}/b.json"], ["--nodes"]),
    "bench-model": (["--nodes", "2", "--out", "{tmp}/b.json"], ["--nodes", "--threads"]),
    "bench-wormhole": (["--nodes", "2", "--out", "{tmp}/b.json"], ["--nodes"]),
}

#: Options for which an empty value means "none of these", on purpose.
EMPTY_ALLOWED = {("collectives", "--dims"), ("collectives", "--sizes")}


def is_number(text):
    try:
        return math.isfinite(float(text)) or True if float(text) == float(text) else False
    except ValueError:
        return False


#: Values no option takes: non-numbers (names of no routing order, family, board, placer,
#: pattern or set), non-finite and negative numbers, empty text.
BAD = st.one_of(
    st.sampled_from(["nan", "NaN", "inf", "-inf", "1e999", "-1", "-0.5", "", " ", ",", "1,,2",
                     "0x10", "abc", "msb,", "ecp", "٣"]),
    st.text(min_size=1, max_size=6).filter(lambda text: not is_number(text)
                                           and text.strip() not in ("msb", "lsb", "ecp5",
                                                                    "ice40", "heap", "static",
                                                                    "sa", "uniform", "sphere",
                                                                    "decreasing", "quick",
                                                                    "full", "model", "rtl",
                                                                    "icebreaker", "all")
                                           and not text.startswith("-")),
)


def with_option(base, option, value, tmp):
    args = [arg.format(tmp=tmp) for arg in base]
    if option in args:
        args[args.index(option) + 1] = value
    else:
        args += [option, value]
    return args


@pytest.mark.parametrize("command, option", [(command, option)
                                             for command, (_, options) in COMMANDS.items()
                                             for option in options])
def test_a_bad_value_is_one_line_and_status_2(command, option, tmp_path, capsys):
    base, _ = COMMANDS[command]

    @settings(max_examples=12, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(BAD)
    def check(value):
        if value == "" and (command, option) in EMPTY_ALLOWED:
            return
        status = main([command, *with_option(base, option, value, tmp_path)])
        out, err = capsys.readouterr()
        assert status == 2, (command, option, value, status, out[-300:], err[-300:])
        assert err.startswith(f"ihcube {command}: error: "), (option, value, err)
        assert err.count("\n") == 1, (option, value, err)
        assert out == "", (option, value, out[-300:])

    check()


# --- The cases the usability review found, each pinned ------------------------------------

@pytest.mark.parametrize("args, message", [
    (["--zeta", "nan"], "Sphere locality zeta must be a number from 0 to 1, not 'nan'"),
    (["--tolerance", "nan"], "Tolerance must be a number from 0 to 1, not 'nan'"),
    (["--tolerance", "inf"], "Tolerance must be a number from 0 to 1, not 'inf'"),
    (["--sizes", ""], "Sizes must be comma-separated integers of at least 2, not ''"),
    (["--rates", ""], "Rates must be comma-separated numbers from 0 to 1, not ''"),
    (["--sizes", "1_6"], "Sizes must be comma-separated integers of at least 2, not '1_6'"),
])
def test_sweep_values_that_used_to_get_through(args, message, capsys):
    assert main(["sweep", *args]) == 2
    assert capsys.readouterr().err == f"ihcube sweep: error: {message}\n"


def test_collectives_runs_a_power_of_two_given_in_sizes(tmp_path, capsys):
    assert main(["collectives", "--dims", "", "--sizes", "8,3", "--depths", "1", "--jobs", "1",
                 "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "| 8 | 1 |" in out and "| 3 | 1 |" in out


def test_collectives_with_no_sizes_at_all(capsys):
    assert main(["collectives", "--dims", "", "--sizes", ""]) == 2
    assert capsys.readouterr().err == ("ihcube collectives: error: No sizes: give --dims or "
                                       "--sizes\n")


def test_ad_hoc_runs_leave_the_reference_results_alone(tmp_path, monkeypatch):
    """Without --out, a sweep writes into build/results, never into results/."""
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", "--sizes", "4", "--depths", "1", "--patterns", "uniform",
                 "--rates", "0.1", "--warmup", "20", "--window", "40", "--no-plots",
                 "--jobs", "1"]) == 0
    assert (tmp_path / "build" / "results" / "sweep_quick.csv").is_file()
    assert not (tmp_path / "results").exists()


def test_a_sweep_removes_the_pictures_it_did_not_redraw(tmp_path):
    stale = tmp_path / "t_sphere.png"
    stale.write_bytes(b"an earlier run's")
    assert main(["sweep", "--sizes", "4", "--depths", "1", "--patterns", "uniform",
                 "--rates", "0.1", "--warmup", "20", "--window", "40", "--jobs", "1",
                 "--out", str(tmp_path), "--name", "t"]) == 0
    assert (tmp_path / "t_uniform.png").is_file()
    assert not stale.exists()


def test_an_unwritable_waveform_is_one_line(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("IHCUBE_VCD", str(tmp_path / "no" / "such" / "folder" / "x.vcd"))
    assert main(["stress", "--backend", "rtl", "--nodes", "2", "--cycles", "10"]) == 2
    err = capsys.readouterr().err
    assert err == (f"ihcube stress: error: IHCUBE_VCD: cannot write "
                   f"'{tmp_path}/no/such/folder/x.vcd': No such file or directory\n")


def test_a_closed_pipe_ends_quietly(tmp_path):
    """``ihcube formal --list | head -1``: the reader goes away; no traceback."""
    import subprocess
    import sys
    process = subprocess.Popen([sys.executable, "-m", "ihcube", "formal", "--list"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.readline()
    process.stdout.close()
    err = process.stderr.read().decode()
    process.wait(timeout=120)
    assert "Traceback" not in err and "Error" not in err, err


def test_an_rtl_stress_run_shows_its_progress(capsys):
    """A simulation of the RTL is slow: the command shows how far it is, on standard error."""
    assert main(["stress", "--backend", "rtl", "--nodes", "2", "--cycles", "40"]) == 0
    err = capsys.readouterr().err
    assert "RTL cycles simulated: 40/40 (100%)" in err
