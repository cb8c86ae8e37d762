"""The cocotb testbench of ``tests/test_axis_cocotb.py``: random traffic through the PE ports
of a generated fabric (AXI4-Stream: driven and read by cocotbext-axi, :mod:`ihcube.cocotb.axis`;
or native), from random PE ports when there are several, checked by
:class:`ihcube.cocotb.Scoreboard`.

Its settings come from the environment: the fabric (:func:`ihcube.cocotb.runner.spec_from_env`),
``AXIS_COUNT`` messages, ``AXIS_SEED``. It writes the run's record to ``record.json`` in its
folder, for the negative controls.
"""

import json
import os
import random

import cocotb

from ihcube import topology
from ihcube.cocotb.bench import FabricBench, random_pause
from ihcube.cocotb.runner import spec_from_env


@cocotb.test()
async def random_traffic(dut):
    """Random unicasts, broadcasts (one in ten) and destinations that name no node (one in
    ten, where the address width has some), from random PEs, every sink paused at random
    (never, half or four cycles in five): each message delivered exactly once where the
    topology says, every refusal counted."""
    spec = spec_from_env()
    n, count, seed = spec.nodes, int(os.environ["AXIS_COUNT"]), int(os.environ["AXIS_SEED"])
    rng = random.Random(seed)
    shares = [rng.choice((0.0, 0.5, 0.8)) for _ in range(n)]
    bench = FabricBench(dut, spec, pause=lambda node: random_pause(seed * 1000 + node,
                                                                   shares[node]))
    await bench.reset()
    addresses = 1 << topology.address_bits(n)
    for payload in range(count):
        src, roll, port = rng.randrange(n), rng.random(), rng.randrange(spec.ports)
        if roll < 0.1:
            bench.send(src, 0, payload, broadcast=True, port=port)
        elif roll < 0.2 and addresses > n:
            bench.send(src, rng.randrange(n, addresses), payload, port=port)
        else:
            bench.send(src, rng.randrange(n), payload, port=port)
    finished = await bench.drain(max_cycles=200 + 20 * count * n)
    problems = await bench.problems()
    with open("record.json", "w") as file:
        json.dump(bench.scoreboard.record(), file)
    assert not problems, "the scoreboard found problems:\n" + "\n".join(problems)
    assert finished, f"not drained: {bench.scoreboard.outstanding} deliveries outstanding"
    assert len(bench.scoreboard.record()["sent"]) == count
    dut._log.info("%d messages, %d deliveries", count, bench.scoreboard.expected)
