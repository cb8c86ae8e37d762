"""One vocabulary across the commands (``docs/commands.md``, "One vocabulary"): each old
spelling still works, for one release, and says so in one line on standard error; its new
spelling does the same work and prints nothing more."""

import json

import pytest

from ihcube.cli import main

NOTICE = "is deprecated and will be removed in the next release"


def run(args, capsys):
    """Run ``ihcube args``; return its status, standard output and standard error."""
    status = main(args)
    out, err = capsys.readouterr()
    return status, out, err


def notices(err):
    """The deprecation notices in ``err``."""
    return [line for line in err.splitlines() if NOTICE in line]


def analyses(path):
    return json.loads(path.read_text())["analyses"]


def test_analyze_sizes_and_out(tmp_path, capsys):
    """``analyze --nodes N,... --json FILE`` (old) and ``--sizes N,... --out DIR`` (new) write
    the same analyses and print the same table; only the old says, once for each option."""
    new = run(["analyze", "--sizes", "4,6", "--out", str(tmp_path / "new")], capsys)
    old = run(["analyze", "--nodes", "4,6", "--json", str(tmp_path / "old.json")], capsys)
    assert new[0] == old[0] == 0
    assert new[2] == "" and len(notices(old[2])) == 2 == len(old[2].splitlines())
    assert "--nodes N,..." in old[2] and "--json FILE" in old[2]
    assert new[1].split("wrote")[0] == old[1].split("wrote")[0]
    assert analyses(tmp_path / "new" / "analysis.json") == analyses(tmp_path / "old.json")


def test_both_spellings_at_once_is_one_line(capsys):
    status, out, err = run(["analyze", "--sizes", "4", "--nodes", "4"], capsys)
    assert status == 2 and out == ""
    assert err == "ihcube analyze: error: Give --sizes N,... alone: --nodes N,... is its old " \
                  "spelling\n"


@pytest.fixture
def timed(monkeypatch):
    """``ihcube bench``'s measurements replaced by a record of the sizes asked for."""
    from ihcube.bench import verilog
    sizes = []

    def measure(n, width=32, depth=1):
        sizes.append(n)
        return {"nodes": n, "width": width, "depth": depth, "seconds": 0.0,
                "peak_rss_kib": 0, "bytes": 0, "lines": 0}
    monkeypatch.setattr(verilog, "measure_generation", measure)
    monkeypatch.setattr(verilog, "find_yosys", lambda: None)
    return sizes


def test_bench_sizes_and_out(tmp_path, capsys, timed):
    """``bench --nodes 5 6 --out FILE.json`` (old) and ``--sizes 5,6 --out DIR`` (new) time
    the same sizes and write the same file's content; only the old says so."""
    new = run(["bench", "--sizes", "5,6", "--out", str(tmp_path)], capsys)
    assert timed == [5, 6] and new[0] == 0 and notices(new[2]) == []
    timed.clear()
    old = run(["bench", "--nodes", "5", "6", "--out", str(tmp_path / "old.json")], capsys)
    assert timed == [5, 6] and old[0] == 0 and len(notices(old[2])) == 2
    assert "--nodes N ..." in old[2] and "--out FILE.json" in old[2]
    assert json.loads((tmp_path / "old.json").read_text())["generation"] == \
        json.loads((tmp_path / "bench_verilog.json").read_text())["generation"]


def test_synth_table_old_sizes_spelling(tmp_path, capsys, monkeypatch):
    """``synth-table --nodes`` reaches the table with the same sizes as ``--sizes``, and says
    it is the old spelling."""
    from ihcube.boards import build
    asked = []
    monkeypatch.setattr(build, "table", lambda family, sizes, **keywords: asked.append(sizes))
    base = ["synth-table", "--family", "ice40", "--out", str(tmp_path)]
    new = run([*base, "--sizes", "2,3"], capsys)
    old = run([*base, "--nodes", "2,3"], capsys)
    assert asked == [[2, 3], [2, 3]] and notices(new[2]) == [] and len(notices(old[2])) == 1


def test_stress_without_nodes(capsys):
    """``stress`` without ``--nodes`` still runs its old default, 26 nodes, and says that
    ``--nodes`` will be required; with ``--nodes 26`` the same run, nothing more."""
    old = run(["stress", "--cycles", "10"], capsys)
    new = run(["stress", "--nodes", "26", "--cycles", "10"], capsys)
    assert old[0] == new[0] == 0 and old[1] == new[1]
    assert notices(new[2]) == [] and len(notices(old[2])) == 1 and "--nodes 26" in old[2]


def test_one_default_for_jobs_and_threads():
    """Every ``--jobs`` defaults to 2 and every ``--threads`` to 1 (docs/commands.md)."""
    import importlib
    from ihcube import cli
    from ihcube.cli import usage
    defaults = {}
    for command in cli.COMMANDS:
        class Parsed(Exception):
            pass

        def parse_args(self, args=None, namespace=None, command=command):
            for action in self._actions:
                for flag in ("--jobs", "--threads"):
                    if flag in action.option_strings:
                        defaults[command, flag] = action.default
            raise Parsed
        original = usage.Parser.parse_args
        usage.Parser.parse_args = parse_args
        try:
            importlib.import_module(cli.module_name(command)).main([])
        except Parsed:
            pass
        finally:
            usage.Parser.parse_args = original
    assert {value for (_, flag), value in defaults.items() if flag == "--jobs"} == {"2"}
    assert {value for (_, flag), value in defaults.items() if flag == "--threads"} == {"1"}
    assert ("formal", "--jobs") in defaults and ("bench-model", "--threads") in defaults


def test_stress_campaign_out(tmp_path, capsys, monkeypatch):
    """``stress --campaign --out DIR`` writes the campaign's own name in ``DIR``; the old
    ``--out FILE.json`` writes that file and says it is the old spelling."""
    from ihcube.cli import stress
    written = []
    monkeypatch.setattr(stress, "_run_campaign",
                        lambda quick, cluster, out, **keywords: written.append(out) or 0)
    base = ["stress", "--campaign", "--quick", "--jobs", "1"]
    new = run([*base, "--out", str(tmp_path), "--link-stages", "1"], capsys)
    old = run([*base, "--out", str(tmp_path / "c.json")], capsys)
    assert new[0] == old[0] == 0
    assert written == [tmp_path / "stress_campaign_s1.json", tmp_path / "c.json"]
    assert notices(new[2]) == [] and len(notices(old[2])) == 1 and "--out FILE.json" in old[2]
