"""Stress campaign in wormhole mode: saturating worms, a message-level scoreboard over flits, a
progress watchdog and a stall report over (link, virtual channel) (``docs/wormhole.md``,
"Stress").

The stress engine of wormhole switching (:attr:`ihcube.modes.Mode.stress`). A
:class:`~.stress.StressConfig` whose spec is wormhole runs on the cycle-exact model
(:func:`run_model`, through :func:`wormhole_model`, the one place that names the model) or on
the RTL in the Amaranth simulator (:func:`run_rtl`, small ``n``), into a
:class:`~.stress.StressResult` with :class:`WormholeRecords`. Both drive the same PEs
(:class:`_Run`), so the same seed gives the same traffic and the same checks:

- **Traffic.** For ``cycles`` cycles every PE always offers a flit: the flits of a unicast to
  a node drawn uniformly from the others, or with probability ``broadcast`` of a broadcast,
  one worm after another. Each PE accepts an eject flit with probability ``eject_ready`` per
  cycle. Then the PEs finish the worm they are sending, start no other, accept every flit,
  and the fabric drains.
- **Flits** (:func:`message_flits`). Message ``i``'s head carries its routing fields and the
  low bits of ``i``; its body flit ``k`` is ``i * flits + k``. So a flit lost, repeated,
  reordered or taken from another worm breaks the count, which is why a run needs at least
  two flits per message.
- **Scoreboard.** Each eject port delivers whole worms one after another (its channel is held
  from head to tail); each is assembled, its marks (head first, tail last, ``flits`` in all),
  body and head fields checked (:func:`decode_worm`), and counted as a delivery of its message
  at that node. Every message taken must reach every PE it is owed to (its destination, or
  every node but the origin for a broadcast) exactly once, whole and in order. The counts:
  injected, delivered, lost, duplicated, corrupted (a worm that is not whole and in order, or
  whose fields differ from what was sent), misdelivered, and the largest latency from the
  head's injection to the tail's delivery. The flits on every (link, virtual channel) are
  assembled the same way: a worm cut or interleaved on a link is a problem too.
- **Drain.** No sound bound on the idle cycles of a wormhole drain is claimed (a head spends a
  cycle being routed and allocated with nothing moving, a freed channel is granted a cycle
  after the tail that frees it, a broadcast channel waits a cycle for the far buffer's
  ``idle``): the rule is the watchdog's. The longest run of idle drain cycles is reported.
- **Watchdog.** If no flit crosses a link or reaches a PE for ``watchdog`` cycles while flits
  are owed, the run stops and :func:`find_stall` rebuilds, from the recorded flits, which
  (link, virtual channel) buffers hold worms, what each front worm waits for, and a cycle of
  such waits (:func:`stall_report`).

The routing rules come from :mod:`ihcube.topology` and :mod:`ihcube.deadlock`.
"""

import random
from collections import defaultdict
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .. import topology
from ..deadlock import EJECT, INJECT, VirtualChannel, routing_for
from ..params import head_fields, header_bits
from ..rtl.message import Kind
from ..spec import FabricSpec
from .stress import StressResult, wait_cycle

__all__ = ["WormholeRecords", "WormholeStall", "wormhole_model", "message_flits",
           "decode_worm", "find_stall", "stall_report", "run_model", "run_rtl", "check_config",
           "heading", "campaign_columns", "MUTANTS", "COUNT_NAMES"]

#: What a broken eject port of :func:`run_model` does to one body flit (negative controls).
MUTANTS = ("drop", "duplicate", "reorder")
#: The counts a wormhole run reports, in print order.
COUNT_NAMES = ("messages injected", "broadcasts injected", "deliveries owed", "delivered",
               "lost", "duplicated", "corrupted", "misdelivered", "worm hops", "flits moved",
               "max latency", "drain cycles", "longest idle drain", "cycles")


def wormhole_model(spec):
    """The cycle-exact model of the wormhole ``spec`` that the stress runs drive: anything with
    ``step(valid, words, eject_ready) -> (inject_ready, ejects, hops)`` as
    :class:`~ihcube.sim.wormhole_model.WormholeModel` has: the compiled
    :class:`~ihcube.sim.wormhole_fast.FastWormholeModel` (``tests/test_wormhole_fast.py``
    holds it to the reference, cycle for cycle), or the reference itself for parameters beyond
    the compiled model's words."""
    from ..sim.wormhole_fast import FastWormholeModel
    from ..sim.wormhole_model import WormholeModel
    if FastWormholeModel.beyond(spec.nodes, spec.wormhole):
        return WormholeModel(spec)
    return FastWormholeModel(spec)


