"""Stress with faults: routers of a reconfigurable fabric fail at random cycles, the network
is reset and reconfigured around them, and traffic resumes on the survivors.

``ihcube stress --nodes 32 --reconfigurable --faults 4`` runs a :class:`StressConfig` with
``faults`` on the fast model (:func:`run_faults`); ``docs/reconfiguration-hardware.md``, Faults,
states the rule this page checks.

**The run.** It is cut into *epochs*, one per configuration. In the first, all ``N`` routers
are active (the configuration after reset). Each PE of an active router always offers a
message, as in :mod:`.stress`: a unicast to another active logical node drawn uniformly, or
with probability ``broadcast`` a broadcast to every active node; its messages are named by
logical address. ``faults`` cycles are drawn from the seed in ``1 .. cycles - 1``; at each, a
router that is active then fails (drawn from the seed), and the procedure runs:

1. injection stops (the PEs' source queues are emptied: a message the fabric has not taken
   is not sent);
2. the network is reset (a failed router cannot be drained);
3. the configuration is chosen from every router failed so far with
   :func:`ihcube.reconfigure.best_configuration` (or ``choose``), checked
   (:func:`ihcube.reconfigure.check_configuration`: a mapping that is not an automorphism of
   the cube onto healthy routers is refused), and loaded in the first cycle after the reset
   (the configuration port takes it then: the fabric is idle; it holds from the next
   cycle);
4. the PEs of the active routers resume, in the new logical addresses.

After ``cycles`` cycles the PEs stop offering and accept every delivery, and the fabric
drains.

**The loss rule** (fail-stop). A delivery owed by a message that the fabric took in an epoch
ended by a fault, and not made by the reset, is *lost to the fault*: exactly the copies in
the network at the reset. Nothing else may be lost: every message taken is delivered to
every node it is owed (its destination, or every other node active in its epoch) exactly
once, in its own epoch, with the fields it was sent with; a message of the last epoch owes
all of its deliveries. The scoreboard (:func:`score_faults`) checks it, and checks the
losses against the fabric, not against themselves: at each reset it rebuilds from the
records where every undelivered copy sits (:func:`.stress.find_stall`, in the epoch's
logical addresses) and compares it, buffer by buffer, with the messages the model held
there (:attr:`~ihcube.sim.model.Model.occupancy`); a message with a delivery lost to the
fault must have a copy in the network. A delivery the model loses, or repeats, or one made
after the reset that lost its message, fails the run.
"""

from collections import defaultdict
from dataclasses import dataclass

import numpy as np
from amaranth.hdl import Signal

from .. import topology
from ..deadlock import INJECT, Channel, routing_for
from ..reconfigure import (Configuration, best_configuration, check_configuration,
                           configuration_of)
from ..rtl.message import Kind
from ..sim.model import DELIVERY, HOP, Model
from .stress import (INJECTION, PAYLOAD_WIDTH, Records, StressResult, _contains,
                     _delivery_problems, _drain, _mutate, find_stall, ids_of, payload_of,
                     stall_report)

__all__ = ["Epoch", "fault_schedule", "run_faults", "run_rtl_faults", "score_faults",
           "FAULT_COUNT_NAMES"]

#: The counts a run with faults reports, in print order.
FAULT_COUNT_NAMES = ("faults", "messages injected", "broadcasts injected", "deliveries owed",
                     "delivered", "lost to faults", "lost", "duplicated", "corrupted",
                     "misdelivered", "after a reset", "hops", "max latency", "drain cycles",
                     "idle drain cycles", "cycles", "active at the end")


@dataclass
class Epoch:
    """One configuration's part of a run: its first cycle, its configuration, the router
    whose fault ended it (None for the last epoch), and the messages the model held in each
    input buffer at that reset (an ``(N, D + 1)`` array, :attr:`Model.occupancy`)."""
    start: int
    active_nodes: int
    mask: int
    failed: int = None
    end: int = None
    occupancy: np.ndarray = None


def fault_schedule(faults, cycles, seed):
    """The cycles of the faults: ``faults`` distinct cycles of ``1 .. cycles - 1``, drawn
    from ``seed``, in order (:func:`.stress.check_faults` says how many fit)."""
    rng = np.random.default_rng([seed, 2])
    return sorted(int(t) for t in rng.choice(np.arange(1, cycles), faults, replace=False))


