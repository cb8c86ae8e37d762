"""Place and route the pipelined switch (``switch_stages=1``, ``docs/fpga.md``, "Pipelined
switch (spike)"): an ad hoc benchmark, not reachable from ``ihcube`` or the Makefile, because
the fast model does not implement the option.

``.venv/bin/python -m ihcube.bench.switch_stages --nodes 26 [--router 0] [--placer static]
[--link-stages 1]`` builds what ``ihcube synth`` builds with the same options, every router
with a registered grant, in ``build/switch_stages/`` and writes its figures to
``build/results/switch_stages/`` (never ``results/``: the names are ``ihcube synth``'s, so
that the figures of the design without the option are not overwritten). It prints the same
one line as ``ihcube synth``.
"""

import argparse
import contextlib
import sys

from .. import rtl

__all__ = ["switch_staged", "main"]


@contextlib.contextmanager
def switch_staged():
    """While open, :mod:`ihcube.rtl`'s ``Router`` and ``Fabric`` build with
    ``switch_stages=1`` unless told otherwise (what :func:`ihcube.boards.build.synth` looks
    up when it builds)."""
    router, fabric = rtl.Router, rtl.Fabric

    class StagedRouter(router):
        def __init__(self, *args, switch_stages=1, **kwargs):
            super().__init__(*args, switch_stages=switch_stages, **kwargs)

    class StagedFabric(fabric):
        def __init__(self, *args, switch_stages=1, **kwargs):
            kwargs.setdefault("router", StagedRouter)
            super().__init__(*args, switch_stages=switch_stages, **kwargs)

    rtl.Router, rtl.Fabric = StagedRouter, StagedFabric
    try:
        yield
    finally:
        rtl.Router, rtl.Fabric = router, fabric


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m ihcube.bench.switch_stages",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", "-n", type=int, required=True)
    parser.add_argument("--router", type=int, default=None)
    parser.add_argument("--placer", default=None, choices=("heap", "static", "sa"))
    parser.add_argument("--link-stages", type=int, default=0, choices=(0, 1))
    args = parser.parse_args(argv)
    from ..boards import build
    with switch_staged():
        figures = build.synth(args.nodes, "ecp5", out="build/results/switch_stages",
                              build_root="build/switch_stages", router=args.router,
                              placer=args.placer, link_stages=args.link_stages)
    figures["switch_stages"] = 1
    print(build.summary(figures) + " (switch_stages=1)")
    return 0 if figures["fits"] else 1


if __name__ == "__main__":
    sys.exit(main())
