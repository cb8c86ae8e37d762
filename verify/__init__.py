"""Verification (imported as ``ihcube.verify``): everything that checks the design.

- :mod:`.harness`: drives a :class:`~ihcube.rtl.Fabric` in the Amaranth simulator, with a
  monitor on every link; :mod:`.scoreboard` judges such a record against the topology rules.
- :mod:`.stress`: saturating traffic on the model or the RTL, the scoreboard, the drain bound
  and the watchdog that names a deadlock's cycle.
- :mod:`.formal`: the formal properties and the SymbiYosys jobs, a module a topic (the router
  and fabric checks, the toolchain, the runner, the job catalogue, and :mod:`.formal.abc_compat`,
  which bridges the system's ``yosys-abc``).
- :mod:`.faults`: every part broken on purpose for the negative controls, by name
  (:data:`.faults.FAULTS`), shared by the formal jobs, the simulation and cocotb tests and the
  board self-test's tests.
- :mod:`.lint` (Verilator, with the waivers of ``verilator.vlt``) and :mod:`.cocotb_runner`
  (the cocotb regression of :mod:`.cocotb_tb.fabric_tb` on Icarus Verilog).
"""
