"""Measure the fast model's router-cycles per second and memory.

``ihcube bench-model [--nodes 26 256 1024 2048] [--threads 2] [--out
results/bench_model.json]`` (``make bench-model``) runs :func:`ihcube.bench.model.benchmark`:
the model under uniform traffic at each size, the Amaranth simulation of the 26-node fabric,
the peak memory of a 65,536-node model, a million-node run, and the model on ``--threads``
threads against one at 1,024, 8,192 and 65,536 nodes (none with ``--threads 1``). It prints
the figures and writes them to the JSON file; it checks nothing.
"""

import pathlib
import sys

from .. import topology
from ..params import check_positive_integer
from .options import AD_HOC
from .usage import command_parser, integer, run

__all__ = ["main"]

NAME = "bench-model"


def main(argv=None):
    """Run ``ihcube bench-model`` with ``argv`` (default: the process's); return the exit
    status."""
    from ..bench import model
    parser = command_parser(NAME, __doc__)
    parser.add_argument("--nodes", nargs="+", default=[str(n) for n in model.SIZES],
                        metavar="N",
                        help=f"fabric sizes (default {' '.join(map(str, model.SIZES))})")
    parser.add_argument("--threads", default=str(model.THREADS), metavar="T",
                        help=f"threads to time against one (default {model.THREADS}; 1: none)")
    default = f"{AD_HOC}/{pathlib.PurePath(model.OUT).name}"
    parser.add_argument("--out", default=default, metavar="FILE",
                        help=f"JSON file to write (default {default}; make writes {model.OUT})")

    def body(args):
        sizes = [integer(text, "Node count", topology.check_node_count) for text in args.nodes]
        threads = integer(args.threads, "Thread count",
                          lambda value: check_positive_integer(value, "Thread count"))
        model.benchmark(sizes, pathlib.Path(args.out), threads)
    return run(NAME, parser, body, argv)


if __name__ == "__main__":
    sys.exit(main())