def check_config(config):
    """Raise if the wormhole engine cannot run ``config``: at most
    :data:`~ihcube.params.MAX_FABRIC_NODES` nodes, and at least 2 flits (the body flits carry
    the message number)."""
    topology.check_fabric_node_count(config.spec.nodes)
    flits = config.spec.wormhole.flits
    if flits < 2:
        raise ValueError(f"Flit count must be at least 2 in a stress run (the body flits "
                         f"carry the message number), not {flits}")


def heading(backend, config):
    """The first line of a wormhole run's summary: the backend and the configuration."""
    spec, wh = config.spec, config.spec.wormhole
    return (f"{backend} wormhole: n={spec.nodes} flits={wh.flits} flit_width={wh.flit_width} "
            f"vcs={wh.vcs} vc_depth={wh.vc_depth} order={spec.order} cycles={config.cycles} "
            f"seed={config.seed} broadcast={config.broadcast:.4g} "
            f"eject_ready={config.eject_ready:g}")


def campaign_columns(config):
    """What the campaign's table (``ihcube stress --campaign``) shows of a wormhole
    configuration: its switching column (``L<flits>V<vcs>``), its depth column (the virtual
    channels' depth), and the fields its row adds."""
    wh = config.spec.wormhole
    return (f"L{wh.flits}V{wh.vcs}", wh.vc_depth,
            {"switching": "wormhole", "flits": wh.flits, "vcs": wh.vcs,
             "flit_width": wh.flit_width})


@dataclass
class WormholeRecords:
    """What a wormhole run did: ``injections`` ``(cycle, node, id)`` (heads taken),
    ``link_flits`` ``(cycle, node, dim, vc, flit)``, ``deliveries`` ``(tail cycle, node, id,
    head cycle)`` (whole worms), ``messages`` ``{id: (src, dest, kind)}``, and the cycle the
    watchdog stopped the run, if it did."""
    spec: FabricSpec
    injections: list
    link_flits: list
    deliveries: list
    messages: dict
    stalled_at: int = None


# --- Flits ---------------------------------------------------------------------------------

def message_flits(n, wormhole, i, dest, kind):
    """The words a PE injects for message ``i``: the head (``dest``, ``kind`` and the low bits
    of ``i`` above the header where the head flit has room; ``src`` left 0, the router stamps
    it), then body flits ``i * flits + k`` for ``k = 1 .. flits - 1``, each above the bits of
    ``src`` that run on into it (:class:`ihcube.params.HeadFields`)."""
    fields, width = head_fields(n, wormhole.flit_width), wormhole.flit_width
    head = (dest if kind == Kind.UNICAST.value else 0) | kind << fields.kind_bit
    head |= (i & ((1 << fields.free_bits) - 1)) << header_bits(n)
    mask = (1 << width) - 1
    return [head] + [((i * wormhole.flits + k) << fields.src_width(k)) & mask
                     for k in range(1, wormhole.flits)]


def decode_worm(n, wormhole, worm):
    """Read a worm (its flits as integers: payload, head mark, tail mark); return ``(i, dest,
    src, kind)`` or a sentence saying why it is not one whole worm in order."""
    width, L = wormhole.flit_width, wormhole.flits
    marks = [(bool(f >> width & 1), bool(f >> width + 1 & 1)) for f in worm]
    expected = [(k == 0, k == L - 1) for k in range(L)]
    if marks != expected:
        return f"head/tail marks {marks}, a worm is {expected}"
    mask = (1 << width) - 1
    payloads = [f & mask for f in worm]
    fields = head_fields(n, width)
    src = fields.src_of(payloads)
    i = ((payloads[1] >> fields.src_width(1)) - 1) // L
    head = payloads[0]
    body = [fields.stamp(k, ((i * L + k) << fields.src_width(k)) & mask, src)
            for k in range(1, L)]
    if payloads[1:] != body or head >> header_bits(n) != i & ((1 << fields.free_bits) - 1):
        return f"flits not whole and in order: {[hex(p) for p in payloads]}"
    amask = (1 << topology.address_bits(n)) - 1
    return i, head & amask, src, head >> fields.kind_bit & 1


