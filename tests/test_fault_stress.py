"""Stress with faults (``verify/fault_stress.py``, ``docs/reconfiguration-hardware.md``,
Faults): routers fail at random cycles, the network is reset and reconfigured around them,
traffic resumes on the survivors, and the scoreboard accounts for every message by the loss
rule. Negative controls: a model that loses or repeats a delivery, a controller that loads
without the reset (or a drain), a mapping that is not an automorphism."""

import re

import pytest

from ihcube import topology
from ihcube.reconfigure import Configuration, best_configuration
from ihcube.rtl import Fabric
from ihcube.sim.model import Model
from ihcube.verify.fault_stress import run_faults, run_rtl_faults
from ihcube.verify.faults import faulty_router
from ihcube.verify.stress import StressConfig, run_model
from ihcube.cli import stress as stress_cli


def config(N, faults, **keywords):
    traffic = dict(cycles=2000, seed=3)
    traffic.update(keywords)
    return StressConfig.of(N, reconfigurable=True, faults=faults, **traffic)


@pytest.mark.parametrize("N, faults, keywords", [
    (8, 3, {}),
    (26, 5, dict(order="lsb")),
    (32, 4, dict(broadcast=0.1)),
])
def test_faults_lose_only_what_was_in_the_network(N, faults, keywords):
    """Every fault ends an epoch with a reset that loses the copies in the network (checked
    buffer by buffer against the model's occupancy); nothing else is lost, duplicated,
    corrupted or delivered after its reset; each epoch runs the configuration that
    ``ihcube reconfigure``'s algorithm gives for the routers failed so far."""
    result = run_model(config(N, faults, **keywords))
    assert result.ok, result.summary()
    counts, run = result.counts, result.records
    assert counts["faults"] == faults and counts["lost to faults"] > 0
    assert counts["lost"] == counts["duplicated"] == counts["after a reset"] == 0
    assert counts["delivered"] + counts["lost to faults"] == counts["deliveries owed"]
    failed = []
    for before, after in zip(run.epochs, run.epochs[1:]):
        failed.append(before.failed)
        assert topology.check_node(N, before.failed) not in failed[:-1]
        assert before.mask ^ before.failed < before.active_nodes  # an active router failed
        best = best_configuration(N, failed)
        assert (after.active_nodes, after.mask) == (best.active_nodes, best.mask)
    assert counts["active at the end"] == run.epochs[-1].active_nodes


@pytest.mark.parametrize("faults, mutant, problem", [
    (3, "drop", r"the records leave \d+ messages in the network where the fabric held \d+"),
    (3, "duplicate", r"deliveries duplicated"),
    (0, "drop", r"^1 deliveries lost outside a fault"),
])
def test_a_model_that_loses_or_repeats_a_delivery_fails(faults, mutant, problem):
    """Negative control: the eject port loses (or repeats) one delivery in the first epoch,
    which a fault ends (or, without faults, the last). The lost one would pass as lost to the
    fault if the scoreboard counted losses against themselves; it compares them with the
    fabric at the reset."""
    result = run_faults(config(8, faults), mutant=mutant)
    assert not result.ok
    assert any(re.search(problem, text) for text in result.problems)


class LoadsAnyTime(Model):
    """Negative control: a model that takes a configuration with messages in flight."""

    def configure(self, active_nodes, mask):
        self._active_nodes, self._mask = topology.check_configuration(self.n, active_nodes,
                                                                      mask)
        self._tables = self._build_tables()


def test_a_reconfiguration_without_the_reset_or_the_drain_fails():
    """A controller that loads the new configuration at the fault with messages in flight
    (no reset, no drain): the model refuses the load, as the RTL's configuration port holds
    it; a model that takes it runs the old messages under the new configuration, and the
    scoreboard reports them."""
    with pytest.raises(ValueError, match=r"^Configure needs an idle fabric"):
        run_faults(config(8, 1, cycles=300), reset=False)
    result = run_faults(config(8, 1, cycles=300, drain_limit=2000), model_class=LoadsAnyTime,
                        reset=False)
    assert not result.ok
    assert any("corrupted" in text or "after the reset" in text or "lost outside" in text
               for text in result.problems)


def swapped(configuration, a, b):
    """The mapping of ``configuration`` router by router, logical addresses ``a`` and ``b``
    swapped: not an automorphism."""
    physical = [configuration.physical(l) for l in range(configuration.active_nodes)]
    physical[a], physical[b] = physical[b], physical[a]
    return physical


