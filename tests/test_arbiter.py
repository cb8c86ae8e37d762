"""The round-robin arbiter: its fairness bound, and that a stalled grant holds (unless it is
built not to, ``hold=False``, for the pipelined switch's registered grants)."""

import random

import pytest

from ihcube.rtl import RoundRobinArbiter
from ihcube.verify.faults import FixedPriorityArbiter
from ihcube.verify.harness import simulate


@pytest.mark.parametrize("hold", [True, False])
@pytest.mark.parametrize("count", [1, 2, 3, 6, 11])
def test_waiting_request_is_served_within_count_minus_one_other_transfers(count, hold):
    assert fairness_problems(RoundRobinArbiter(count, hold=hold), hold) == []


@pytest.mark.parametrize("hold", [True, False])
def test_fairness_check_catches_a_fixed_priority_arbiter(hold):
    problems = fairness_problems(FixedPriorityArbiter(6, hold=hold), hold)
    assert any("passed over" in problem for problem in problems), problems


def fairness_problems(arbiter, hold):
    """Random requests (each kept up until served) and a random ``ready``: what is wrong
    with the grants. With ``hold``, a stalled grant must also stay put."""
    count = arbiter.count
    rng = random.Random(count)
    problems = []

    async def testbench(ctx):
        waiting = [False] * count
        others_served = [0] * count  # transfers to others since the request rose
        held = None
        for cycle in range(400):
            for j in range(count):
                if not waiting[j] and rng.random() < 0.6:
                    waiting[j], others_served[j] = True, 0
            ctx.set(arbiter.requests, sum(1 << j for j in range(count) if waiting[j]))
            ready = rng.random() < 0.7
            ctx.set(arbiter.ready, ready)
            grant = ctx.get(arbiter.grant)
            if ctx.get(arbiter.valid) != any(waiting):
                problems.append(f"cycle {cycle}: valid disagrees with the requests")
            if grant:
                if bin(grant).count("1") != 1 or not waiting[grant.bit_length() - 1]:
                    problems.append(f"cycle {cycle}: grant {grant:b} is not one waiting input")
                if hold and held is not None and grant != held:
                    problems.append(f"cycle {cycle}: grant moved from {held:b} while stalled")
                held = None if ready else grant
                if ready:
                    j = grant.bit_length() - 1
                    waiting[j] = False
                    for other in range(count):
                        if waiting[other] and other != j:
                            others_served[other] += 1
                            if others_served[other] > count - 1:
                                problems.append(f"cycle {cycle}: input {other} passed over "
                                                f"{others_served[other]} times")
            await ctx.tick()

    simulate(arbiter, testbench)
    return problems



@pytest.mark.parametrize("hold, grants", [(True, [0b100, 0b100, 0b100]),
                                          (False, [0b100, 0b001, 0b001])])
def test_a_stalled_grant_holds_only_with_hold(hold, grants):
    """Input 2 asks alone and is stalled; then input 0, first in priority, asks too. A held
    grant stays on 2 until it is taken; without the hold it goes to 0 at once (which is why
    the random check above must look at the hold only with ``hold``)."""
    arbiter = RoundRobinArbiter(3, hold=hold)
    seen = []

    async def testbench(ctx):
        for requests, ready in [(0b100, 0), (0b101, 0), (0b101, 1)]:
            ctx.set(arbiter.requests, requests)
            ctx.set(arbiter.ready, ready)
            seen.append(ctx.get(arbiter.grant))
            await ctx.tick()

    simulate(arbiter, testbench)
    assert seen == grants
