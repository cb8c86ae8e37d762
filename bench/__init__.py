"""Benchmarks (imported as ``ihcube.bench``): they print figures and write them to
``results/``; tests check behaviour, these measure it.

- :mod:`.verilog`: Verilog generation time, memory, size and Yosys cells (``make bench``).
- :mod:`.model`: router-cycles per second of the fast model and of the RTL simulation
  (``make bench-model``).
"""
