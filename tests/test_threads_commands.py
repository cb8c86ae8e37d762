"""The experiments' commands on several model threads (``--threads``, ``docs/scale.md``).

``ihcube sweep``, ``saturation``, ``collectives`` and ``stress`` (one run and the campaign)
build each task's packet model on ``--threads`` threads. How a point runs is in no result:
each command, run through its ``main`` into a folder of its own, must write the same bytes
with ``--threads 2`` as with ``--threads 1`` (its wall-clock times are frozen at 0, the one
thing that differs between any two runs). The negative control runs the same commands with
models whose threads do not wait for each other at their barriers
(``tests/test_model_threads.py``'s ``BarrierDoesNotWait``): the outputs must then differ, so
the comparison would see threads that reached the model and broke it, and a command that
dropped ``--threads`` on the way to its model would fail that control. A size below ``T``
runs on one thread a node. The mistakes are one line each, pinned whole.
"""

import contextlib
import functools
import types
from unittest import mock

import pytest

from ihcube.cli import main
from ihcube.cli import collectives as collectives_command
from ihcube.cli import saturation as saturation_command
from ihcube.cli import stress as stress_command
from ihcube.cli import sweep as sweep_command
from ihcube.sim import sweep
from ihcube.sim.model import Model
from ihcube.verify.stress import StressConfig

#: A clock that stands still: the commands' ``seconds`` are then 0 on every run.
STILL = types.SimpleNamespace(monotonic=lambda: 0.0, perf_counter=lambda: 0.0)

#: command -> (arguments, the module whose clock to stop). Small sizes, the 2-node fabric
#: among them (two threads of one node each; three threads would run on two). Saturation
#: from 5 nodes: at 2 the broken model delivers nothing, and the zero-load fit fails.
COMMANDS = {
    "sweep": (["sweep", "--sizes", "2,26", "--depths", "1,2", "--patterns",
               "uniform,decreasing", "--rates", "0.1,0.4", "--warmup", "100", "--window",
               "200", "--max-windows", "3", "--seed", "7", "--no-plots"], sweep_command),
    "saturation": (["saturation", "--sizes", "5,13", "--depths", "2"], saturation_command),
    "collectives": (["collectives", "--dims", "3", "--sizes", "2,6", "--depths", "2",
                     "--ports", "1,full"], collectives_command),
    "stress": (["stress", "--nodes", "13", "--cycles", "300", "--seed", "3"], stress_command),
    "stress --campaign": (["stress", "--campaign"], stress_command),
}

#: The campaign the tests run: packet runs on the model from 1 node (one thread whatever
#: ``--threads`` says), with and without link stages, and a wormhole run, which has no threads.
CAMPAIGN = [("model", StressConfig.of(1, depth=1, cycles=100, seed=1)),
            ("model", StressConfig.of(13, depth=2, order="lsb", cycles=300, seed=2)),
            ("model", StressConfig.of(26, depth=1, cycles=300, seed=3, link_stages=1)),
            ("model", StressConfig.of(5, switching="wormhole", flits=5, vcs=1, vc_depth=1,
                                      cycles=100, seed=4))]


#: Shorter measurements for ``ihcube saturation`` (its own are 20,000 cycles and more: on two
#: threads, each cycle meets at two barriers, which a busy machine makes slow).
SHORT = sweep.Settings(warmup=100, window=200, max_windows=3)


@contextlib.contextmanager
def small_work():
    """The commands' work cut to the test's size: :data:`CAMPAIGN`, :data:`SHORT`."""
    with mock.patch.object(stress_command, "campaign", lambda quick, link_stages: CAMPAIGN), \
            mock.patch.object(sweep, "saturation", functools.partial(
                sweep.saturation, settings=SHORT, resolution=0.05)), \
            mock.patch.object(sweep, "zero_load", functools.partial(sweep.zero_load,
                                                                    cycles=2000)):
        yield


