"""The stress harness (:mod:`ihcube.verify.stress`): a slice of the campaign on the model and the
RTL, and the negative controls that show its scoreboard and watchdog can fail: deadlock-prone
routings stall with a reported cycle of waits, and a fabric or eject port that drops or
duplicates one message is caught. ``make stress-campaign`` runs the whole campaign."""

import subprocess
import sys
from dataclasses import replace
from unittest import mock

import numpy as np
import pytest

from ihcube import deadlock, topology
from ihcube.rtl import Fabric, Router
from ihcube.rtl.message import Kind
from ihcube.sim.model import Model
from ihcube.rtl import fabric as fabric_module
from ihcube.spec import FabricSpec, Stages
from ihcube.verify.faults import (WEIGHT_PARITY, buffer_fault_router, faulty_router, only_at,
                                  weight_parity_router)
from ihcube.verify.harness import Request
from ihcube.verify.stress import (StressConfig, find_stall, payload_of, stall_report,
                               run_model, run_rtl, score)


def assert_clean(result, min_per_node_cycle=0.05):
    """A run with nothing lost, duplicated, corrupted or misdelivered, that drained without an
    idle cycle, and that carried real traffic."""
    counts = result.counts
    assert result.ok, result.summary()
    assert counts["delivered"] == counts["deliveries owed"] > 0
    for name in ("lost", "duplicated", "corrupted", "misdelivered", "idle drain cycles"):
        assert counts[name] == 0, name
    config, n = result.config, result.config.spec.nodes
    assert counts["messages injected"] >= min_per_node_cycle * n * config.cycles
    if config.broadcast > 0 and n > 1:
        assert counts["broadcasts injected"] > 0


# --- The slice: sizes, depths and both orders on the model; small sizes on the RTL ----------

MODEL_SLICE = [(n, depth, order) for n in (1, 2, 3, 4, 5, 7, 8, 13, 26, 33, 64, 100, 129, 257)
               for depth in (1, 2) for order in topology.ROUTING_ORDERS]


@pytest.mark.parametrize("n, depth, order", MODEL_SLICE)
def test_model_under_saturating_traffic(n, depth, order):
    config = StressConfig.of(n, depth=depth, order=order, cycles=1500 if n <= 64 else 600,
                             seed=n + depth)
    assert_clean(run_model(config))


@pytest.mark.parametrize("n, depth, order, eject_ready", [
    (3, 1, "msb", 0.5), (5, 2, "msb", 0.75), (6, 1, "lsb", 0.75), (8, 1, "msb", 0.9)])
def test_rtl_under_saturating_traffic(n, depth, order, eject_ready):
    config = StressConfig.of(n, depth=depth, order=order, cycles=150, seed=n,
                             eject_ready=eject_ready)
    assert_clean(run_rtl(config))


def test_traffic_is_reproducible_from_the_seed():
    config = StressConfig.of(13, depth=2, cycles=400, seed=7)
    assert run_model(config).counts == run_model(config).counts
    assert run_model(config).counts != run_model(replace(config, seed=8)).counts


# --- Deadlock-prone variants stall, and the report names a real cycle of waits --------------

def assert_real_wait_cycle(stall, depth):
    """Each buffer of the cycle is full, and its head waits for the next one, across a link."""
    assert stall is not None and stall.cycle
    for held, wanted in zip(stall.cycle, stall.cycle[1:] + stall.cycle[:1]):
        assert wanted.is_link and wanted.node == held.far
        assert wanted in stall.waits[held]
        assert wanted in stall.held[held][0][2]  # the head still owes that link
        assert len(stall.held[held]) == depth


def unchecked():
    """Build fabrics without the elaboration-time deadlock check: for deadlock-prone
    variants on purpose."""
    return mock.patch.object(fabric_module.deadlock, "check_deadlock_free", lambda *_, **__: None)


class Algorithm6Model(Model):
    """Negative control: least-significant-first unicasts with Algorithm 6 broadcasts (the
    msb travel rule), which the static check finds cyclic from n = 4 (test_deadlock.py)."""

    def _travel_mask(self, node, dim):
        return topology.travel_mask(self.n, node, dim, topology.MSB_FIRST)