class _Traffic:
    """The messages of a run, numbered in drawing order, named by logical address."""

    def __init__(self, config):
        self._broadcast = config.broadcast
        self._random = np.random.default_rng(config.seed)
        self.columns = {name: [] for name in ("src", "dest", "kind", "epoch")}
        self.count = 0

    def draw(self, src, active_nodes, epoch):
        """One message from each logical address of ``src`` to the ``active_nodes`` nodes;
        return their numbers, destinations and kinds."""
        k = len(src)
        if active_nodes == 1:
            dest = np.zeros(k, np.int64)  # the only node: a unicast to itself
        else:
            dest = self._random.integers(0, active_nodes - 1, k)
            dest += dest >= src
        kind = np.where(self._random.random(k) < self._broadcast,
                        Kind.BROADCAST.value, Kind.UNICAST.value).astype(np.int64)
        for name, values in (("src", src), ("dest", dest), ("kind", kind),
                             ("epoch", np.full(k, epoch, np.int64))):
            self.columns[name].append(values)
        ids = np.arange(self.count, self.count + k, dtype=np.int64)
        self.count += k
        return ids, dest, kind

    def tables(self):
        return {name: np.concatenate(parts) if parts else np.zeros(0, np.int64)
                for name, parts in self.columns.items()}


def run_faults(config, model_class=Model, mutant=None, choose=best_configuration,
               reset=True, progress=None):
    """Run ``config`` (a :class:`~.stress.StressConfig` of a reconfigurable spec, with
    ``faults``) on the fast model; return a :class:`~.stress.StressResult` whose counts are
    :data:`FAULT_COUNT_NAMES`.

    ``choose(N, failed)`` gives the configuration after each fault: a
    :class:`ihcube.reconfigure.Configuration`, or the physical router of each logical address
    (:func:`ihcube.reconfigure.configuration_of`). It is checked: one that is not an XOR mask
    of healthy routers, or a mapping that is not an automorphism, raises ``ValueError``.
    The negative controls: ``mutant`` (``"drop"`` or ``"duplicate"``) makes the eject port lose or
    repeat the run's first delivery; ``reset=False`` is a controller that loads the new
    configuration without resetting (or draining) the network, which a :class:`Model` refuses
    (``ValueError``) and a model that takes a configuration in any cycle (``model_class``) runs.
    """
    if mutant not in (None, "drop", "duplicate"):
        raise ValueError(f"Mutant must be None, 'drop' or 'duplicate', not {mutant!r}")
    spec = config.spec
    N, K = spec.nodes, config.watchdog
    schedule = fault_schedule(config.faults, config.cycles, config.seed)
    model = model_class(spec.replace(payload_width=PAYLOAD_WIDTH))
    D = topology.dimensions(N)
    traffic = _Traffic(config)
    backpressure = np.random.default_rng([config.seed, 1])
    pick = np.random.default_rng([config.seed, 3])
    epochs = [Epoch(0, N, 0)]
    failed = []
    base = 0  # the run's cycle of the model's cycle 0 (the model counts from each reset)
    queued = np.zeros((4, 0), np.int64)  # rows id, physical src, logical dest, kind
    injections, hops, deliveries = [], [], []
    owed = delivered = 0
    last_move = -1
    stalled_at = None
    while True:
        t = base + model.cycle
        epoch = epochs[-1]
        if schedule and t == schedule[0]:  # a fault: the procedure
            schedule.pop(0)
            epoch.occupancy = model.occupancy[:, :D + 1].copy()
            configuration = _fail(epoch, t, failed, pick, choose)
            queued = queued[:, :0]
            if reset:
                base += model.cycle
                model.reset()
                model.advance(1)  # the cycle in which the configuration port takes it
                owed = delivered  # what the reset lost is owed no more
            model.configure(configuration.active_nodes, configuration.mask)
            epochs.append(Epoch(base + model.cycle, configuration.active_nodes,
                                configuration.mask))
            last_move = base + model.cycle - 1
            continue
        draining = t >= config.cycles
        if owed > delivered and t - last_move - 1 >= K:
            stalled_at = t
            break
        if draining and (delivered >= owed or t - config.cycles >= config.drain_limit):
            break
        length = K if draining else min(K, config.cycles - t, *(s - t for s in schedule[:1]))
        if draining:
            queued = queued[:, :0]
            ready = np.ones((length, N), np.uint8)
        else:
            logical = model.logical_address
            sources = np.flatnonzero(logical < epoch.active_nodes)
            need = np.maximum(length - np.bincount(queued[1], minlength=N)[sources], 0)
            src = np.repeat(sources, need)
            ids, dest, kind = traffic.draw(logical[src], epoch.active_nodes, len(epochs) - 1)
            queued = np.concatenate([queued, np.stack([ids, src, dest, kind])], axis=1)
            queued = queued[:, np.argsort(queued[1], kind="stable")]
            ready = (backpressure.random((length, N)) < config.eject_ready).astype(np.uint8)
        run = model.run_arrays(length, queued[1], queued[2], queued[3],
                               payload_of(queued[0], PAYLOAD_WIDTH), eject_ready=ready,
                               record_hops=True)
        taken = np.zeros(len(run.injections), INJECTION)
        taken["cycle"] = run.injections["cycle"] + base
        taken["node"] = run.injections["node"]
        taken["id"] = queued[0, run.injections["request"]]
        kinds = queued[3, run.injections["request"]]
        owed += int(np.where(kinds == Kind.BROADCAST.value, epoch.active_nodes - 1, 1).sum())
        keep = np.ones(queued.shape[1], bool)
        keep[run.injections["request"]] = False
        queued = queued[:, keep]
        got = run.deliveries.copy()
        if mutant and len(got) and not any(len(d) for d in deliveries):
            got = _mutate(got, mutant)
        got["cycle"] += base
        moved = run.hops.copy()
        moved["cycle"] += base
        injections.append(taken)
        hops.append(moved)
        deliveries.append(got)
        delivered += len(got)
        moves = np.concatenate([moved["cycle"], got["cycle"]])
        if len(moves):
            last_move = int(moves.max())
        if progress is not None:
            progress(base + model.cycle)

    run = _FaultRun(N, spec.depth, spec.order, PAYLOAD_WIDTH, traffic.tables(), epochs,
                    np.concatenate(injections) if injections else np.zeros(0, INJECTION),
                    np.concatenate(hops) if hops else np.zeros(0, HOP),
                    np.concatenate(deliveries) if deliveries else np.zeros(0, DELIVERY),
                    config.cycles, base + model.cycle, stalled_at)
    counts, problems = score_faults(run)
    stall = None
    if stalled_at is not None:
        problems.insert(0, f"no transfer for {config.watchdog} cycles from cycle "
                           f"{stalled_at - config.watchdog} while deliveries were owed")
        stall = stall_report(run.epoch_records(len(epochs) - 1), routing_for(spec.order))
    return StressResult(config, "model", counts, problems, stall, run)


