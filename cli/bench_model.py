"""Measure the fast model's router-cycles per second and memory.

``ihcube bench-model [--nodes 26 256 1024 2048] [--out results/bench_model.json]`` (``make
bench-model``) runs :func:`ihcube.bench.model.benchmark`: the model under uniform traffic at
each size, the Amaranth simulation of the 26-node fabric, and the peak memory of a
65,536-node model. It prints the figures and writes them to the JSON file; it checks nothing.
"""

import sys

from .options import run_benchmark

__all__ = ["main"]

NAME = "bench-model"


def main(argv=None):
    """Run ``ihcube bench-model`` with ``argv`` (default: the process's); return the exit
    status."""
    from ..bench import model
    return run_benchmark(NAME, __doc__, model, argv)


if __name__ == "__main__":
    sys.exit(main())
