"""Stress the fabric with saturating traffic and check every delivery.

``ihcube stress --nodes 26 --cycles 20000`` (``make stress N=26 CYCLES=20000``)
runs one configuration of :mod:`ihcube.verify.stress` and prints its counts; the exit status is
1 if the scoreboard or the watchdog found a problem. ``--switching wormhole [--flits L]
[--vcs V] [--vc-depth Q] [--flit-width F]`` (``make stress SWITCHING=wormhole ...``) runs
:mod:`ihcube.verify.wormhole_stress` instead. ``--link-stages 1`` puts a relay on each link
(packet switching, ``docs/model.md``: a cycle more per hop, the same channel-dependency
graph); ``--switch-stages 1`` registers each router's grant and ``--eject-stages 1`` puts a
relay on each eject port (all three: the fabric of 150 MHz, docs/fpga.md). ``--campaign``
(``make
stress-campaign``) runs every configuration of :func:`campaign` (with ``--switching wormhole``,
only those of :func:`wormhole_campaign`) as tasks of a Dask cluster
(``--jobs`` local worker processes, or the workers of ``--scheduler ADDRESS``), prints a
table and writes it to ``results/stress_campaign.json``; with ``--link-stages 1`` (``make
stress-campaign LINK_STAGES=1``) its packet configurations run with a relay on each link, and
the table goes to ``results/stress_campaign_s1.json`` (with all three stages,
``stress_campaign_s1_g1_e1.json``). ``--threads T`` runs each packet
model on ``T`` threads (at most one a node; the same records on any number); the wormhole
model and the RTL have one, so a single run refuses ``T`` above 1 with them, and a campaign
runs only its packet model runs on ``T``. A wrong parameter is one line on standard error
and exit status 2.
"""

import json
import pathlib
import sys
import time

from .. import topology
from ..extras import MissingExtra
from ..params import check_depth, describe_stages, stages_suffix
from .options import (AD_HOC, add_cluster_options, add_stages_options, add_switching_options,
                      add_threads_option, cluster_options, stages, started, switching_options,
                      thread_count)
from .usage import UsageError, command_parser, parse_number, report

__all__ = ["campaign", "wormhole_campaign", "main"]

NAME = "stress"

#: The campaign's sizes: every n from 1 to 64, then sizes around powers of two and the
#: incomplete sizes of the literature.
CAMPAIGN_SIZES = (*range(1, 65), 100, 127, 128, 129, 255, 256, 257, 1000, 1048, 2047)
#: Sizes the campaign also runs on the RTL, in the Amaranth simulator.
CAMPAIGN_RTL_SIZES = tuple(range(1, 9))
#: Wormhole switching: sizes on the (plain Python) model, and on the RTL.
CAMPAIGN_WORMHOLE_SIZES = (*range(1, 17), 26, 33, 64)
CAMPAIGN_WORMHOLE_RTL_SIZES = (2, 3, 5, 8)
#: Wormhole switching: (virtual channels, flits per message); 3 channels with Tzeng and
#: Kumar's 20 flits, and a single channel with short worms.
CAMPAIGN_WORMHOLE_CHANNELS = ((1, 5), (3, 20))


def campaign(quick=False, stages=None):
    """The campaign's configurations, as ``(backend, StressConfig)`` pairs.

    Every size on the model with depth 1 and 2 and both routing orders. Cycles shrink with
    the size, so that each run carries some tens of thousands of messages or more. The RTL
    runs sizes 1 to 8, both depths, both orders. ``quick`` keeps a slice that runs in a
    minute or two. With register ``stages`` (a dict of :func:`ihcube.params.check_stages`)
    the packet configurations only (stages are a packet option), each with those stages.
    """
    stages = stages or {}
    from ..verify.stress import StressConfig

    configs = []
    for n in CAMPAIGN_SIZES:
        if quick and n not in (1, 2, 3, 5, 8, 13, 26, 64, 129, 257):
            continue
        cycles = 4000 if n <= 64 else 2000 if n <= 257 else 1000
        if quick:
            cycles = min(cycles, 1000)
        for depth in (1, 2):
            for order in topology.ROUTING_ORDERS:
                configs.append(("model", StressConfig(n, depth, order, cycles,
                                                      seed=n * 10 + depth, **stages)))
    for n in CAMPAIGN_RTL_SIZES:
        if quick and n not in (5, 8):
            continue
        for depth in (1, 2):
            for order in topology.ROUTING_ORDERS:
                if quick and order != topology.MSB_FIRST:
                    continue
                configs.append(("rtl", StressConfig(n, depth, order,
                                                    cycles=150 if quick else 400, seed=n,
                                                    **stages)))
    return configs if stages else configs + wormhole_campaign(quick)