class _Assembler:
    """Collects a stream's flits into worms: a worm ends at a tail or after ``flits`` flits."""

    def __init__(self, flits):
        self._flits = flits
        self.worm = []
        self.start = None

    def add(self, cycle, flit, tail):
        """Add a flit; return ``(start cycle, worm)`` when the worm is complete, else None."""
        if not self.worm:
            self.start = cycle
        self.worm.append(flit)
        if tail or len(self.worm) >= self._flits:
            worm, self.worm = self.worm, []
            return self.start, worm
        return None


# --- The PEs and the records, shared by both backends --------------------------------------

class _Run:
    """The PEs of a run: traffic, backpressure, the records and the scoreboard."""

    def __init__(self, config, mutant=None):
        if mutant not in (None, *MUTANTS):
            raise ValueError(f"Mutant must be None, 'drop', 'duplicate' or 'reorder', "
                             f"not {mutant!r}")
        self.config = config
        self.wormhole = config.spec.wormhole
        self.mutant = mutant
        n = self.n = config.spec.nodes
        self._random = np.random.default_rng(config.seed)
        self._backpressure = random.Random(config.seed * 7919 + 1)
        self.messages = {}            # id -> (src, dest, kind)
        self.sending = [None] * n     # each PE's worm: [id, words, next index]
        self.injections = []          # (cycle, node, id): heads taken
        self.taken_at = {}
        self.link_flits = []          # (cycle, node, dim, vc, flit)
        self.deliveries = []          # (tail cycle, node, id, head cycle) of good worms
        self.problems = []
        self.corrupted = 0
        self.owed_flits = 0           # eject flits owed and not yet delivered
        self.moved = []               # cycles in which a flit moved
        self._ejecting = [_Assembler(self.wormhole.flits) for _ in range(n)]
        self._links = defaultdict(lambda: _Assembler(self.wormhole.flits))
        self._held = {}               # the reorder mutant's stashed flit
        self._struck = False
        self.count = 0
        self.cycles = 0
        self.stalled_at = None
        self._last_move = -1

    def _draw(self, src):
        n, c = self.n, self.config
        if n == 1:
            dest = 0
        else:
            dest = int(self._random.integers(0, n - 1))
            dest += dest >= src
        kind = (Kind.BROADCAST.value if self._random.random() < c.broadcast
                else Kind.UNICAST.value)
        i = self.count
        self.count += 1
        room = self.wormhole.flit_width - head_fields(n, self.wormhole.flit_width).src_width(1)
        if (i + 1) * self.wormhole.flits >= 1 << room:
            raise ValueError(f"{i + 1} messages of {self.wormhole.flits} flits do not fit the "
                             f"body flits' {room}-bit count; run fewer cycles")
        self.messages[i] = (src, dest, kind)
        return [i, message_flits(n, self.wormhole, i, dest, kind), 0]

    def inputs(self, cycle):
        """Each PE's ``valid``, word and eject ``ready`` in ``cycle``."""
        n = self.n
        injecting = cycle < self.config.cycles
        valid, words = [0] * n, [0] * n
        for node in range(n):
            if self.sending[node] is None and injecting:
                self.sending[node] = self._draw(node)
            if self.sending[node] is not None:
                i, flits, k = self.sending[node]
                valid[node], words[node] = 1, flits[k]
        if injecting and self.config.eject_ready < 1.0:
            ready = [int(self._backpressure.random() < self.config.eject_ready)
                     for _ in range(n)]
        else:
            ready = [1] * n
        return valid, words, ready

    def outputs(self, cycle, inject_ready, ejects, hops):
        """Record what the fabric did in ``cycle``: injection handshakes, eject flits, link
        flits (as the model's ``step`` returns them)."""
        n, wh = self.n, self.wormhole
        moved = bool(ejects or hops)
        for node in range(n):
            pe = self.sending[node]
            if pe is not None and inject_ready[node]:
                i, flits, k = pe
                moved = True
                if k == 0:
                    self.injections.append((cycle, node, i))
                    self.taken_at[i] = cycle
                    src, dest, kind = self.messages[i]
                    copies = (n - 1 if kind == Kind.BROADCAST.value else 1)
                    self.owed_flits += copies * wh.flits
                pe[2] += 1
                if pe[2] == wh.flits:
                    self.sending[node] = None
        tail_bit = 1 << wh.flit_width + 1
        for node, dim, vc, flit in hops:
            self.link_flits.append((cycle, node, dim, vc, flit))
            done = self._links[node, dim, vc].add(cycle, flit, flit & tail_bit)
            if done is not None:
                found = decode_worm(n, wh, done[1])
                if isinstance(found, str) and len(self.problems) < 10:
                    self.problems.append(f"worm on link {node} -(dim {dim}, vc {vc})-> "
                                         f"{node ^ 1 << dim} from cycle {done[0]}: {found}")
        for node, flit in self._mutate(ejects):
            self.owed_flits -= 1
            done = self._ejecting[node].add(cycle, flit, flit & tail_bit)
            if done is not None:
                self._deliver(cycle, node, *done)
        if moved:
            self.moved.append(cycle)
            self._last_move = cycle
        self.cycles = cycle + 1

    def _mutate(self, ejects):
        """The negative controls' broken eject port: the first body flit delivered is lost,
        repeated, or held back until the next flit at its node has left."""
        if self.mutant is None:
            return ejects
        out = []
        head_bit = 1 << self.wormhole.flit_width
        for node, flit in ejects:
            if node in self._held:
                out += [(node, flit), (node, self._held.pop(node))]
                continue
            if not self._struck and not flit & head_bit:
                self._struck = True
                if self.mutant == "duplicate":
                    out += [(node, flit), (node, flit)]
                elif self.mutant == "reorder":
                    self._held[node] = flit
                continue  # "drop": nothing goes on
            out.append((node, flit))
        return out

    def _deliver(self, cycle, node, start, worm):
        found = decode_worm(self.n, self.wormhole, worm)
        if not isinstance(found, str):
            i, dest, src, kind = found
            sent = self.messages.get(i)
            if (i in self.taken_at and sent[0] == src and sent[2] == kind
                    and (kind == Kind.BROADCAST.value or sent[1] == dest)):
                self.deliveries.append((cycle, node, i, start))
                return
            found = (f"fields dest {dest}, src {src}, kind {kind} of message {i} differ from "
                     f"what was sent" if i in self.taken_at else f"message {i} was never sent")
        self.corrupted += 1
        if len(self.problems) < 10:
            self.problems.append(f"worm delivered at node {node} from cycle {start} to {cycle} "
                                 f"is corrupted: {found}")

    def stalled(self, cycle):
        """Whether the watchdog fires before ``cycle``: no flit moved for ``watchdog``
        cycles while flits are owed or being injected."""
        busy = self.owed_flits > 0 or any(pe is not None and pe[2] for pe in self.sending)
        if busy and cycle - self._last_move - 1 >= self.config.watchdog:
            self.stalled_at = cycle
            return True
        return False

    def finished(self, cycle):
        """Whether the drain is over: every flit delivered, nothing left to inject, or the
        drain limit reached."""
        c = self.config
        if cycle < c.cycles:
            return False
        idle = self.owed_flits <= 0 and not any(pe is not None for pe in self.sending)
        return idle or cycle - c.cycles >= c.drain_limit

    def result(self, backend, routing):
        """Score the run: a :class:`~.stress.StressResult` with :class:`WormholeRecords`."""
        n, c = self.n, self.config
        owed = set()
        broadcasts = 0
        for _, _node, i in self.injections:
            src, dest, kind = self.messages[i]
            if kind == Kind.BROADCAST.value:
                broadcasts += 1
                owed.update((i, v) for v in range(n) if v != src)
            else:
                owed.add((i, dest))
        got = defaultdict(int)
        latency = 0
        for cycle, node, i, _ in self.deliveries:
            got[i, node] += 1
            latency = max(latency, cycle - self.taken_at[i])
        lost = sorted(owed - set(got))
        duplicated = sum(k - 1 for key, k in got.items() if key in owed and k > 1)
        misdelivered = sum(k for key, k in got.items() if key not in owed)
        drain = [t for t in self.moved if t >= c.cycles]
        gaps = np.diff([c.cycles - 1, *drain]) - 1 if drain else np.zeros(1, int)
        counts = {
            "messages injected": len(self.injections),
            "broadcasts injected": broadcasts,
            "deliveries owed": len(owed),
            "delivered": len(self.deliveries) + self.corrupted,
            "lost": len(lost),
            "duplicated": duplicated,
            "corrupted": self.corrupted,
            "misdelivered": misdelivered,
            "worm hops": len(self.link_flits) // self.wormhole.flits,
            "flits moved": len(self.link_flits),
            "max latency": latency,
            "drain cycles": drain[-1] - c.cycles + 1 if drain else 0,
            "longest idle drain": int(gaps.max()),
            "cycles": self.cycles,
        }
        problems = []
        if self.stalled_at is not None:
            problems.append(f"no flit moved for {c.watchdog} cycles from cycle "
                            f"{self.stalled_at - c.watchdog} while flits were owed")
        if lost:
            i, node = lost[0]
            problems.append(f"{len(lost)} deliveries lost, e.g. {self._describe(i)} never "
                            f"reached node {node}")
        if duplicated:
            i, node = next(key for key, k in got.items() if key in owed and k > 1)
            problems.append(f"{duplicated} deliveries duplicated, e.g. {self._describe(i)} "
                            f"reached node {node} more than once")
        if misdelivered:
            i, node = next(key for key in got if key not in owed)
            problems.append(f"{misdelivered} deliveries at a node not owed them, e.g. "
                            f"{self._describe(i)} at node {node}")
        problems += self.problems
        records = WormholeRecords(c.spec, self.injections, self.link_flits, self.deliveries,
                                  self.messages, self.stalled_at)
        stall = (None if self.stalled_at is None else
                 stall_report(records, routing or routing_for(c.spec.order)))
        return StressResult(c, backend, counts, problems, stall, records)

    def _describe(self, i):
        src, dest, kind = self.messages[i]
        if kind == Kind.BROADCAST.value:
            return f"broadcast #{i} from node {src}"
        return f"unicast #{i} from node {src} to node {dest}"


