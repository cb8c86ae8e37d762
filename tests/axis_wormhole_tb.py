"""The cocotb testbench of ``tests/test_axis_cocotb.py``'s wormhole case: random messages as
flits through the AXI4-Stream ports of a wormhole fabric, sent and received by cocotbext-axi's
``AxiStreamSource`` and ``AxiStreamSink`` (a message a frame: ``TLAST`` on its tail, ``TUSER``
on its head), each worm read back by :func:`ihcube.verify.wormhole_stress.decode_worm` and
checked by :class:`ihcube.cocotb.Scoreboard`.

Settings from the environment: the fabric (:func:`ihcube.cocotb.runner.spec_from_env`),
``AXIS_COUNT`` messages, ``AXIS_SEED``.
"""

import os
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource

from ihcube import topology
from ihcube.cocotb import Scoreboard
from ihcube.cocotb.bench import random_pause
from ihcube.cocotb.runner import spec_from_env
from ihcube.verify.wormhole_stress import decode_worm, message_flits


@cocotb.test()
async def wormhole_random_traffic(dut):
    """Random unicasts, broadcasts (one in ten) and destinations that name no node (one in
    ten, where there are such addresses), sinks paused at random: each message delivered
    exactly once, as one whole worm, where the topology says; every refusal counted."""
    spec = spec_from_env()
    n, wormhole = spec.nodes, spec.wormhole
    count, seed = int(os.environ["AXIS_COUNT"]), int(os.environ["AXIS_SEED"])
    rng, width = random.Random(seed), wormhole.flit_width
    lanes = width // 8
    Clock(dut.clk, 10, unit="ns").start()
    sources = [AxiStreamSource(AxiStreamBus.from_prefix(dut, f"s_axis_{k}"), dut.clk, dut.rst)
               for k in range(n)]
    sinks = [AxiStreamSink(AxiStreamBus.from_prefix(dut, f"m_axis_{k}"), dut.clk, dut.rst)
             for k in range(n)]
    for k, sink in enumerate(sinks):
        sink.set_pause_generator(random_pause(seed * 1000 + k, rng.choice((0.0, 0.5, 0.8))))
    dut.rst.value = 1
    for _ in range(2):
        await RisingEdge(dut.clk)
    dut.rst.value = 0
    board, problems = Scoreboard(spec), []

    def taken(src, dest, i, broadcast):
        return lambda _frame: board.sent(src, dest, i, broadcast)

    addresses = 1 << topology.address_bits(n)
    for i in range(count):
        src, roll = rng.randrange(n), rng.random()
        broadcast = roll < 0.1
        dest = (0 if broadcast else rng.randrange(n, addresses) if roll < 0.2 and addresses > n
                else rng.randrange(n))
        flits = message_flits(n, wormhole, i, dest, int(broadcast))
        data = b"".join(flit.to_bytes(lanes, "little") for flit in flits)
        sources[src].send_nowait(AxiStreamFrame(data, tx_complete=taken(src, dest, i,
                                                                         broadcast)))

    def collect():
        for node, sink in enumerate(sinks):
            while not sink.empty():
                frame = sink.recv_nowait()
                data, heads = bytes(frame.tdata), frame.tuser
                heads = [heads] * len(data) if isinstance(heads, int) else heads
                words = len(data) // lanes
                worm = [int.from_bytes(data[k * lanes:(k + 1) * lanes], "little")
                        | heads[k * lanes] << width | (k == words - 1) << width + 1
                        for k in range(words)]
                found = decode_worm(n, wormhole, worm)
                if isinstance(found, str):
                    problems.append(f"node {node}: {found}")
                    continue
                i, dest, src, kind = found
                board.received(node, src, node if kind else dest, i, bool(kind))

    quiet = 0
    for _ in range(400 + 40 * count * wormhole.flits):
        await RisingEdge(dut.clk)
        collect()
        idle = all(source.empty() and not source.active for source in sources)
        quiet = quiet + 1 if idle and board.outstanding == 0 else 0
        if quiet >= 32:
            break
    await ReadOnly()
    counts = [int(getattr(dut, f"refused_count__{k}").value) for k in range(n)]
    problems += board.problems()
    if counts != board.refusals():
        problems.append(f"refused_count {counts}, expected {board.refusals()}")
    assert not problems, "the scoreboard found problems:\n" + "\n".join(problems)
    assert quiet >= 32, f"not drained: {board.outstanding} deliveries outstanding"
    assert len(board.record()["sent"]) == count