def wormhole_campaign(quick=False):
    """The campaign's wormhole configurations, as ``(backend, WormholeStressConfig)`` pairs.

    On the model: every size of :data:`CAMPAIGN_WORMHOLE_SIZES`, 1 channel with 5-flit worms
    and 3 with 20, channel depth 1 and 2, both routing orders (1,000 cycles up to 16 nodes,
    500 beyond: the model is plain Python). On the RTL: :data:`CAMPAIGN_WORMHOLE_RTL_SIZES`,
    both channel counts and depths, msb, 300 cycles. ``quick`` keeps a slice.
    """
    from ..verify.wormhole_stress import WormholeStressConfig

    configs = []
    for n in CAMPAIGN_WORMHOLE_SIZES:
        if quick and n not in (1, 2, 5, 8, 13):
            continue
        cycles = 300 if quick else 1000 if n <= 16 else 500
        for vcs, flits in CAMPAIGN_WORMHOLE_CHANNELS:
            for depth in ((1,) if quick else (1, 2)):
                for order in topology.ROUTING_ORDERS:
                    configs.append(("model", WormholeStressConfig(
                        n, flits, vcs, depth, order, cycles, seed=n * 10 + vcs + depth)))
    for n in CAMPAIGN_WORMHOLE_RTL_SIZES:
        if quick and n != 5:
            continue
        for vcs, flits in CAMPAIGN_WORMHOLE_CHANNELS:
            for depth in (1, 2):
                if quick and (vcs, depth) != (1, 1):
                    continue
                configs.append(("rtl", WormholeStressConfig(
                    n, flits, vcs, depth, cycles=150 if quick else 300, seed=n)))
    return configs


def _run(item):
    """Run one campaign configuration ``(backend, config, threads)`` (:func:`_on_model`)."""
    from ..verify import stress, wormhole_stress

    backend, config, threads = item
    runs = wormhole_stress if isinstance(config, wormhole_stress.WormholeStressConfig) \
        else stress
    started = time.perf_counter()
    result = _on_model(config, threads) if backend == "model" else runs.run_rtl(config)
    return result, time.perf_counter() - started


def _on_model(config, threads):
    """Run ``config`` on its fast model: the packet model on ``threads`` threads, the
    wormhole model on its one (it has no others)."""
    from ..verify import stress, wormhole_stress

    if isinstance(config, wormhole_stress.WormholeStressConfig):
        return wormhole_stress.run_model(config)
    return stress.run_model(config, threads=threads)


def _mode(config):
    """The switching column of the campaign table: ``packet`` or ``L<flits>V<vcs>``."""
    flits = getattr(config, "flits", None)
    return "packet" if flits is None else f"L{flits}V{config.vcs}"


def _run_campaign(quick, cluster, out, wormhole_only=False, stages=None, threads=1):
    configs = wormhole_campaign(quick) if wormhole_only else campaign(quick, stages)
    with started(cluster):
        return _campaign_table(quick, configs, cluster, out, threads)


