"""The figure a user compares (``ihcube throughput``, :mod:`ihcube.boards.throughput`): router
0's placed Fmax times the model's saturation throughput, per node per microsecond.

The results files here are made up, the digests of today's design and model replaced by
fixed ones, so that each row's state is the test's choice; every expected figure is worked
out by hand from the made-up numbers."""

import json

import numpy as np
import pytest

from ihcube.boards import build, throughput
from ihcube.cli import main
from ihcube.modes import mode_of
from ihcube.sim import provenance
from ihcube.sim.traffic import Pattern
from ihcube.spec import FabricSpec

#: The design digest and model digest that stand for today's.
TODAY, MODEL = "d0", "m0"


def wormhole(flit_width, vcs):
    return FabricSpec.of(26, switching="wormhole", flit_width=flit_width, vcs=vcs)


def write_synth(folder, spec, **figures):
    tag = build.synth_name(spec, "ecp5", router=0)[1]
    (folder / f"{tag}.json").write_text(json.dumps(figures))


def write_saturation(folder, name, rows, model=MODEL, wormhole_record=None):
    (folder / name).write_text(json.dumps({
        "saturation": rows, "wormhole": wormhole_record,
        "provenance": {"behaviour": dict.fromkeys(provenance.PARTS, model),
                       "command": "made up"}}))


def sat(n, depth, throughput, order="msb"):
    return {"n": n, "depth": depth, "order": order, "pattern": "uniform",
            "throughput": throughput, "backlogged": throughput + 0.001}


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """A results folder of made-up files, today's digests :data:`TODAY` and :data:`MODEL`.

    - wormhole F8 V1: placed at 50 MHz, today's design; its L20 V1 Q2 saturation at 1024
      nodes 0.015 messages per node per cycle (another at 1048 nodes and one with lsb order
      beside it, which the figure must not take);
    - F32 V1: placed at 80 MHz from another design (stale), the same saturation;
    - F16 V3: not placed; F16 V1: no synth file; F8 V3: placed, no V3 saturation file;
    - packet W32 depth 1: 120 MHz, today's design; saturation 0.25 at depth 1 from another
      model (stale); depth 2 has neither;
    - packet W64 depth 1 (another payload width): 100 MHz, today's design.
    """
    monkeypatch.setattr(build, "synth_digest", lambda spec, family="ecp5", **args: TODAY)
    monkeypatch.setattr(provenance, "digest", lambda part: MODEL)
    write_synth(tmp_path, wormhole(8, 1), fits=True, fmax_mhz=50.0, design_digest=TODAY)
    write_synth(tmp_path, wormhole(32, 1), fits=True, fmax_mhz=80.0, design_digest="old")
    write_synth(tmp_path, wormhole(16, 3), fits=False, design_digest=TODAY)
    write_synth(tmp_path, wormhole(8, 3), fits=True, fmax_mhz=60.0, design_digest=TODAY)
    write_synth(tmp_path, FabricSpec.of(26), fits=True, fmax_mhz=120.0, design_digest=TODAY)
    write_synth(tmp_path, FabricSpec.of(26, payload_width=64), fits=True, fmax_mhz=100.0,
                design_digest=TODAY)
    write_saturation(tmp_path, "saturation_wormhole_l20_v1_q2.json",
                     [sat(1024, 2, 0.015), sat(1024, 2, 0.5, order="lsb"), sat(1048, 2, 0.9)],
                     wormhole_record={"flits": 20, "flit_width": 32, "vcs": 1, "vc_depth": 2})
    write_saturation(tmp_path, "saturation.json", [sat(1024, 1, 0.25), sat(1048, 1, 0.9)],
                     model="old")
    return tmp_path


def rows_by_name(folder):
    return {row["configuration"]: row for row in throughput.figure(folder)}


