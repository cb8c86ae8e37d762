"""Helpers of the test tiers (``tests/conftest.py``): marking a list's costly configurations
slow, and sharing a costly simulation among the tests and xdist workers of a run."""

import fcntl
import functools
import hashlib
import inspect
import pickle

import pytest

#: Where :func:`shared` keeps its results, set by ``conftest.py`` for each run: a folder of the
#: run's temporary folder (pytest keeps the last three runs'), seen by all its xdist workers.
FOLDER = None


def slow_unless(configurations, fast):
    """``configurations`` for ``pytest.mark.parametrize`` (tuples, or single values), those
    for which ``fast(config)`` is false marked ``slow`` (run by ``make test``, not by ``make
    check``)."""
    def param(config):
        values = config if isinstance(config, tuple) else (config,)
        return pytest.param(*values, marks=pytest.mark.slow)
    return [config if fast(config) else param(config) for config in configurations]


def below(nodes):
    """A ``fast`` for :func:`slow_unless`: configurations of fewer than ``nodes`` nodes (the
    first field, or the value itself)."""
    return lambda config: (config[0] if isinstance(config, tuple) else config) < nodes


def shared(function):
    """Cache ``function``'s results in this process and across the xdist workers of the run.

    For the costly simulations (the Amaranth simulation of a fabric) that several tests, in one
    file or in several, compare against: the worker that asks first runs it, one that asks
    meanwhile waits for it, and the others read its result. The arguments must have stable
    ``repr`` s (classes do: their qualified names) and the result must pickle.
    """
    signature = inspect.signature(function)

    @functools.cache
    def run(args, keywords):
        kwargs = dict(keywords)
        if FOLDER is None:  # not under pytest
            return function(*args, **kwargs)
        key = repr((function.__module__, function.__qualname__, args, keywords))
        path = FOLDER / hashlib.sha256(key.encode()).hexdigest()
        with open(path.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if path.exists():
                return pickle.loads(path.read_bytes())
            result = function(*args, **kwargs)
            partial = path.with_suffix(".partial")
            partial.write_bytes(pickle.dumps(result))
            partial.rename(path)
            return result

    @functools.wraps(function)
    def cached(*args, **kwargs):
        # One key for one call however it is spelt: positional or keyword, defaults given or
        # left out.
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return run(bound.args, tuple(sorted(bound.kwargs.items())))
    return cached
