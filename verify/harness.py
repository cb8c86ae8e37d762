"""Drive a :class:`~ihcube.rtl.Fabric` in the Amaranth simulator and record what it does.

:class:`FabricHarness` feeds each node's PE from a queue, applies eject backpressure, and
records every injection, every link transfer (a link monitor on each link direction) and
every delivery, cycle by cycle. The checks in ``tests/`` compare those records with
:mod:`ihcube.topology`.

Set ``IHCUBE_VCD=path.vcd`` to write a waveform of a run.
"""

import os
import random
from collections import deque
from dataclasses import dataclass

from amaranth.sim import Simulator

from ..rtl.message import Kind

__all__ = ["Message", "Hop", "Delivery", "Request", "owed_deliveries", "accepts", "FabricHarness",
           "simulate", "Flit", "worm_flits", "owed_flits", "WormholeHarness"]


@dataclass(frozen=True)
class Message:
    """A message as seen on a link or at an eject port."""
    dest: int
    src: int
    kind: Kind
    travel: int
    payload: int

    @classmethod
    def from_const(cls, value):
        return cls(dest=value.dest, src=value.src, kind=Kind(value.kind),
                   travel=value.travel, payload=value.payload)


@dataclass(frozen=True)
class Hop:
    """A message crossing link ``dim`` from ``node`` in ``cycle``."""
    cycle: int
    node: int
    dim: int
    message: Message

    @property
    def far(self):
        return self.node ^ (1 << self.dim)


@dataclass(frozen=True)
class Delivery:
    """A message taken by the PE of ``node`` in ``cycle``, on its eject port ``port``."""
    cycle: int
    node: int
    message: Message
    port: int = 0


@dataclass(frozen=True)
class Request:
    """What a PE injects: a unicast to ``dest`` or a broadcast, offered from cycle ``at`` on
    its injection port ``port`` (each port offers its own requests in order)."""
    payload: int
    dest: int = 0
    kind: Kind = Kind.UNICAST
    at: int = 0
    port: int = 0


def check_waveform_path(path):
    """Raise ``ValueError`` saying why the waveform file ``path`` (``IHCUBE_VCD``) cannot be
    written, before a simulation that would end in a traceback after all its work."""
    try:
        with open(path, "a"):
            pass
    except OSError as error:
        raise ValueError(f"IHCUBE_VCD: cannot write {path!r}: {error.strerror}") from None


def simulate(dut, testbench, vcd_name="ihcube"):
    """Run ``testbench`` against ``dut`` with a clock; write a VCD if ``IHCUBE_VCD`` is set."""
    vcd = os.environ.get("IHCUBE_VCD")
    if vcd:
        check_waveform_path(vcd)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    if vcd:
        with sim.write_vcd(vcd, traces=[]):
            sim.run()
    else:
        sim.run()


def owed_deliveries(n, request):
    """The deliveries a taken request owes in an ``n``-node fabric: one per other node for a
    broadcast, one for a unicast to a node that exists, none for a refused one."""
    if request.kind == Kind.BROADCAST:
        return n - 1
    return 1 if request.dest < n else 0


def accepts(eject_ready, draw):
    """Whether a PE accepts a delivery in a cycle, with probability ``eject_ready``: always
    for 1.0, without a draw; else when ``draw()`` (a ``random.Random``'s ``random``) is below
    it. The harnesses draw with it, and the Icarus replays with it draw the same sequence."""
    return eject_ready >= 1.0 or draw() < eject_ready


