"""Property-based tests of every command's options: a bad value, whatever it is, is one line
``ihcube <command>: error: ...`` on standard error, exit status 2, and no work done.

The values are drawn by Hypothesis among what no option takes: text that is not a number,
non-finite numbers, negative and empty ones. Each command gets small, valid other options,
so that an option that let a bad value through would show as a run (status 0 or 1, output on
standard output) instead of a one-line error.
"""

import math
import pathlib
import sys
import types

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from ihcube import cli
from ihcube.cli import main

#: A packet router's register stages, options of several commands.
STAGES = ["--link-stages", "--switch-stages", "--eject-stages"]
#: The fabric options the experiments take beside their lists (the stages and the switching)
#: or refuse (those the lists or the traffic replace).
FABRIC = ["--nodes", "--width", "--depth", "--ports", "--switching", "--flits", "--flit-width",
          "--vcs", "--vc-depth", "--interface"]

#: command -> (valid arguments around the option, the options that take a checked value)
COMMANDS = {
    "verilog": (["--nodes", "3", "--out", "{tmp}"], ["--nodes", "--width", "--depth", "--order",
                                                       "--ports", "--switching", "--flits",
                                                       "--flit-width", "--vcs", "--vc-depth",
                                                       *STAGES, "--interface"]),
    "ports": (["--nodes", "3"], [*FABRIC, "--order", *STAGES]),
    "sweep": (["--sizes", "4", "--rates", "0.1", "--warmup", "10", "--window", "10",
               "--no-plots", "--out", "{tmp}"],
              ["--set", "--sizes", "--depths", "--orders", "--patterns", "--rates", "--radius",
               "--zeta", "--reading", "--warmup", "--window", "--max-windows", "--tolerance",
               "--seed", "--jobs", "--threads", *FABRIC, "--order", *STAGES]),
    "analyze": (["--sizes", "4"], ["--sizes", "--pattern", "--order", "--reading", "--radius",
                                   "--zeta", "--saturation"]),
    "saturation": (["--sizes", "4", "--depths", "1", "--out", "{tmp}"],
                   ["--sizes", "--depths", "--order", "--jobs", *STAGES, "--threads",
                    *FABRIC]),
    "collectives": (["--dims", "1", "--sizes", "3", "--depths", "1", "--out", "{tmp}"],
                    ["--dims", "--sizes", "--depths", "--jobs", "--threads", "--ports",
                     "--collectives"]),
    "stress": (["--nodes", "2", "--cycles", "10"],
               ["--nodes", "--width", "--ports", "--cycles", "--depth", "--order", "--seed",
                "--backend", "--broadcast", "--eject-ready", "--watchdog", "--switching",
                "--flits", "--vcs", "--vc-depth", "--flit-width", *STAGES, "--threads",
                "--jobs", "--interface", "--faults"]),
    "deadlock": (["--max-nodes", "4"], ["--max-nodes", "--order", "--cross-check"]),
    "lint": (["--nodes", "2", "--out", "{tmp}"], [*FABRIC, "--order", *STAGES]),
    "cocotb": (["--nodes", "2", "--out", "{tmp}"],
               [*FABRIC, "--order", "--stress", "--seed", *STAGES]),
    # The builds' output folder is new: one made before a bad value is refused is left behind.
    "synth": (["--nodes", "2", "--family", "ice40", "--out", "{tmp}/build"],
              [*FABRIC, "--order", "--family", "--placer", "--router", *STAGES,
               "--pnr-minutes"]),
    "bitstream": (["--board", "icebreaker", "--nodes", "2", "--out", "{tmp}/build"],
                  ["--board", *FABRIC, "--order", "--placer", "--clock-mhz", *STAGES]),
    "synth-table": (["--family", "ice40", "--sizes", "2", "--out", "{tmp}"],
                    ["--family", "--sizes", "--placer", "--depths", "--routers",
                     "--flit-widths", "--vcs", "--pnr-minutes", "--staged",
                     "--reconfigurable-sizes"]),
    "formal": (["--list"], ["--jobs", "--timeout", "--solver"]),
    "reconfigure": (["--nodes", "8", "--faulty", "1"], ["--nodes", "--faulty"]),
    "reconfigure-experiment": (["--nodes", "8", "--faults", "1", "--draws", "1", "--small", "4",
                                "--no-model", "--no-plots", "--out", "{tmp}"],
                               ["--nodes", "--faults", "--draws", "--seed", "--small"]),
    "bench": (["--sizes", "2", "--out", "{tmp}"], ["--sizes"]),
    "bench-model": (["--sizes", "2", "--out", "{tmp}"], ["--sizes", "--threads"]),
    "bench-wormhole": (["--sizes", "2", "--out", "{tmp}"], ["--sizes"]),
    "results": (["--folder", "{tmp}"], ["--folder"]),
    "throughput": (["--folder", "{tmp}", "--out", "{tmp}/out"], ["--folder", "--family", "--size"]),
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
                                                                    "icebreaker", "all", "native",
                                                                    "axis")
                                           and not text.startswith("-")),
)