@pytest.mark.parametrize("choose, message", [
    (lambda N, failed: swapped(best_configuration(N, failed), 2, 3),
     r"^Logical link \d+ -- \d+ maps to routers \d+ and \d+, which no link joins$"),
    (lambda N, failed: Configuration(N - len(failed), 0),
     r"^Logical address \d+ maps to router \d+, which is faulty$"),
    (lambda N, failed: Configuration(4, 0, (1, 0, 2)),
     r"^The fabric takes XOR masks only, not a permutation of dimensions$"),
])
def test_a_configuration_the_fabric_cannot_take_is_refused(choose, message):
    """The chosen configuration is checked before it is loaded: a mapping that is not an
    automorphism, one onto a faulty router, a permutation of dimensions."""
    with pytest.raises(ValueError, match=message):
        run_faults(config(8, 1, cycles=300), choose=choose)


@pytest.mark.parametrize("argv, message", [
    ("--nodes 8 --faults 2", r"^ihcube stress: error: Faults \(--faults\) take a "
                             r"reconfigurable fabric"),
    ("--nodes 8 --reconfigurable", r"^ihcube stress: error: Reconfigurable "
                                   r"\(--reconfigurable\) in a stress run takes --faults K"),
    ("--nodes 8 --reconfigurable --faults 8", r"^ihcube stress: error: Faults must be at most "
                                              r"7 on 8 routers"),
    ("--nodes 8 --reconfigurable --faults 2 --link-stages 1",
     r"^ihcube stress: error: A stress run of a reconfigurable fabric takes no register "
     r"stages"),
    ("--campaign --reconfigurable", r"^ihcube stress: error: --reconfigurable is an option of "
                                    r"a single run"),
])
def test_the_command_refuses_in_one_line(capsys, argv, message):
    assert stress_cli.main(argv.split()) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and re.search(message, err), err


def test_the_command_runs_a_campaign_with_faults(capsys):
    assert stress_cli.main("--nodes 8 --reconfigurable --faults 2 --cycles 500".split()) == 0
    out = capsys.readouterr().out
    assert "reconfigurable faults=2" in out and "lost to faults" in out and "PASS" in out


# --- The same procedure and scoreboard on the RTL ---------------------------------------------

#: Two faults on 8 routers in 200 cycles of the Amaranth simulation (some seconds).
RTL = dict(faults=2, cycles=200, seed=3)


@pytest.mark.slow
def test_the_rtl_loses_only_what_was_in_the_network():
    """The fabric's own reset and ``config`` port: each load is taken in the first cycle after
    the reset, and the losses match the counts beside the RTL's buffers at each reset. The
    model runs beside it, reset and configured as :func:`run_faults` does it, and agrees on
    every handshake and delivery, cycle for cycle."""
    result = run_rtl_faults(config(8, **RTL), lockstep=Model)
    assert result.ok, result.summary()
    assert result.counts["faults"] == 2 and result.counts["lost to faults"] > 0
    assert result.counts["delivered"] + result.counts["lost to faults"] == \
        result.counts["deliveries owed"]


@pytest.mark.slow
def test_an_rtl_buffer_that_swallows_a_message_fails():
    """Negative control: a buffer that takes the 20th message written into it and never
    gives it out, in an epoch a fault ends: the counts at its ports say it holds the message,
    as the records do, but messages that came after it have left a first-in first-out
    buffer."""
    spec = config(8, **RTL).spec
    fabric = Fabric(spec, router=faulty_router("dropping-buffer", first=20, once=True))
    result = run_rtl_faults(config(8, **RTL), fabric=fabric)
    assert not result.ok
    assert any("that came after it have left its buffer" in text for text in result.problems)


class IgnoresTheLoad(Model):
    """Negative control: a model whose configuration port never takes a load."""

    def configure(self, active_nodes, mask):
        pass


@pytest.mark.slow
def test_the_lockstep_across_faults_catches_a_model_that_keeps_its_configuration():
    """After the first fault the broken model runs the configuration after reset where the
    RTL runs the new one: the lockstep finds the first cycle they differ."""
    result = run_rtl_faults(config(8, **RTL), lockstep=IgnoresTheLoad)
    assert not result.ok
    assert any(text.startswith("lockstep: in cycle") for text in result.problems)


class LoadsWithoutTheDrain(Fabric):
    """Negative control: a fabric that takes a configuration in any cycle."""
    drain_before_load = False


@pytest.mark.slow
def test_an_rtl_load_without_the_reset_or_the_drain_fails():
    """A controller that offers the configuration at the fault without resetting: a fabric
    without the interlock takes it with messages in flight, which are then delivered under
    the new configuration, and the scoreboard reports them."""
    spec = config(8, **RTL).spec
    result = run_rtl_faults(config(8, **RTL), fabric=LoadsWithoutTheDrain(spec), reset=False)
    assert not result.ok
    assert any("after the reset" in text or "corrupted" in text for text in result.problems)