class FabricHarness:
    """Traffic source, eject backpressure and link monitors around a fabric.

    Parameters
    ----------
    fabric : :class:`~ihcube.rtl.Fabric`
        Elaborated flat (with its ``routers``), so that its links can be watched.
    eject_ready : float
        Probability that a PE accepts a delivery in a given cycle (1.0: always).
    seed : int
        Seed of the backpressure pattern.

    Attributes
    ----------
    injected : list of (cycle, node, Request)
        Requests taken by the fabric (the PE handshake completed), refused ones included.
    hops : list of :class:`Hop`
    deliveries : list of :class:`Delivery`
    refused_count : list of int
        Each node's ``refused_count`` at the end of the run.
    refused : list of bool
        Each node's ``refused`` flag at the end of the run.
    cycles : int
        Cycles simulated.
    stalled_at : int or None
        The cycle at which the ``watchdog`` of :meth:`run` stopped the run, if it did.
    at_end : list of int
        The values, at the end of the run, of the signals :meth:`run` was given to read then.
    """

    def __init__(self, fabric, eject_ready=1.0, seed=0):
        if fabric.routers is None:
            raise ValueError("The harness watches links, so the fabric must be flat "
                             "(built without router_modules)")
        self.fabric = fabric
        self.eject_ready = eject_ready
        self._random = random.Random(seed)
        # One queue per node and injection port.
        self._queues = [[deque() for _ in range(fabric.ports)] for _ in range(fabric.n)]
        self.injected = []
        self.hops = []
        self.deliveries = []
        self.refused_count = []
        self.refused = []
        self.cycles = 0
        self.stalled_at = None
        self.at_end = []

    spec = property(lambda self: self.fabric.spec, doc="The fabric's :class:`FabricSpec`.")

    def send(self, node, request):
        """Queue ``request`` at the PE of ``node``, on its injection port ``request.port``;
        each port offers its queue in order."""
        self._queues[node][request.port].append(request)

    def run(self, max_cycles, expected_deliveries=None, idle_cycles=16, offer_until=None,
            watchdog=None, progress=None, read_at_end=()):
        """Simulate until ``expected_deliveries`` arrived and ``idle_cycles`` more passed, all
        queues are empty, or ``max_cycles`` cycles ran, whichever is first.

        From cycle ``offer_until`` on (if given) the PEs offer nothing more and accept every
        delivery: the fabric drains, and the queues are then done. If ``watchdog`` is given,
        the run also stops when no message has crossed a link or reached a PE for that many
        cycles while deliveries are still owed; ``stalled_at`` is then the cycle it stopped.
        With a watchdog, idle cycles do not end a run while deliveries are owed, so a stall
        while draining is reported as a stall, as the fast model's stress backend does, not
        only as messages lost.
        ``progress``, if given, is called with the number of cycles simulated after each cycle
        (a simulation of a large fabric runs a few cycles per second: the caller can show how
        far it is). The signals in ``read_at_end`` are read when the run stops (after its last
        cycle's edge), into :attr:`at_end`.
        """
        async def testbench(ctx):
            await self._testbench(ctx, max_cycles, expected_deliveries, idle_cycles,
                                  offer_until, watchdog, progress)
            self.at_end = [ctx.get(signal) for signal in read_at_end]
        simulate(self.fabric, testbench)
        return self

    async def _testbench(self, ctx, max_cycles, expected_deliveries, idle_cycles, offer_until,
                         watchdog, progress):
        fabric = self.fabric
        links = [(node, dim, port)
                 for node, router in enumerate(fabric.routers)
                 for dim, port in zip(router.dims, router.links_out)]
        quiet = 0
        still = 0  # cycles since a message last crossed a link or reached a PE
        in_flight = 0  # deliveries still owed for the messages taken
        for cycle in range(max_cycles):
            draining = offer_until is not None and cycle >= offer_until
            offered = [[not draining and bool(queue) and queue[0].at <= cycle
                        for queue in queues] for queues in self._queues]
            for node, queues in enumerate(self._queues):
                for p, (port, queue) in enumerate(zip(fabric.injects(node), queues)):
                    if offered[node][p]:
                        request = queue[0]
                        ctx.set(port.payload.dest, request.dest)
                        ctx.set(port.payload.kind, request.kind)
                        ctx.set(port.payload.payload, request.payload)
                    ctx.set(port.valid, offered[node][p])
                for port in fabric.ejects(node):
                    ready = draining or accepts(self.eject_ready, self._random.random)
                    ctx.set(port.ready, ready)

            injected = False
            for node, queues in enumerate(self._queues):
                for p, (port, queue) in enumerate(zip(fabric.injects(node), queues)):
                    if offered[node][p] and ctx.get(port.ready):
                        request = queue.popleft()
                        self.injected.append((cycle, node, request))
                        in_flight += owed_deliveries(fabric.n, request)
                        injected = True
            travelled = False
            for node in range(fabric.n):
                for p, port in enumerate(fabric.ejects(node)):
                    if ctx.get(port.valid) and ctx.get(port.ready):
                        message = Message.from_const(ctx.get(port.payload))
                        self.deliveries.append(Delivery(cycle, node, message, p))
                        in_flight -= 1
                        travelled = True
            for node, dim, port in links:
                if ctx.get(port.valid) and ctx.get(port.ready):
                    message = Message.from_const(ctx.get(port.payload))
                    self.hops.append(Hop(cycle, node, dim, message))
                    travelled = True

            await ctx.tick()
            self.cycles = cycle + 1
            if progress is not None:
                progress(self.cycles)
            done = (len(self.deliveries) >= expected_deliveries
                    if expected_deliveries is not None
                    else draining or not any(any(queues) for queues in self._queues))
            quiet = quiet + 1 if done and not (injected or travelled) else 0
            watched = watchdog is not None and in_flight > 0  # the watchdog ends this run
            if done and quiet >= idle_cycles and not watched:
                break
            still = 0 if travelled else still + 1
            if watched and still >= watchdog:
                self.stalled_at = self.cycles
                break

        self.refused_count = [ctx.get(count) for count in fabric.refused_count]
        self.refused = [bool(ctx.get(flag)) for flag in fabric.refused]


