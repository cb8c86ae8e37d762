"""Stress campaign: saturating traffic, a scoreboard, a progress watchdog and a deadlock report.

One configuration (:class:`StressConfig`: a :class:`~ihcube.spec.FabricSpec` and its traffic)
runs on the stress engine of its switching mode (:attr:`StressConfig.engine`, the mode's
:attr:`~ihcube.modes.Mode.stress`): this module for packet switching, :mod:`.wormhole_stress`
for wormhole switching. Both give a :class:`StressResult`. Here, a packet configuration runs on
the fast model (:func:`run_model`, any ``n``) or on the RTL in the Amaranth simulator
(:func:`run_rtl`, small ``n``), with the same traffic and the same checks:

- **Traffic.** For ``cycles`` cycles every PE always offers a message: a unicast to a node
  drawn uniformly from the others, or with probability ``broadcast`` a broadcast. Each PE
  accepts a delivery with probability ``eject_ready`` per cycle. Then the PEs stop offering
  and accept every delivery, and the fabric drains.
- **Scoreboard** (:func:`score`). Each message's payload is its number with a check word
  (:func:`payload_of`). Every message taken must reach every PE it is owed to (its
  destination, or every node but the origin for a broadcast) exactly once, with the fields
  and payload it was sent with. The counts: injected, delivered, lost, duplicated,
  corrupted (a payload that fails its check or fields that differ from what was sent) and
  misdelivered (at a PE it was not owed to), and the largest latency from injection to
  delivery.
- **Drain bound.** With every PE accepting, a fabric whose channel dependency graph is
  acyclic moves at least one message in every cycle while it holds one: the head in the
  occupied buffer of highest level waits only for an output whose far buffer is empty, or
  for its PE. So the drain takes at most as many cycles as it has transfers (hops and
  deliveries) left, and no drain cycle is idle: :func:`score` counts the idle ones. With
  ``link_stages`` relays on the links a move into a relay is no transfer the records see;
  the bound becomes: no more than ``link_stages`` idle drain cycles in a row (the highest
  occupied buffer's head moves into an empty relay, and in the next cycle the highest
  occupied place is a relay written then, whose far buffer is empty: a hop). A switch stage
  (``switch_stages``) adds a cycle to each router's move, and an eject relay
  (``eject_stages``) one to a delivery, by the same argument: no more than ``switch_stages
  + max(link_stages, eject_stages)`` idle cycles in a row (:attr:`Records.idle_allowance`).
  :func:`score` counts the idle cycles beyond those.
- **Watchdog.** If no message crosses a link or reaches a PE for ``watchdog`` cycles while
  deliveries are owed, the run stops and :func:`stall_report` rebuilds, from the recorded
  injections, hops and deliveries, where every undelivered copy sits, which buffers are
  blocked and on what, and the cycle of waits among full buffers. With link stages the
  records do not show a copy moving from its input buffer into a relay; the model's
  occupancy at the stall does (an input buffer is first in, first out, so it holds the
  copies that came last by its channel), and the report places each copy in its relay or
  its buffer. The RTL backend reads the same counts out of the Amaranth simulation (a count
  beside every input buffer and relay, :mod:`.buffer_count`), so both place copies alike.

The routing rules come from :mod:`ihcube.topology` (and a deadlock-prone variant from
:mod:`ihcube.deadlock`); nothing here restates them.
"""

from collections import defaultdict
from dataclasses import dataclass, field, fields
from typing import NamedTuple

import numpy as np
from amaranth.hdl import Signal

from .. import topology
from ..deadlock import EJECT, INJECT, Channel, routing_for
from ..modes import mode_of
from ..params import check_at_most
from ..rtl.message import Kind
from ..sim.model import DELIVERY, HOP, Model, threads_for
from ..spec import FabricSpec
from .buffer_count import HELD_WIDTH, counting

__all__ = ["StressConfig", "check_traffic", "check_faults", "StressResult", "Records", "Stall",
           "payload_of", "ids_of", "score", "find_stall", "stall_report", "wait_cycle",
           "run_model", "run_rtl", "check_config", "heading", "campaign_columns", "COUNT_NAMES",
           "PAYLOAD_WIDTH"]

#: Payload width of the model's runs, whatever the spec's (the model's cycles do not depend on
#: it): a 32-bit message number and a 32-bit check word. The RTL runs carry the spec's.
PAYLOAD_WIDTH = 64
#: The records of a run: what was injected and what was seen.
INJECTION = np.dtype([("cycle", np.int64), ("node", np.int64), ("id", np.int64)])


