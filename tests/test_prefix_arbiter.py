"""The prefix arbiter is the round-robin arbiter: the same grants, cycle by cycle, from the same
requests and stalls, so the wormhole router that uses it keeps its cycles (and its model)."""

import random

import pytest
from amaranth.hdl import Module

from ihcube.rtl import RoundRobinArbiter
from ihcube.rtl.prefix_arbiter import PrefixArbiter, prefix_or
from ihcube.verify.harness import simulate


class _ChainLevelShort(PrefixArbiter):
    """A negative control: the prefix ORs stop a level short, so a request far enough below
    another is not seen by it."""

    @staticmethod
    def prefix(bits):
        half = len(bits) // 2
        return prefix_or(bits[:half]) + prefix_or(bits[half:])


def first_difference(variant, count, hold, cycles=300):
    """Drive ``variant(count, hold)`` and :class:`RoundRobinArbiter` with the same random
    requests and ``ready``; return the first cycle where their ``grant`` or ``valid`` differ,
    else None."""
    m = Module()
    m.submodules.reference = reference = RoundRobinArbiter(count, hold=hold)
    m.submodules.candidate = candidate = variant(count, hold=hold)
    rng = random.Random(count * 2 + hold)
    found = []

    async def testbench(ctx):
        for cycle in range(cycles):
            requests = rng.getrandbits(count) & rng.getrandbits(count)
            ready = rng.random() < 0.7
            for arbiter in (reference, candidate):
                ctx.set(arbiter.requests, requests)
                ctx.set(arbiter.ready, ready)
            if (ctx.get(reference.grant), ctx.get(reference.valid)) != \
                    (ctx.get(candidate.grant), ctx.get(candidate.valid)):
                found.append(cycle)
                return
            await ctx.tick()

    simulate(m, testbench)
    return found[0] if found else None


@pytest.mark.parametrize("hold", [True, False])
@pytest.mark.parametrize("count", [1, 2, 3, 6, 11, 22])
def test_the_prefix_arbiter_grants_as_the_round_robin_arbiter(count, hold):
    assert first_difference(PrefixArbiter, count, hold) is None


@pytest.mark.parametrize("hold", [True, False])
def test_the_comparison_catches_a_prefix_a_level_short(hold):
    assert first_difference(_ChainLevelShort, 11, hold) is not None


@pytest.mark.parametrize("count", [1, 2, 5, 8, 22])
def test_prefix_or_is_the_running_or(count):
    rng = random.Random(count)
    for _ in range(50):
        bits = [rng.random() < 0.2 for _ in range(count)]
        running = [any(bits[:j + 1]) for j in range(count)]
        assert [bool(b) for b in prefix_or(bits)] == running
