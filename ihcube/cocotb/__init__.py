"""A cocotb library for testing PE logic against the generated fabric
(``docs/howto-cocotb.md``).

- :class:`Scoreboard` (:mod:`.scoreboard`, no simulator needed): exactly-once delivery by the
  topology's rules: who must receive a broadcast, which destinations are refused.
- :class:`NativeDriver`, :class:`NativeMonitor` (:mod:`.native`): the native PE ports.
- :class:`AxisDriver`, :class:`AxisMonitor` (:mod:`.axis`): the AXI4-Stream PE ports, on
  cocotbext-axi.
- :class:`FabricBench` (:mod:`.bench`): a driver and a monitor on every PE port, one
  scoreboard.
- :func:`run_testbench` (:mod:`.runner`): generate, compile in Icarus, run your tests, read
  the results.

Only the scoreboard and the runner load without cocotb; the rest is imported from a
testbench.
"""

from .scoreboard import Received, Scoreboard, Sent

__all__ = ["Scoreboard", "Sent", "Received"]