@pytest.mark.parametrize("n, depth", [(8, 1), (16, 2)])
def test_model_with_algorithm_6_broadcasts_under_lsb_deadlocks_and_reports_the_cycle(n, depth):
    """Saturating traffic closes the cycle that the static check finds; the same traffic on
    the real lsb model (mirrored travel rule) drains."""
    config = StressConfig.of(n, depth=depth, order="lsb", cycles=3000, seed=3, broadcast=0.1,
                             watchdog=100)
    assert_clean(run_model(config))
    result = run_model(config, model_class=Algorithm6Model)
    assert not result.ok
    assert result.problems[0].startswith("no transfer for 100 cycles from cycle ")
    assert result.counts["lost"] > 0
    assert "cycle of waits: node " in result.stall
    assert_real_wait_cycle(find_stall(result.records, deadlock.routing_for("lsb")), depth)


def _records_of(config):
    return run_model(config).records


def test_rtl_with_a_deadlock_prone_unicast_routing_stalls_and_reports_the_cycle():
    """The order flips at every hop (it follows the parity of the node's weight): the static
    check finds a cycle from n = 4, and in the RTL saturating unicasts close it."""
    with pytest.raises(ValueError, match="can deadlock"):
        Fabric(4, router=weight_parity_router, routing=WEIGHT_PARITY)
    with unchecked():
        fabric = Fabric(4, 32, 1, router=weight_parity_router, routing=WEIGHT_PARITY)
    config = StressConfig.of(4, depth=1, cycles=400, seed=2, broadcast=0.0, eject_ready=0.9,
                             watchdog=40)
    result = run_rtl(config, fabric=fabric, routing=WEIGHT_PARITY)
    assert not result.ok
    assert result.problems[0].startswith("no transfer for 40 cycles")
    assert "cycle of waits: node " in result.stall
    assert "(channels: " in result.stall


def test_msb_rtl_under_the_same_traffic_does_not_stall():
    """The control of the control: the same traffic on the real routing drains."""
    config = StressConfig.of(4, depth=1, cycles=400, seed=2, broadcast=0.0, eject_ready=0.9,
                             watchdog=40)
    assert_clean(run_rtl(config))


# --- Drops, duplicates and corruption are caught --------------------------------------------

@pytest.mark.parametrize("mutant, count", [("drop", "lost"), ("duplicate", "duplicated")])
def test_scoreboard_catches_an_eject_port_that_drops_or_duplicates_one_message(mutant, count):
    result = run_model(StressConfig.of(26, depth=1, cycles=500, seed=4), mutant=mutant)
    assert not result.ok
    assert result.counts[count] == 1
    others = {"lost", "duplicated", "corrupted", "misdelivered"} - {count}
    assert all(result.counts[name] == 0 for name in others)


@pytest.mark.parametrize("fault, count", [("drop", "lost"), ("duplicate", "duplicated")])
def test_scoreboard_catches_a_router_that_drops_or_duplicates_one_message(fault, count):
    # Only node 2's router is faulty; its buffers each misbehave once, on the 20th message.
    router = only_at([2], buffer_fault_router(fault, first=20, once=True))
    config = StressConfig.of(5, depth=1, cycles=150, seed=5, watchdog=40)
    result = run_rtl(config, fabric=Fabric(5, 32, 1, router=router))
    assert not result.ok
    assert result.counts[count] >= 1
    assert_clean(run_rtl(config))  # the same traffic on sound routers


