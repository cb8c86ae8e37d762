"""The test tiers (markers registered in ``pyproject.toml``; helpers in ``tiers.py``).

``make check`` runs ``-m "not slow"``, the edit loop; ``make test`` runs every test but the
``long`` ones, which run only when the ``-m`` expression names them (``make test-long``).

Under ``--dist loadgroup`` (the Makefile's), xdist hands each worker one or two tests at a
time, in collection order: the slow tests come first, so that no worker starts one near the
end of the run while the other has nothing left to do. (Under the default ``--dist load`` the
first worker would get a block of slow tests at once and the other the rest: the order is
left alone there.)
"""

import os

import pytest

import tiers


def pytest_collection_modifyitems(config, items):
    """Leave out the ``long`` tests unless the ``-m`` expression names them; under ``--dist
    loadgroup``, put the slow tests first (a stable sort: each tier keeps its order)."""
    if "long" not in (config.option.markexpr or ""):
        long = [item for item in items if item.get_closest_marker("long")]
        if long:
            config.hook.pytest_deselected(items=long)
            items[:] = [item for item in items if not item.get_closest_marker("long")]
    # xdist's workers, which collect, see --dist loadgroup as option.loadgroup (their dist is
    # "no"); a run in one process has its own dist.
    if getattr(config.option, "loadgroup", False) or config.getoption("dist", "no") == "loadgroup":
        items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(scope="session", autouse=True)
def _shared_folder(tmp_path_factory):
    """The folder of :func:`tiers.shared`: the run's, which its xdist workers' are in."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    tiers.FOLDER = base / "shared"
    tiers.FOLDER.mkdir(exist_ok=True)
