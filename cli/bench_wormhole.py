"""Measure the compiled wormhole model's router-cycles per second.

``ihcube bench-wormhole [--nodes 1024 1048 2048] [--out results/bench_wormhole_model.json]``
(``make bench-wormhole``) runs :func:`ihcube.bench.wormhole_model.benchmark`: the fast
wormhole model under saturating uniform traffic of 20-flit messages on 3 virtual channels at
each size, and the plain Python reference model for comparison. It prints the figures and
writes them to the JSON file; it checks nothing.
"""

import sys

from .options import run_benchmark

__all__ = ["main"]

NAME = "bench-wormhole"


def main(argv=None):
    """Run ``ihcube bench-wormhole`` with ``argv`` (default: the process's); return the exit
    status."""
    from ..bench import wormhole_model
    return run_benchmark(NAME, __doc__, wormhole_model, argv)


if __name__ == "__main__":
    sys.exit(main())