@dataclass(frozen=True)
class StressConfig:
    """One stress configuration of either switching mode: the fabric and its traffic.

    ``spec`` is the fabric (:class:`~ihcube.spec.FabricSpec`, one PE port); its switching mode
    picks the stress engine (:attr:`engine`). ``broadcast`` is the probability that a message
    is a broadcast; by default ``1 / (2n)`` (none for ``n = 1``), so that broadcasts make about
    a third of the deliveries at any size. ``watchdog`` is K, the cycles without any transfer,
    while deliveries are owed, after which the run counts as stalled. ``drain_limit`` caps the
    drain phase. A packet spec's register stages put a relay on each link
    (:class:`~ihcube.sim.model.Model`'s), register each router's grant and put a relay on each
    eject port; the channel-dependency graph is the same (a relay is a FIFO in front of the
    same channel, a stage holds a grant whose message stays in its buffer).
    """
    spec: FabricSpec
    cycles: int = 2000
    seed: int = 1
    broadcast: float = None
    eject_ready: float = 0.75
    watchdog: int = 200
    drain_limit: int = 100_000
    faults: int = 0

    def __post_init__(self):
        if not isinstance(self.spec, FabricSpec):
            raise TypeError(f"Spec must be a FabricSpec, not {self.spec!r}")
        if self.spec.ports != 1:
            raise ValueError(f"Port count must be 1 in a stress run (each PE offers one message "
                             f"at a time), not {self.spec.ports!r}")
        self.engine.check_config(self)
        check_traffic(self)
        check_faults(self)

    @classmethod
    def of(cls, nodes, **keywords):
        """The configuration of the spec ``FabricSpec.of(nodes, ...)`` (``depth``, ``order``,
        ``link_stages``, ``switching``, ``flits``, ...: :meth:`FabricSpec.of
        <ihcube.spec.FabricSpec.of>`) with the traffic keywords (``cycles``, ``seed``, ...)."""
        traffic = {field.name: keywords.pop(field.name) for field in fields(cls)
                   if field.name in keywords}
        return cls(FabricSpec.of(nodes, **keywords), **traffic)

    @property
    def engine(self):
        """The stress engine of the spec's switching mode (:attr:`ihcube.modes.Mode.stress`):
        a module with ``run_model``, ``run_rtl``, ``find_stall``, ``stall_report``, ..."""
        return mode_of(self.spec).stress


#: The most cycles a stress run injects for, and the longest watchdog and drain: the model's
#: counters are 64-bit words, and 10**8 cycles of a 26-node fabric are some minutes.
MAX_CYCLES = 10 ** 8


def check_faults(config):
    """Check ``faults``: routers that fail during the run (:mod:`.fault_stress`), which takes
    a reconfigurable fabric (``reconfigurable``) without register stages; raise
    ``ValueError`` saying what is allowed."""
    faults, spec = config.faults, config.spec
    if not isinstance(faults, int) or isinstance(faults, bool) or faults < 0:
        raise ValueError(f"Faults must be a non-negative integer, not {faults!r}")
    if faults and not spec.reconfigurable:
        raise ValueError(f"Faults (--faults) take a reconfigurable fabric (--reconfigurable), "
                         f"which is reconfigured around each failed router, not {faults} "
                         f"faults on a fixed one")
    if spec.reconfigurable and spec.stages:
        raise ValueError(f"A stress run of a reconfigurable fabric takes no register stages, "
                         f"not {spec.stages.description}")
    if faults > spec.nodes - 1:
        raise ValueError(f"Faults must be at most {spec.nodes - 1} on {spec.nodes} routers "
                         f"(one must stay healthy), not {faults}")
    if faults > config.cycles - 1:
        raise ValueError(f"Faults must be at most {config.cycles - 1} in {config.cycles} "
                         f"cycles (one a cycle, after the first), not {faults}")


def check_traffic(config):
    """Check the traffic fields of a :class:`StressConfig` (``cycles``, ``watchdog``,
    ``drain_limit``, ``seed``, ``broadcast``, ``eject_ready``) and fill in the default
    ``broadcast`` (``1 / (2n)``); raise ``ValueError`` naming the field."""
    check_at_most(config.cycles, MAX_CYCLES, "Cycles")
    check_at_most(config.watchdog, MAX_CYCLES, "Watchdog")
    check_at_most(config.drain_limit, MAX_CYCLES, "Drain limit")
    if not isinstance(config.seed, int) or isinstance(config.seed, bool) or config.seed < 0:
        raise ValueError(f"Seed must be a non-negative integer, not {config.seed!r}")
    if config.seed >= 1 << 63:
        raise ValueError(f"Seed must be below 2**63, not {config.seed!r}")
    if config.broadcast is None:
        n = config.spec.nodes
        object.__setattr__(config, "broadcast", 0.0 if n == 1 else 1 / (2 * n))
    if not 0.0 <= config.broadcast <= 1.0:
        raise ValueError(f"Broadcast probability must be from 0 to 1, not {config.broadcast!r}")
    if not 0.0 < config.eject_ready <= 1.0:
        raise ValueError(f"Eject-ready probability must be above 0 and at most 1, "
                         f"not {config.eject_ready!r}")


@dataclass
class Records:
    """What a run did: the messages drawn (``src``, ``dest``, ``kind`` by message number),
    the injections (:data:`INJECTION`), hops (:data:`~ihcube.sim.model.HOP`) and deliveries
    (:data:`~ihcube.sim.model.DELIVERY`), and where it stopped. ``hop_ids`` and
    ``delivery_ids`` are the message numbers the payloads carry (-1 where the check word
    fails)."""
    n: int
    depth: int
    payload_width: int
    src: np.ndarray
    dest: np.ndarray
    kind: np.ndarray
    injections: np.ndarray
    hops: np.ndarray
    deliveries: np.ndarray
    offer_until: int         # the first cycle of the drain
    cycles: int              # cycles simulated
    stalled_at: int = None   # the cycle the watchdog stopped the run, if it did
    link_stages: int = 0     # relays on the links
    switch_stages: int = 0   # registered grants
    eject_stages: int = 0    # relays on the eject ports
    #: At the stall, if the backend can say (the model, and the RTL with relays): messages in
    #: each input buffer, an ``(n, D + 1)`` array (:attr:`~ihcube.sim.model.Model.occupancy`),
    #: in each link's relay, ``(n, max(D, 1))``
    #: (:attr:`~ihcube.sim.model.Model.relay_occupancy`), and in each eject relay, ``(n, 1)``
    #: (:attr:`~ihcube.sim.model.Model.eject_occupancy`; may be left out without eject
    #: stages).
    occupancy: tuple = None

    @property
    def idle_allowance(self):
        """The idle drain cycles in a row that the drain bound allows: a cycle for each
        stage a copy passes unseen by the records on its way to a hop or a delivery."""
        return self.switch_stages + max(self.link_stages, self.eject_stages)

    @property
    def relays(self):
        """Whether copies can sit in relays the records do not show (link or eject
        stages)."""
        return bool(self.link_stages or self.eject_stages)

    def __post_init__(self):
        self.hop_ids = ids_of(self.hops["payload"], self.payload_width)
        self.delivery_ids = ids_of(self.deliveries["payload"], self.payload_width)


