"""The link buffer: order, no loss under backpressure, and the rate its registered ready allows;
the input buffer: what each head still wants."""

import random

import pytest
from amaranth.hdl import Module
from amaranth.lib import wiring

from ihcube.rtl import InputBuffer, LinkBuffer
from ihcube.rtl.input_buffer import entry_layout
from ihcube.rtl.message import message_layout
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


# --- The input buffer: what each head still wants ----------------------------------------

class ForgetfulInputBuffer(InputBuffer):
    """Negative control: it never clears what its head has sent."""

    def elaborate(self, platform):
        m = Module()
        inner = m.submodules.inner = InputBuffer(self.w.payload.shape(), self.depth)
        wiring.connect(m, wiring.flipped(self.w), inner.w)
        wiring.connect(m, inner.r, wiring.flipped(self.r))
        return m  # inner.sent stays 0


def run_input_buffer(buffer_class, depth, cycles=400, seed=0):
    """Write numbered messages with random wants (3 outputs) and send random parts of what
    the head still wants, taking it when nothing is left, as the router does. Return the
    (message, want) pairs written, those taken, and the (cycle, want offered, want expected)
    of every cycle."""
    buffer = buffer_class(entry_layout(message_layout(4, 8), 3), depth)
    rng = random.Random(seed)
    written, taken, seen = [], [], []

    async def testbench(ctx):
        word, left = 0, []  # left: what each message still held wants, oldest first
        for cycle in range(cycles):
            want = rng.randrange(8)
            offer = rng.random() < 0.6
            ctx.set(buffer.w.valid, offer)
            ctx.set(buffer.w.payload.message.payload, word % 256)
            ctx.set(buffer.w.payload.want, want)
            head = ctx.get(buffer.r.payload.want)
            seen.append((cycle, head, left[0] if left else 0))
            sent = head & rng.randrange(8)
            ctx.set(buffer.sent, sent)
            ctx.set(buffer.r.ready, ctx.get(buffer.r.valid) and head & ~sent == 0)
            if left:
                left[0] &= ~sent
            if ctx.get(buffer.r.valid) and ctx.get(buffer.r.ready):
                taken.append(ctx.get(buffer.r.payload.message.payload))
                left.pop(0)
            if offer and ctx.get(buffer.w.ready):
                written.append(word % 256)
                left.append(want)
                word += 1
            await ctx.tick()

    simulate(buffer, testbench)
    return written, taken, seen


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_an_input_buffer_clears_what_its_head_has_sent(depth):
    """The head offers what it was written with less what it has sent, an empty buffer
    offers nothing, and every message leaves in order once nothing is left."""
    written, taken, seen = run_input_buffer(InputBuffer, depth, seed=depth)
    assert len(taken) > 50
    assert taken == written[:len(taken)]
    assert all(offered == expected for _, offered, expected in seen)


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_an_input_buffer_that_forgets_what_was_sent_is_caught(depth):
    # From depth 2 what the head still wants is a register of its own: both forms.
    _, _, seen = run_input_buffer(ForgetfulInputBuffer, depth, seed=depth)
    assert any(offered != expected for _, offered, expected in seen)
