"""The reconfigurable fabric (``docs/reconfiguration-hardware.md``): the rule of which
configurations fit, the option, and the reconfiguration procedure on the RTL (stop
injection, wait for ``idle``, load, resume) checked by the scoreboard, with the negative
controls of a load without the drain. The lockstep with the model is in ``test_model.py``."""

import random
import subprocess
import sys

import pytest

from ihcube import topology
from ihcube.rtl import Fabric, Kind
from ihcube.spec import FabricSpec
from ihcube.verify.harness import Request
from ihcube.verify.reconfiguration import Phase, check_procedure, run_procedure


# --- Which configurations fit ----------------------------------------------------------------

@pytest.mark.parametrize("N", range(1, 34))
def test_configuration_fits_is_the_search_over_every_logical_address(N):
    """The closed form of :func:`ihcube.topology.configuration_fits` against its definition:
    every logical address below the active size lies at a physical router."""
    for active_nodes in range(N + 2):
        for mask in range(1 << topology.address_bits(N)):
            fits = 0 < active_nodes <= N and all(l ^ mask < N for l in range(active_nodes))
            assert bool(topology.configuration_fits(N, active_nodes, mask)) == fits


def test_configuration_fits_catches_a_wrong_rule():
    """Negative control: the search finds a configuration that a rule looking at the
    highest logical address alone (``(n - 1) XOR mask < N``) takes wrongly."""
    wrong = [(N, n, mask) for N in range(1, 17) for n in range(1, N + 1)
             for mask in range(1 << topology.address_bits(N))
             if ((n - 1) ^ mask < N) != all(l ^ mask < N for l in range(n))]
    assert (5, 2, 5) in wrong  # logical 0 would be at physical 5


@pytest.mark.parametrize("args, message", [
    ((6, 0, 0), r"^Active node count must be a positive integer, not 0$"),
    ((6, 7, 0), r"^Active node count must be at most the 6 physical nodes, not 7$"),
    ((6, 3, 8), r"^Mask must be an integer from 0 to 7, not 8$"),
    ((6, 3, 4), r"^Mask 4 places a logical node of the 3 at a physical node >= 6: every "
                r"logical address l < 3 must have l XOR mask < 6$"),
])
def test_check_configuration_says_what_is_wrong(args, message):
    with pytest.raises(ValueError, match=message):
        topology.check_configuration(*args)


# --- The option ------------------------------------------------------------------------------

def test_the_option_names_the_file_and_is_refused_where_it_does_not_apply():
    assert FabricSpec.of(26, reconfigurable=True).name == "ihcube_n26_w32_reconf"
    assert FabricSpec.of(26).name == "ihcube_n26_w32"
    with pytest.raises(ValueError, match=r"^Reconfigurable \(--reconfigurable\) takes packet "
                                         r"switching with one PE port, not wormhole switching$"):
        FabricSpec.of(8, switching="wormhole", reconfigurable=True)
    with pytest.raises(ValueError, match=r"one PE port, not 2 ports$"):
        FabricSpec.of(8, ports=2, reconfigurable=True)


def test_the_command_line_refuses_wormhole_in_one_line():
    result = subprocess.run([sys.executable, "-m", "ihcube", "ports", "--nodes", "8",
                             "--switching", "wormhole", "--reconfigurable"],
                            capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "--reconfigurable" in result.stderr


# --- The procedure on the RTL ----------------------------------------------------------------

def phase_traffic(active_nodes, count, rng, payloads, addresses=8):
    """``count`` requests between active logical nodes, one in ten a broadcast, a few to a
    node that is not active (of ``addresses``, the address field's), offered over the
    phase's first cycles."""
    requests = []
    for k in range(count):
        payload = next(payloads)
        roll = rng.random()
        source = rng.randrange(active_nodes)
        if roll < 0.1:
            request = Request(payload=payload, kind=Kind.BROADCAST, at=k // 2)
        elif roll < 0.15 and active_nodes < addresses:
            request = Request(payload=payload, dest=rng.randrange(active_nodes, addresses),
                              at=k // 2)
        else:
            request = Request(payload=payload, dest=rng.randrange(active_nodes), at=k // 2)
        requests.append((source, request))
    return requests


#: A planned shrink and grow of 8 physical routers: the configuration after reset, then
#: five nodes (mask 3), all eight again under another mask, six (mask 2).
PLAN = (None, (5, 3), (8, 5), (6, 2))


def plan_phases(plan, count=40, seed=1):
    rng, payloads = random.Random(seed), iter(range(1, 1 << 20))
    phases = []
    active_nodes = 8
    for configuration in plan:
        if configuration is not None:
            active_nodes = configuration[0]
        phases.append(Phase(configuration, phase_traffic(active_nodes, count, rng, payloads)))
    return phases


def test_a_planned_shrink_and_grow_lose_nothing():
    """Stop injection, wait for idle, load, resume: every message of every phase is
    delivered exactly once, along its path in that phase's logical addresses; each load is
    taken in the cycle it is offered, and the routers take their new logical addresses."""
    records = run_procedure(Fabric(8, 16, reconfigurable=True), plan_phases(PLAN))
    assert check_procedure(records) == []
    assert [record.configuration for record in records] == [(8, 0), *PLAN[1:]]
    assert all(record.taken_at == record.offered_at for record in records[1:])
    assert all(record.deliveries for record in records)


class LoadsWithoutTheDrain(Fabric):
    """Negative control: a fabric that takes a configuration in any cycle."""
    drain_before_load = False


@pytest.mark.slow
def test_a_load_offered_before_the_drain_waits_for_it():
    """A controller that skips the drain: the fabric holds the load until it is idle
    (``config.ready`` is ``idle``), so nothing is lost; a fabric without that interlock
    loads with messages in flight, and the scoreboard reports them."""
    phases = plan_phases(PLAN[:3])
    records = run_procedure(Fabric(8, 16, reconfigurable=True), phases, drain=False)
    assert check_procedure(records) == []
    assert any(record.taken_at > record.offered_at for record in records[1:])
    broken = run_procedure(LoadsWithoutTheDrain(8, 16, reconfigurable=True), phases,
                           drain=False)
    assert all(record.taken_at == record.offered_at for record in broken[1:])
    assert check_procedure(broken) != []


def test_a_configuration_that_does_not_fit_is_refused_and_the_old_one_holds():
    """Three active nodes under mask 4 of six routers would put logical node 2 at physical
    6: the load is taken and refused (``config_refused``), the configuration before holds,
    and its traffic is delivered; the next load that fits clears the flag."""
    rng, payloads = random.Random(2), iter(range(1, 1 << 20))
    phases = [Phase(None, phase_traffic(6, 20, rng, payloads)),
              Phase((3, 4), phase_traffic(6, 20, rng, payloads)),
              Phase((4, 2), phase_traffic(4, 20, rng, payloads))]
    records = run_procedure(Fabric(6, 8, reconfigurable=True), phases)
    assert records[1].refused and records[1].configuration == (6, 0)
    assert not records[2].refused and records[2].configuration == (4, 2)
    problems = check_procedure(records)
    assert problems == ["phase 1: configuration refused"]
