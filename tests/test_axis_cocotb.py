"""The AXI4-Stream ports (``--interface axis``) under third-party verification IP:
cocotbext-axi's ``AxiStreamSource`` and ``AxiStreamSink`` drive and read the generated
Verilog in Icarus (``tests/axis_tb.py``), random traffic with backpressure on the sinks,
exactly-once delivery checked by :class:`ihcube.cocotb.Scoreboard`. Negative controls: the
same run's record with a delivery dropped, or one duplicated, or a broadcast copy at its own
origin, is caught; and (slow) a fabric whose buffers drop or duplicate messages fails the
testbench."""

import json
import pathlib
import shutil

import pytest

from ihcube.cocotb import Scoreboard
from ihcube.spec import FabricSpec, Packet

pytest.importorskip("cocotbext.axi", reason="needs cocotbext-axi (pip install -e '.[dev]')")
pytestmark = pytest.mark.skipif(shutil.which("iverilog") is None,
                                reason="needs Icarus Verilog (make system-tools installs it)")

HERE = pathlib.Path(__file__).resolve().parent


SPEC = FabricSpec(5, interface="axis")


def run(build, verilog=None):
    """Run the testbench on :data:`SPEC` (or ``verilog``) in ``build``; its outcomes and
    record."""
    from ihcube.cocotb.runner import run_testbench
    outcomes = run_testbench(SPEC, "axis_tb", build, path=HERE, verilog=verilog,
                             env={"AXIS_COUNT": "150", "AXIS_SEED": "3"})
    found = build / "record.json"
    return outcomes, json.loads(found.read_text()) if found.is_file() else None


@pytest.fixture(scope="module")
def record(tmp_path_factory):
    return run(tmp_path_factory.mktemp("axis"))


def test_cocotbext_axi_traffic_is_delivered_exactly_once(record):
    outcomes, _ = record
    assert [outcome.name for outcome in outcomes] == ["random_traffic"]
    for outcome in outcomes:
        assert outcome.passed, f"{outcome.name} {outcome.status}:\n{outcome.message}"


def test_the_run_had_every_kind_of_message(record):
    _, kept = record
    sent = kept["sent"]
    assert any(broadcast for _, _, _, broadcast, _ in sent)
    assert any(dest >= 5 and not broadcast for _, dest, _, broadcast, _ in sent)
    assert len(kept["received"]) == Scoreboard.replay(kept).expected > len(sent)


def test_the_scoreboard_passes_the_run_and_catches_a_drop_or_a_duplicate(record):
    _, kept = record
    assert Scoreboard.replay(kept).problems() == []
    first = kept["received"][0]
    dropped = dict(kept, received=kept["received"][1:])
    assert any("received 0 times" in problem
               for problem in Scoreboard.replay(dropped).problems())
    doubled = dict(kept, received=kept["received"] + [first])
    assert any("received 2 times" in problem
               for problem in Scoreboard.replay(doubled).problems())
    src, _, payload, _, _ = next(sent for sent in kept["sent"] if sent[3])
    home = dict(kept, received=kept["received"] + [[src, src, src, payload, True, 0]])
    assert any(f"at node {src}, not 0" in problem
               for problem in Scoreboard.replay(home).problems())


@pytest.mark.slow
@pytest.mark.parametrize("fault, complaint", [("dropping-buffer", "received 0 times"),
                                              ("duplicating-buffer", "received 2 times")])
def test_a_fabric_that_drops_or_duplicates_fails(tmp_path, fault, complaint):
    from ihcube.generate import fabric_verilog
    from ihcube.verify.faults import faulty_router
    outcomes, _ = run(tmp_path, fabric_verilog(SPEC, router=faulty_router(fault)))
    assert outcomes[0].status == "failed", outcomes
    assert complaint in outcomes[0].message


@pytest.mark.slow
@pytest.mark.parametrize("fault", [None, "dropping-flit-buffer"])
def test_wormhole_flits_through_cocotbext_axi(tmp_path, fault):
    """A wormhole fabric's AXI4-Stream ports: each message a frame of flits, TLAST on the
    tail, TUSER on the head (``tests/axis_wormhole_tb.py``); a fabric whose flit buffers drop
    flits fails it (negative control)."""
    from ihcube.cocotb.runner import run_testbench
    from ihcube.generate import fabric_verilog
    from ihcube.verify.faults import WORMHOLE_FAULTS
    spec = FabricSpec.of(5, switching="wormhole", flits=3, vcs=1, interface="axis")
    verilog = None if fault is None else fabric_verilog(spec, router=WORMHOLE_FAULTS[fault])
    outcomes = run_testbench(spec, "axis_wormhole_tb", tmp_path, path=HERE, verilog=verilog,
                             env={"AXIS_COUNT": "60", "AXIS_SEED": "5"})
    assert [outcome.name for outcome in outcomes] == ["wormhole_random_traffic"]
    if fault is None:
        assert outcomes[0].passed, f"{outcomes[0].status}:\n{outcomes[0].message}"
    else:
        assert outcomes[0].status == "failed", outcomes
        assert "the scoreboard found problems" in outcomes[0].message, outcomes[0].message


@pytest.mark.slow
@pytest.mark.parametrize("spec", [FabricSpec(5, switching=Packet(ports=2), interface="axis"),
                                  FabricSpec(5, switching=Packet(ports=2))],
                         ids=["axis", "native"])
def test_several_pe_ports_through_the_library(tmp_path, spec):
    """``ihcube.cocotb.FabricBench`` on a fabric of 2 PE ports a node, both interfaces: random
    traffic from random ports, each delivery on the eject port the topology gives."""
    from ihcube.cocotb.runner import run_testbench
    outcomes = run_testbench(spec, "axis_tb", tmp_path, path=HERE,
                             env={"AXIS_COUNT": "150", "AXIS_SEED": "4"})
    assert outcomes[0].passed, f"{outcomes[0].status}:\n{outcomes[0].message}"
    kept = json.loads((tmp_path / "record.json").read_text())
    assert {port for *_, port in kept["received"]} == {0, 1}
    moved = [[*r[:-1], 1 - r[-1]] for r in kept["received"][:1]] + kept["received"][1:]
    assert any("on eject port" in problem
               for problem in Scoreboard.replay(dict(kept, received=moved)).problems())