@dataclass
class StressResult:
    """The counts of a run (by the names of its engine's ``COUNT_NAMES``), the problems found,
    the stall report if it stalled, and the run's records (:class:`Records`, or
    :class:`~.wormhole_stress.WormholeRecords`), whose ``stalled_at`` says where the watchdog
    stopped it."""
    config: StressConfig
    backend: str
    counts: dict
    problems: list = field(default_factory=list)
    stall: str = None
    records: object = field(default=None, repr=False)

    @property
    def ok(self):
        return not self.problems and self.stall is None

    def summary(self):
        """One line per figure, as ``ihcube stress`` prints them."""
        engine = self.config.engine
        lines = [engine.heading(self.backend, self.config)]
        names = list(self.counts) if self.config.spec.reconfigurable else engine.COUNT_NAMES
        lines += [f"  {name:<22}{self.counts[name]:>12,}" for name in names]
        lines.append("  result                " + ("PASS" if self.ok else "FAIL"))
        lines += [f"  problem: {problem}" for problem in self.problems]
        if self.stall:
            lines.append(self.stall)
        return "\n".join(lines)


#: The counts a packet run reports, in print order.
COUNT_NAMES = ("messages injected", "broadcasts injected", "deliveries owed", "delivered",
               "lost", "duplicated", "corrupted", "misdelivered", "hops", "max latency",
               "drain cycles", "idle drain cycles", "cycles")


def check_config(config):
    """Raise if the packet engine cannot run ``config``: it runs every spec that
    :class:`StressConfig` takes."""


def heading(backend, config):
    """The first line of a packet run's summary: the backend and the configuration."""
    spec = config.spec
    return (f"{backend}: n={spec.nodes} depth={spec.depth} order={spec.order} "
            f"cycles={config.cycles} seed={config.seed} broadcast={config.broadcast:.4g} "
            f"eject_ready={config.eject_ready:g}"
            + "".join(f" {key}={value}" for key, value in spec.stages.keywords().items())
            + (f" reconfigurable faults={config.faults}" if spec.reconfigurable else ""))


def campaign_columns(config):
    """What the campaign's table (``ihcube stress --campaign``) shows of a packet
    configuration: its switching column, its depth column, and the fields its row adds (the
    register stages that are not 0)."""
    return "packet", config.spec.depth, config.spec.stages.keywords()


# --- Payloads ------------------------------------------------------------------------------

def _check_word(ids, bits):
    """A check word of ``bits`` bits for each message number (a multiplicative hash)."""
    ids = np.asarray(ids, np.uint64)
    mixed = (ids + np.uint64(0x632BE59BD9B4E019)) * np.uint64(0x9E3779B97F4A7C15)
    return (mixed >> np.uint64(64 - bits)).astype(np.int64)


def _split(payload_width):
    """Bits of the message number and of the check word in a payload."""
    id_bits = payload_width // 2
    return id_bits, payload_width - id_bits


def payload_of(ids, payload_width):
    """The payloads that carry message numbers ``ids``: the number below its check word."""
    id_bits, check_bits = _split(payload_width)
    ids = np.asarray(ids, np.int64)
    if len(ids) and ids.max() >= 1 << id_bits:
        raise ValueError(f"{ids.max() + 1} messages do not fit a {payload_width}-bit payload "
                         f"with its check word; run fewer cycles")
    return (ids | _check_word(ids, check_bits) << id_bits).astype(np.uint64)


def ids_of(payloads, payload_width):
    """The message number in each payload, or -1 where the check word does not match: the
    inverse of :func:`payload_of`, which the scoreboard uses to name what it received."""
    id_bits, check_bits = _split(payload_width)
    payloads = np.asarray(payloads, np.uint64)
    ids = (payloads & np.uint64((1 << id_bits) - 1)).astype(np.int64)
    good = (payloads >> np.uint64(id_bits)).astype(np.int64) == _check_word(ids, check_bits)
    return np.where(good, ids, -1)


# --- Traffic -------------------------------------------------------------------------------

class _Traffic:
    """Draws the messages of a run, numbered in drawing order, from the run's seed."""

    def __init__(self, config):
        self._n = config.spec.nodes
        self._broadcast = config.broadcast
        self._random = np.random.default_rng(config.seed)
        self._src, self._dest, self._kind = [], [], []
        self.count = 0

    def draw(self, src):
        """Draw one message at each node of ``src``; return their numbers, destinations and
        kinds."""
        src = np.asarray(src, np.int64)
        k = len(src)
        if self._n == 1:
            dest = np.zeros(k, np.int64)  # the only node: a unicast to itself
        else:
            dest = self._random.integers(0, self._n - 1, k)
            dest += dest >= src
        kind = np.where(self._random.random(k) < self._broadcast,
                        Kind.BROADCAST.value, Kind.UNICAST.value).astype(np.int64)
        self._src.append(src)
        self._dest.append(dest)
        self._kind.append(kind)
        ids = np.arange(self.count, self.count + k, dtype=np.int64)
        self.count += k
        return ids, dest, kind

    def tables(self):
        """``src``, ``dest`` and ``kind`` indexed by message number."""
        return tuple(np.concatenate(parts) if parts else np.zeros(0, np.int64)
                     for parts in (self._src, self._dest, self._kind))


