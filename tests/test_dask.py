"""The experiments' tasks on Dask distributed (:mod:`ihcube.sim.cluster`): a sweep on a
two-worker cluster writes the bytes of a one-process sweep, the model threads asked for reach
the workers, a worker killed mid-sweep costs nothing but time, and a scheduler that is not
there is one line.

The interrupt (Ctrl-C to the whole process group, local workers included) is
``tests/test_cli.py``'s ``test_ctrl_c_at_a_terminal_stops_every_process_in_one_line``.
"""

import os
import socket
import sys
import time

import pytest

distributed = pytest.importorskip("distributed")

from ihcube.cli import main  # noqa: E402
from ihcube.sim import sweep  # noqa: E402
from ihcube.sim.cluster import CONNECT_TIMEOUT, Cluster  # noqa: E402
from ihcube.spec import FabricSpec  # noqa: E402

#: A small sweep: two sizes, two depths, two patterns, two rates (16 points).
SWEEP = ["sweep", "--sizes", "26,32", "--depths", "1,2", "--patterns", "uniform,decreasing",
         "--rates", "0.1,0.4", "--warmup", "100", "--window", "200", "--max-windows", "3",
         "--seed", "7", "--no-plots"]


def fabrics(sizes, depths):
    """The packet fabrics of ``sizes`` at each of ``depths``, by size."""
    return [FabricSpec.of(n, depth=depth) for n in sizes for depth in depths]


@pytest.fixture(scope="module")
def two_workers():
    """A local Dask cluster of two worker processes, one thread each, as ``dask scheduler``
    and two ``dask worker`` commands would make."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address="127.0.0.1:0", silence_logs=50) as cluster:
        yield cluster


@pytest.mark.slow
def test_two_workers_give_the_csv_bytes_of_one_process(tmp_path, two_workers, capsys):
    """``ihcube sweep --scheduler`` sends every point to the cluster's workers, the progress
    line counts them, and the CSV is byte for byte the one of ``--jobs
    1`` (which runs here, without Dask)."""
    assert main([*SWEEP, "--jobs", "1", "--out", str(tmp_path), "--name", "one"]) == 0
    capsys.readouterr()
    with distributed.Client(two_workers) as client:
        with distributed.get_task_stream(client) as tasks:
            assert main([*SWEEP, "--scheduler", two_workers.scheduler_address,
                         "--out", str(tmp_path), "--name", "two"]) == 0
    err = capsys.readouterr().err
    points = 2 * 2 * 2 * 2
    assert f"sweep: {points}/{points} (100%)" in err
    work = [task for task in tasks.data if str(task["key"]).startswith("_work")]
    assert len(work) == points
    assert {task["worker"] for task in work} <= set(two_workers.scheduler_info["workers"])
    one = (tmp_path / "one.csv").read_bytes()
    assert one.count(b"\n") == 1 + points
    assert (tmp_path / "two.csv").read_bytes() == one


@pytest.mark.slow
def test_a_local_cluster_of_jobs_workers_gives_the_same_rows():
    """Without a scheduler, ``jobs`` 2 starts a local cluster: the rows, and the kept link
    densities, are those of one process."""
    points = sweep.points(fabrics((20, 26), (2,)), ("uniform",), (0.1, 0.3))
    settings = sweep.Settings(warmup=100, window=200, max_windows=3, seed=3)
    keep = lambda point: point.n == 26  # noqa: E731
    rows, kept = sweep.sweep(points, settings, jobs=1, keep_links=keep, progress=False)
    rows2, kept2 = sweep.sweep(points, settings, jobs=2, keep_links=keep, progress=False)
    assert rows2 == rows
    assert sorted(kept2, key=repr) == sorted(kept, key=repr) and len(kept) == 2
    for point in kept:
        assert (kept2[point][0] == kept[point][0]).all()


@pytest.mark.slow
def test_a_worker_killed_mid_sweep_is_not_fatal(tmp_path, monkeypatch, two_workers):
    """The task of point 1 kills its own worker process the first time it runs (a marker
    file says it did): the scheduler runs it again elsewhere, and the rows are those of an
    undisturbed sweep."""
    points = sweep.points(fabrics((20, 26), (1, 2)), ("uniform",), (0.1, 0.3))
    settings = sweep.Settings(warmup=100, window=200, max_windows=3, seed=5)
    expected, _ = sweep.sweep(points, settings, jobs=1, progress=False)
    marker = str(tmp_path / "killed")
    original = sweep._work

    def dies_once(task):
        # Pickled by value (a local function): the worker runs this, not the module's.
        if task[0] == 1 and not os.path.exists(marker):
            open(marker, "w").close()
            os.kill(os.getpid(), 9)
        return original(task)

    monkeypatch.setattr(sweep, "_work", dies_once)
    rows, _ = sweep.sweep(points, settings, scheduler=two_workers.scheduler_address,
                          progress=False)
    assert os.path.exists(marker)  # the worker did die
    assert rows == expected
    sweep.write_csv(tmp_path / "a.csv", rows)
    sweep.write_csv(tmp_path / "b.csv", expected)
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()


@pytest.mark.slow
def test_model_threads_travel_to_the_workers(monkeypatch, two_workers):
    """``threads`` goes with each point to the worker that runs it: two threads give the
    rows of one, and where the workers' models have barriers that do not wait (the negative
    control of ``tests/test_model_threads.py``), the rows differ, which they could not if
    the points ran on one thread there."""
    points = sweep.points(fabrics((20, 26), (2,)), ("uniform",), (0.1, 0.4))
    settings = sweep.Settings(warmup=100, window=200, max_windows=3, seed=5)
    expected, _ = sweep.sweep(points, settings, jobs=1, progress=False)
    address = two_workers.scheduler_address
    rows, _ = sweep.sweep(points, settings, scheduler=address, progress=False, threads=2)
    assert rows == expected
    original = sweep._work

    def barriers_do_not_wait(task):
        # Pickled by value (a local function): the worker runs this, not the module's.
        from ihcube.sim.model import Model
        Model._barrier_waits = False
        try:
            return original(task)
        finally:
            Model._barrier_waits = True

    monkeypatch.setattr(sweep, "_work", barriers_do_not_wait)
    rows, _ = sweep.sweep(points, settings, scheduler=address, progress=False, threads=2)
    assert rows != expected


@pytest.mark.slow
def test_cluster_map_gives_results_in_order_and_errors_as_they_are(two_workers):
    """Results come in the items' order whatever order they finish in (the first item is
    the slowest); a task that raises is not retried: its error reaches the caller."""
    with Cluster(scheduler=two_workers.scheduler_address) as cluster:
        assert list(cluster.map(_sleepy_square, [3, 2, 1, 0], progress=False)) == [9, 4, 1, 0]
        with pytest.raises(ZeroDivisionError):
            list(cluster.map(_inverse, [1, 0], progress=False))


def _sleepy_square(x):
    time.sleep(0.2 * x)
    return x * x


def _inverse(x):
    return 1 / x


def test_jobs_1_runs_here_without_dask():
    cluster = Cluster(1)
    assert cluster.here
    with cluster:
        assert list(cluster.map(os.getpid, [()] * 0)) == []
        assert list(cluster.map(lambda item: os.getpid(), [1, 2], progress=False)) == \
            [os.getpid()] * 2


def _free_port():
    """A port on this machine's loopback with nothing listening (bound, then let go)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.slow