def _fail(epoch, t, failed, pick, choose):
    """A fault in cycle ``t`` of ``epoch``: a router active in it, drawn with ``pick``, fails
    (it is added to ``failed`` and ends the epoch); return the checked configuration that
    ``choose`` gives for the routers failed so far."""
    N = len(epoch.occupancy)
    active = [p for p in range(N) if p ^ epoch.mask < epoch.active_nodes and p not in failed]
    q = int(pick.choice(active))
    failed.append(q)
    epoch.failed, epoch.end = q, t
    chosen = choose(N, list(failed))
    if isinstance(chosen, Configuration):
        return check_configuration(N, failed, chosen)
    return configuration_of(N, failed, chosen)


def run_rtl_faults(config, fabric=None, choose=best_configuration, reset=True,
                   lockstep=None):
    """Run ``config`` (as :func:`run_faults` takes it) on the RTL in the Amaranth simulator
    (a few hundred cycles of a small fabric): the same procedure, with the fabric's own
    reset (``rst`` for a cycle) and its ``config`` port (offered in the first cycle after the
    reset, which must take it), and the same scoreboard, which reads the messages in each
    input buffer at a reset from counts beside the buffers (:mod:`.buffer_count`). A PE of an
    active router offers a new message whenever its last was taken; ``fabric`` (by default
    the spec's) may be a broken one, and ``reset=False`` is the controller of the negative
    control that offers the configuration at the fault without the reset (or a drain).
    With ``lockstep`` (a model class, :class:`~ihcube.sim.model.Model` or a broken one) a
    model of the spec runs beside the RTL, driven alike every cycle and reset, stepped through
    the load cycle and configured at each fault as :func:`run_faults` does it: every
    injection handshake and delivery must agree, cycle for cycle.
    Returns a :class:`~.stress.StressResult`."""
    from amaranth.hdl import ClockDomain, Elaboratable
    from amaranth.hdl import Module as Top

    from ..rtl import Fabric
    from .harness import Message, simulate
    from .stress import _BufferCounts

    spec = config.spec
    N, D = spec.nodes, topology.dimensions(spec.nodes)
    fabric = Fabric(spec) if fabric is None else fabric
    counts = _BufferCounts(fabric)
    width = fabric.payload_width
    schedule = fault_schedule(config.faults, config.cycles, config.seed)
    traffic = _Traffic(config)
    rng = np.random.default_rng([config.seed, 1])
    pick = np.random.default_rng([config.seed, 3])
    links = [(node, dim, port) for node, router in enumerate(fabric.routers)
             for dim, port in zip(router.dims, router.links_out)]
    epochs, failed = [Epoch(0, N, 0)], []
    rows = {"injections": [], "hops": [], "deliveries": []}
    problems = []

    class WithReset(Elaboratable):
        """The fabric in a ``sync`` domain whose reset the testbench drives."""
        rst = Signal()

        def elaborate(self, platform):
            m = Top()
            m.domains.sync = domain = ClockDomain("sync")
            m.d.comb += domain.rst.eq(self.rst)
            m.submodules.fabric = fabric
            return m

    top = WithReset()
    owed = delivered = 0
    model = None if lockstep is None else lockstep(spec)

    def compare(t, offers, ready, taken, got):
        """Step the model as the RTL was driven in cycle ``t``; say where they differ."""
        valid, dest, kind, payload = (np.zeros(N, np.int64) for _ in range(4))
        for p, (i, d, k) in offers.items():
            valid[p], dest[p], kind[p] = 1, d, k
            payload[p] = int(payload_of([i], width)[0])
        model_taken, model_got, _ = model.step(valid.astype(bool), dest, kind, payload,
                                               eject_ready=ready)
        mine = (sorted(np.flatnonzero(model_taken).tolist()),
                sorted(zip(model_got["node"].tolist(), model_got["payload"].tolist())))
        if mine != (sorted(taken), sorted(got)) and not any("lockstep" in p for p in problems):
            problems.append(f"lockstep: in cycle {t} the model took {mine[0]} and delivered "
                            f"{mine[1]}, the RTL took {sorted(taken)} and delivered "
                            f"{sorted(got)}")

    async def testbench(ctx):
        nonlocal owed, delivered
        offers = {}  # physical PE -> (id, logical dest, kind)
        t = 0
        limit = config.cycles + config.drain_limit
        while t < limit:
            epoch = epochs[-1]
            if schedule and t == schedule[0]:
                schedule.pop(0)
                values = [ctx.get(signal) for signal in counts.signals]
                epoch.occupancy = counts.occupancy(values)[0][:, :D + 1]
                configuration = _fail(epoch, t, failed, pick, choose)
                offers.clear()
                for node in range(N):
                    ctx.set(fabric.inject[node].valid, 0)
                    ctx.set(fabric.eject[node].ready, 0)
                ctx.set(top.rst, int(reset))
                await ctx.tick()
                ctx.set(top.rst, 0)
                ctx.set(fabric.config.payload, {"active_nodes": configuration.active_nodes,
                                                "mask": configuration.mask})
                ctx.set(fabric.config.valid, 1)
                if not ctx.get(fabric.config.ready):
                    problems.append(f"the configuration port did not take the configuration "
                                    f"in the first cycle after the reset in cycle {t}")
                await ctx.tick()
                ctx.set(fabric.config.valid, 0)
                if model is not None:  # as run_faults: reset, the load cycle, configure
                    model.reset()
                    model.step(False, eject_ready=False)
                    model.configure(configuration.active_nodes, configuration.mask)
                t += 2
                owed = delivered
                epochs.append(Epoch(t, ctx.get(fabric.active_nodes), ctx.get(fabric.mask)))
                continue
            draining = t >= config.cycles
            if draining and (owed <= delivered or ctx.get(fabric.idle)):
                break
            if not draining:
                idle = [p for p in range(N) if p ^ epoch.mask < epoch.active_nodes
                        and p not in offers]
                if idle:
                    src = np.array(idle, np.int64)
                    ids, dest, kind = traffic.draw(src ^ epoch.mask, epoch.active_nodes,
                                                   len(epochs) - 1)
                    for p, i, d, k in zip(idle, ids.tolist(), dest.tolist(), kind.tolist()):
                        offers[p] = (i, d, k)
            else:
                offers.clear()
            ready = (rng.random(N) < config.eject_ready) if not draining else np.ones(N, bool)
            for node in range(N):
                inject = fabric.inject[node]
                offer = offers.get(node)
                ctx.set(inject.valid, offer is not None)
                if offer is not None:
                    i, d, k = offer
                    ctx.set(inject.payload, {"dest": d, "kind": k,
                                             "payload": int(payload_of([i], width)[0])})
                ctx.set(fabric.eject[node].ready, bool(ready[node]))
            offered, taken, got = dict(offers), [], []
            for node in list(offers):
                if ctx.get(fabric.inject[node].ready):
                    i, d, k = offers.pop(node)
                    rows["injections"].append((t, node, i))
                    taken.append(node)
                    owed += epoch.active_nodes - 1 if k == Kind.BROADCAST.value else 1
            for node in range(N):
                eject = fabric.eject[node]
                if ctx.get(eject.valid) and ctx.get(eject.ready):
                    message = Message.from_const(ctx.get(eject.payload))
                    rows["deliveries"].append((t, node, message))
                    got.append((node, message.payload))
                    delivered += 1
            if model is not None:
                compare(t, offered, ready, taken, got)
            for node, dim, port in links:
                if ctx.get(port.valid) and ctx.get(port.ready):
                    rows["hops"].append((t, node, dim, Message.from_const(ctx.get(port.payload))))
            await ctx.tick()
            t += 1
        rows["cycles"] = t

    simulate(top, testbench)
    injections = np.array(rows["injections"], np.int64).reshape(-1, 3)
    taken = np.zeros(len(injections), INJECTION)
    taken["cycle"], taken["node"], taken["id"] = injections.T
    hops = np.zeros(len(rows["hops"]), HOP)
    for row, (cycle, node, dim, message) in zip(hops, rows["hops"]):
        row["cycle"], row["node"], row["dim"] = cycle, node, dim
        _fields(row, message)
    deliveries = np.zeros(len(rows["deliveries"]), DELIVERY)
    for row, (cycle, node, message) in zip(deliveries, rows["deliveries"]):
        row["cycle"], row["node"] = cycle, node
        _fields(row, message)
    run = _FaultRun(N, spec.depth, spec.order, width, traffic.tables(), epochs, taken, hops,
                    deliveries, config.cycles, rows["cycles"])
    counts_, found = score_faults(run)
    if rows["cycles"] >= config.cycles + config.drain_limit:
        problems.append(f"the drain did not end within {config.drain_limit} cycles")
    return StressResult(config, "rtl", counts_, problems + found, None, run)