def outputs(command, threads, folder, capsys):
    """Run ``command`` (a key of :data:`COMMANDS`) with ``--threads`` on one process into
    ``folder``; return its exit status, standard output and every file it wrote, by name."""
    args, module = COMMANDS[command]
    folder.mkdir()
    where = ["--out", str(folder)] if command != "stress" else []
    with mock.patch.object(module, "time", STILL), small_work():
        jobs = [] if command == "stress" else ["--jobs", "1"]  # a single run takes no --jobs
        status = main([*args, *where, *jobs, "--threads", str(threads)])
    out = capsys.readouterr().out
    # The folder is in what a results file records of its command (ihcube.sim.provenance).
    files = {path.name: path.read_bytes().replace(str(folder).encode(), b"<out>")
             for path in sorted(folder.iterdir())}
    return status, out.replace(str(folder), "<out>"), files


@pytest.mark.slow
@pytest.mark.parametrize("command", COMMANDS)
def test_two_threads_write_the_bytes_of_one(command, tmp_path, capsys):
    one = outputs(command, 1, tmp_path / "one", capsys)
    assert one[0] == 0
    assert one[2] or command == "stress"  # a file to compare (one run prints only)
    assert outputs(command, 2, tmp_path / "two", capsys) == one


@pytest.mark.slow
def test_a_sweep_on_more_threads_than_its_small_sizes_have_nodes(tmp_path, capsys):
    """Three threads: the 2-node points run on two, the others on three; the same bytes."""
    assert (outputs("sweep", 3, tmp_path / "three", capsys)
            == outputs("sweep", 1, tmp_path / "one", capsys))


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.filterwarnings("ignore::numpy.exceptions.RankWarning")  # few zero-load messages
def test_threads_that_do_not_wait_change_the_outputs(command, tmp_path, capsys):
    """The negative control: the same commands, the models' barriers not waiting."""
    one = outputs(command, 1, tmp_path / "one", capsys)
    with mock.patch.object(Model, "_barrier_waits", False):
        assert outputs(command, 1, tmp_path / "still", capsys) == one  # no barrier on one
        two = outputs(command, 2, tmp_path / "two", capsys)
    if one[2]:
        assert two[2].keys() == one[2].keys() and two[2] != one[2]  # the files tell
    else:
        assert two[1] != one[1]  # one stress run: what it printed


THREADS_ERRORS = [
    (["--threads", "0"], "Thread count must be a positive integer, not 0"),
    (["--threads", "x"], "Thread count must be a positive integer, not 'x'"),
    (["--threads", "1.5"], "Thread count must be a positive integer, not '1.5'"),
    (["--threads", ""], "Thread count must be a positive integer, not ''"),
]
WORMHOLE = "Thread count must be 1 with wormhole switching (its model runs on one thread), not 2"


@pytest.mark.parametrize("command, args, message", [
    *[(command, args, message) for command in ("sweep", "saturation", "collectives", "stress")
      for args, message in THREADS_ERRORS],
    ("stress", ["--campaign", "--threads", "0"], THREADS_ERRORS[0][1]),
    ("sweep", ["--switching", "wormhole", "--threads", "2"], WORMHOLE),
    ("sweep", ["--set", "wormhole-quick", "--threads", "2"], WORMHOLE),
    ("saturation", ["--switching", "wormhole", "--threads", "2"], WORMHOLE),
    ("stress", ["--switching", "wormhole", "--threads", "2"], WORMHOLE),
    ("stress", ["--campaign", "--switching", "wormhole", "--threads", "2"], WORMHOLE),
    ("stress", ["--backend", "rtl", "--nodes", "4", "--threads", "2"],
     "Thread count must be 1 with the rtl backend (the Amaranth simulation runs on one "
     "thread), not 2"),
])
def test_a_wrong_thread_count_is_one_line(command, args, message, tmp_path, capsys):
    where = [] if command == "stress" else ["--out", str(tmp_path)]
    assert main([command, *args, *where]) == 2
    out, err = capsys.readouterr()
    assert (out, err) == ("", f"ihcube {command}: error: {message}\n")


def test_one_thread_with_wormhole_switching_is_the_default(tmp_path):
    """``--threads 1`` is taken with wormhole switching: it is what runs anyway."""
    with small_work():
        assert main(["saturation", "--switching", "wormhole", "--flits", "2", "--sizes", "5",
                     "--jobs", "1", "--threads", "1", "--out", str(tmp_path)]) == 0
