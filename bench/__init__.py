"""Benchmarks (imported as ``ihcube.bench``): they print figures and write them to
``results/``; tests check behaviour, these measure it.

- :mod:`.verilog`: Verilog generation time, memory, size and Yosys cells (``make bench``).
- :mod:`.model`: router-cycles per second of the fast model and of the RTL simulation
  (``make bench-model``).
- :mod:`.wormhole_model`: router-cycles per second of the fast wormhole model (``make
  bench-wormhole``).
- :mod:`.switch_stages`: place and route with the pipelined switch (``switch_stages=1``, a
  spike; run by hand, not from ``make``: ``docs/fpga.md``, "Pipelined switch (spike)").
"""

__all__ = ["machine", "write_results"]


def machine():
    """The facts that make a benchmark's figures comparable: when, which Python and packages,
    how many CPUs, how busy the machine was."""
    import datetime
    import os
    import platform
    from importlib import metadata
    now = datetime.datetime.now(datetime.timezone.utc)
    return {"date_utc": now.isoformat(timespec="seconds"), "python": platform.python_version(),
            **{name: metadata.version(name) for name in ("numpy", "numba", "amaranth")},
            "cpu_count": os.cpu_count(), "platform": platform.platform(),
            "load_average": [round(load, 2) for load in os.getloadavg()]}


def write_results(results, out):
    """Write a benchmark's ``results`` as JSON to the path ``out`` (its folder made if need
    be) and say so."""
    import json
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"\nwrote {out}")
