"""The broadcast buffer in a memory is the broadcast buffer in flip-flops, cycle by cycle.

The router uses the memory (distributed RAM on an FPGA, ``docs/fpga.md``); the formal check
uses the flip-flops, whose entries its invariants name. Both are driven by the same random
traffic that keeps the buffer's rules (a message enters whole into an empty buffer, its first
flit marked head and its last tail, ``want`` fixed while it is held, any branch stalled at any
time), and every output is compared in every cycle. The negative control is a branch that
reads its memory a cycle late (:class:`ihcube.verify.faults.LateReadBroadcastBuffer`), which
the same comparison must catch.
"""

import random

import pytest
from amaranth.hdl import Elaboratable, Module
from amaranth.sim import Simulator

from ihcube.rtl import BroadcastBuffer, flit_layout
from ihcube.verify.faults import LateReadBroadcastBuffer


class _Pair(Elaboratable):
    def __init__(self, memory, registers):
        self.memory, self.registers = memory, registers

    def elaborate(self, platform):
        m = Module()
        m.submodules.memory, m.submodules.registers = self.memory, self.registers
        return m


def compare(flits, branches, cycles, seed, buffer=BroadcastBuffer):
    """Run a memory ``buffer`` and a flip-flop :class:`BroadcastBuffer` side by side; return
    the first difference as a sentence, or None, and the number of messages that went
    through."""
    layout = flit_layout(8)
    memory = buffer(layout, flits, branches)
    registers = BroadcastBuffer(layout, flits, branches, registers=True)
    assert not memory.registers
    rng = random.Random(seed)
    outcome = {"problem": None, "messages": 0}

    async def testbench(ctx):
        want, sent = 0, 0
        for cycle in range(cycles):
            written = ctx.get(registers.written)
            if written == 0 and sent == 0:
                want = rng.randrange(1, 1 << branches)
            valid = int(sent < flits and rng.random() < 0.7)
            # A whole message: flit `sent` of it, marked head first and tail last.
            payload = rng.getrandbits(layout["payload"].shape.width) \
                | (sent == 0) << layout["head"].offset \
                | (sent == flits - 1) << layout["tail"].offset
            ready = [int(rng.random() < 0.6) for _ in range(branches)]
            for dut in (memory, registers):
                ctx.set(dut.w.valid, valid)
                ctx.set(dut.w.payload.as_value(), payload)
                ctx.set(dut.want, want if sent or written else 0)
                for b in range(branches):
                    ctx.set(dut.r[b].ready, ready[b])
            seen = []
            for dut in (memory, registers):
                ports = [(ctx.get(port.valid), ctx.get(port.payload.as_value())
                          if ctx.get(port.valid) else None) for port in dut.r]
                seen.append((ctx.get(dut.w.ready), ctx.get(dut.written), ctx.get(dut.idle),
                             ctx.get(dut.done), ctx.get(dut.head.as_value()) if written
                             else None, ports))
            if seen[0] != seen[1]:
                outcome["problem"] = (f"cycle {cycle}: memory (ready, written, idle, done, "
                                      f"head, branches) {seen[0]}, flip-flops {seen[1]}")
                return
            if valid and seen[1][0]:
                sent += 1
            if seen[1][3]:
                outcome["messages"] += 1
                sent = 0
            await ctx.tick()

    sim = Simulator(_Pair(memory, registers))
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    return outcome["problem"], outcome["messages"]


@pytest.mark.parametrize("flits, branches, seed", [(1, 1, 0), (3, 2, 1), (5, 5, 2), (20, 4, 3)])
def test_the_memory_buffer_is_the_flip_flop_buffer(flits, branches, seed):
    problem, messages = compare(flits, branches, 600, seed)
    assert problem is None, problem
    assert messages >= 5  # the traffic did go through, many times


@pytest.mark.parametrize("flits, branches, seed", [(3, 2, 1), (20, 4, 3)])
def test_a_branch_that_reads_late_is_caught(flits, branches, seed):
    problem, _ = compare(flits, branches, 600, seed, buffer=LateReadBroadcastBuffer)
    assert problem is not None and "cycle" in problem
