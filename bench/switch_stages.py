"""Place and route the pipelined switch (``switch_stages=1``, ``docs/fpga.md``, "Pipelined
switch (spike)"): the ad hoc benchmark of the spikes, kept so that their records in
docs/fpga.md can be reproduced. It predates the options on the command line: today ``ihcube
synth --switch-stages 1 [--link-stages 1] [--eject-stages 1]`` (``make synth SWITCH_STAGES=1
...``) builds the same design under names of its own (``_g1``), and ``ihcube saturation`` with
the same options gives the throughput at any size from the fast model.

``.venv/bin/python -m ihcube.bench.switch_stages --nodes 26 [--router 0] [--placer static]
[--link-stages 1] [--eject-stages 1]`` builds what ``ihcube synth --switch-stages 1`` builds
with the same options, every router with a registered grant (and with ``--eject-stages 1`` a
relay on each eject port: ``docs/fpga.md``, "Every output staged"), in
``build/switch_stages/`` (with eject stages ``build/switch_stages/eject_stages/`` unless
``--variant`` names another) and writes its figures to ``build/results/switch_stages/``
(never ``results/``). It prints the same one line as ``ihcube synth``.
"""

import argparse
import sys

from .. import rtl

__all__ = ["backlogged_throughput", "main"]


def backlogged_throughput(n, switch_stages, link_stages=0, depth=1, cycles=600, warmup=150,
                          seed=1, eject_stages=0):
    """Deliveries per node per cycle of the RTL ``n``-node fabric with every PE backlogged
    with uniform random unicasts (to any node but itself), counted from cycle ``warmup`` to
    ``cycles``: the RTL's saturation throughput (the fast model's, at any size, is in
    ``docs/model.md``, "Switch and eject stages"). Returns ``(throughput, deliveries
    counted)``."""
    import random

    from ..verify.harness import FabricHarness, Request
    fabric = rtl.Fabric(n, depth=depth, link_stages=link_stages, switch_stages=switch_stages,
                        eject_stages=eject_stages)
    harness = FabricHarness(fabric)
    rng = random.Random(seed)
    for node in range(n):
        for k in range(cycles):  # more than can leave: the queue never empties
            harness.send(node, Request(payload=k, dest=rng.choice(
                [dest for dest in range(n) if dest != node])))
    harness.run(cycles + 1, offer_until=cycles + 1)
    counted = sum(warmup <= delivery.cycle < cycles for delivery in harness.deliveries)
    return counted / (n * (cycles - warmup)), counted


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m ihcube.bench.switch_stages",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", "-n", type=int, required=True)
    parser.add_argument("--router", type=int, default=None)
    parser.add_argument("--placer", default=None, choices=("heap", "static", "sa"))
    parser.add_argument("--link-stages", type=int, default=0, choices=(0, 1))
    parser.add_argument("--eject-stages", type=int, default=0, choices=(0, 1))
    parser.add_argument("--depth", type=int, default=1, choices=(1, 2, 3))
    parser.add_argument("--variant", default=None, metavar="NAME",
                        help="build in build/switch_stages/NAME and write to "
                             "build/results/switch_stages/NAME (to keep the figures of "
                             "another version of the design apart)")
    parser.add_argument("--throughput", action="store_true",
                        help="instead of a build: the RTL's backlogged throughput with and "
                             "without the stage (--nodes, --link-stages, --eject-stages)")
    args = parser.parse_args(argv)
    if args.throughput:
        for stages in (0, 1):
            rate, counted = backlogged_throughput(args.nodes, stages, args.link_stages,
                                                  args.depth, eject_stages=args.eject_stages)
            print(f"n = {args.nodes}, depth = {args.depth}, link_stages = {args.link_stages}, "
                  f"eject_stages = {args.eject_stages}, switch_stages = "
                  f"{stages}: {rate:.3f} deliveries per node per cycle ({counted} counted)")
        return 0
    from ..boards import build
    from ..spec import FabricSpec
    variant = args.variant or ("eject_stages" if args.eject_stages else None)
    where = "switch_stages" + (f"/{variant}" if variant else "")
    spec = FabricSpec.of(args.nodes, depth=args.depth, link_stages=args.link_stages,
                         switch_stages=1, eject_stages=args.eject_stages)
    figures = build.synth(spec, "ecp5", out=f"build/results/{where}",
                          build_root=f"build/{where}", router=args.router, placer=args.placer)
    print(build.summary(figures) + " (switch_stages=1"
          + (", eject_stages=1)" if args.eject_stages else ")"))
    return 0 if figures["fits"] else 1


if __name__ == "__main__":
    sys.exit(main())
