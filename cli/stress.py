"""Stress the fabric with saturating traffic and check every delivery.

``ihcube stress --nodes 26 --cycles 20000`` (``make stress N=26 CYCLES=20000``) runs one
configuration (:class:`ihcube.verify.stress.StressConfig`: the fabric options, every one of
them, and the traffic) on the stress engine of its switching mode and prints its counts; the
exit status is 1 if the scoreboard or the watchdog found a problem. ``--switching wormhole
[--flits L] [--vcs V] [--vc-depth Q] [--flit-width F]`` (``make stress SWITCHING=wormhole
...``) runs :mod:`ihcube.verify.wormhole_stress` instead of :mod:`ihcube.verify.stress`.
``--link-stages 1`` puts a relay on each link (packet switching, ``docs/model.md``: a cycle
more per hop, the same channel-dependency graph); ``--switch-stages 1`` registers each
router's grant and ``--eject-stages 1`` puts a relay on each eject port (all three: the fabric
of 150 MHz, docs/fpga.md). ``--width`` is the RTL's payload width (``--backend rtl``); the
model's runs carry 64-bit payloads. A stress run's PEs have one port each (``--ports 1``).
``--campaign`` (``make stress-campaign``) runs every configuration of :func:`campaign` (with
``--switching wormhole``, only those of :func:`wormhole_campaign`) as tasks of a Dask cluster
(``--jobs`` local worker processes, or the workers of ``--scheduler ADDRESS``), prints a
table and writes it to ``<out>/stress_campaign.json`` (``--out DIR``, default
``build/results``; ``make stress-campaign`` gives ``results``); with ``--link-stages 1`` (``make
stress-campaign LINK_STAGES=1``) its packet configurations run with a relay on each link, and
the table goes to ``results/stress_campaign_s1.json`` (with all three stages,
``stress_campaign_s1_g1_e1.json``; with ``--switching wormhole`` (``make stress-campaign
SWITCHING=wormhole``), ``stress_campaign_wormhole.json``); the options of a single run
(``--nodes``, ``--cycles``, ...) are not taken with it, nor ``--quick --jobs --scheduler
--out`` without it. ``--reconfigurable --faults K`` (``make stress RECONFIGURABLE=1
FAULTS=K``) runs a reconfigurable fabric on the model while ``K`` routers fail at random
cycles: at each fault the network is reset and reconfigured around the failed routers, and
the scoreboard checks the loss rule (:mod:`ihcube.verify.fault_stress`,
``docs/reconfiguration-hardware.md``; ``--backend rtl``: the Amaranth simulation, small ``n``,
some hundred cycles). ``--threads T`` runs each packet model on ``T``
threads (at most one a node; the same records on any number); the wormhole model and the
RTL have one, so a single run refuses ``T`` above 1 with them, and a campaign runs only its
packet model runs on ``T``. A wrong parameter is one line on standard error and exit status 2.
"""

import json
import pathlib
import sys
import time

from .. import topology
from ..extras import MissingExtra
from ..params import WORMHOLE
from .options import (AD_HOC, add_cluster_options, add_fabric_options, add_threads_option,
                      cluster_options, deprecated, fabric_spec, out_dir, out_file, require,
                      started,
                      thread_count)
from .usage import UsageError, checked, command_parser, parse_number, report

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
    minute or two. With register ``stages`` (the keywords of
    :meth:`ihcube.spec.Stages.keywords`) the packet configurations only (stages are a packet
    option), each with those stages.
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
                configs.append(("model", StressConfig.of(n, depth=depth, order=order,
                                                         cycles=cycles, seed=n * 10 + depth,
                                                         **stages)))
    for n in CAMPAIGN_RTL_SIZES:
        if quick and n not in (5, 8):
            continue
        for depth in (1, 2):
            for order in topology.ROUTING_ORDERS:
                if quick and order != topology.MSB_FIRST:
                    continue
                configs.append(("rtl", StressConfig.of(n, depth=depth, order=order,
                                                       cycles=150 if quick else 400, seed=n,
                                                       **stages)))
    return configs if stages else configs + wormhole_campaign(quick)