def _owed(n, kind):
    """The deliveries each message owes: n - 1 for a broadcast, 1 for a unicast."""
    return np.where(kind == Kind.BROADCAST.value, n - 1, 1)


# --- Scoreboard ----------------------------------------------------------------------------

def score(records, limit=10):
    """Count what a run delivered against what it owed; return ``(counts, problems)``.

    ``problems`` lists up to ``limit`` sentences, one per kind of failure, with an example.
    """
    n = records.n
    src, dest, kind = records.src, records.dest, records.kind
    taken = records.injections["id"]
    taken_at = np.full(len(src), -1, np.int64)
    taken_at[taken] = records.injections["cycle"]
    broadcast = kind[taken] == Kind.BROADCAST.value

    # The (message, node) pairs owed, as keys id * n + node.
    owed = [taken[~broadcast] * n + dest[taken[~broadcast]]]
    for i in taken[broadcast]:
        nodes = np.arange(n, dtype=np.int64)
        owed.append(i * n + nodes[nodes != src[i]])
    owed = np.concatenate(owed) if owed else np.zeros(0, np.int64)

    got = records.deliveries
    ids = records.delivery_ids
    good = ids >= 0
    known = good & (ids < len(src))
    known[known] = taken_at[ids[known]] >= 0
    fields_ok = np.zeros(len(got), bool)
    i = ids[known]
    fields_ok[known] = ((got["src"][known] == src[i]) & (got["kind"][known] == kind[i])
                       & ((kind[i] == Kind.BROADCAST.value) | (got["dest"][known] == dest[i])))
    corrupted = ~(known & fields_ok)
    keys = np.sort(ids[~corrupted] * n + got["node"][~corrupted])
    first = np.flatnonzero(np.diff(keys, prepend=-1))
    unique_keys, counts = keys[first], np.diff(first, append=len(keys))
    owed = np.sort(owed)
    delivered_owed = _contains(owed, unique_keys)
    lost_keys = owed[~_contains(unique_keys, owed)]

    latency = got["cycle"][~corrupted] - taken_at[ids[~corrupted]]
    drain = _drain(records)
    counts_ = {
        "messages injected": int(len(taken)),
        "broadcasts injected": int(broadcast.sum()),
        "deliveries owed": int(len(owed)),
        "delivered": int(len(got)),
        "lost": int(len(lost_keys)),
        "duplicated": int((counts[delivered_owed] - 1).sum()),
        "corrupted": int(corrupted.sum()),
        "misdelivered": int(counts[~delivered_owed].sum()),
        "hops": int(len(records.hops)),
        "max latency": int(latency.max()) if len(latency) else 0,
        "drain cycles": drain[0],
        "idle drain cycles": drain[1],
        "cycles": int(records.cycles),
    }

    problems = _delivery_problems(counts_, n, lambda i: _describe(records, i), lost_keys,
                                  unique_keys, counts, delivered_owed, got[corrupted])
    if counts_["idle drain cycles"]:
        beyond = (f" (beyond {records.idle_allowance} in a row, the stages' allowance)"
                  if records.idle_allowance else "")
        problems.append(f"{counts_['idle drain cycles']} cycles of the drain moved nothing "
                        f"while messages were in the fabric{beyond}")
    return counts_, problems[:limit]


def _delivery_problems(counts_, n, describe, lost_keys, unique_keys, counts, delivered_owed,
                       corrupted, lost="lost", place="node"):
    """The scoreboard's sentences for deliveries lost, duplicated, corrupted and made where
    none was owed, each with an example: ``counts_`` as :func:`score` counts them, keys
    ``message * n + node`` (the owed ones ``lost_keys`` never delivered, ``unique_keys``
    delivered ``counts`` times, ``delivered_owed`` where owed), the ``corrupted`` delivery
    records, ``describe(i)`` a message's words; ``lost`` names the losses and ``place`` the
    node a corrupted delivery was made at."""
    problems = []
    if len(lost_keys):
        i, node = divmod(int(lost_keys[0]), n)
        problems.append(f"{len(lost_keys)} deliveries {lost}, e.g. {describe(i)} never "
                        f"reached node {node}")
    if counts_["duplicated"]:
        key = int(unique_keys[delivered_owed & (counts > 1)][0])
        problems.append(f"{counts_['duplicated']} deliveries duplicated, e.g. "
                        f"{describe(key // n)} reached node {key % n} more than once")
    if counts_["corrupted"]:
        row = corrupted[0]
        problems.append(f"{counts_['corrupted']} deliveries corrupted, e.g. at {place} "
                        f"{row['node']} in cycle {row['cycle']}: dest {row['dest']}, "
                        f"src {row['src']}, kind {row['kind']}, payload {row['payload']:#x}")
    if counts_["misdelivered"]:
        key = int(unique_keys[~delivered_owed][0])
        problems.append(f"{counts_['misdelivered']} deliveries at a node not owed them, e.g. "
                        f"{describe(key // n)} at node {key % n}")
    return problems