def _fields(row, message):
    row["dest"], row["src"], row["kind"] = message.dest, message.src, message.kind.value
    row["travel"], row["payload"] = message.travel, message.payload


@dataclass
class _FaultRun:
    """What a run with faults recorded (cycles of the run, physical ``node`` s, logical
    ``dest`` and ``src``), and its epochs."""
    n: int
    depth: int
    order: str
    payload_width: int
    messages: dict           # src, dest, kind (logical), epoch: by message number
    epochs: list
    injections: np.ndarray
    hops: np.ndarray
    deliveries: np.ndarray
    offer_until: int
    cycles: int
    stalled_at: int = None

    def epoch_of(self, cycles):
        """The epoch of each cycle of ``cycles``."""
        starts = np.array([epoch.start for epoch in self.epochs], np.int64)
        return np.searchsorted(starts, cycles, side="right") - 1

    def epoch_records(self, k):
        """Epoch ``k``'s records as a :class:`~.stress.Records` of its ``active_nodes``-node
        fabric, in logical addresses (the configured fabric is that fabric, relabelled)."""
        epoch = self.epochs[k]
        ids = lambda payloads: ids_of(payloads, self.payload_width)  # noqa: E731
        mine = self.messages["epoch"]

        def own(records, cycle_ids):
            ok = (self.epoch_of(records["cycle"]) == k) & (cycle_ids >= 0)
            ok[ok] = mine[cycle_ids[ok]] == k
            out = records[ok].copy()
            out["node"] ^= epoch.mask
            return out

        injections = own(self.injections, self.injections["id"])
        end = self.cycles if epoch.end is None else epoch.end
        return Records(epoch.active_nodes, self.depth, self.payload_width,
                       self.messages["src"], self.messages["dest"], self.messages["kind"],
                       injections, own(self.hops, ids(self.hops["payload"])),
                       own(self.deliveries, ids(self.deliveries["payload"])),
                       offer_until=self.offer_until if epoch.end is None else end,
                       cycles=end, stalled_at=self.stalled_at)


