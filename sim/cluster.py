"""Independent tasks of the experiments on a Dask distributed cluster.

The sweeps' points, the saturation and collective measurements and the stress campaign's
runs are independent tasks: :class:`Cluster` sends them to the workers of a running Dask
cluster (``scheduler``, the address ``dask scheduler`` prints), or of a local one of
``jobs`` worker processes with one thread each, and gives the results back in the order
of the tasks. With ``jobs`` 1 and no scheduler it runs them here, one after another,
without Dask. A task's result depends only on the task (each point's seed comes from its
parameters, :meth:`ihcube.sim.sweep.Point.seed`), so the same tasks give the same results
on any cluster and any number of workers.

- A worker lost while it runs a task (a killed process, a lost host) is not fatal: the
  scheduler runs the task again on another worker, up to its ``allowed-failures`` times
  (Dask's default 3). A task that raises is not run again: the error is the task's.
- Ctrl-C: the local workers never see it (they start with ``SIGINT`` blocked, so the
  terminal's signal to the whole process group reaches only this process); this process
  gets ``KeyboardInterrupt``, cancels the tasks, closes the local cluster and stops its
  workers before it goes on.
- A scheduler that does not answer within :data:`CONNECT_TIMEOUT` seconds is a
  :class:`ClusterError`, one line.

The workers must import the same ``ihcube`` (``pip install`` it on every host): tasks name
their functions by module, they do not carry the code.
"""

import logging
import signal
import sys
import threading
import time
from multiprocessing import resource_tracker

from ..extras import require

__all__ = ["Cluster", "ClusterError", "Progress", "CONNECT_TIMEOUT"]

#: Seconds to wait for a scheduler named by its address.
CONNECT_TIMEOUT = 5


class ClusterError(Exception):
    """No cluster to run on: the scheduler did not answer, or the local one did not start.
    (Dask not installed is :class:`~ihcube.extras.MissingExtra`.)"""


class Cluster:
    """Where the tasks run: a Dask scheduler's workers, ``jobs`` local workers, or here.

    A context manager: the local cluster starts on entry and stops on exit (its workers
    with it); a scheduler named by ``scheduler`` is connected to on entry and left running.

    Parameters
    ----------
    jobs : int
        Local worker processes (one thread each) when ``scheduler`` is None; 1 runs the
        tasks in this process without Dask.
    scheduler : str, optional
        The address of a running Dask scheduler (``tcp://host:8786``, or ``host:8786``).
    """

    def __init__(self, jobs=2, scheduler=None):
        self.jobs, self.scheduler = int(jobs), scheduler
        self._client = self._local = None

    @property
    def here(self):
        """Whether the tasks run in this process, without Dask."""
        return self.scheduler is None and self.jobs <= 1

    def __enter__(self):
        if self.here:
            return self
        distributed = require("distributed", "cluster",
                              "Running on several processes (or --jobs 1)")
        # Dask's own warnings (a worker restarted, a slow close) are not the user's business:
        # what matters reaches them as results or as one line.
        logging.getLogger("distributed").setLevel(logging.CRITICAL)
        if self.scheduler is None:
            # multiprocessing's resource tracker, which the local workers need, unblocks
            # SIGINT in the thread that starts it: start it here, before the block below.
            resource_tracker.ensure_running()
        with _sigint_blocked():
            try:
                if self.scheduler is None:
                    self._local = distributed.LocalCluster(
                        n_workers=self.jobs, threads_per_worker=1, processes=True,
                        dashboard_address="127.0.0.1:0", silence_logs=logging.CRITICAL)
                    self._client = distributed.Client(self._local)
                else:
                    self._client = distributed.Client(self.scheduler,
                                                      timeout=CONNECT_TIMEOUT)
            except (OSError, TimeoutError, ValueError) as error:
                self.__exit__(None, None, None)
                where = (f"the Dask scheduler at {self.scheduler}" if self.scheduler
                         else "a local Dask cluster")
                reason = " ".join(str(error).split()) or type(error).__name__
                raise ClusterError(f"cannot reach {where}: {reason}") from None
            except BaseException:
                self.__exit__(None, None, None)
                raise
        return self

    def __exit__(self, *exc):
        client, local, self._client, self._local = self._client, self._local, None, None
        # Closing is not interrupted by a second Ctrl-C: the workers must stop.
        with _sigint_blocked():
            if client is not None:
                client.close()
            if local is not None:
                local.close()
        return False

    def map(self, function, items, what=None, progress=True):
        """Yield ``function(item)`` for each of ``items``, in their order.

        The tasks all go to the cluster at once and run in any order; each result is given
        as soon as those of the items before it are in. ``what`` names the tasks on the
        progress line (:class:`Progress`) on standard error, shown if ``progress``. On a
        scheduler without workers the tasks wait for some to join (Dask's way).
        """
        items = list(items)
        bar = Progress(len(items), what) if progress and what else None
        if self.here:
            for item in items:
                result = function(item)
                if bar:
                    bar.step()
                yield result
            return
        if self._client is None:
            raise RuntimeError("Cluster.map outside its with block")
        import distributed
        # pure=False: two equal items are two tasks, not one result shared.
        futures = self._client.map(function, items, pure=False)
        index = {future.key: k for k, future in enumerate(futures)}
        done, given = {}, 0
        try:
            for future in distributed.as_completed(futures):
                done[index[future.key]] = future.result()
                future.release()
                if bar:
                    bar.step()
                while given in done:
                    yield done.pop(given)
                    given += 1
        finally:
            if given < len(futures):
                self._client.cancel(futures)


class Progress:
    """A progress line on standard error: done, total, elapsed and estimated time left.
    ``after`` seconds pass before the first line: work that ends sooner shows none."""

    def __init__(self, total, what, stream=None, after=0.0):
        # sys.stderr looked up now, not when this module was imported (it may be replaced).
        self.total, self.what, self.stream = total, what, stream or sys.stderr
        self.done = 0
        self.start = time.monotonic()
        self.shown = -1.0
        self.after = after

    def step(self, count=1):
        self.done += count
        now = time.monotonic()
        if now - self.start < self.after:
            return
        if self.done != self.total and now - self.shown < 0.5:
            return
        self.shown = now
        elapsed = now - self.start
        left = elapsed / self.done * (self.total - self.done) if self.done else 0.0
        self.stream.write(f"\r{self.what}: {self.done}/{self.total} "
                          f"({100 * self.done // max(self.total, 1)}%), "
                          f"{_clock(elapsed)} elapsed, about {_clock(left)} left   ")
        if self.done == self.total:
            self.stream.write("\n")
        self.stream.flush()


def _clock(seconds):
    seconds = int(round(seconds))
    return f"{seconds // 60}:{seconds % 60:02d}"


class _sigint_blocked:
    """Block ``SIGINT`` in this thread (in the main thread) for the ``with`` block.

    A thread or process started meanwhile inherits the blocked signal: Dask's event-loop
    thread, and the local workers it starts, never get the terminal's Ctrl-C. One that came
    meanwhile is delivered to this thread when the block ends.
    """

    def __enter__(self):
        self.active = threading.current_thread() is threading.main_thread()
        if self.active:
            self.previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})

    def __exit__(self, *exc):
        if self.active:
            signal.pthread_sigmask(signal.SIG_SETMASK, self.previous)
        return False