# --- Wormhole switching: the same records, assembled from flits -------------------------------


@dataclass(frozen=True)
class Flit:
    """A flit seen on link ``dim`` from ``node`` (on virtual channel ``vc``), or at the eject
    port of ``node`` (``dim`` and ``vc`` None), in ``cycle``."""
    cycle: int
    node: int
    dim: object
    vc: object
    payload: int
    head: bool
    tail: bool


def worm_flits(n, wormhole, src, request):
    """The flits a PE injects for ``request``: the head's routing fields (``src`` is left 0:
    the router stamps it) with the low bits of the request's ``payload`` (its id) above the
    header where the head flit has room, then body flits ``payload * flits + k`` (``k = 1 ..
    flits - 1``), each above the bits of ``src`` that run on into it
    (:class:`ihcube.params.HeadFields`), so that a flit lost, repeated, reordered or taken from
    another message shows (:func:`ihcube.verify.scoreboard.check_worms`)."""
    from ..params import head_fields, header_bits
    fields = head_fields(n, wormhole.flit_width)
    header = request.dest | (request.kind.value << fields.kind_bit)
    head = header | ((request.payload & ((1 << fields.free_bits) - 1)) << header_bits(n))
    mask = (1 << wormhole.flit_width) - 1
    return [head] + [((request.payload * wormhole.flits + k) << fields.src_width(k)) & mask
                     for k in range(1, wormhole.flits)]


def owed_flits(n, wormhole, request):
    """The eject flits that ``request`` owes in an ``n``-node wormhole fabric: ``flits`` per
    node it reaches."""
    return owed_deliveries(n, request) * wormhole.flits