def check_figures(rows):
    """The figures of the measured rows, worked out by hand from :func:`folder`'s files."""
    f8 = rows["wormhole F8 V1 L20 Q2"]
    assert f8["state"] == "current" and "why" not in f8
    assert f8["fmax_mhz"] == 50.0 and f8["messages_per_cycle"] == 0.015
    assert f8["flits_per_cycle"] == pytest.approx(0.3)           # 20 x 0.015
    assert f8["messages_per_us"] == pytest.approx(0.75)          # 50 x 0.015
    assert f8["flits_per_us"] == pytest.approx(15.0)             # 50 x 0.3
    assert f8["payload_bits_per_us"] == pytest.approx(24.0)      # 0.75 x 32
    assert f8["room_bits"] == 149                                # 20 x 8 - 11
    assert f8["room_bits_per_us"] == pytest.approx(111.75)       # 0.75 x 149
    f32 = rows["wormhole F32 V1 L20 Q2"]                         # the same saturation
    assert f32["flits_per_us"] == pytest.approx(24.0)            # 80 x 0.3
    assert f32["room_bits_per_us"] == pytest.approx(1.2 * 629)   # 80 x 0.015 x (640 - 11)
    packet = rows["packet W32 depth 1"]
    assert packet["messages_per_us"] == pytest.approx(30.0)      # 120 x 0.25
    assert packet["payload_bits_per_us"] == pytest.approx(960.0)  # 30 x 32
    assert packet["flits_per_us"] is None
    wide = rows["packet W64 depth 1"]
    assert wide["messages_per_us"] == pytest.approx(25.0)        # 100 x 0.25
    assert wide["payload_bits_per_us"] == pytest.approx(1600.0)  # 25 x 64


def test_per_microsecond_is_fmax_in_mhz_times_the_rate_per_cycle():
    assert throughput.per_microsecond(100.0, 0.02, 20, 32) == pytest.approx(
        {"messages_per_us": 2.0, "flits_per_us": 40.0, "payload_bits_per_us": 64.0})
    assert throughput.per_microsecond(150.0, 0.5) == {
        "messages_per_us": 75.0, "flits_per_us": None, "payload_bits_per_us": None}


def test_the_figures_are_fmax_times_the_saturation_at_1024(folder):
    check_figures(rows_by_name(folder))


@pytest.mark.parametrize("broken", [
    lambda fmax, rate, flits=None, bits=None: {        # Fmax taken as Hz
        "messages_per_us": fmax * 1e6 * rate, "flits_per_us": fmax * 1e6 * rate * (flits or 0),
        "payload_bits_per_us": fmax * 1e6 * rate * (bits or 0)},
    lambda fmax, rate, flits=None, bits=None: {        # per nanosecond, not per microsecond
        "messages_per_us": fmax * rate / 1000,
        "flits_per_us": None if flits is None else fmax * rate * flits / 1000,
        "payload_bits_per_us": None if bits is None else fmax * rate * bits / 1000},
    lambda fmax, rate, flits=None, bits=None: {        # flits per µs left in messages
        "messages_per_us": fmax * rate, "flits_per_us": None if flits is None else fmax * rate,
        "payload_bits_per_us": None if bits is None else fmax * rate * bits},
    lambda fmax, rate, flits=None, bits=None: {        # divided where it should multiply
        "messages_per_us": rate / fmax,
        "flits_per_us": None if flits is None else rate * flits / fmax,
        "payload_bits_per_us": None if bits is None else rate * bits / fmax},
], ids=["hz", "per-ns", "flits-as-messages", "divided"])
def test_a_wrong_combination_of_fmax_and_throughput_is_caught(folder, monkeypatch, broken):
    """Negative control: the check of the figures fails when Fmax and the throughput are
    combined in the wrong units."""
    monkeypatch.setattr(throughput, "per_microsecond", broken)
    with pytest.raises(AssertionError):
        check_figures(rows_by_name(folder))


def test_the_saturation_of_another_size_or_order_is_not_taken(folder):
    """Negative control of the size: at 1048 nodes the same files give 50 x 0.9."""
    assert rows_by_name(folder)["wormhole F8 V1 L20 Q2"]["messages_per_cycle"] == 0.015
    at_1048 = {row["configuration"]: row for row in throughput.figure(folder, size=1048)}
    assert at_1048["wormhole F8 V1 L20 Q2"]["messages_per_us"] == pytest.approx(45.0)