def with_option(base, option, value, tmp):
    args = [arg.format(tmp=tmp) for arg in base]
    if option in args:
        args[args.index(option) + 1] = value
    else:
        args += [option, value]
    return args


#: Integers beyond any ceiling, and a float beyond any. ``synth``, ``bitstream`` and
#: ``synth-table`` get them with their builders replaced by ones that build nothing
#: (:func:`no_builds`): a value that got through shows as a run, never as a tool started.
EXTREME = ["99999999999999999999", "-99999999999999999999", "1e308"]


@pytest.fixture
def no_builds(monkeypatch):
    """The FPGA builds (``synth``, ``bitstream``, ``synth-table``'s table) replaced by ones
    that only say they were reached: a value that got through shows as a run (status 0, a
    line on standard output), never as a Yosys or nextpnr run."""
    from ihcube.boards import build

    def built(*args, **keywords):
        return {"fits": True}
    monkeypatch.setattr(build, "table", lambda *args, **keywords: 0)
    monkeypatch.setattr(build, "synth", built)
    monkeypatch.setattr(build, "bitstream", built)
    monkeypatch.setattr(build, "summary", lambda figures: "built")


def refused(command, args, tmp_path, capsys):
    """Run ``ihcube command args``; assert that it is refused as a mistake must be: one line
    ``ihcube <command>: error: ...`` on standard error, status 2, no traceback, nothing on
    standard output, and no file left behind in ``tmp_path``."""
    before = sorted(tmp_path.rglob("*"))
    try:
        status = main([command, *args])
    except Exception as error:  # what would be a traceback at the command line
        status = f"traceback: {type(error).__name__}: {error}"
    out, err = capsys.readouterr()
    assert status == 2, (command, args, status, out[-300:], err[-300:])
    assert err.startswith(f"ihcube {command}: error: "), (args, err)
    assert err.count("\n") == 1 and "Traceback" not in err, (args, err)
    assert out == "", (args, out[-300:])
    assert sorted(tmp_path.rglob("*")) == before, (args, "left files behind")


@pytest.mark.parametrize("command, option", [(command, option)
                                             for command, (_, options) in COMMANDS.items()
                                             for option in options])