def _contains(sorted_keys, keys):
    """Whether each of ``keys`` is in the sorted array ``sorted_keys``."""
    at = np.minimum(np.searchsorted(sorted_keys, keys), max(len(sorted_keys) - 1, 0))
    return (sorted_keys[at] == keys) if len(sorted_keys) else np.zeros(len(keys), bool)


def _describe(records, i):
    if records.kind[i] == Kind.BROADCAST.value:
        return f"broadcast #{i} from node {records.src[i]}"
    return f"unicast #{i} from node {records.src[i]} to node {records.dest[i]}"


def _drain(records):
    """Cycles from the start of the drain to its last transfer, and how many of them moved
    nothing beyond the :attr:`Records.idle_allowance` in a row the bound allows (each one
    breaks it)."""
    start = records.offer_until
    moved = np.concatenate([records.hops["cycle"], records.deliveries["cycle"]])
    moved = np.unique(moved[moved >= start])
    if not len(moved):
        return 0, 0
    length = int(moved[-1]) - start + 1
    # The idle runs: before the first move, and between moves.
    gaps = np.diff(moved, prepend=start - 1) - 1
    return length, int(np.maximum(gaps - records.idle_allowance, 0).sum())


# --- Where a stalled run's messages are ----------------------------------------------------

class Stall(NamedTuple):
    """Where a stalled run's undelivered copies are.

    A buffer is named by the channel that fills it (:class:`ihcube.deadlock.Channel`: a link,
    or a PE's injection). ``held`` maps each nonempty buffer to its copies, head first, as
    ``(arrival cycle, message number, channels still owed)``; ``waits`` maps a buffer to the
    full buffers its head waits for; ``cycle`` is a cycle of such waits, or None. With link
    stages and the occupancy at the stall, ``relays`` maps each link (a :class:`Channel`)
    whose relay holds copies to them, head first, as ``held`` does (a broadcast whose copy
    for that link is in the relay while it owes others is in its input buffer too); a head
    waits for a link when its relay is full and the far buffer too. Otherwise ``relays`` is
    None.
    """
    at: int
    held: dict
    waits: dict
    cycle: list
    relays: dict = None


def find_stall(records, routing):
    """Rebuild, from the records, where each undelivered copy sits and what it waits for.

    A copy sits in the injection buffer at its origin, or in the input of the link it last
    crossed, until it has sent every copy it owes (the next link of a unicast, or its PE;
    the links of its travel vector and its PE for a broadcast). A buffer's head is its
    earliest arrival. ``routing(n, node, dest)`` is the fabric's unicast routing (as in
    :mod:`ihcube.deadlock`). Returns a :class:`Stall`, or None if nothing is left.
    """
    n = records.n
    copies = {}  # (id, node) -> [channel it arrived on, arrival cycle, owed, sent]

    def owes(i, node, travel, at_origin):
        if records.kind[i] == Kind.BROADCAST.value:
            owed = {Channel(node, dim) for dim in topology.links(n, node) if travel >> dim & 1}
            return owed if at_origin else owed | {Channel(node, EJECT)}
        step = routing(n, node, int(records.dest[i]))
        return {Channel(node, EJECT if step is None else step)}

    full = topology.full_travel(n)
    for cycle, node, i in records.injections.tolist():
        copies[i, node] = [Channel(node, INJECT), cycle, owes(i, node, full, True), set()]
    hops = records.hops
    for cycle, node, dim, travel, i in zip(*(hops[name].tolist() for name in
                                             ("cycle", "node", "dim", "travel")),
                                           records.hop_ids.tolist()):
        channel = Channel(node, dim)
        if (i, node) in copies:
            copies[i, node][3].add(channel)
        copies[i, channel.far] = [channel, cycle, owes(i, channel.far, travel, False), set()]
    for node, i in zip(records.deliveries["node"].tolist(), records.delivery_ids.tolist()):
        if (i, node) in copies:
            copies[i, node][3].add(Channel(node, EJECT))

    held = defaultdict(list)
    for i, node in sorted(copies):
        channel, arrival, owed, sent = copies[i, node]
        if owed - sent:
            held[channel].append((arrival, i, owed - sent))
    if not held:
        return None
    for copies_held in held.values():
        copies_held.sort()
    relays = None
    if records.relays and records.occupancy is not None:
        held, relays = _into_relays(records, copies, held)
    depth = records.depth

    def blocked(wanted):
        """Whether a head that owes link ``wanted`` waits on full buffers for it (and on its
        full relay, where links have relays)."""
        far_full = _is_full(held, wanted, depth)
        if relays is None or not records.link_stages:
            return far_full
        return _is_full(relays, wanted, depth) and far_full

    waits = {}
    for channel, copies_held in held.items():
        for wanted in copies_held[0][2]:
            if wanted.is_link and blocked(wanted):
                waits.setdefault(channel, []).append(wanted)
    return Stall(records.stalled_at, dict(held), waits, wait_cycle(waits), relays)


def _is_full(places, link, depth):
    """Whether the buffer or relay that ``link`` fills is full: ``places`` maps a channel to
    the copies it holds (:attr:`Stall.held` or :attr:`Stall.relays`), each of ``depth``
    messages."""
    return len(places.get(link, ())) >= depth