class WormholeHarness:
    """Traffic source, eject backpressure and link monitors around a
    :class:`~ihcube.rtl.WormholeFabric`, flit by flit.

    Each PE offers its queued :class:`Request` s in order, each as the flits of
    :func:`worm_flits`. ``injected`` records a request when its head is taken; ``flits``
    records every flit that crosses a link and every flit an eject port delivers.
    :func:`ihcube.verify.scoreboard.check_worms` checks the records.

    Parameters
    ----------
    fabric : :class:`~ihcube.rtl.WormholeFabric`
        Elaborated flat.
    eject_ready : float
        Probability that a PE accepts a flit in a cycle.
    seed : int
        Seed of the backpressure.
    """

    def __init__(self, fabric, eject_ready=1.0, seed=0):
        if fabric.routers is None:
            raise ValueError("The harness watches links, so the fabric must be flat "
                             "(built without router_modules)")
        self.fabric = fabric
        self.eject_ready = eject_ready
        self._random = random.Random(seed)
        self._queues = [deque() for _ in range(fabric.n)]
        self.injected = []
        self.flits = []
        self.cycles = 0
        self.stalled_at = None
        self.refused_count = []

    def send(self, node, request):
        """Queue ``request`` at the PE of ``node``."""
        self._queues[node].append(request)

    def owed(self, request):
        """Eject flits that a request owes: ``flits`` per node it reaches."""
        return owed_flits(self.fabric.n, self.fabric.wormhole, request)

    def run(self, max_cycles, watchdog=200):
        """Simulate until every queued flit is delivered (plus a few idle cycles), no flit has
        moved for ``watchdog`` cycles while some are owed (``stalled_at`` is then set), or
        ``max_cycles`` ran."""
        async def testbench(ctx):
            await self._testbench(ctx, max_cycles, watchdog)
        simulate(self.fabric, testbench, "ihcube_wormhole")
        return self

    async def _testbench(self, ctx, max_cycles, watchdog):
        fabric, wh = self.fabric, self.fabric.wormhole
        links = [(node, dim, port) for node, router in enumerate(fabric.routers)
                 for dim, port in zip(router.dims, router.links_out)]
        owed = sum(self.owed(request) for queue in self._queues for request in queue)
        pending = [None] * fabric.n  # (request, flits left) being injected at each node
        still = quiet = 0
        for cycle in range(max_cycles):
            offered = [False] * fabric.n
            for node, queue in enumerate(self._queues):
                if pending[node] is None and queue and queue[0].at <= cycle:
                    request = queue.popleft()
                    pending[node] = (request, worm_flits(fabric.n, wh, node, request))
                if pending[node] is not None:
                    ctx.set(fabric.inject[node].payload, pending[node][1][0])
                    offered[node] = True
                ctx.set(fabric.inject[node].valid, offered[node])
                ctx.set(fabric.eject[node].ready, accepts(self.eject_ready, self._random.random))
            moved = False
            for node in range(fabric.n):
                if offered[node] and ctx.get(fabric.inject[node].ready):
                    request, flits = pending[node]
                    if len(flits) == wh.flits:
                        self.injected.append((cycle, node, request))
                    flits.pop(0)
                    moved = True
                    if not flits:
                        pending[node] = None
                port = fabric.eject[node]
                if ctx.get(port.valid) and ctx.get(port.ready):
                    flit = ctx.get(port.payload)
                    self.flits.append(Flit(cycle, node, None, None, flit.payload,
                                           bool(flit.head), bool(flit.tail)))
                    owed -= 1
                    moved = True
            for node, dim, port in links:
                if ctx.get(port.valid):
                    vc = ctx.get(port.vc)
                    if ctx.get(port.ready) >> vc & 1:
                        flit = ctx.get(port.flit)
                        self.flits.append(Flit(cycle, node, dim, vc, flit.payload,
                                               bool(flit.head), bool(flit.tail)))
                        moved = True
            await ctx.tick()
            self.cycles = cycle + 1
            busy = owed > 0 or any(self._queues) or any(p is not None for p in pending)
            quiet = 0 if busy or moved else quiet + 1
            if quiet >= 8:
                break
            still = 0 if moved else still + 1
            if busy and still >= watchdog and not any(
                    queue and queue[0].at > cycle for queue in self._queues):
                self.stalled_at = self.cycles
                break
        self.refused_count = [ctx.get(count) for count in fabric.refused_count]
