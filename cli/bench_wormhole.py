"""Measure the compiled wormhole model's router-cycles per second.

``ihcube bench-wormhole [--sizes 1024,1048,2048] [--out DIR]`` (``make bench-wormhole``
writes ``results/bench_wormhole_model.json``) runs
:func:`ihcube.bench.wormhole_model.benchmark`: the fast wormhole model under saturating
uniform traffic of 20-flit messages on 3 virtual channels at each size, and the plain Python
reference model for comparison. It prints the figures and writes them to the JSON file; it
checks nothing.
"""

import sys

from .options import node_count, run_benchmark

__all__ = ["main"]

NAME = "bench-wormhole"


def main(argv=None):
    """Run ``ihcube bench-wormhole`` with ``argv`` (default: the process's); return the exit
    status."""
    from ..bench import wormhole_model
    return run_benchmark(NAME, __doc__, wormhole_model, argv, check_nodes=_nodes)


def _nodes(n):
    """A size the benchmark's fast wormhole model takes, at its flits and channels."""
    from ..bench.wormhole_model import FLITS, VCS
    from ..params import wormhole_parameters
    from ..sim.wormhole_fast import FastWormholeModel
    node_count(n, what="the wormhole model")
    why = FastWormholeModel.beyond(n, wormhole_parameters(n, flits=FLITS, vcs=VCS))
    if why:
        raise ValueError(why)
    return n


if __name__ == "__main__":
    sys.exit(main())
