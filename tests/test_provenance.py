"""Stale results show: behaviour digests (:mod:`ihcube.sim.provenance`) and ``ihcube results``."""

import json
from pathlib import Path

import pytest

from ihcube.cli import results as results_command
from ihcube.sim import collectives, provenance
from ihcube.sim.model import Model
from ihcube.sim.wormhole_model import WormholeModel


@pytest.fixture
def fresh_digests():
    """Digests computed anew in the test (and again after it, for the tests that follow)."""
    provenance.digest.cache_clear()
    yield
    provenance.digest.cache_clear()


def test_a_stamp_records_every_part_and_the_command():
    stamp = provenance.stamp("ihcube saturation --out results")
    assert set(stamp["behaviour"]) == set(provenance.PARTS)
    assert all(len(value) == 16 and int(value, 16) >= 0 for value in stamp["behaviour"].values())
    assert stamp["command"] == "ihcube saturation --out results"
    # Where and on how many workers it ran changes no byte of a result, so it is not recorded.
    assert provenance.stamp("ihcube sweep --jobs 2 --threads=4 --scheduler tcp://a:1 --set "
                            "quick")["command"] == "ihcube sweep --set quick"
    assert {part for parts in provenance.TRACKED.values() for part in parts} == \
        set(provenance.PARTS)


def test_the_model_digest_moves_with_the_models_timing(fresh_digests, monkeypatch):
    """Negative control: a model whose arbiters start on another input (a change of timing
    that no result file would show by itself) has another model digest, and the same
    analysis digest."""
    before = {part: provenance.digest(part) for part in ("model", "wormhole", "analysis")}
    assert provenance.digest("model") == before["model"]  # the same code: the same digest
    provenance.digest.cache_clear()
    monkeypatch.setattr(Model, "_arbiter_start", lambda self: 0)
    assert provenance.digest("model") != before["model"]
    assert provenance.digest("wormhole") == before["wormhole"]
    assert provenance.digest("analysis") == before["analysis"]


def test_the_wormhole_digest_moves_with_the_wormhole_models_timing(fresh_digests, monkeypatch):
    """Negative control: a wormhole model whose allocators grant the highest free virtual
    channel rather than the lowest has another wormhole digest and the same packet model
    digest, so that a change of wormhole timing leaves the packet results current."""
    before = {part: provenance.digest(part) for part in ("model", "wormhole")}
    provenance.digest.cache_clear()
    monkeypatch.setattr(WormholeModel, "_channel_choice", lambda self, free: free.bit_length() - 1)
    assert provenance.digest("wormhole") != before["wormhole"]
    assert provenance.digest("model") == before["model"]


def test_the_collectives_digest_moves_with_their_bounds(fresh_digests, monkeypatch):
    """Negative control: collectives whose route bound counts one cycle more."""
    before = provenance.digest("collectives")
    provenance.digest.cache_clear()
    bound = collectives.route_bound
    monkeypatch.setattr(collectives, "route_bound",
                        lambda busiest, depth: bound(busiest, depth) + 1)
    assert provenance.digest("collectives") != before


def _write(folder, name, stamp):
    data = {"rows": []}
    if stamp is not None:
        data["provenance"] = stamp
    (folder / name).write_text(json.dumps(data))


def test_status_tells_current_stale_and_unstamped_files(tmp_path):
    today = provenance.stamp("ihcube saturation --out results")
    old = dict(today, behaviour=dict(today["behaviour"], model="0" * 16))
    _write(tmp_path, "saturation.json", today)
    _write(tmp_path, "sweep_quick.json", old)
    _write(tmp_path, "collectives.json", None)
    # analysis_scan.json depends on the analysis alone: another model digest leaves it current
    _write(tmp_path, "analysis_scan.json", old)
    _write(tmp_path, "bench_model.json", None)  # not tracked
    (tmp_path / "saturation_broken.json").write_text("{not json")
    assert provenance.status(tmp_path) == [
        ("analysis_scan.json", "current", "ihcube saturation --out results"),
        ("collectives.json", "unstamped", None),
        ("saturation.json", "current", "ihcube saturation --out results"),
        ("saturation_broken.json", "unstamped", None),
        ("sweep_quick.json", "stale", "ihcube saturation --out results"),
    ]


def test_results_command(tmp_path, capsys):
    today = provenance.stamp("ihcube saturation --out results")
    _write(tmp_path, "saturation.json", today)
    assert results_command.main(["--folder", str(tmp_path), "--check"]) == 0
    assert "1 of 1 current" in capsys.readouterr().out
    _write(tmp_path, "sweep_quick.json", None)
    assert results_command.main(["--folder", str(tmp_path)]) == 0
    assert results_command.main(["--folder", str(tmp_path), "--check"]) == 1
    assert "sweep_quick.json  unstamped" in capsys.readouterr().out
    assert results_command.main(["--folder", str(tmp_path / "missing")]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "--folder must name a folder" in error[0]


def test_the_results_the_readme_cites_are_current():
    """The reference results the README's headline figures come from were made by today's
    code (``ihcube results`` lists the others)."""
    cited = {"saturation.json", "sweep_quick.json"}
    folder = Path(__file__).resolve().parents[1] / "results"
    states = {name: state for name, state, _ in provenance.status(folder)}
    assert {name: states.get(name) for name in cited} == dict.fromkeys(cited, "current")


def test_the_state_of_one_file_is_the_state_status_lists(tmp_path):
    """``file_state`` is the state ``status`` gives a file; a file no experiment writes has
    none (negative control: it is refused, not called current)."""
    (tmp_path / "saturation.json").write_text(json.dumps({"provenance": {
        "behaviour": {"model": "0" * 16}, "command": "ihcube saturation"}}))
    assert provenance.file_state(tmp_path / "saturation.json") == ("stale", "ihcube saturation")
    assert provenance.status(tmp_path) == [("saturation.json", "stale", "ihcube saturation")]
    (tmp_path / "throughput_per_us.json").write_text("{}")
    with pytest.raises(ValueError, match="^Results file must be one of .*, not "
                                         "'throughput_per_us.json'$"):
        provenance.file_state(tmp_path / "throughput_per_us.json")
