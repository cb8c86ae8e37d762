"""The round-robin arbiter: its fairness bound, and that a stalled grant holds."""

import random

import pytest

from ihcube.rtl import RoundRobinArbiter
from ihcube.verify.harness import simulate


@pytest.mark.parametrize("count", [1, 2, 3, 6, 11])
def test_waiting_request_is_served_within_count_minus_one_other_transfers(count):
    arbiter = RoundRobinArbiter(count)
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
                if held is not None and grant != held:
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
    assert problems == []
