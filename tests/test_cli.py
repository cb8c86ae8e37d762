"""The command line and the Makefile front door: output files, determinism, and errors."""

import ast
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def ihcube(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "ihcube", *args], cwd=cwd,
                          capture_output=True, text=True)


@pytest.mark.slow
@pytest.mark.parametrize("n, width, name", [(1, 32, "ihcube_n1_w32.v"), (5, 8, "ihcube_n5_w8.v")])
def test_verilog_is_written_and_deterministic(tmp_path, n, width, name):
    outputs = []
    for run in ("a", "b"):
        result = ihcube("verilog", f"--nodes={n}", f"--width={width}", f"--out={tmp_path / run}")
        assert result.returncode == 0, result.stderr
        outputs.append((tmp_path / run / name).read_bytes())
    assert outputs[0] == outputs[1]
    text = outputs[0].decode()
    assert f"module {name[:-2]}(" in text
    assert text.count("endmodule") >= 2  # router module(s) and the fabric


@pytest.mark.slow
def test_depth_and_order_show_in_the_name(tmp_path):
    result = ihcube("verilog", "--nodes=3", "--depth=2", "--order=lsb", f"--out={tmp_path}")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "ihcube_n3_w32_d2_lsb.v").exists()


def test_a_routing_that_can_deadlock_is_refused_in_one_line(tmp_path, capsys):
    """The generator runs the deadlock check first. No option selects a cyclic routing, so
    the check is made to see one: lsb unicasts with Algorithm 6 broadcasts, cyclic from 4."""
    from unittest import mock

    from ihcube import cli, deadlock
    cyclic = deadlock.FirstSetBitRouting("lsb", name="lsb with Algorithm 6", travel="msb")
    with mock.patch.object(deadlock, "routing_for", lambda order: cyclic):
        status = cli.main(["verilog", "--nodes=4", "--order=lsb", f"--out={tmp_path}"])
    err = capsys.readouterr().err
    assert status == 2
    assert err.startswith("ihcube verilog: error: Routing 'lsb with Algorithm 6' of 4 nodes can "
                          "deadlock: ")
    assert "0 -(dim 0)-> 1 -(dim 1)-> 3 -(dim 0)-> 2 -(dim 1)-> 0" in err
    assert len(err.splitlines()) == 1
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("args, message", [
    (["--nodes=0"], "Node count must be a positive integer, not 0"),
    (["--nodes=-3"], "Node count must be a positive integer, not -3"),
    (["--nodes=abc"], "Node count must be a positive integer, not 'abc'"),
    (["--nodes=1.5"], "Node count must be a positive integer, not '1.5'"),
    (["--nodes="], "Node count must be a positive integer, not ''"),
    (["--nodes=26", "--width=0"], "Payload width must be a positive integer, not 0"),
    (["--nodes=26", "--depth=x"], "Buffer depth must be a positive integer, not 'x'"),
    (["--nodes=26", "--order=up"], "Routing order must be one of 'msb' or 'lsb', not 'up'"),
    ([], "the following arguments are required: --nodes/-n"),
])
def test_bad_parameters_give_one_line_and_status_2(tmp_path, args, message):
    result = ihcube("verilog", *args, f"--out={tmp_path}")
    assert result.returncode == 2
    assert result.stderr == f"ihcube verilog: error: {message}\n"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("assignment, message", [
    ("N=abc", "Node count must be a positive integer, not 'abc'"),
    ("N=-3", "Node count must be a positive integer, not -3"),
    ("W=0", "Payload width must be a positive integer, not 0"),
])
def test_make_verilog_reports_bad_parameters_without_a_traceback(assignment, message):
    result = subprocess.run(["make", "--no-print-directory", "-s", "verilog", assignment],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode != 0
    assert f"ihcube verilog: error: {message}" in result.stderr.splitlines()
    assert "Traceback" not in result.stderr + result.stdout


# --- The subcommands ----------------------------------------------------------------------------

def registered():
    from ihcube.cli import COMMANDS
    return COMMANDS


def summary_of(command):
    """The first line of the docstring of the command's module, read from its file."""
    path = ROOT / "cli" / f"{registered()[command]}.py"
    return ast.get_docstring(ast.parse(path.read_text())).splitlines()[0]


@pytest.mark.parametrize("command", list(registered()))
def test_every_command_has_its_module(command):
    """Each registered command names a module of cli/ that has a docstring to summarise it
    and a ``main``."""
    path = ROOT / "cli" / f"{registered()[command]}.py"
    assert path.is_file(), f"ihcube {command}: no {path}"
    tree = ast.parse(path.read_text())
    assert ast.get_docstring(tree), f"{path} has no docstring"
    assert any(isinstance(node, ast.FunctionDef) and node.name == "main" for node in tree.body)


def test_help_lists_every_command_with_its_summary():
    result = ihcube("--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: ihcube ")
    listed = [line.split(None, 1) for line in result.stdout.split("commands:\n", 1)[1]
              .splitlines()]
    assert [name for name, _ in listed] == list(registered())
    for name, text in listed:
        assert text == summary_of(name)


@pytest.mark.parametrize("command", list(registered()))
def test_every_command_has_help(command):
    result = ihcube(command, "--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"usage: ihcube {command} ")
    assert summary_of(command) in " ".join(result.stdout.split())
    assert result.stderr == ""


def test_help_and_a_bad_parameter_load_neither_amaranth_nor_numba():
    """The front door stays fast: nothing heavy is imported to list the commands or to
    refuse a parameter."""
    code = ("import sys; from ihcube.cli import main; main(['--help']); "
            "assert main(['verilog', '--nodes=abc']) == 2; "
            "heavy = sorted({m.split('.')[0] for m in sys.modules} & {'amaranth', 'numba', "
            "'numpy'}); print(heavy)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "[]"


def test_version_is_the_package_version():
    version = re.search(r'^version = "([^"]+)"$', (ROOT / "pyproject.toml").read_text(),
                        re.M).group(1)
    result = ihcube("--version")
    assert (result.returncode, result.stdout, result.stderr) == (0, f"ihcube {version}\n", "")


def test_an_unknown_command_is_one_line_naming_the_known_ones():
    result = ihcube("verlog", "--nodes=3")
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == ("ihcube: error: unknown command 'verlog'; the commands are "
                             f"{', '.join(registered())}\n")


def test_no_command_prints_the_help_and_status_2():
    result = ihcube()
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith("usage: ihcube ")
    assert result.stderr == ihcube("--help").stdout


def test_ctrl_c_in_a_command_is_one_line_and_status_130(monkeypatch, capsys):
    from ihcube import cli
    from ihcube.cli import verilog

    def interrupted(argv):
        raise KeyboardInterrupt
    monkeypatch.setattr(verilog, "main", interrupted)
    assert cli.main(["verilog", "--nodes=3"]) == 130
    assert capsys.readouterr().err == "ihcube: interrupted\n"


@pytest.mark.slow
@pytest.mark.parametrize("args", [
    ["stress", "--campaign", "--quick", "--jobs", "2"],  # the front end's worker pool
    ["sweep", "--sizes", "16,20", "--depths", "2", "--patterns", "uniform", "--rates",
     "0.1,0.2", "--warmup", "100000000", "--jobs", "2", "--no-plots"],  # ihcube.sim's pool
], ids=["stress-campaign", "sweep"])
def test_ctrl_c_at_a_terminal_stops_every_process_in_one_line(tmp_path, args):
    """Ctrl-C reaches the whole process group, parallel workers included: one line, 130."""
    import os
    import signal
    import time
    child = subprocess.Popen([sys.executable, "-m", "ihcube", *args, "--out", str(tmp_path)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        if args[0] == "stress":
            child.stdout.readline()  # the table's header; the workers start next
        time.sleep(3)
        os.killpg(child.pid, signal.SIGINT)
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
    assert child.returncode == 130, err
    assert err == "ihcube: interrupted\n"


def _descendants(pid):
    """The processes descended from ``pid``, as ``{pid: command name}`` (from /proc)."""
    import pathlib
    parents, names = {}, {}
    for stat in pathlib.Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        child = int(stat.parent.name)
        names[child] = text[text.index("(") + 1:text.rindex(")")]
        parents[child] = int(text[text.rindex(")") + 2:].split()[1])
    found, todo = {}, [pid]
    while todo:
        parent = todo.pop()
        for child, of in parents.items():
            if of == parent and child not in found:
                found[child] = names[child]
                todo.append(child)
    return found


def _alive(pid):
    """Whether ``pid`` runs (a zombie, dead and not yet reaped, does not)."""
    import pathlib
    try:
        text = pathlib.Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return text[text.rindex(")") + 2] != "Z"


def test_sigterm_during_verilog_leaves_no_temporary_file(tmp_path):
    """``kill`` while the Verilog is generated: one line, 143, and the folder as it was (the
    atomic write of ihcube.generate removes its hidden temporary file)."""
    import os
    import signal
    import time
    child = subprocess.Popen([sys.executable, "-m", "ihcube", "verilog", "--nodes", "2048",
                              "--out", str(tmp_path)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not list(tmp_path.glob(".*.tmp")) and time.monotonic() < deadline:
            time.sleep(0.05)  # the temporary file is opened before the generation
        assert list(tmp_path.glob(".*.tmp")), "the generation never started"
        os.kill(child.pid, signal.SIGTERM)
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 143, err
    assert err == "ihcube: terminated\n"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_sigterm_during_cocotb_ends_the_simulator(tmp_path):
    """``kill`` while Icarus's ``vvp`` runs (it ignores SIGTERM): the simulator ends with
    ``ihcube``, not orphaned."""
    import os
    import shutil
    import signal
    import time
    if shutil.which("vvp") is None:
        pytest.skip("Icarus Verilog (vvp) is not installed")
    child = subprocess.Popen([sys.executable, "-m", "ihcube", "cocotb", "--nodes", "8",
                              "--out", str(tmp_path)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    simulators = {}
    try:
        deadline = time.monotonic() + 120
        while not simulators and child.poll() is None and time.monotonic() < deadline:
            simulators = {pid for pid, name in _descendants(child.pid).items() if name == "vvp"}
            time.sleep(0.05)
        assert simulators, "vvp never started"
        os.kill(child.pid, signal.SIGTERM)
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    time.sleep(0.5)
    assert not [pid for pid in simulators if _alive(pid)], "vvp outlived ihcube"
    assert child.returncode == 143, err
    assert err.endswith("ihcube: terminated\n"), err


# --- Limits and safe writes of the generator ---------------------------------------------

@pytest.mark.parametrize("args, message", [
    (["--nodes=10000000"], "Node count must be an integer from 1 to 4096, not 10000000"),
    (["--nodes=4097"], "Node count must be an integer from 1 to 4096, not 4097"),
    (["--nodes=2", "--width=100000"],
     "Payload width must be an integer from 1 to 1024, not 100000"),
    (["--nodes=2", "--width=1025"], "Payload width must be an integer from 1 to 1024, not 1025"),
    (["--nodes=2", "--depth=100000"], "Buffer depth must be an integer from 1 to 16, not 100000"),
])
def test_parameters_above_their_limits_give_one_line_before_any_work(tmp_path, args, message):
    """Each limit of the generator (ihcube.params) is checked before anything is generated or
    written: one line, status 2, at once."""
    result = ihcube("verilog", *args, f"--out={tmp_path / 'out'}")
    assert result.returncode == 2
    assert result.stderr == f"ihcube verilog: error: {message}\n"
    assert list(tmp_path.iterdir()) == []


def test_an_output_folder_that_is_a_file_gives_one_line(tmp_path):
    """``--out`` names an existing file: no folder can be made there, even by root. One line,
    status 2, and nothing written."""
    (tmp_path / "taken").write_text("")
    result = ihcube("verilog", "--nodes=3", f"--out={tmp_path / 'taken'}")
    assert result.returncode == 2
    assert result.stderr == (f"ihcube verilog: error: cannot create output directory "
                             f"'{tmp_path / 'taken'}': File exists\n")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["taken"]


def test_a_full_disk_gives_one_line_and_no_partial_file(tmp_path, capsys, monkeypatch):
    """The disk fills up while the file is written: one line, status 2, and no file, neither
    under the final name nor a temporary one."""
    import errno
    import os

    from ihcube import cli

    def full_disk(descriptor):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full_disk)
    status = cli.main(["verilog", "--nodes=3", f"--out={tmp_path}"])
    err = capsys.readouterr().err
    assert status == 2
    assert err == (f"ihcube verilog: error: cannot write '{tmp_path / 'ihcube_n3_w32.v'}': "
                   f"No space left on device\n")
    assert list(tmp_path.iterdir()) == []
