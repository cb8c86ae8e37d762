"""Every PE port of a generated fabric in a cocotb test: a driver and a monitor a port, of
the fabric's interface, and one scoreboard.

::

    bench = FabricBench(dut, spec, pause=lambda node: random_pause(seed + node))
    await bench.reset()
    bench.send(0, 3, payload=7)
    assert await bench.drain(max_cycles=1000)
    assert not await bench.problems()
"""

import itertools
import random

from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge

from ..spec import as_spec
from .scoreboard import Scoreboard

__all__ = ["FabricBench", "random_pause"]

#: The clock period of :meth:`FabricBench.reset`'s clock, in ns.
CLOCK_PERIOD_NS = 10


def random_pause(seed, share=0.5):
    """An endless pause pattern: True (pause) in a cycle with probability ``share``, drawn
    from ``seed``."""
    rng = random.Random(seed)
    return (rng.random() < share for _ in itertools.count())


class FabricBench:
    """A driver and a monitor on every PE port of the fabric ``spec`` (native or AXI4-Stream,
    as :attr:`~ihcube.spec.FabricSpec.interface` says), all telling one
    :class:`~ihcube.cocotb.scoreboard.Scoreboard`.

    Parameters
    ----------
    dut : cocotb handle
        The fabric's top module.
    spec : :class:`~ihcube.spec.FabricSpec`
        The fabric the Verilog was generated from.
    pause : function or None
        ``pause(node)`` gives the pause pattern of that node's monitor (an iterator of
        booleans: backpressure), or None for a PE that always takes.

    Attributes
    ----------
    scoreboard : Scoreboard
    drivers, monitors : list
        One a node (with several PE ports, one a node and port, node-major).
    """

    def __init__(self, dut, spec, pause=None):
        spec = self.spec = as_spec(spec)
        self.dut = dut
        self.scoreboard = Scoreboard(spec)
        if spec.interface == "axis":
            from .axis import AxisDriver as Driver, AxisMonitor as Monitor
        else:
            from .native import NativeDriver as Driver, NativeMonitor as Monitor
        ports = [(node, None if spec.ports == 1 else port)
                 for node in range(spec.nodes) for port in range(spec.ports)]
        self.drivers = [Driver(dut, spec, node, port, self.scoreboard) for node, port in ports]
        self.monitors = [Monitor(dut, spec, node, port, self.scoreboard,
                                 None if pause is None else pause(node))
                         for node, port in ports]
        self._taken = {}

    async def reset(self, cycles=2):
        """Start the clock and hold ``rst`` for ``cycles`` cycles."""
        Clock(self.dut.clk, CLOCK_PERIOD_NS, unit="ns").start()
        self.dut.rst.value = 1
        for _ in range(cycles):
            await RisingEdge(self.dut.clk)
        self.dut.rst.value = 0
        await RisingEdge(self.dut.clk)

    def send(self, src, dest, payload, broadcast=False, port=0):
        """Queue a message at the PE of ``src`` (its PE port ``port``)."""
        self.drivers[src * self.spec.ports + port].send(dest, payload, broadcast)

    def take(self, node, port=0):
        """The messages the PE of ``node`` (its PE port ``port``) received since the last
        ``take``: dicts of ``src``, ``dest``, ``kind`` (1: broadcast), ``travel`` and
        ``payload``. What a PE model in Python reacts to."""
        self._collect()
        index = node * self.spec.ports + port
        received = self.monitors[index].received
        start, self._taken[index] = self._taken.get(index, 0), len(received)
        return received[start:]

    def _collect(self):
        for monitor in self.monitors:
            if hasattr(monitor, "collect"):
                monitor.collect()

    async def drain(self, max_cycles, idle_cycles=16):
        """Run until every queued message was taken, every delivery it makes arrived and
        ``idle_cycles`` more cycles passed (to catch a late duplicate); return whether that
        happened within ``max_cycles`` cycles."""
        clk, quiet = self.dut.clk, 0
        for _ in range(max_cycles):
            await RisingEdge(clk)
            self._collect()
            done = (all(driver.idle for driver in self.drivers)
                    and self.scoreboard.outstanding == 0)
            quiet = quiet + 1 if done else 0
            if quiet >= idle_cycles:
                return True
        return False

    async def refused_counts(self):
        """Each node's ``refused_count``, as of this cycle."""
        await ReadOnly()
        counts = [int(getattr(self.dut, f"refused_count__{k}").value)
                  for k in range(self.spec.nodes)]
        await RisingEdge(self.dut.clk)
        return counts

    async def problems(self):
        """Everything wrong: the scoreboard's problems, any malformed frame, and a node whose
        ``refused_count`` is not the count of its messages to addresses that name no node."""
        self._collect()
        problems = list(self.scoreboard.problems())
        for monitor in self.monitors:
            problems += getattr(monitor, "problems", [])
        counts, expected = await self.refused_counts(), self.scoreboard.refusals()
        if counts != expected:
            problems.append(f"refused_count {counts}, expected {expected}")
        return problems
