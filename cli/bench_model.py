"""Measure the fast model's router-cycles per second and memory.

``ihcube bench-model [--sizes 26,256,1024,2048] [--threads 1] [--out DIR]`` (``make
bench-model`` writes ``results/bench_model.json`` with ``--threads 2``) runs
:func:`ihcube.bench.model.benchmark`: the model under uniform traffic at each size, the
Amaranth simulation of the 26-node fabric, the peak memory of a 65,536-node model, a
million-node run, and the model on ``--threads`` threads against one at 1,024, 8,192 and
65,536 nodes (none with ``--threads 1``, the default, as every command's). It prints the
figures and writes them to the JSON file; it checks nothing.
"""

import sys

from ..sim.model import MAX_ADDRESS_BITS
from .options import node_count, run_benchmark, thread_count

__all__ = ["main"]

NAME = "bench-model"


def main(argv=None):
    """Run ``ihcube bench-model`` with ``argv`` (default: the process's); return the exit
    status."""
    from ..bench import model

    def threads(parser):
        parser.add_argument("--threads", default="1", metavar="T",
                            help=f"threads to time against one (default 1: none; make "
                                 f"bench-model gives {model.THREADS})")
        return lambda args, default: {"threads": thread_count(args.threads)}
    return run_benchmark(NAME, __doc__, model, argv, threads,
                         lambda n: node_count(n, 1 << MAX_ADDRESS_BITS, "the model"))


if __name__ == "__main__":
    sys.exit(main())
