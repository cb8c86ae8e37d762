"""Verification (imported as ``ihcube.verify``): everything that checks the design.

- :mod:`.harness`: drives a :class:`~ihcube.rtl.Fabric` in the Amaranth simulator, with a
  monitor on every link; :mod:`.scoreboard` judges such a record against the topology rules.
- :mod:`.stress`: saturating traffic on the model or the RTL, the scoreboard, the drain bound
  and the watchdog that names a deadlock's cycle.
- :mod:`.formal`: the formal properties and the SymbiYosys jobs (:mod:`.abc_compat` bridges
  the system's ``yosys-abc``).
- :mod:`.lint` (Verilator, with the waivers of ``verilator.vlt``) and :mod:`.cocotb_runner`
  (the cocotb regression of :mod:`.cocotb_tb.fabric_tb` on Icarus Verilog).
"""