# --- Backends ------------------------------------------------------------------------------

def run_model(config, model=wormhole_model, mutant=None, threads=1, progress=None):
    """Run ``config`` on the model; return a :class:`~.stress.StressResult`.

    ``model(spec)`` builds it (:func:`wormhole_model`; the tests pass broken variants).
    ``mutant`` (one of :data:`MUTANTS`) breaks the eject port of the run on one body flit: the
    scoreboard's negative controls. The model has one thread, whatever ``threads`` (the packet
    engine's, which a campaign gives every run) says. ``progress(cycle)``, if given, is called
    after each cycle.
    """
    run = _Run(config, mutant)
    fabric = model(config.spec)
    cycle = 0
    while not run.finished(cycle) and not run.stalled(cycle):
        valid, words, ready = run.inputs(cycle)
        run.outputs(cycle, *fabric.step(valid, words, ready))
        cycle += 1
        if progress is not None:
            progress(cycle)
    return run.result("model", None)


def run_rtl(config, fabric=None, routing=None, progress=None):
    """Run ``config`` on the RTL in the Amaranth simulator; return a
    :class:`~.stress.StressResult`.

    ``fabric`` is a flat :class:`~ihcube.rtl.WormholeFabric` (by default the one of
    ``config.spec``; the tests pass ones built of faulty routers), and ``routing(n, node,
    dest)`` the unicast routing its routers implement (the spec's order's by default), for the
    stall report. ``progress(cycle)`` is called after each cycle.
    """
    from ..rtl import WormholeFabric
    from .harness import simulate

    if fabric is None:
        fabric = WormholeFabric(config.spec)
    if fabric.routers is None:
        raise ValueError("The stress run watches links, so the fabric must be flat "
                         "(built without router_modules)")
    run = _Run(config)
    n, width = config.spec.nodes, config.spec.wormhole.flit_width
    links = [(node, dim, port) for node, router in enumerate(fabric.routers)
             for dim, port in zip(topology.links(n, node), router.links_out)]

    async def testbench(ctx):
        def encode(flit):
            return (ctx.get(flit.payload) | ctx.get(flit.head) << width
                    | ctx.get(flit.tail) << width + 1)

        cycle = 0
        while not run.finished(cycle) and not run.stalled(cycle):
            valid, words, ready = run.inputs(cycle)
            for node in range(n):
                ctx.set(fabric.inject[node].valid, valid[node])
                ctx.set(fabric.inject[node].payload, words[node])
                ctx.set(fabric.eject[node].ready, ready[node])
            inject_ready = [ctx.get(fabric.inject[node].ready) for node in range(n)]
            ejects = [(node, encode(fabric.eject[node].payload)) for node in range(n)
                      if ctx.get(fabric.eject[node].valid) and ready[node]]
            hops = []
            for node, dim, port in links:
                if ctx.get(port.valid):
                    vc = ctx.get(port.vc)
                    if ctx.get(port.ready) >> vc & 1:
                        hops.append((node, dim, vc, encode(port.flit)))
            run.outputs(cycle, inject_ready, ejects, hops)
            await ctx.tick()
            cycle += 1
            if progress is not None:
                progress(cycle)

    simulate(fabric, testbench, "ihcube_wormhole_stress")
    return run.result("rtl", routing)