def test_scoreboard_catches_corrupted_fields_and_payloads():
    config = StressConfig.of(13, depth=1, cycles=300, seed=6)
    records = _records_of(config)
    counts, problems = score(records)
    assert counts["corrupted"] == 0 and not problems

    for field, flip in [("payload", 1 << 40), ("payload", 1 << 3), ("src", 1), ("dest", 2)]:
        deliveries = records.deliveries.copy()
        unicast = np.flatnonzero(deliveries["kind"] == 0)[7]
        deliveries[field][unicast] ^= flip
        broken = replace(records, deliveries=deliveries)
        counts, problems = score(broken)
        assert counts["corrupted"] == 1, field
        assert counts["lost"] == 1  # the corrupted delivery does not count
        assert any("corrupted" in problem for problem in problems)

    # A delivery at a node it was not owed to.
    deliveries = records.deliveries.copy()
    unicast = np.flatnonzero(deliveries["kind"] == 0)[7]
    deliveries["node"][unicast] = (deliveries["node"][unicast] + 1) % 13
    counts, _ = score(replace(records, deliveries=deliveries))
    assert counts["misdelivered"] == 1 and counts["lost"] == 1


def test_drain_bound_catches_an_idle_drain_cycle():
    """With every PE accepting, something moves in every drain cycle until the fabric is
    empty; a gap in the records breaks that."""
    records = _records_of(StressConfig.of(26, depth=1, cycles=300, seed=6))
    counts, _ = score(records)
    assert counts["drain cycles"] > 2 and counts["idle drain cycles"] == 0
    start = records.offer_until
    # Move the drain's last transfers one cycle later: the cycle before them is idle.
    last = records.deliveries["cycle"].max()
    deliveries = records.deliveries.copy()
    deliveries["cycle"][deliveries["cycle"] == last] += 1
    hops = records.hops.copy()
    hops["cycle"][hops["cycle"] == last] += 1
    counts, problems = score(replace(records, deliveries=deliveries, hops=hops))
    assert last > start and counts["idle drain cycles"] == 1
    assert any("moved nothing" in problem for problem in problems)


# --- Link stages: a relay on each link (the same channel-dependency graph) -------------------

@pytest.mark.parametrize("n, depth, order", [(2, 1, "msb"), (5, 1, "lsb"), (13, 2, "msb"),
                                             (26, 1, "msb"), (33, 2, "lsb"), (129, 1, "msb")])
def test_model_with_link_stages_under_saturating_traffic(n, depth, order):
    """Every message owed arrives once, nothing stalls, and the drain moves something at
    least every other cycle (the bound with relays)."""
    config = StressConfig.of(n, depth=depth, order=order, cycles=1500 if n <= 64 else 600,
                             seed=n + depth, link_stages=1)
    result = run_model(config)
    assert_clean(result)
    assert "link_stages=1" in result.summary().splitlines()[0]


def test_rtl_with_link_stages_under_saturating_traffic():
    assert_clean(run_rtl(StressConfig.of(5, depth=1, order="msb", cycles=150, seed=5,
                                         link_stages=1)))


def delay_last_transfers(records, cycles):
    """``records`` with the drain's last transfers (hops and deliveries) ``cycles`` later: a
    run of ``cycles`` idle drain cycles before them."""
    moved = np.unique(np.concatenate([records.hops["cycle"], records.deliveries["cycle"]]))
    last = moved[moved >= records.offer_until][-1]
    deliveries, hops = records.deliveries.copy(), records.hops.copy()
    deliveries["cycle"][deliveries["cycle"] == last] += cycles
    hops["cycle"][hops["cycle"] == last] += cycles
    return replace(records, deliveries=deliveries, hops=hops)


def test_link_stages_drain_has_single_idle_cycles():
    """With relays, a drain cycle may move a message only into a relay, which the records do
    not see: idle cycles come, but never two in a row. The bound without relays counts
    them (so the relays' allowance is needed), and two in a row break it (the negative
    control)."""
    records = _records_of(StressConfig.of(26, depth=1, cycles=300, seed=6, link_stages=1))
    counts, _ = score(records)
    assert counts["drain cycles"] > 2 and counts["idle drain cycles"] == 0
    assert score(replace(records, link_stages=0))[0]["idle drain cycles"] > 0
    # Delay the drain's last transfers by two cycles: two idle cycles in a row.
    counts, problems = score(delay_last_transfers(records, 2))
    assert counts["idle drain cycles"] >= 1
    assert any("moved nothing" in problem and "beyond 1 in a row" in problem
               for problem in problems)