def _into_relays(records, copies, held):
    """Split the undelivered copies ``held`` by input buffer (as :func:`find_stall` builds
    them, a copy in a relay counted in its input buffer) into the input buffers and the relays,
    from the occupancy at the stall; return ``(held, relays)``.

    An input buffer is first in, first out, so it holds the ``count`` copies that came last by
    its channel; a copy that came earlier and still owes a link (or its PE) is in that link's
    relay (or the eject relay, keyed by the node's ``EJECT`` channel). A relay that holds more
    than those has, besides, the copy of a broadcast still in its input buffer (owing other
    outputs): the earliest such copies that owe its output.
    """
    n = records.n
    inputs, relay_counts, *more = records.occupancy
    eject_counts = more[0] if more else np.zeros((n, 1), np.int64)
    D = topology.dimensions(n)
    arrived = defaultdict(list)  # every copy by the channel it came by, fully sent or not
    for (i, _node), (channel, arrival, owed, sent) in copies.items():
        arrived[channel].append((arrival, i, owed - sent))
    in_buffers, relays = defaultdict(list), defaultdict(list)
    for channel, came in arrived.items():
        came.sort()
        column = D if channel.dim == INJECT else channel.dim
        count = int(inputs[channel.far, column])
        for place, (arrival, i, left) in enumerate(came):
            if not left:
                continue
            if place >= len(came) - count:
                in_buffers[channel].append((arrival, i, left))
            else:
                for wanted in left:
                    relays[wanted].append((arrival, i, {wanted}))
    for node in range(n):
        outputs = [(Channel(node, dim), relay_counts[node, dim])
                   for dim in topology.links(n, node)]
        for link, count in outputs + [(Channel(node, EJECT), eject_counts[node, 0])]:
            extra = int(count) - len(relays.get(link, ()))
            if extra > 0:
                waiting = sorted((arrival, i, {link}) for channel, buffered in in_buffers.items()
                                 if channel.far == node
                                 for arrival, i, left in buffered if link in left)
                relays[link].extend(waiting[:extra])
    for copies_held in relays.values():
        copies_held.sort()
    return dict(in_buffers), dict(relays)


def _buffer_name(channel):
    if channel.dim == INJECT:
        return f"node {channel.node} injection"
    return f"node {channel.far} input dim {channel.dim}"


def stall_report(records, routing, limit=12):
    """:func:`find_stall` as text: the cycle of waits, then the blocked buffers."""
    stall = find_stall(records, routing)
    if stall is None:
        return None
    copies = sum(len(held) for held in stall.held.values())
    text = [f"  stalled at cycle {stall.at}: {copies} copies in {len(stall.held)} buffers"
            + (f", {sum(map(len, stall.relays.values()))} in {len(stall.relays)} relays"
               if stall.relays is not None else "")]
    if stall.cycle:
        text.append("  cycle of waits: " + " -> ".join(
            _buffer_name(channel) for channel in stall.cycle + stall.cycle[:1]))
        text.append("  (channels: " + ", ".join(map(str, stall.cycle)) + ")")
    else:
        text.append("  no cycle of waits among full buffers")
    if records.relays and stall.relays is None:
        text.append("  (relays: the records do not tell a copy in a relay from one in its "
                    "input buffer; both are counted in the input buffer)")
    text.append("  blocked buffers:")
    lines = []
    for channel in sorted(stall.held, key=lambda c: (c.far, c.dim)):
        held = stall.held[channel]
        _, i, left = held[0]
        wanted = []
        for output in sorted(left, key=lambda c: c.dim):
            if not output.is_link:
                wanted.append(f"PE {output.node}")
            elif output in stall.waits.get(channel, ()):
                full = "relay and " if records.link_stages and stall.relays is not None \
                    else ""
                wanted.append(f"dim {output.dim} ({full}{_buffer_name(output)} full)")
            elif stall.relays is not None and _is_full(stall.relays, output, records.depth):
                wanted.append(f"dim {output.dim} (relay full)")
            else:
                wanted.append(f"dim {output.dim}")
        lines.append(f"    {_buffer_name(channel)} holds {len(held)}: head "
                     f"{_describe(records, i)} waits for {', '.join(wanted)}")
    text += lines[:limit]
    if len(lines) > limit:
        text.append(f"    ... and {len(lines) - limit} more")
    if stall.relays:
        text.append("  relays holding copies:")
        lines = []
        for link in sorted(stall.relays, key=lambda c: (c.node, c.dim)):
            held = stall.relays[link]
            if not link.is_link:
                lines.append(f"    node {link.node} eject relay holds {len(held)}: head "
                             f"{_describe(records, held[0][1])} waits for PE {link.node}")
                continue
            room = "full" if _is_full(stall.held, link, records.depth) else "which has room"
            lines.append(f"    node {link.node} relay dim {link.dim} holds {len(held)}: head "
                         f"{_describe(records, held[0][1])} waits for {_buffer_name(link)} "
                         f"({room})")
        text += lines[:limit]
        if len(lines) > limit:
            text.append(f"    ... and {len(lines) - limit} more")
    return "\n".join(text)


def wait_cycle(waits):
    """A cycle in the graph ``waits`` (buffer -> buffers it waits for), or None."""
    state = {}
    for start in sorted(waits):
        if start in state:
            continue
        path, stack = [], [(start, iter(waits.get(start, ())))]
        state[start] = "open"
        path.append(start)
        while stack:
            buffer, successors = stack[-1]
            for nxt in successors:
                if state.get(nxt) == "open":
                    return path[path.index(nxt):]
                if nxt not in state:
                    state[nxt] = "open"
                    path.append(nxt)
                    stack.append((nxt, iter(waits.get(nxt, ()))))
                    break
            else:
                state[buffer] = "closed"
                path.pop()
                stack.pop()
    return None