# --- Where a stalled run's worms are --------------------------------------------------------

class WormholeStall(NamedTuple):
    """Where a stalled run's worms are, over (link, virtual channel).

    Channels are :class:`ihcube.deadlock.VirtualChannel` s; a PE's injection is ``(node,
    INJECT, 0)`` for unicasts and ``(node, INJECT, vcs)`` for broadcasts. ``held`` maps each
    channel whose buffer (at its far end) still holds flits of a worm to those worms, front
    first, as ``(message number, outputs still owed)``; ``reserved`` maps each channel that a
    worm's head has crossed and its tail has not to that worm; ``waits`` maps a channel to the
    channels its front worm waits for; ``cycle`` is a cycle of such waits, or None.
    """
    at: int
    held: dict
    reserved: dict
    waits: dict
    cycle: list


def find_stall(records, routing):
    """Rebuild, from a run's records, which (link, virtual channel) buffers hold worms and what
    each front worm waits for.

    A worm copy sits at the far end of the channel it arrived on (or in its origin's
    injection) until it has sent its last flit on every output it owes there: the next link of
    a unicast (``routing(n, node, dest)``, as in :mod:`ihcube.deadlock`) or its PE; the links of
    its travel vector and, but at its origin, its PE for a broadcast. A front worm that has
    sent flits on an output waits for that channel (room at its far end); one that has not
    waits for every channel of the output that another worm holds or fills (a unicast may take
    any unicast channel; a broadcast only the link's broadcast channel). ``records`` are what
    :func:`run_model` or :func:`run_rtl` recorded (:class:`WormholeRecords`).
    """
    n, wh = records.spec.nodes, records.spec.wormhole
    V, L, width = wh.vcs, wh.flits, wh.flit_width
    bits = topology.address_bits(n)
    tail_bit, head_bit = 1 << width + 1, 1 << width
    # Flits of each message copy sent from each node on each output channel.
    sent = defaultdict(int)          # (id, node, channel) -> flits
    arrived = {}                     # (id, node) -> (channel, first cycle, travel)
    reserved = {}
    streams = defaultdict(list)
    for cycle, node, dim, vc, flit in records.link_flits:
        streams[node, dim, vc].append((cycle, flit))
    for (node, dim, vc), stream in streams.items():
        channel = VirtualChannel(node, dim, vc)
        i = None
        for k, (cycle, flit) in enumerate(stream):
            if flit & head_bit:
                i = _worm_id(n, wh, stream, k)
                if i not in records.messages:  # a broken worm's flits name no message
                    i = None
                if i is not None:
                    arrived[i, channel.far] = (channel, cycle, flit & ((1 << bits) - 1))
                    reserved[channel] = i
            if i is not None:
                sent[i, node, channel] += 1
            if flit & tail_bit and reserved.get(channel) == i:
                del reserved[channel]
    for cycle, node, i in records.injections:
        kind = records.messages[i][2]
        arrived[i, node] = (VirtualChannel(node, INJECT, V if kind else 0), cycle,
                            topology.full_travel(n))
    delivered = {(i, node) for _, node, i, _ in records.deliveries}

    held = defaultdict(list)
    for (i, node), (channel, cycle, travel) in arrived.items():
        src, dest, kind = records.messages[i]
        if kind == Kind.BROADCAST.value:
            outputs = [VirtualChannel(node, d, V) for d in topology.links(n, node)
                       if travel >> d & 1]
            if node != src:
                outputs.append(VirtualChannel(node, EJECT, 0))
        else:
            step = routing(n, node, dest)
            outputs = [VirtualChannel(node, EJECT, 0) if step is None else
                       VirtualChannel(node, step, -1)]  # -1: any unicast channel
        left = []
        for output in outputs:
            if output.vc == -1:
                done = [sent[i, node, VirtualChannel(node, output.dim, v)] for v in range(V)]
                if max(done) < L:
                    left.append(VirtualChannel(node, output.dim, done.index(max(done)))
                                if max(done) else output)
            elif output.is_link and sent[i, node, output] < L:
                left.append(output)
        if any(o.dim == EJECT for o in outputs) and (i, node) not in delivered:
            left.append(VirtualChannel(node, EJECT, 0))
        if left:
            held[channel].append((cycle, i, left))
    if not held:
        return None
    waits = {}
    for channel, worms in held.items():
        worms.sort()
        _, i, left = worms[0]
        for output in left:
            if not output.is_link:
                continue
            if output.vc == -1:
                options = [VirtualChannel(output.node, output.dim, v) for v in range(V)]
            else:
                options = [output]
            # Waiting for an output it has started on: room there. For one it has not: every
            # candidate channel is held or filled by another worm.
            started_on = output.vc != -1 and sent[i, output.node, output] > 0
            busy = [o for o in options if (o in held or o in reserved)
                    and reserved.get(o) != i]
            if started_on and output in held:
                waits.setdefault(channel, []).append(output)
            elif not started_on and len(busy) == len(options):
                waits.setdefault(channel, []).extend(busy)
    held = {channel: [(i, left) for _, i, left in worms] for channel, worms in held.items()}
    return WormholeStall(records.stalled_at, held, reserved, waits, wait_cycle(waits))