@pytest.mark.parametrize("command", [
    ["sweep", "--sizes", "4", "--rates", "0.1", "--no-plots"],
    ["saturation", "--sizes", "4", "--depths", "1"],
    ["collectives", "--dims", "1", "--sizes", "3", "--depths", "1"],
    ["stress", "--campaign", "--quick"],
], ids=lambda command: command[0])
def test_no_scheduler_at_the_address_is_one_line_within_seconds(tmp_path, command):
    import subprocess
    address = f"tcp://127.0.0.1:{_free_port()}"
    start = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "ihcube", *command, "--scheduler", address,
                          "--out", str(tmp_path / "out")],
                         capture_output=True, text=True, timeout=120)
    seconds = time.monotonic() - start
    assert run.returncode == 2, run.stderr
    assert run.stdout == ""
    assert run.stderr.startswith(f"ihcube {command[0]}: error: cannot reach the Dask scheduler "
                                 f"at {address}: ")
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr
    assert seconds < CONNECT_TIMEOUT + 15


def test_several_processes_without_dask_run_here_and_say_so(monkeypatch, capsys, tmp_path):
    """Without the ``cluster`` extra, ``--jobs 2`` runs the tasks in this process and says so
    in one line, with the same results as ``--jobs 1`` (which needs no Dask)."""
    for name in list(sys.modules):
        if name == "distributed" or name.startswith("distributed."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "distributed", None)
    args = ["sweep", "--sizes", "4", "--rates", "0.1", "--warmup", "10", "--window", "10",
            "--no-plots"]
    notice = ("ihcube: Dask is not installed (pip install 'ihcube[cluster]'): running the "
              "tasks in this process instead of 2 worker processes")
    assert main([*args, "--jobs", "2", "--out", str(tmp_path / "two")]) == 0
    assert capsys.readouterr().err.splitlines()[0] == notice  # then the progress lines
    assert main([*args, "--jobs", "1", "--out", str(tmp_path / "one")]) == 0
    assert "Dask" not in capsys.readouterr().err
    assert ((tmp_path / "two" / "sweep_quick_custom.csv").read_bytes()
            == (tmp_path / "one" / "sweep_quick_custom.csv").read_bytes())