def _campaign_table(quick, configs, cluster, out, threads=1):
    start = time.perf_counter()
    rows = []
    totals = {}
    failed = []
    staged = {describe_stages(config.stages) for _, config in configs
              if getattr(config, "stages", None)}
    if staged:
        print(f"register stages: {'; '.join(sorted(staged))}")
    print(f"{'backend':<7}{'switch':>7}{'n':>6}{'depth':>6}{'order':>6}{'cycles':>7}{'injected':>10}"
          f"{'owed':>11}{'lost':>6}{'dup':>5}{'bad':>5}{'max lat':>8}{'drain':>6}{'s':>7}")
    for result, seconds in cluster.map(_run, [(*item, threads) for item in configs]):
        c, config = result.counts, result.config
        depth = getattr(config, "vc_depth", None) or config.depth
        print(f"{result.backend:<7}{_mode(config):>7}{config.n:>6}{depth:>6}{config.order:>6}"
              f"{config.cycles:>7}{c['messages injected']:>10,}{c['deliveries owed']:>11,}"
              f"{c['lost']:>6}{c['duplicated']:>5}{c['corrupted'] + c['misdelivered']:>5}"
              f"{c['max latency']:>8}{c['drain cycles']:>6}{seconds:>7.1f}"
              + ("" if result.ok else "  FAIL"), flush=True)
        if not result.ok:
            failed.append(result)
        for name, value in c.items():
            totals[name] = max(totals.get(name, 0), value) \
                if name.startswith(("max", "longest")) else totals.get(name, 0) + value
        wormhole = ({} if _mode(config) == "packet" else
                    {"switching": "wormhole", "flits": config.flits, "vcs": config.vcs,
                     "flit_width": config.flit_width})
        rows.append({"backend": result.backend, **wormhole, **getattr(config, "stages", {}),
                     "n": config.n,
                     "depth": depth,
                     "order": config.order, "cycles": config.cycles, "seed": config.seed,
                     "broadcast": config.broadcast, "eject_ready": config.eject_ready,
                     "ok": result.ok, "seconds": round(seconds, 2), **c})
    elapsed = time.perf_counter() - start
    where = (f"the cluster at {cluster.scheduler}" if cluster.scheduler
             else f"{cluster.jobs} processes")
    print(f"\n{len(rows)} runs in {elapsed:.0f} s on {where}: "
          f"{totals['messages injected']:,} messages ({totals['broadcasts injected']:,} "
          f"broadcasts), {totals['deliveries owed']:,} deliveries owed, "
          f"{totals['delivered']:,} delivered, lost {totals['lost']}, duplicated "
          f"{totals['duplicated']}, corrupted {totals['corrupted']}, misdelivered "
          f"{totals['misdelivered']}; {len(failed)} runs failed")
    for result in failed:
        print("\n" + result.summary())
    if out is not None:
        path = pathlib.Path(out)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"quick": quick, "jobs": cluster.jobs,
                                    "scheduler": cluster.scheduler, "seconds": round(elapsed, 1),
                                    "totals": totals, "runs": rows}, indent=1) + "\n")
        print(f"wrote {path}")
    return 1 if failed else 0


def _number(text, what, kind=int):
    try:
        return parse_number(text, kind)
    except ValueError:
        raise ValueError(f"{what} must be a {'positive integer' if kind is int else 'number'}, "
                         f"not {text!r}") from None