def test_link_stages_scoreboard_catches_a_lost_delivery():
    result = run_model(StressConfig.of(13, depth=1, cycles=300, seed=3, link_stages=1),
                       mutant="drop")
    assert not result.ok and result.counts["lost"] == 1


def test_stress_command_with_link_stages(capsys):
    from ihcube.cli import main
    assert main(["stress", "--nodes", "13", "--cycles", "500", "--link-stages", "1"]) == 0
    out = capsys.readouterr().out
    assert "link_stages=1" in out and "PASS" in out


@pytest.mark.parametrize("argv, message", [
    (["--link-stages", "2"], "Link stages must be 0 or 1, not 2"),
    (["--link-stages", "many"], "Link stages must be 0 or 1, not 'many'"),
    (["--link-stages", "1", "--switching", "wormhole"],
     "Link stages are a packet-switching option, not taken with wormhole switching, not 1"),
])
def test_stress_command_bad_link_stages(argv, message, capsys):
    from ihcube.cli import main
    assert main(["stress", "--nodes", "5", "--cycles", "10", *argv]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [f"ihcube stress: error: {message}"]


def test_payload_check_word():
    ids = np.arange(1000)
    from ihcube.verify.stress import ids_of
    for width in (32, 64):
        payloads = payload_of(ids, width)
        assert list(ids_of(payloads, width)) == list(ids)
        assert (ids_of(payloads ^ np.uint64(1 << (width - 1)), width) == -1).all()
    with pytest.raises(ValueError, match="do not fit a 32-bit payload"):
        payload_of([1 << 16], 32)


# --- Command line ---------------------------------------------------------------------------

def stress(*args):
    return subprocess.run([sys.executable, "-m", "ihcube", "stress", *args],
                          capture_output=True, text=True, timeout=300)


def test_command_line_prints_the_counts():
    result = stress("--nodes", "13", "--cycles", "2000", "--depth", "2")
    assert result.returncode == 0, result.stderr
    for name in ("messages injected", "delivered", "lost", "duplicated", "corrupted",
                 "max latency"):
        assert name in result.stdout
    assert "result                PASS" in result.stdout


def test_command_line_fails_on_a_deadlock(capsys):
    from ihcube.cli import main
    from ihcube.verify import stress as harness
    real = harness.run_model
    with mock.patch.object(harness, "run_model",
                           lambda config, **options: real(config, model_class=Algorithm6Model,
                                                            **options)):
        status = main(["stress", "--nodes", "8", "--order", "lsb", "--broadcast", "0.1",
                       "--cycles", "2000"])
    out = capsys.readouterr().out
    assert status == 1
    assert "result                FAIL" in out
    assert "cycle of waits: " in out


@pytest.mark.parametrize("args, message", [
    (["--nodes", "0"], "Node count must be a positive integer, not 0"),
    (["--nodes", "abc"], "Node count must be a positive integer, not 'abc'"),
    (["--cycles", "1.5"], "Cycles must be a positive integer, not '1.5'"),
    (["--depth", "0"], "Buffer depth must be a positive integer, not 0"),
    (["--order", "up"], "Routing order must be one of 'msb' or 'lsb', not 'up'"),
    (["--backend", "fpga"], "Backend must be model or rtl, not 'fpga'"),
    (["--eject-ready", "0"], "Eject-ready probability must be above 0 and at most 1, not 0.0"),
])
def test_command_line_rejects_bad_parameters_in_one_line(args, message):
    result = stress(*args)
    assert result.returncode == 2
    assert result.stderr == f"ihcube stress: error: {message}\n"
    assert result.stdout == ""


@pytest.mark.parametrize("args, message", [
    (["--width", "16"], "Payload width (--width) is the RTL's (--backend rtl): the model's stress "
                        "runs carry 64-bit payloads, not '16'"),
    (["--ports", "2"], "Port count must be 1 in a stress run (each PE offers one message at a "
                       "time), not 2"),
    (["--backend", "rtl", "--nodes", "5000"], "Node count must be an integer from 1 to 4096, "
                                              "not 5000"),
    (["--campaign", "--nodes", "5"], "--nodes is an option of a single run, not taken with "
                                     "--campaign (it runs its own configurations)"),
    (["--campaign", "--flits", "4", "--switching", "wormhole"],
     "--flits is an option of a single run, not taken with --campaign (it runs its own "
     "configurations)"),
])
def test_command_line_refuses_what_a_stress_run_cannot_use_in_one_line(args, message, capsys):
    """Every fabric option is taken; what a stress run or the campaign cannot use is one
    line."""
    from ihcube.cli import main
    assert main(["stress", "--cycles", "10", *args]) == 2
    assert capsys.readouterr() == ("", f"ihcube stress: error: {message}\n")


def test_one_config_and_one_result_for_both_switching_modes():
    """A configuration is a spec and its traffic, run by the engine of the spec's mode; both
    engines give a StressResult. Wrong specs are refused whole."""
    from ihcube.verify import stress, wormhole_stress
    packet = StressConfig(FabricSpec(5), cycles=50)
    wormhole = StressConfig.of(5, switching="wormhole", flits=4, vcs=1, cycles=50)
    assert (packet.engine, wormhole.engine) == (stress, wormhole_stress)
    results = [config.engine.run_model(config) for config in (packet, wormhole)]
    assert {type(result) for result in results} == {type(run_model(packet))}
    assert all(result.ok for result in results)
    with pytest.raises(TypeError, match=r"^Spec must be a FabricSpec, not 5$"):
        StressConfig(5)
    with pytest.raises(ValueError, match=r"^Port count must be 1 in a stress run \(each PE "
                                         r"offers one message at a time\), not 2$"):
        StressConfig.of(5, ports=2)
    with pytest.raises(ValueError, match=r"^Seed must be a non-negative integer, not -1$"):
        StressConfig.of(5, seed=-1)


# --- Relay faults (link stages) and the stall report's relays --------------------------------

@pytest.mark.parametrize("name, count", [("dropping-relay", "lost"),
                                         ("duplicating-relay", "duplicated"),
                                         ("corrupting-relay", "corrupted")])
def test_rtl_stress_catches_a_faulty_relay(name, count):
    """Negative control: relays (input buffers real) that drop, duplicate or corrupt every
    third message; the scoreboard counts it where the real relays, on the same traffic, are
    clean (:func:`test_rtl_with_link_stages_under_saturating_traffic`)."""
    config = StressConfig.of(5, depth=1, order="msb", cycles=150, seed=5, link_stages=1)
    fabric = Fabric(5, 32, 1, router=faulty_router(name), link_stages=1)
    result = run_rtl(config, fabric=fabric)
    assert not result.ok and result.counts[count] > 0, result.summary()


def test_rtl_stress_catches_a_stuck_relay():
    """Negative control: relays that keep the first message written into them; the watchdog
    stops the run, and the report, from the counts read out of the simulation, puts a copy in
    each relay that was written (whose input buffer the records alone would have charged) and
    names the full relays that the injection buffers' heads wait for."""
    config = StressConfig.of(5, depth=1, order="msb", cycles=150, seed=5, link_stages=1,
                             watchdog=40)
    fabric = Fabric(5, 32, 1, router=faulty_router("stuck-relay"), link_stages=1)
    result = run_rtl(config, fabric=fabric)
    assert not result.ok and result.problems[0].startswith("no transfer for 40 cycles")
    assert "the records do not tell" not in result.stall
    assert "relays holding copies:" in result.stall and "(relay full)" in result.stall
    inputs, relays, _ = result.records.occupancy
    assert len(result.records.hops) == 0 and relays.sum() > 0 and relays.max() == 1
    stall = find_stall(result.records, deadlock.routing_for("msb"))
    assert (placed_counts(stall, 5, 3)[1] == relays).all()


def test_a_stall_while_draining_is_reported_as_a_stall():
    """Relays that stick, and traffic for 3 cycles only, so the fabric stops moving while it
    drains with copies owed: the watchdog (40 cycles, more than the 16 idle cycles that end
    a drain that is done) stops the run after the injection phase and the report names the
    relays the copies wait in, as the model's backend reports a stall while draining. Before
    the harness kept idle cycles from ending a run with deliveries owed, this run ended 16
    cycles into the quiet as messages lost, with no stall and no report."""
    config = StressConfig.of(5, depth=1, order="msb", cycles=3, seed=5, link_stages=1,
                             watchdog=40)
    fabric = Fabric(5, 32, 1, router=faulty_router("stuck-relay"), link_stages=1)
    result = run_rtl(config, fabric=fabric)
    assert result.counts["lost"] > 0, result.summary()
    assert result.records.stalled_at is not None and result.records.stalled_at > 3 + 16
    assert result.problems[0].startswith("no transfer for 40 cycles")
    assert "relays holding copies:" in result.stall


def placed_counts(stall, n, D):
    """The copies the stall places in each input buffer, each link's relay and each eject
    relay, as arrays laid out as :attr:`Model.occupancy`, :attr:`Model.relay_occupancy` and
    :attr:`Model.eject_occupancy` (one PE port)."""
    inputs, relays = np.zeros((n, D + 1), np.int64), np.zeros((n, max(D, 1)), np.int64)
    ejects = np.zeros((n, 1), np.int64)
    for channel, held in stall.held.items():
        inputs[channel.far, D if channel.dim == deadlock.INJECT else channel.dim] = len(held)
    for output, held in (stall.relays or {}).items():
        if output.is_link:
            relays[output.node, output.dim] = len(held)
        else:
            ejects[output.node, 0] = len(held)
    return inputs, relays, ejects


@pytest.mark.parametrize("n, depth", [(8, 1), (16, 2)])
def test_stall_report_places_copies_in_relays(n, depth):
    """With link stages, the deadlock-prone model stalls; the report puts each undelivered copy
    in its input buffer or its relay, as many in each as the model holds there, and the cycle
    of waits is a real one (full buffers, behind full relays). Negative control: without the
    model's occupancy (the records alone, as before) relay copies count in their input buffers,
    more than a buffer holds."""
    config = StressConfig.of(n, depth=depth, order="lsb", cycles=3000, seed=3, broadcast=0.1,
                             watchdog=100, link_stages=1)
    result = run_model(config, model_class=Algorithm6Model)
    assert not result.ok and "relays holding copies:" in result.stall
    stall = find_stall(result.records, deadlock.routing_for("lsb"))
    assert_real_wait_cycle(stall, depth)
    for _held, wanted in zip(stall.cycle, stall.cycle[1:] + stall.cycle[:1]):
        assert len(stall.relays[wanted]) == depth  # the relay in between is full too
    inputs, relays, _ = result.records.occupancy
    assert relays.sum() > 0
    placed = placed_counts(stall, n, topology.dimensions(n))
    assert (placed[0] == inputs).all() and (placed[1] == relays).all()

    blind = find_stall(replace(result.records, occupancy=None), deadlock.routing_for("lsb"))
    assert blind.relays is None
    assert max(len(held) for held in blind.held.values()) > depth
    assert "both are counted in the input buffer" in stall_report(
        replace(result.records, occupancy=None), deadlock.routing_for("lsb"))


def test_rtl_counts_survive_a_second_run_of_the_same_fabric():
    """The counts go in through the routers' buffer factories: a second run of the same fabric
    counts from the real factories again (not through the first run's, which are spent)."""
    config = StressConfig.of(3, depth=1, order="msb", cycles=60, seed=1, link_stages=1)
    fabric = Fabric(3, 32, 1, link_stages=1)
    first, second = run_rtl(config, fabric=fabric), run_rtl(config, fabric=fabric)
    assert_clean(first)
    assert_clean(second)
    assert first.counts == second.counts
    for counts in (*first.records.occupancy, *second.records.occupancy):
        assert counts.sum() == 0  # drained


class Algorithm6Router(Router):
    """The RTL of :class:`Algorithm6Model`: least-significant-first unicasts, Algorithm 6
    broadcast copies (the msb travel rule), and a path from every input to every output (the
    copies turn where the lsb order's onward links do not). That it is the model's twin is
    checked where it is used: the same traffic gives the same hops, deliveries and buffer
    counts."""

    def __init__(self, spec, node, **kwargs):
        super().__init__(spec, node, **kwargs)
        self.at = (spec.nodes, node)

    def travel_mask(self, dim):
        return topology.travel_mask(*self.at, dim, topology.MSB_FIRST)

    def outputs_of(self, j):
        return tuple(range(len(self.dims) + 1))


@pytest.mark.slow
def test_rtl_and_model_place_a_stalls_copies_alike():
    """With link stages, the RTL backend's stall report places copies in the relays as the
    model's does: the deadlock-prone RTL stalls; the model, run on the same requests to the
    same cycle, did the same hops and deliveries and holds as many messages in every input
    buffer and relay as the counts read out of the Amaranth simulation; so the report from the
    RTL's counts is the report from the model's, word for word, and a real cycle of waits.
    Negative control: the records-only report (the RTL backend's before it read the counts)
    differs, charging relay copies to input buffers beyond their depth."""
    n, depth = 8, 1
    config = StressConfig.of(n, depth=depth, order="lsb", cycles=400, seed=3, broadcast=0.1,
                             eject_ready=1.0, watchdog=40, link_stages=1)
    fabric = Fabric(n, 32, depth, "lsb", router=Algorithm6Router, link_stages=1)
    result = run_rtl(config, fabric=fabric)
    records = result.records
    assert not result.ok and records.stalled_at is not None
    assert "relays holding copies:" in result.stall

    model = Algorithm6Model(n, 32, depth, "lsb", link_stages=1)
    requests = [(int(src), Request(int(payload), int(dest), Kind(int(kind))))
                for src, dest, kind, payload in zip(records.src, records.dest, records.kind,
                                                    payload_of(np.arange(len(records.src)), 32))]
    run = model.run(records.stalled_at, requests, np.ones((records.stalled_at, n), np.uint8),
                    record_hops=True)
    for ours, theirs in ((records.hops, run.hops), (records.deliveries, run.deliveries)):
        assert sorted(zip(ours["cycle"].tolist(), ours["node"].tolist())) == \
            sorted(zip(theirs["cycle"].tolist(), theirs["node"].tolist()))
    inputs, relays, _ = records.occupancy
    assert relays.sum() > 0
    assert (inputs == model.occupancy).all() and (relays == model.relay_occupancy).all()
    routing = deadlock.routing_for("lsb")
    assert result.stall == stall_report(
        replace(records, occupancy=(model.occupancy, model.relay_occupancy)), routing)
    stall = find_stall(records, routing)
    assert_real_wait_cycle(stall, depth)
    placed = placed_counts(stall, n, topology.dimensions(n))
    assert (placed[0] == inputs).all() and (placed[1] == relays).all()

    blind = replace(records, occupancy=None)
    assert stall_report(blind, routing) != result.stall
    assert max(len(held) for held in find_stall(blind, routing).held.values()) > depth


def test_the_campaign_with_link_stages_runs_its_packet_configurations_with_relays():
    from ihcube.cli.stress import campaign
    plain = campaign(quick=True)
    staged = campaign(quick=True, stages={"link_stages": 1})
    packet = [(backend, config) for backend, config in plain if config.spec.packet]
    assert len(packet) < len(plain)  # the plain campaign has wormhole runs too
    assert [(backend, replace(config, spec=config.spec.replace(stages=Stages())))
            for backend, config in staged] == packet
    assert {config.spec.stages.link for _, config in staged} == {1}
    assert {backend for backend, _ in staged} == {"model", "rtl"}


def test_campaign_with_wormhole_link_stages_is_one_line(capsys):
    from ihcube.cli import main
    assert main(["stress", "--campaign", "--quick", "--link-stages", "1",
                 "--switching", "wormhole"]) == 2
    assert capsys.readouterr().err == ("ihcube stress: error: Link stages are a packet-switching "
                                       "option, not taken with wormhole switching, not 1\n")