def test_stale_and_missing_rows_say_so_and_show_no_figure(folder):
    rows = rows_by_name(folder)
    stale = rows["wormhole F32 V1 L20 Q2"]
    assert stale["state"] == "stale" and "not of today's design" in stale["why"]
    packet = rows["packet W32 depth 1"]
    assert packet["state"] == "stale" and "saturation file stale" in packet["why"]
    missing = {
        "wormhole F16 V1 L20 Q2": "no router-0 synth result",
        "wormhole F16 V3 L20 Q2": "router 0 not placed",
        "wormhole F8 V3 L20 Q2": "no saturation at 1024 nodes (ihcube saturation --switching "
                                 "wormhole --flits 20 --vcs 3 --vc-depth 2 --sizes 1024",
        # Its file exists (depth 1's rows): a one-size command would write over them.
        "packet W32 depth 2": "no saturation at 1024 nodes in saturation.json (its command "
                              "again, 1024 among its --sizes",
    }
    for name, why in missing.items():
        row = rows[name]
        assert row["state"] == "not measured" and why in row["why"], name
        assert "flits_per_us" not in row and "messages_per_us" not in row, name
    assert "ihcube saturation" not in rows["packet W32 depth 2"]["why"]
    # Rows of the synth table's routers alone, wormhole first; W64 only where built.
    assert list(rows)[:6] == [f"wormhole F{f} V{v} L20 Q2" for f in (8, 16, 32) for v in (1, 3)]
    assert "packet W64 depth 1" in rows and "packet W64 depth 2" not in rows
    table = throughput.markdown(list(rows.values()))
    lines = {line.split(" | ")[0][2:]: line for line in table.splitlines()
             if line.startswith("| ")}
    assert "| stale: synth result not of today's design" in lines["wormhole F32 V1 L20 Q2"]
    for name in missing:
        assert "| not measured: " in lines[name] and "| - | - | - | - | - |" in lines[name]
    assert "the router of node 0 of 26 alone, placed" in table and "n = 1024" in table


def test_today_s_digests_make_a_row_current(folder, monkeypatch):
    """Negative control of the stale marks: with the old design digest as today's, the stale
    wormhole row is current and the current one stale; with the old model digest, the packet
    row whose saturation file it made is current, and the wormhole rows stale."""
    monkeypatch.setattr(build, "synth_digest", lambda spec, family="ecp5", **args: "old")
    rows = rows_by_name(folder)
    assert rows["wormhole F32 V1 L20 Q2"]["state"] == "current"
    assert rows["wormhole F8 V1 L20 Q2"]["state"] == "stale"
    monkeypatch.setattr(build, "synth_digest", lambda spec, family="ecp5", **args: TODAY)
    monkeypatch.setattr(provenance, "digest", lambda part: "old")
    rows = rows_by_name(folder)
    assert rows["packet W32 depth 1"]["state"] == "current"
    assert rows["wormhole F8 V1 L20 Q2"]["state"] == "stale"
    assert "saturation file stale" in rows["wormhole F8 V1 L20 Q2"]["why"]


def test_the_command_writes_the_table_and_the_json(folder, capsys):
    out = folder / "out"
    assert main(["throughput", "--folder", str(folder), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    record = json.loads((out / "throughput_per_us.json").read_text())
    assert record["saturation_nodes"] == 1024 and len(record["rows"]) == 13
    table = (out / "throughput_per_us.md").read_text()
    assert table in printed and "| wormhole F8 V1 L20 Q2 | 50.0 | 0.0150 (0.300) | 15.0 |" in table


@pytest.mark.parametrize("args, message", [
    (["--folder", "/nonexistent"], "--folder must name a folder of results, not "
                                   "'/nonexistent'"),
    (["--size", "0"], "Node count must be"),
    (["--family", "xilinx"], "Family must be"),
])
def test_bad_options_are_one_line(tmp_path, capsys, args, message):
    status = main(["throughput", "--out", str(tmp_path), *args])
    err = capsys.readouterr().err
    assert status == 2 and len(err.splitlines()) == 1 and message in err


def run_traffic(spec, seed=7, windows=3):
    source = mode_of(spec).traffic(spec, Pattern(spec.nodes, "uniform"), 0.045, seed)
    return [{key: np.asarray(value).tolist() for key, value in source.run(500).items()}
            for _ in range(windows)]


def test_the_flit_width_changes_no_cycle_of_the_model():
    """One saturation file serves every flit width: on the same traffic, 8-bit and 32-bit
    flits deliver the same messages in the same cycles. Negative control: one virtual channel
    more does not."""
    assert run_traffic(wormhole(8, 1)) == run_traffic(wormhole(32, 1))
    assert run_traffic(wormhole(8, 1)) != run_traffic(wormhole(8, 3))