def test_a_bad_value_is_one_line_and_status_2(command, option, tmp_path, capsys, no_builds):
    base, _ = COMMANDS[command]
    values = st.one_of(st.sampled_from(EXTREME), BAD)

    @settings(max_examples=12, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(values)
    def check(value):
        if value == "" and (command, option) in EMPTY_ALLOWED:
            return
        refused(command, with_option(base, option, value, tmp_path), tmp_path, capsys)

    check()
    for value in EXTREME:  # each extreme value at least once, whatever is drawn
        refused(command, with_option(base, option, value, tmp_path), tmp_path, capsys)


@pytest.mark.parametrize("command", ["synth", "bitstream"])
def test_a_build_that_got_through_would_show_as_a_run(command, tmp_path, capsys, no_builds):
    """Negative control of :func:`no_builds`: the valid arguments of the table above reach
    the stand-in builder (status 0, its line on standard output), so a bad value let through
    would fail :func:`refused` instead of starting a tool."""
    base, _ = COMMANDS[command]
    assert main([command, *(arg.format(tmp=tmp_path) for arg in base)]) == 0
    assert capsys.readouterr().out == "built\n"


# --- Where the commands write: checked before any work -------------------------------------

#: command -> (valid arguments but the output, the output option, "dir" or "file"): every
#: command that writes.
OUTPUTS = {
    "verilog": (["--nodes", "3"], "--out", "dir"),
    "lint": (["--nodes", "2"], "--out", "dir"),
    "cocotb": (["--nodes", "2"], "--out", "dir"),
    "sweep": (["--sizes", "4", "--rates", "0.1", "--warmup", "10", "--window", "10",
               "--no-plots", "--jobs", "1"], "--out", "dir"),
    "saturation": (["--sizes", "4", "--depths", "1", "--jobs", "1"], "--out", "dir"),
    "collectives": (["--dims", "1", "--sizes", "3", "--depths", "1", "--jobs", "1"], "--out",
                    "dir"),
    "stress": (["--campaign", "--quick", "--jobs", "1"], "--out", "dir"),
    "analyze": (["--sizes", "4"], "--out", "dir"),
    "bench": (["--sizes", "2"], "--out", "dir"),
    "bench-model": (["--sizes", "2"], "--out", "dir"),
    "bench-wormhole": (["--sizes", "2"], "--out", "dir"),
    "synth": (["--nodes", "2", "--family", "ice40"], "--out", "dir"),
    "bitstream": (["--board", "icebreaker", "--nodes", "2"], "--out", "dir"),
    "synth-table": (["--family", "ice40", "--sizes", "2"], "--out", "dir"),
    "throughput": (["--size", "1024"], "--out", "dir"),
    "reconfigure-experiment": (["--nodes", "8", "--faults", "1", "--draws", "1", "--small",
                                "4", "--no-model", "--no-plots"], "--out", "dir"),
}


def bad_locations(tmp_path, kind):
    """Output locations no command can write: empty; under a regular file; in /proc, where
    not even root can make a file (the tests run as root, to whom every folder's mode says
    yes); and for a directory a regular file, for a file a folder."""
    (tmp_path / "file").write_text("a regular file\n")
    (tmp_path / "folder").mkdir()
    locations = ["", str(tmp_path / "file" / "sub"), str(tmp_path / "file" / "sub" / "x.json"),
                 "/proc/ihcube-out", "/proc/ihcube-out/x.json"]
    return locations + ([str(tmp_path / "file")] if kind == "dir" else
                        [str(tmp_path / "folder"), str(tmp_path / "folder") + "/"])


@pytest.mark.parametrize("command", OUTPUTS)
def test_an_output_that_cannot_be_written_is_refused_before_the_work(command, tmp_path,
                                                                     capsys, no_builds):
    base, option, kind = OUTPUTS[command]
    for location in bad_locations(tmp_path, kind):
        refused(command, [*base, option, location], tmp_path, capsys)


@pytest.mark.parametrize("name", ["a/b", "/abs", "..", ".", "", " "])
def test_a_sweep_name_with_a_folder_is_refused(name, tmp_path, capsys):
    base, option, _ = OUTPUTS["sweep"]
    refused("sweep", [*base, option, str(tmp_path), "--name", name], tmp_path, capsys)


# --- Every option of every command is in the tables above ----------------------------------

#: Options that take free text on purpose, each with what checks it.
FREE = {
    ("lint", "--verilog"): "a file to lint, must exist",
    ("verilog", "--check"): "a file to check, must exist (test_digest.py)",
    ("lint", "--top"): "a module name, Verilator says if there is none",
    ("cocotb", "--test"): "argparse choices",
    ("sweep", "--beside"): "a CSV read before the work",
    ("sweep", "--name"): "test_a_sweep_name_with_a_folder_is_refused",
    ("analyze", "--saturation"): "a JSON read before the work",
    ("analyze", "--scan"): "its own test in test_analysis.py",
    ("sweep", "--scheduler"): "an address, reached before the work",
    ("saturation", "--scheduler"): "an address, reached before the work",
    ("collectives", "--scheduler"): "an address, reached before the work",
    ("stress", "--scheduler"): "an address, reached before the work",
    ("synth", "--synth-opts"): "Yosys's options, passed as they are",
    ("bitstream", "--synth-opts"): "Yosys's options, passed as they are",
    ("synth-table", "--synth-opts"): "Yosys's options, passed as they are",
    ("synth-table", "--previous"): "a results file read before the work",
    ("formal", "--keep"): "a folder, made (out_dir) before the work",
    ("synth-table", "--nodes"): "the old spelling of --sizes",
    # Old spellings, kept for one release: test_vocabulary.py runs each beside its new one.
    ("analyze", "--nodes"): "the old spelling of --sizes",
    ("analyze", "--json"): "the old spelling of --out",
    ("bench", "--nodes"): "the old spelling of --sizes",
    ("bench-model", "--nodes"): "the old spelling of --sizes",
    ("bench-wormhole", "--nodes"): "the old spelling of --sizes",
}
#: Commands another change is converting to the fabric description: their options are
#: listed as they are today, not yet required to be complete.
CONVERTING = set()


def options_of(command, monkeypatch):
    """The options of ``ihcube command`` that take a value, read from its parser."""
    from ihcube.cli import usage
    found = []

    class Parsed(Exception):
        pass

    def parse_args(self, args=None, namespace=None):
        found.extend(option for action in self._actions if action.nargs != 0
                     for option in action.option_strings if option.startswith("--"))
        raise Parsed

    monkeypatch.setattr(usage.Parser, "parse_args", parse_args)
    with pytest.raises(Parsed):
        main([command])
    monkeypatch.undo()
    return set(found)


@pytest.mark.parametrize("command", [command for command in cli.COMMANDS
                                     if command not in CONVERTING])
def test_every_option_of_every_command_is_tried(command, monkeypatch):
    """A new option joins COMMANDS (a bad value), OUTPUTS (a bad location) or FREE (why its
    text is free): none is left out of the property tests by oversight."""
    tried = set(COMMANDS[command][1]) | {OUTPUTS[command][1]} if command in OUTPUTS else \
        set(COMMANDS[command][1])
    free = {option for (name, option) in FREE if name == command}
    assert options_of(command, monkeypatch) - tried - free == set()


# --- Negative controls: a command with one unchecked option fails the checks ---------------

def toy_command(checked):
    """A command ``toy`` with ``--count`` and ``--out``, checked as the others are or not."""
    from ihcube.cli.options import number, out_dir
    from ihcube.cli.usage import command_parser, run

    def toy_main(argv):
        parser = command_parser("toy", "A toy command.")
        parser.add_argument("--count", default="1")
        parser.add_argument("--out", default=".")

        def body(args):
            count = number(args.count, "Count", int, 1, 100) if checked else int(args.count)
            out = out_dir(args.out) if checked else pathlib.Path(args.out)
            print(f"counted to {count}")  # the work, then the output
            (out / "toy.txt").write_text(f"{count}\n")
        return run("toy", parser, body, argv)
    return types.SimpleNamespace(main=toy_main)


@pytest.mark.parametrize("checked", [True, False])
def test_the_checks_catch_one_unchecked_option(checked, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(cli.COMMANDS, "toy", "toy")
    monkeypatch.setitem(sys.modules, "ihcube.cli.toy", toy_command(checked))
    cases = [["--count", EXTREME[0], "--out", str(tmp_path)],
             ["--count", "abc", "--out", str(tmp_path)],
             ["--out", bad_locations(tmp_path, "dir")[1]]]
    for args in cases:
        if checked:
            refused("toy", args, tmp_path, capsys)
        else:
            with pytest.raises(AssertionError):
                refused("toy", args, tmp_path, capsys)
            for leftover in tmp_path.glob("toy.txt"):
                leftover.unlink()


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
    assert (tmp_path / "build" / "results" / "sweep_quick_custom.csv").is_file()
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


@pytest.mark.parametrize("command", ["verilog", "stress", "stress-wormhole"])
def test_long_work_shows_its_progress_on_standard_error(command, tmp_path, capsys,
                                                        monkeypatch):
    """``verilog`` and a model's ``stress`` run show a progress line once they have taken
    ``PROGRESS_AFTER`` seconds (forced to 0 here): on standard error, standard output the same
    bytes as without it. Negative control: with a threshold never reached, no line."""
    from ihcube.cli import stress, verilog
    module, args = {
        "verilog": (verilog, ["verilog", "--nodes", "2", "--out", str(tmp_path)]),
        "stress": (stress, ["stress", "--nodes", "5", "--cycles", "300"]),
        "stress-wormhole": (stress, ["stress", "--nodes", "5", "--switching", "wormhole",
                                     "--flits", "4", "--cycles", "100"])}[command]
    printed = []
    for after, shown in ((1e9, False), (0.0, True)):
        monkeypatch.setattr(module, "PROGRESS_AFTER", after)
        assert main(args) == 0
        out, err = capsys.readouterr()
        assert ("(100%)" in err) == shown, (after, err)
        assert "(100%)" not in out
        printed.append(out)
    assert printed[0] == printed[1]


def test_without_dask_the_tasks_run_here_and_say_so(tmp_path, capsys, monkeypatch):
    """``pip install ihcube`` alone: the default --jobs 2 runs in this process, one line on
    standard error says why, and the results are written."""
    from ihcube.cli import options
    monkeypatch.setattr(options, "_have_dask", lambda: False)
    assert main(["saturation", "--sizes", "4", "--depths", "1", "--out", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert err.startswith("ihcube: Dask is not installed (pip install 'ihcube[cluster]'): "
                          "running the tasks in this process instead of 2 worker processes\n")
    assert (tmp_path / "saturation.json").is_file()


def test_bench_times_the_sizes_it_is_given_and_no_others(tmp_path, capsys, monkeypatch):
    """``ihcube bench --sizes 5`` times 5 nodes only; the wide fabrics (1048 and 2048 nodes)
    come with the default sizes."""
    from ihcube.bench import verilog
    timed = []

    def measure(n, width=32, depth=1):
        timed.append((n, width))
        return {"nodes": n, "width": width, "depth": depth, "seconds": 0.0,
                "peak_rss_kib": 0, "bytes": 0, "lines": 0}
    monkeypatch.setattr(verilog, "measure_generation", measure)
    monkeypatch.setattr(verilog, "find_yosys", lambda: None)
    assert main(["bench", "--sizes", "5", "--out", str(tmp_path)]) == 0
    assert timed == [(5, 32)]
    timed.clear()
    assert main(["bench", "--out", str(tmp_path)]) == 0
    assert timed == [(n, 32) for n in verilog.SIZES] + list(verilog.WIDE)
    assert "pip install 'ihcube[verify]'" in capsys.readouterr().out