def _worm_id(n, wormhole, stream, k):
    """The message number of the worm whose head is flit ``k`` of ``stream``: from its first
    body flit, the next flit on the channel; if only the head has crossed, from the low bits
    of the message number in the head (exact while fewer than ``2 ** (flit_width -
    header_bits(n))`` messages were drawn)."""
    mask = (1 << wormhole.flit_width) - 1
    if k + 1 < len(stream):
        body = head_fields(n, wormhole.flit_width).src_width(1)
        return (((stream[k + 1][1] & mask) >> body) - 1) // wormhole.flits
    return (stream[k][1] & mask) >> header_bits(n)


def _channel_name(channel):
    if channel.dim == INJECT:
        return f"node {channel.node} injection" + (" (broadcast)" if channel.vc else "")
    return str(channel)


def stall_report(records, routing, limit=12):
    """:func:`find_stall` as text: the cycle of waits over (link, virtual channel), then the
    blocked buffers."""
    stall = find_stall(records, routing)
    if stall is None:
        return f"  stalled at cycle {records.stalled_at}: no worm left in a buffer"
    worms = sum(len(held) for held in stall.held.values())
    text = [f"  stalled at cycle {stall.at}: {worms} worms in {len(stall.held)} buffers"]
    if stall.cycle:
        text.append("  cycle of waits over (link, vc): " + " waits for ".join(
            f"[{channel}]" for channel in stall.cycle + stall.cycle[:1]))
    else:
        text.append("  no cycle of waits among held channels")
    text.append("  blocked buffers (front worm, what it waits for):")
    lines = []
    for channel in sorted(stall.held):
        i, left = stall.held[channel][0]
        src, dest, kind = records.messages[i]
        what = (f"broadcast #{i} from node {src}" if kind else
                f"unicast #{i} from node {src} to node {dest}")
        wanted = ", ".join("PE" if not o.is_link else
                           f"dim {o.dim} (any vc)" if o.vc == -1 else f"[{o}]" for o in left)
        lines.append(f"    {_channel_name(channel)} holds {len(stall.held[channel])}: "
                     f"{what} waits for {wanted}")
    text += lines[:limit]
    if len(lines) > limit:
        text.append(f"    ... and {len(lines) - limit} more")
    return "\n".join(text)
