"""cocotb testbenches of the emitted Verilog, run in Icarus Verilog by
:mod:`ihcube.verify.cocotb_runner`.

The modules here are loaded by cocotb inside the simulator, not collected by pytest (their
names do not start with ``test_``); ``tests/test_cocotb.py`` is the pytest side.
"""