def score_faults(run, limit=10):
    """Count a run with faults against the loss rule; return ``(counts, problems)``
    (:data:`FAULT_COUNT_NAMES`; ``problems`` up to ``limit`` sentences with an example)."""
    N = run.n
    src, dest, kind, home = (run.messages[name] for name in ("src", "dest", "kind", "epoch"))
    active = np.array([epoch.active_nodes for epoch in run.epochs], np.int64)
    masks = np.array([epoch.mask for epoch in run.epochs], np.int64)
    taken = run.injections["id"]
    taken_at = np.full(len(src), -1, np.int64)
    taken_at[taken] = run.injections["cycle"]
    broadcast = kind[taken] == Kind.BROADCAST.value

    # The (message, logical node) pairs owed, as keys id * N + node.
    owed = [taken[~broadcast] * N + dest[taken[~broadcast]]]
    for i in taken[broadcast]:
        nodes = np.arange(active[home[i]], dtype=np.int64)
        owed.append(i * N + nodes[nodes != src[i]])
    owed = np.sort(np.concatenate(owed)) if owed else np.zeros(0, np.int64)

    got = run.deliveries
    ids = ids_of(got["payload"], run.payload_width)
    at = run.epoch_of(got["cycle"])
    logical = got["node"] ^ masks[at]
    known = (ids >= 0) & (ids < len(src))
    known[known] = taken_at[ids[known]] >= 0
    i = np.where(known, ids, 0)
    fields_ok = known & (got["src"] == src[i]) & (got["kind"] == kind[i]) & (
        (kind[i] == Kind.BROADCAST.value) | (got["dest"] == dest[i]))
    late = fields_ok & (home[i] != at)  # delivered after the reset that ended its epoch
    corrupted = ~fields_ok
    good = fields_ok & ~late
    keys = np.sort(ids[good] * N + logical[good])
    first = np.flatnonzero(np.diff(keys, prepend=-1))
    unique_keys, counts = keys[first], np.diff(first, append=len(keys))
    delivered_owed = _contains(owed, unique_keys)
    undelivered = owed[~_contains(unique_keys, owed)]
    faulted = np.array([epoch.failed is not None for epoch in run.epochs])
    to_fault = faulted[home[undelivered // N]]
    lost_keys, fault_keys = undelivered[~to_fault], undelivered[to_fault]

    problems = []
    # The losses to each fault against the fabric at its reset.
    routing = routing_for(run.order)
    D = topology.dimensions(N)
    for k, epoch in enumerate(run.epochs):
        if epoch.failed is None:
            continue
        records = run.epoch_records(k)
        stall = find_stall(records, routing)
        held = stall.held if stall else {}
        # An input buffer is first in, first out: the copies it holds are its last arrivals.
        arrivals = defaultdict(list)
        for cycle, node in zip(records.injections["cycle"].tolist(),
                               records.injections["node"].tolist()):
            arrivals[Channel(node, INJECT)].append(cycle)
        for cycle, node, dim in zip(*(records.hops[name].tolist()
                                      for name in ("cycle", "node", "dim"))):
            arrivals[Channel(node, dim)].append(cycle)
        for channel, copies in sorted(held.items()):
            first = min(arrival for arrival, _, _ in copies)
            later = sum(cycle >= first for cycle in arrivals[channel])
            if later != len(copies):
                problems.append(f"at the fault of router {epoch.failed} in cycle {epoch.end}, "
                                f"a copy that came by {channel} in cycle {first} is still "
                                f"owed while {later - len(copies)} that came after it have "
                                f"left its buffer")
                break
        rebuilt = np.zeros((N, D + 1), np.int64)
        in_network = set()
        for channel, copies in held.items():
            column = D if channel.dim == INJECT else channel.dim
            rebuilt[channel.far ^ epoch.mask, column] += len(copies)
            in_network.update(i for _, i, _ in copies)
        if not np.array_equal(rebuilt, epoch.occupancy):
            wrong = np.argwhere(rebuilt != epoch.occupancy)[0]
            problems.append(
                f"at the fault of router {epoch.failed} in cycle {epoch.end}, the records "
                f"leave {rebuilt.sum()} messages in the network where the fabric held "
                f"{epoch.occupancy.sum()} (router {wrong[0]}, input {wrong[1]}: "
                f"{rebuilt[tuple(wrong)]} against {epoch.occupancy[tuple(wrong)]})")
        mine = fault_keys[home[fault_keys // N] == k] // N
        outside = np.setdiff1d(mine, np.fromiter(in_network, np.int64, len(in_network)))
        if len(outside):
            problems.append(f"{len(outside)} messages lost to the fault of router "
                            f"{epoch.failed} had no copy in the network at its reset, e.g. "
                            f"{_describe(run, int(outside[0]))}")

    latency = got["cycle"][good] - taken_at[ids[good]]
    last = run.epoch_records(len(run.epochs) - 1)
    drain = _drain(last) if run.epochs[-1].failed is None else (0, 0)
    counts_ = {
        "faults": int(faulted.sum()),
        "messages injected": int(len(taken)),
        "broadcasts injected": int(broadcast.sum()),
        "deliveries owed": int(len(owed)),
        "delivered": int(len(got)),
        "lost to faults": int(len(fault_keys)),
        "lost": int(len(lost_keys)),
        "duplicated": int((counts[delivered_owed] - 1).sum()),
        "corrupted": int(corrupted.sum()),
        "misdelivered": int(counts[~delivered_owed].sum()),
        "after a reset": int(late.sum()),
        "hops": int(len(run.hops)),
        "max latency": int(latency.max()) if len(latency) else 0,
        "drain cycles": drain[0],
        "idle drain cycles": drain[1],
        "cycles": int(run.cycles),
        "active at the end": int(active[-1]),
    }
    problems += _delivery_problems(counts_, N, lambda i: _describe(run, i), lost_keys,
                                   unique_keys, counts, delivered_owed, got[corrupted],
                                   lost="lost outside a fault", place="router")
    if counts_["after a reset"]:
        row = got[late][0]
        problems.append(f"{counts_['after a reset']} deliveries made after the reset that "
                        f"lost their message, e.g. {_describe(run, int(ids[late][0]))} at "
                        f"router {row['node']} in cycle {row['cycle']}")
    if counts_["idle drain cycles"]:
        problems.append(f"{counts_['idle drain cycles']} cycles of the drain moved nothing "
                        f"while messages were in the fabric")
    return counts_, problems[:limit]


def _describe(run, i):
    messages = run.messages
    where = f"in epoch {messages['epoch'][i]}"
    if messages["kind"][i] == Kind.BROADCAST.value:
        return f"broadcast #{i} from node {messages['src'][i]} {where}"
    return f"unicast #{i} from node {messages['src'][i]} to node {messages['dest'][i]} {where}"