def wormhole_campaign(quick=False):
    """The campaign's wormhole configurations, as ``(backend, StressConfig)`` pairs.

    On the model: every size of :data:`CAMPAIGN_WORMHOLE_SIZES`, 1 channel with 5-flit worms
    and 3 with 20, channel depth 1 and 2, both routing orders (1,000 cycles up to 16 nodes,
    500 beyond: the model is plain Python). On the RTL: :data:`CAMPAIGN_WORMHOLE_RTL_SIZES`,
    both channel counts and depths, msb, 300 cycles. ``quick`` keeps a slice.
    """
    from ..verify.stress import StressConfig

    configs = []
    for n in CAMPAIGN_WORMHOLE_SIZES:
        if quick and n not in (1, 2, 5, 8, 13):
            continue
        cycles = 300 if quick else 1000 if n <= 16 else 500
        for vcs, flits in CAMPAIGN_WORMHOLE_CHANNELS:
            for depth in ((1,) if quick else (1, 2)):
                for order in topology.ROUTING_ORDERS:
                    configs.append(("model", StressConfig.of(
                        n, switching=WORMHOLE, flits=flits, vcs=vcs, vc_depth=depth,
                        order=order, cycles=cycles, seed=n * 10 + vcs + depth)))
    for n in CAMPAIGN_WORMHOLE_RTL_SIZES:
        if quick and n != 5:
            continue
        for vcs, flits in CAMPAIGN_WORMHOLE_CHANNELS:
            for depth in (1, 2):
                if quick and (vcs, depth) != (1, 1):
                    continue
                configs.append(("rtl", StressConfig.of(
                    n, switching=WORMHOLE, flits=flits, vcs=vcs, vc_depth=depth,
                    cycles=150 if quick else 300, seed=n)))
    return configs


def _run(item):
    """Run one campaign configuration ``(backend, config, threads)`` (:func:`_run_one`)."""
    backend, config, threads = item
    started = time.perf_counter()
    result = _run_one(backend, config, threads)
    return result, time.perf_counter() - started


def _run_one(backend, config, threads, progress=None):
    """Run ``config`` on the stress engine of its switching mode: on the RTL, or on the fast
    model on ``threads`` threads (the packet model's; the wormhole model has one);
    ``progress(cycle)`` as their ``run_rtl`` and ``run_model`` take it."""
    if backend == "rtl":
        return config.engine.run_rtl(config, progress=progress)
    return config.engine.run_model(config, threads=threads, progress=progress)


def _run_campaign(quick, cluster, out, wormhole_only=False, stages=None, threads=1,
                  command=""):
    configs = wormhole_campaign(quick) if wormhole_only else campaign(quick, stages)
    with started(cluster):
        return _campaign_table(quick, configs, cluster, out, threads, command)