# --- Backends ------------------------------------------------------------------------------

def run_model(config, model_class=Model, mutant=None, threads=1, progress=None):
    """Run ``config`` on the fast model, on ``threads`` threads
    (:func:`~ihcube.sim.model.threads_for`: the same records on any number); return a
    :class:`StressResult`.

    The run goes in steps of ``watchdog`` cycles. Before each step of the injection phase the
    PEs' queues are topped up to a message per cycle of the step, so that every PE always has
    one to offer. ``mutant`` makes the eject port of the run lose (``"drop"``) or repeat
    (``"duplicate"``) one delivery: the negative controls of the scoreboard. ``model_class``
    builds the model from the spec (with the payloads' width) and ``threads``; the tests pass
    broken variants of :class:`~ihcube.sim.model.Model`. ``progress(cycle)``, if given, is
    called after each step with the cycles run so far.
    """
    if config.spec.reconfigurable:  # nodes fail during the run: its own engine
        from .fault_stress import run_faults
        if threads != 1:
            raise ValueError(f"Thread count must be 1 in a stress run with faults, not "
                             f"{threads}")
        return run_faults(config, model_class, mutant, progress=progress)
    if mutant not in (None, "drop", "duplicate"):
        raise ValueError(f"Mutant must be None, 'drop' or 'duplicate', not {mutant!r}")
    spec = config.spec
    n, K = spec.nodes, config.watchdog
    model = model_class(spec.replace(payload_width=PAYLOAD_WIDTH),
                        threads=threads_for(n, threads))
    traffic = _Traffic(config)
    backpressure = np.random.default_rng([config.seed, 1])
    queued = np.zeros((4, 0), np.int64)  # rows id, src, dest, kind; each PE's in id order
    injections, hops, deliveries = [], [], []
    owed = delivered = 0
    last_move = -1
    stalled_at = None
    while True:
        t = model.cycle
        draining = t >= config.cycles
        if owed > delivered and t - last_move - 1 >= K:
            stalled_at = t
            break
        if draining and (delivered >= owed or t - config.cycles >= config.drain_limit):
            break
        length = K if draining else min(K, config.cycles - t)
        if draining:
            queued = queued[:, :0]
            ready = np.ones((length, n), np.uint8)
        else:
            # A PE takes at most one message a cycle: `length` queued messages suffice.
            need = np.maximum(length - np.bincount(queued[1], minlength=n), 0)
            src = np.repeat(np.arange(n, dtype=np.int64), need)
            ids, dest, kind = traffic.draw(src)
            queued = np.concatenate([queued, np.stack([ids, src, dest, kind])], axis=1)
            # By PE, each PE's messages in the order drawn (the new ones come last).
            queued = queued[:, np.argsort(queued[1], kind="stable")]
            ready = (backpressure.random((length, n)) < config.eject_ready).astype(np.uint8)
        run = model.run_arrays(length, queued[1], queued[2], queued[3],
                               payload_of(queued[0], PAYLOAD_WIDTH), eject_ready=ready,
                               record_hops=True)
        taken = np.zeros(len(run.injections), INJECTION)
        taken["cycle"] = run.injections["cycle"]
        taken["node"] = run.injections["node"]
        taken["id"] = queued[0, run.injections["request"]]
        owed += int(_owed(n, queued[3, run.injections["request"]]).sum())
        keep = np.ones(queued.shape[1], bool)
        keep[run.injections["request"]] = False
        queued = queued[:, keep]
        got = run.deliveries
        if mutant and len(got) and not any(len(d) for d in deliveries):
            got = _mutate(got, mutant)
        injections.append(taken)
        hops.append(run.hops)
        deliveries.append(got)
        delivered += len(got)
        moves = np.concatenate([run.hops["cycle"], got["cycle"]])
        if len(moves):
            last_move = int(moves.max())
        if progress is not None:
            progress(model.cycle)

    src, dest, kind = traffic.tables()
    records = Records(n, spec.depth, PAYLOAD_WIDTH, src, dest, kind,
                      np.concatenate(injections) if injections else np.zeros(0, INJECTION),
                      np.concatenate(hops) if hops else np.zeros(0, HOP),
                      np.concatenate(deliveries) if deliveries else np.zeros(0, DELIVERY),
                      offer_until=config.cycles, cycles=model.cycle, stalled_at=stalled_at,
                      **spec.stages.keywords(),
                      occupancy=(model.occupancy, model.relay_occupancy,
                                 model.eject_occupancy))
    return _result(config, "model", records, routing_for(spec.order))


def _mutate(deliveries, mutant):
    """The first delivery lost, or repeated in the same cycle."""
    if mutant == "drop":
        return deliveries[1:]
    return np.concatenate([deliveries[:1], deliveries])


def _result(config, backend, records, routing):
    counts, problems = score(records)
    stall = None
    if records.stalled_at is not None:
        problems.insert(0, f"no transfer for {config.watchdog} cycles from cycle "
                           f"{records.stalled_at - config.watchdog} while deliveries were owed")
        stall = stall_report(records, routing)
    return StressResult(config, backend, counts, problems, stall, records)