def main(argv=None):
    """Run ``ihcube stress`` with ``argv`` (default: the process's); return the exit status."""
    parser = command_parser(NAME, __doc__)
    parser.add_argument("--nodes", "-n", default="26", metavar="N", help="number of nodes")
    parser.add_argument("--cycles", default="20000", metavar="CYCLES",
                        help="cycles of saturating injection before the drain (default 20000)")
    parser.add_argument("--depth", "-d", default=None, metavar="DEPTH",
                        help="packet switching: messages per input buffer (default 1)")
    parser.add_argument("--order", default=topology.MSB_FIRST, help="msb (default) or lsb")
    parser.add_argument("--seed", default="1", metavar="S", help="random seed (default 1)")
    parser.add_argument("--backend", default="model", metavar="B",
                        help="model (default) or rtl (the Amaranth simulation, small n)")
    parser.add_argument("--broadcast", default=None, metavar="P",
                        help="probability that a message is a broadcast (default 1/(2n))")
    parser.add_argument("--eject-ready", default="0.75", metavar="P",
                        help="probability that a PE accepts a delivery in a cycle (default 0.75)")
    parser.add_argument("--watchdog", default="200", metavar="K",
                        help="cycles without a transfer that count as a stall (default 200)")
    add_stages_options(parser)
    parser.add_argument("--campaign", action="store_true",
                        help="run the whole campaign instead of one configuration")
    parser.add_argument("--quick", action="store_true", help="with --campaign: a small slice")
    add_switching_options(parser)  # --switching, --flits, --flit-width, --vcs, --vc-depth
    add_cluster_options(parser)  # --jobs, --scheduler: with --campaign
    add_threads_option(parser)
    parser.add_argument("--out", default=None, metavar="FILE",
                        help=f"with --campaign: JSON to write, or a directory ending in / to "
                             f"write the campaign's own name into (default "
                             f"{AD_HOC}/stress_campaign.json, or none with --quick; make "
                             f"stress-campaign writes results/stress_campaign.json, with "
                             f"stages results/stress_campaign_s1_g1_e1.json and so on)")
    try:
        args = parser.parse_args(argv)
        if args.campaign:
            staged = stages(args, args.switching)
            threads = thread_count(args.threads, args.switching)
            cluster = cluster_options(args, "Processes")
            name = f"stress_campaign{stages_suffix(staged)}.json"
            out = args.out or (None if args.quick else f"{AD_HOC}/")
            if out is not None and out.endswith("/"):
                out += name
            return _run_campaign(args.quick, cluster, out,
                                 wormhole_only=args.switching == "wormhole",
                                 stages=staged, threads=threads)

        from ..verify import stress, wormhole_stress
        n = topology.check_node_count(_number(args.nodes, "Node count"))
        order = topology.check_routing_order(args.order)
        if args.backend not in ("model", "rtl"):
            raise ValueError(f"Backend must be model or rtl, not {args.backend!r}")
        switching, flit_options = switching_options(args, n, 32)
        broadcast = (None if args.broadcast is None
                     else _number(args.broadcast, "Broadcast probability", float))
        common = dict(seed=_number(args.seed, "Seed"), broadcast=broadcast,
                      eject_ready=_number(args.eject_ready, "Eject-ready probability", float),
                      watchdog=_number(args.watchdog, "Watchdog"))
        cycles = _number(args.cycles, "Cycles")
        staged = stages(args, switching)
        threads = thread_count(args.threads, switching)
        if threads > 1 and args.backend == "rtl":
            raise UsageError(f"Thread count must be 1 with the rtl backend (the Amaranth "
                             f"simulation runs on one thread), not {threads}")
        if switching == "wormhole":
            if args.depth is not None:
                raise UsageError("Buffer depth (--depth) is a packet option; with wormhole "
                                 "switching give the virtual-channel depth (--vc-depth)")
            config = wormhole_stress.WormholeStressConfig(
                n, order=order, cycles=cycles, **flit_options, **common)
            runs = wormhole_stress
        else:
            depth = {} if args.depth is None else {
                "depth": check_depth(_number(args.depth, "Buffer depth"))}
            config = stress.StressConfig(n, order=order, cycles=cycles, **staged, **depth,
                                         **common)
            runs = stress
        if args.backend == "rtl":
            # The Amaranth simulation runs some cycles per second at n = 8, fewer beyond:
            # show how far the injection phase is.
            from ..sim.cluster import Progress
            bar = Progress(config.cycles, "RTL cycles simulated")
            result = runs.run_rtl(config,
                                  progress=lambda cycle: cycle <= config.cycles and bar.step())
        else:
            result = _on_model(config, threads)
    except (UsageError, MissingExtra, TypeError, ValueError) as error:
        return report(NAME, error)
    print(result.summary())
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
