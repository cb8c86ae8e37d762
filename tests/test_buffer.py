"""The link buffer: order, no loss under backpressure, and the rate its registered ready allows."""

import random

import pytest

from ihcube.rtl import LinkBuffer
from ihcube.verify.harness import simulate


def run_buffer(depth, write_chance, read_chance, cycles=300, seed=0):
    """Offer numbered words at random and read at random; return (written, read, write cycles)."""
    buffer = LinkBuffer(16, depth)
    rng = random.Random(seed)
    written, read, write_cycles = [], [], []

    async def testbench(ctx):
        word = 0
        for cycle in range(cycles):
            offer = rng.random() < write_chance
            ctx.set(buffer.w.valid, offer)
            ctx.set(buffer.w.payload, word)
            ctx.set(buffer.r.ready, rng.random() < read_chance)
            if offer and ctx.get(buffer.w.ready):
                written.append(word)
                write_cycles.append(cycle)
                word += 1
            if ctx.get(buffer.r.valid) and ctx.get(buffer.r.ready):
                read.append(ctx.get(buffer.r.payload))
            await ctx.tick()
        ctx.set(buffer.w.valid, 0)
        ctx.set(buffer.r.ready, 1)
        for _ in range(depth + 1):
            if ctx.get(buffer.r.valid):
                read.append(ctx.get(buffer.r.payload))
            await ctx.tick()

    simulate(buffer, testbench)
    return written, read, write_cycles


@pytest.mark.parametrize("depth", [1, 2, 3, 5])
def test_first_in_first_out_nothing_lost_under_backpressure(depth):
    written, read, _ = run_buffer(depth, write_chance=0.7, read_chance=0.4, seed=depth)
    assert len(written) > 50
    assert read == written


def test_one_message_buffer_takes_a_message_every_other_cycle():
    """With ready registered, "free" reaches the sender a cycle late (SPEC section 3)."""
    _, _, cycles = run_buffer(1, write_chance=1.0, read_chance=1.0, cycles=100)
    assert set(b - a for a, b in zip(cycles, cycles[1:])) == {2}


def test_two_message_buffer_takes_a_message_every_cycle():
    _, _, cycles = run_buffer(2, write_chance=1.0, read_chance=1.0, cycles=100)
    assert set(b - a for a, b in zip(cycles, cycles[1:])) == {1}


def test_wrong_depth():
    with pytest.raises(ValueError, match=r"^Buffer depth must be a positive integer, not 0$"):
        LinkBuffer(16, 0)
