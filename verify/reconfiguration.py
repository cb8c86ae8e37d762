"""The reconfiguration procedure on a reconfigurable fabric's RTL, and its scoreboard.

A run is a list of :class:`Phase` s. Before each phase but the first (which runs on the
configuration after reset) a controller stops injection, waits until the fabric says it is
``idle``, offers the phase's configuration on the ``config`` port and resumes: the PEs then
inject the phase's requests, named by logical address (``docs/reconfiguration-hardware.md``).
:func:`check_procedure` checks each phase with :func:`ihcube.verify.scoreboard.check_run` in
that phase's logical addresses, so a planned shrink or grow must lose, duplicate or misroute
nothing. ``drain=False`` is the negative control's controller, which offers the next
configuration as soon as the phase's requests are injected, without waiting: the fabric's
interlock (``config.ready`` is ``idle``) then holds the load until the fabric has drained,
and a fabric without it (:attr:`ihcube.rtl.Fabric.drain_before_load` cleared) loads with
messages in flight, which the scoreboard reports.
"""

import random
from dataclasses import dataclass, field

from .harness import Delivery, Hop, Message, simulate
from .scoreboard import check_run

__all__ = ["Phase", "PhaseRecord", "run_procedure", "check_procedure"]


@dataclass(frozen=True)
class Phase:
    """A configuration ``(active_nodes, mask)`` (None: the one that holds) and the requests
    injected under it, as ``(logical source, Request)`` pairs (``at`` counts from the phase's
    start)."""
    configuration: object
    requests: list


@dataclass
class PhaseRecord:
    """What one phase did, in logical addresses: its configuration, the cycle its load was
    offered and the cycle it was taken (None for the first phase), whether the fabric refused
    it, and the injections ``(cycle, logical source, Request)``, hops and deliveries (their
    ``node`` the logical address at the time) of its requests."""
    configuration: tuple
    offered_at: object = None
    taken_at: object = None
    refused: bool = False
    injected: list = field(default_factory=list)
    hops: list = field(default_factory=list)
    deliveries: list = field(default_factory=list)


def run_procedure(fabric, phases, eject_ready=0.7, seed=0, drain=True, max_cycles=20000):
    """Simulate the phases on ``fabric`` (a reconfigurable :class:`~ihcube.rtl.Fabric`,
    flat); return a :class:`PhaseRecord` per phase. The run ends when the last phase has
    drained, or after ``max_cycles`` cycles. Hops and deliveries are given to the phase that
    injected the message (its payload says which: payloads must be unique)."""
    n = fabric.n
    rng = random.Random(seed)
    links = [(node, dim, port) for node, router in enumerate(fabric.routers)
             for dim, port in zip(router.dims, router.links_out)]
    records = []
    phase_of = {}  # payload -> its phase's record

    async def testbench(ctx):
        cycle = 0
        mask = ctx.get(fabric.mask)

        async def tick(offers=()):
            """One cycle: the offers ``(node, request)`` made, the PEs accepting at random;
            returns the requests taken. Hops and deliveries are recorded in logical
            addresses under the mask that holds in this cycle."""
            nonlocal cycle
            offering = dict(offers)
            for node in range(n):
                inject = fabric.inject[node]
                request = offering.get(node)
                ctx.set(inject.valid, request is not None)
                if request is not None:
                    ctx.set(inject.payload, {"dest": request.dest, "kind": request.kind,
                                             "payload": request.payload})
                ctx.set(fabric.eject[node].ready, rng.random() < eject_ready)
            taken = [(node, request) for node, request in offering.items()
                     if ctx.get(fabric.inject[node].ready)]
            for node in range(n):
                eject = fabric.eject[node]
                if ctx.get(eject.valid) and ctx.get(eject.ready):
                    message = Message.from_const(ctx.get(eject.payload))
                    owner = phase_of.get(message.payload)
                    if owner is not None:
                        owner.deliveries.append(Delivery(cycle, node ^ mask, message))
            for node, dim, port in links:
                if ctx.get(port.valid) and ctx.get(port.ready):
                    message = Message.from_const(ctx.get(port.payload))
                    owner = phase_of.get(message.payload)
                    if owner is not None:
                        owner.hops.append(Hop(cycle, node ^ mask, dim, message))
            await ctx.tick()
            cycle += 1
            return taken

        for phase in phases:
            record = PhaseRecord((ctx.get(fabric.active_nodes), mask))
            if phase.configuration is not None:
                if drain:  # the procedure: injection has stopped; wait for the fabric
                    while not ctx.get(fabric.idle) and cycle < max_cycles:
                        await tick()
                record.offered_at = cycle
                active_nodes, new_mask = phase.configuration
                ctx.set(fabric.config.payload, {"active_nodes": active_nodes,
                                                "mask": new_mask})
                ctx.set(fabric.config.valid, 1)
                while cycle < max_cycles:
                    ready = ctx.get(fabric.config.ready)
                    await tick()
                    if ready:
                        record.taken_at = cycle - 1
                        break
                ctx.set(fabric.config.valid, 0)
                record.refused = bool(ctx.get(fabric.config_refused))
                mask = ctx.get(fabric.mask)
                record.configuration = (ctx.get(fabric.active_nodes), mask)
            records.append(record)
            start = cycle
            queues = {}
            for source, request in phase.requests:
                queues.setdefault(source ^ mask, []).append(request)
                phase_of[request.payload] = record
            while any(queues.values()) and cycle < max_cycles:
                offers = [(node, queue[0]) for node, queue in queues.items()
                          if queue and queue[0].at <= cycle - start]
                for node, request in await tick(offers):
                    queues[node].pop(0)
                    record.injected.append((cycle - 1, node ^ mask, request))
        while not ctx.get(fabric.idle) and cycle < max_cycles:
            await tick()

    simulate(fabric, testbench)
    return records


def check_procedure(records, order="msb"):
    """Every problem of a run of :func:`run_procedure`, as sentences: each phase's messages
    checked by :func:`~ihcube.verify.scoreboard.check_run` over its active nodes (each
    delivered exactly once, along its path), and a configuration refused or never taken."""
    problems = []
    for k, record in enumerate(records):
        if k and record.taken_at is None:
            problems.append(f"phase {k}: configuration {record.configuration} never taken")
        if record.refused:
            problems.append(f"phase {k}: configuration refused")
        active_nodes = record.configuration[0]
        name = f"phase {k} ({active_nodes} active, mask {record.configuration[1]})"
        # A message still in flight at a load reaches routers under the next mask: at an
        # address the phase has not, or (else) where the scoreboard finds it wrong.
        outside = [event for event in record.hops + record.deliveries
                   if event.node >= active_nodes
                   or isinstance(event, Hop) and event.far >= active_nodes]
        problems += [f"{name}: {event} outside the active nodes" for event in outside]
        hops = [hop for hop in record.hops if hop not in outside]
        deliveries = [delivery for delivery in record.deliveries if delivery not in outside]
        problems += [f"{name}: {problem}"
                     for problem in check_run(active_nodes, record.injected, hops, deliveries,
                                              order)]
    return problems