class _BufferCounts:
    """Counts beside every input buffer and relay of a flat fabric with link or eject stages
    (:class:`~.buffer_count.CountedBuffer`, put in by its routers' ``input_buffer`` and
    ``relay_buffer`` before the fabric is elaborated), and their values at the end of a run laid
    out as the model's occupancy (:attr:`~ihcube.sim.model.Model.occupancy`,
    :attr:`~ihcube.sim.model.Model.relay_occupancy` and
    :attr:`~ihcube.sim.model.Model.eject_occupancy`)."""

    def __init__(self, fabric):
        n = self._n = fabric.n
        D = self._D = topology.dimensions(n)
        self._ports = fabric.ports
        self._places = []   # (which array, node, column), as self.signals
        self.signals = []
        self._made = []     # (buffers made, buffers counted) for each router's inputs, relays
        for node, router in enumerate(fabric.routers):
            # A router makes its link relays, then its eject relays (Router._relays, then
            # Router._eject_relays), with the same relay_buffer.
            relays = [("relay", dim) for dim in router.dims] if fabric.link_stages else []
            if fabric.eject_stages:
                relays += [("eject", port) for port in range(fabric.ports)]
            makers = {"input_buffer": router.input_buffer,
                      "relay_buffer": router.relay_buffer}
            for kind, places in (
                    ("input_buffer", [("in", column) for column in
                                      [*router.dims, *range(D, D + fabric.ports)]]),
                    ("relay_buffer", relays)):
                held = [Signal(HELD_WIDTH, name=f"held_{node}_{array}{column}")
                        for array, column in places]
                made = []
                # An attribute of this router object only, read when it is elaborated.
                setattr(router, kind, counting(makers[kind], held, made))
                self._places += [(array, node, column) for array, column in places]
                self.signals += held
                self._made.append((made, len(held)))

    def occupancy(self, values):
        """The counts ``values`` (of :attr:`signals`, at the end of a run) as ``(inputs,
        relays, ejects)``, arrays of ``(n, D + ports)``, ``(n, max(D, 1))`` and ``(n,
        ports)``."""
        for made, expected in self._made:
            if len(made) != expected:
                raise ValueError(f"The router made {len(made)} buffers where {expected} "
                                 f"were counted")
        arrays = {"in": np.zeros((self._n, self._D + self._ports), np.int64),
                  "relay": np.zeros((self._n, max(self._D, 1)), np.int64),
                  "eject": np.zeros((self._n, self._ports), np.int64)}
        for (array, node, column), value in zip(self._places, values):
            arrays[array][node, column] = value
        return arrays["in"], arrays["relay"], arrays["eject"]


def run_rtl(config, fabric=None, routing=None, progress=None):
    """Run ``config`` on the RTL in the Amaranth simulator; return a :class:`StressResult`.

    ``fabric`` is a flat :class:`~ihcube.rtl.Fabric` (by default the one of ``config.spec``),
    and ``routing(n, node, dest)`` the unicast routing its routers implement (by default the
    spec's order's), for the stall report. Each PE
    is given ``cycles`` messages, more than it can inject in the injection phase.
    ``progress`` goes to :meth:`FabricHarness.run`. With link or eject stages, the messages in
    every input buffer and relay at the end of the run are read out of the simulation (counts put
    beside them: :mod:`.buffer_count`, which changes no cycle), so the stall report places the
    copies in the relays as the model's does.
    """
    from ..rtl import Fabric
    from .harness import FabricHarness, Request

    if config.spec.reconfigurable:  # nodes fail during the run: its own engine
        from .fault_stress import run_rtl_faults
        return run_rtl_faults(config, fabric)
    spec = config.spec
    n = spec.nodes
    if fabric is None:
        fabric = Fabric(spec)
    traffic = _Traffic(config)
    src = np.repeat(np.arange(n, dtype=np.int64), config.cycles)
    ids, dest, kind = traffic.draw(src)
    payloads = payload_of(ids, fabric.payload_width)
    harness = FabricHarness(fabric, eject_ready=config.eject_ready, seed=config.seed)
    counts = _BufferCounts(fabric) if fabric.link_stages or fabric.eject_stages else None
    for node, d, k, payload in zip(src.tolist(), dest.tolist(), kind.tolist(),
                                   payloads.tolist()):
        harness.send(node, Request(payload, d, Kind(k)))
    harness.run(config.cycles + config.drain_limit, offer_until=config.cycles,
                watchdog=config.watchdog, progress=progress,
                read_at_end=counts.signals if counts else ())

    injections = np.zeros(len(harness.injected), INJECTION)
    for row, (cycle, node, _request) in zip(injections, harness.injected):
        row["cycle"], row["node"] = cycle, node
    injections["id"] = ids_of([request.payload for _, _, request in harness.injected],
                               fabric.payload_width)
    hops = np.zeros(len(harness.hops), HOP)
    for row, hop in zip(hops, harness.hops):
        row["cycle"], row["node"], row["dim"] = hop.cycle, hop.node, hop.dim
        _message_fields(row, hop.message)
    deliveries = np.zeros(len(harness.deliveries), DELIVERY)
    for row, delivery in zip(deliveries, harness.deliveries):
        row["cycle"], row["node"] = delivery.cycle, delivery.node
        _message_fields(row, delivery.message)
    records = Records(n, fabric.depth, fabric.payload_width, *traffic.tables(), injections,
                      hops, deliveries, offer_until=config.cycles, cycles=harness.cycles,
                      stalled_at=harness.stalled_at,
                      link_stages=fabric.link_stages, switch_stages=fabric.switch_stages,
                      eject_stages=fabric.eject_stages,
                      occupancy=counts.occupancy(harness.at_end) if counts else None)
    return _result(config, "rtl", records, routing or routing_for(spec.order))


def _message_fields(row, message):
    row["dest"], row["src"], row["kind"] = message.dest, message.src, message.kind.value
    row["travel"], row["payload"] = message.travel, message.payload