def _campaign_table(quick, configs, cluster, out, threads=1, command=""):
    start = time.perf_counter()
    rows = []
    totals = {}
    failed = []
    staged = {config.spec.stages.description for _, config in configs if config.spec.stages}
    if staged:
        print(f"register stages: {'; '.join(sorted(staged))}")
    print(f"{'backend':<7}{'switch':>7}{'n':>6}{'depth':>6}{'order':>6}{'cycles':>7}{'injected':>10}"
          f"{'owed':>11}{'lost':>6}{'dup':>5}{'bad':>5}{'max lat':>8}{'drain':>6}{'s':>7}")
    for result, seconds in cluster.map(_run, [(*item, threads) for item in configs]):
        c, config, spec = result.counts, result.config, result.config.spec
        switch, depth, fields = config.engine.campaign_columns(config)
        print(f"{result.backend:<7}{switch:>7}{spec.nodes:>6}{depth:>6}{spec.order:>6}"
              f"{config.cycles:>7}{c['messages injected']:>10,}{c['deliveries owed']:>11,}"
              f"{c['lost']:>6}{c['duplicated']:>5}{c['corrupted'] + c['misdelivered']:>5}"
              f"{c['max latency']:>8}{c['drain cycles']:>6}{seconds:>7.1f}"
              + ("" if result.ok else "  FAIL"), flush=True)
        if not result.ok:
            failed.append(result)
        for name, value in c.items():
            totals[name] = max(totals.get(name, 0), value) \
                if name.startswith(("max", "longest")) else totals.get(name, 0) + value
        rows.append({"backend": result.backend, **fields, "n": spec.nodes, "depth": depth,
                     "order": spec.order, "cycles": config.cycles, "seed": config.seed,
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
        from ..sim import provenance
        path = pathlib.Path(out)  # checked and its folder made before the campaign
        path.write_text(json.dumps({"quick": quick, "jobs": cluster.jobs,
                                    "scheduler": cluster.scheduler, "seconds": round(elapsed, 1),
                                    "totals": totals, "runs": rows,
                                    "provenance": provenance.stamp(command)}, indent=1) + "\n")
        print(f"wrote {path}")
    return 1 if failed else 0


def _number(text, what, kind=int):
    try:
        return parse_number(text, kind)
    except ValueError:
        raise ValueError(f"{what} must be a {'positive integer' if kind is int else 'number'}, "
                         f"not {text!r}") from None


#: The options of a campaign, by their ``args`` names: a single run takes none of them.
CAMPAIGN_ONLY = ("quick", "jobs", "scheduler", "out")


#: The options of a single run, by their ``args`` names: the campaign runs its own
#: configurations, and takes of the fabric options only the switching mode and the stages.
SINGLE_RUN = ("nodes", "width", "depth", "order", "ports", "flits", "flit_width", "vcs",
              "vc_depth", "cycles", "seed", "backend", "broadcast", "eject_ready", "watchdog",
              "reconfigurable", "faults")


def _parser():
    parser = command_parser(NAME, __doc__)
    add_fabric_options(parser, nodes_required=False)  # required by a single run
    parser.add_argument("--cycles", default="20000", metavar="CYCLES",
                        help="cycles of saturating injection before the drain (default 20000)")
    parser.add_argument("--seed", default="1", metavar="S", help="random seed (default 1)")
    parser.add_argument("--backend", default="model", metavar="B",
                        help="model (default) or rtl (the Amaranth simulation, small n)")
    parser.add_argument("--broadcast", default=None, metavar="P",
                        help="probability that a message is a broadcast (default 1/(2n))")
    parser.add_argument("--eject-ready", default="0.75", metavar="P",
                        help="probability that a PE accepts a delivery in a cycle (default 0.75)")
    parser.add_argument("--watchdog", default="200", metavar="K",
                        help="cycles without a transfer that count as a stall (default 200)")
    parser.add_argument("--faults", default=None, metavar="K",
                        help="with --reconfigurable: K routers fail at random cycles, and the "
                             "fabric is reset and reconfigured around them (the model)")
    parser.add_argument("--campaign", action="store_true",
                        help="run the whole campaign instead of one configuration")
    parser.add_argument("--quick", action="store_true", help="with --campaign: a small slice")
    add_cluster_options(parser)  # --jobs, --scheduler: with --campaign
    add_threads_option(parser)
    parser.add_argument("--out", "-o", default=None, metavar="DIR",
                        help=f"with --campaign: directory to write stress_campaign.json into "
                             f"(with stages stress_campaign_s1_g1_e1.json and so on; default "
                             f"{AD_HOC}, or none with --quick; make stress-campaign writes "
                             f"into results)")
    return parser


def _campaign(parser, args):
    """Run ``--campaign``; return the exit status."""
    for name in SINGLE_RUN:
        if getattr(args, name) != parser.get_default(name):
            raise UsageError(f"--{name.replace('_', '-')} is an option of a single run, not "
                             f"taken with --campaign (it runs its own configurations)")
    args.nodes = "26"  # any size: the campaign runs its own; the spec says mode and stages
    spec = fabric_spec(args, hardware=False)
    threads = thread_count(args.threads, spec.mode)
    cluster = cluster_options(args, "Processes")
    out = args.out if args.out is not None else None if args.quick else AD_HOC
    if out is not None and not out.strip():
        raise UsageError(f"--out must name a directory, not {out!r}")
    if out is not None and out.endswith(".json") and not pathlib.Path(out).is_dir():
        out = out_file(out)  # the old spelling, a file: checked before the campaign
        deprecated("--out FILE.json", "--out DIR")
    elif out is not None:
        # The wormhole part alone has its own file; the packet campaign's says its stages.
        name = f"stress_campaign{'_wormhole' if spec.mode == WORMHOLE else spec.stages.suffix}"
        out = out_dir(out) / f"{name}.json"  # before the campaign, not after it
    return _run_campaign(args.quick, cluster, out, wormhole_only=spec.mode == WORMHOLE,
                         stages=spec.stages.keywords(), threads=threads,
                         command=args.command_line)


def _single_run(parser, args):
    """The :class:`~ihcube.verify.stress.StressConfig` and the result of a single run."""
    from ..verify.stress import StressConfig

    for name in CAMPAIGN_ONLY:
        if getattr(args, name) != parser.get_default(name):
            raise UsageError(f"--{name} is an option of --campaign, not taken by a single run")
    defaulted = args.nodes is None  # the default of before, kept for one release
    if defaulted:
        args.nodes = "26"
    spec = fabric_spec(args, hardware=False)
    if args.backend not in ("model", "rtl"):
        raise ValueError(f"Backend must be model or rtl, not {args.backend!r}")
    rtl = args.backend == "rtl"
    if rtl:
        checked(spec.check_hardware)
    require(spec, rtl or args.width == parser.get_default("width"),
            f"Payload width (--width) is the RTL's (--backend rtl): the model's stress runs "
            f"carry 64-bit payloads, not {args.width!r}")
    broadcast = (None if args.broadcast is None
                 else _number(args.broadcast, "Broadcast probability", float))
    traffic = dict(seed=_number(args.seed, "Seed"), broadcast=broadcast,
                   eject_ready=_number(args.eject_ready, "Eject-ready probability", float),
                   watchdog=_number(args.watchdog, "Watchdog"))
    cycles = _number(args.cycles, "Cycles")
    require(spec, spec.reconfigurable or args.faults is None,
            "Faults (--faults) take a reconfigurable fabric (--reconfigurable), which is "
            "reconfigured around each failed router")
    require(spec, not spec.reconfigurable or args.faults is not None,
            "Reconfigurable (--reconfigurable) in a stress run takes --faults K: K routers "
            "fail at random cycles and the fabric is reconfigured around them")
    if args.faults is not None:
        traffic["faults"] = _number(args.faults, "Faults")
    threads = thread_count(args.threads, spec.mode)
    if threads > 1 and rtl:
        raise UsageError(f"Thread count must be 1 with the rtl backend (the Amaranth "
                         f"simulation runs on one thread), not {threads}")
    config = StressConfig(spec, cycles, **traffic)
    if defaulted:  # once every option is checked: a mistake stays one line
        deprecated("stress without --nodes (26 nodes)", "--nodes 26")
    return _run_one(args.backend, config, threads, _progress(config, rtl))


#: Seconds of a model run before its progress line shows on standard error (an RTL run shows
#: it at once).
PROGRESS_AFTER = 5.0


def _progress(config, rtl):
    """How far a run's injection phase is, as a bar on standard error: the Amaranth
    simulation runs some cycles per second at n = 8, fewer beyond, so an RTL run shows it at
    once; the model's, once it has taken :data:`PROGRESS_AFTER` seconds (thousands of
    nodes)."""
    from ..sim.cluster import Progress
    bar = Progress(config.cycles, f"{'RTL' if rtl else 'model'} cycles simulated",
                   after=0.0 if rtl else PROGRESS_AFTER)

    def step(cycle):
        cycle = min(cycle, config.cycles)
        if cycle > bar.done:
            bar.step(cycle - bar.done)
    return step


def main(argv=None):
    """Run ``ihcube stress`` with ``argv`` (default: the process's); return the exit status."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
        if args.campaign:
            return _campaign(parser, args)
        result = _single_run(parser, args)
    except (UsageError, MissingExtra, TypeError, ValueError) as error:
        return report(NAME, error)
    print(result.summary())
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
