"""Collective communication on the fabric model, against the bounds of SPEC section 7.

Collectives (each PE offers its messages in a fixed order, back to back, from cycle 0):

- ``broadcast``: single-node broadcast from node 0, one hardware broadcast (Katseff,
  Algorithm 6).
- ``scatter``: single-node scatter from node 0, ``n - 1`` unicasts, farthest first. It is
  also the single-node broadcast done with ``n - 1`` unicasts (the same messages).
- ``multinode``: multinode broadcast, every node one hardware broadcast.
- ``exchange``: total exchange, every node a unicast to every other, node ``a`` sending to
  ``a XOR k`` for ``k`` in bit-reversed order (``k = 2**(D-1), 2**(D-2), 3 * 2**(D-2),
  ...``; numbers that are not nodes skipped). In a complete cube the nodes' ``k``-th
  messages form a permutation, and successive messages of a node alternate between the two
  halves of the top dimension, so that the top links are busy all along.
- ``relay``: multinode broadcast by relays: every message goes from PE to PE as one-hop
  unicasts (its origin in the payload), each PE offering again what it was delivered, on the
  timed hops of :func:`relay_hops`; a hop is offered only once the model has delivered its
  message to the sender.
- ``segment``: multinode broadcast by relays whose hops are *segments*, unicasts of any
  length between two PEs (:func:`segment_hops`): on the complete 4-, 5- and 6-cubes at
  depth 2 or more with at least ``d`` ports, the stored trees of
  :data:`~ihcube.sim.schedule.SEGMENT_TREES`; elsewhere the one-hop relays of ``relay``.

The *completion* ``C`` of a run is the cycle of the last delivery minus the cycle of the first
injection minus one: the one cycle that every message spends between the injection buffer and
its first link is not counted, so that a single message over ``h`` hops completes in ``h``,
the unit of the bounds (one message per link direction per cycle).

Bounds (derivation in ``docs/collectives.md``); ``e_i`` is the number of links of dimension
``i``, ``L_i`` and ``U_i`` the nodes with bit ``i`` clear and set, ``deg(a)`` the links of
``a``, ``ecc(a)`` the largest distance from ``a``, ``diam`` the largest distance:

- link bounds, for any routing with one message per link direction per cycle:
  broadcast ``ecc(0)``; scatter ``max(ecc(0), ceil((n-1)/deg(0)), max_i ceil(F_i/e_i))``
  with ``F_i`` the nodes on the other side of cut ``i`` from node 0; multinode broadcast
  ``max(diam, max_a ceil((n-1)/deg(a)), max_i ceil(max(|L_i|, |U_i|)/e_i))``; total
  exchange ``max(diam, max_a ceil((n-1)/deg(a)), max_i ceil(|L_i| |U_i| / e_i))``. For a
  complete ``d``-cube they are SPEC section 7's ``d``, ``ceil((2**d-1)/d)`` (twice) and
  ``2**(d-1)``. ``relay`` and ``segment`` have the bounds of ``multinode``; ``relay`` also
  :func:`relay_bound`, and all three :func:`broadcast_bound` (any scheme the hardware
  allows, complete cubes).
- route bound: the messages that the routes put on the busiest link direction (counted
  in the run), one per cycle (every other cycle at depth 1).
- port bounds, from the PE ports (SPEC section 5, ``docs/ports.md``): each of a PE's ``P``
  injection ports takes at most one message every ``g`` cycles (``g = 2`` at depth 1, else
  1) and each eject port accepts at most one per cycle, so a PE that injects ``k`` messages
  needs ``C >= g (ceil(k / P) - 1) + 1`` and one that accepts ``k`` through the ``E`` eject
  ports its links reach (``topology.eject_port``) needs ``C >= ceil(k / E)``.

With ``P = 1`` every PE offers its messages back to back from cycle 0. With ``P > 1``,
scatter and total exchange (:data:`TIMED`) are timed by :func:`schedule`: every message gets
an injection cycle and port in which nothing it needs on its way is taken, so that none
waits (:mod:`ihcube.sim.schedule`); the hardware broadcasts are offered at once.
"""

import functools
import math

import numpy as np

from .. import topology
from ..rtl.message import Kind
from ..spec import FabricSpec
from .by_distance import class_size
from .model import Model, threads_for
from .schedule import greedy, hops, relays, segment_tree, translated_tree

__all__ = ["COLLECTIVES", "MULTINODE", "link_bound", "port_bound", "relay_bound", "broadcast_bound",
           "route_bound", "schedule", "relay_hops", "segment_hops", "Run", "run", "run_all",
           "write_csv", "table"]

COLLECTIVES = ("broadcast", "scatter", "multinode", "exchange", "relay", "segment")

#: The collectives that are a multinode broadcast (every node's message to every other node).
MULTINODE = ("multinode", "relay", "segment")


@functools.lru_cache(maxsize=4)
def _structure(n):
    """Degrees, link counts per dimension, the sizes of the upper sides of each dimension's
    cut, and the diameter."""
    D = topology.dimensions(n)
    degree = [len(topology.links(n, a)) for a in range(n)]
    edges = [sum(1 for a in range(n) if topology.link_exists(n, a, i) and a >> i & 1 == 0)
             for i in range(D)]
    upper = [sum(1 for a in range(n) if a >> i & 1) for i in range(D)]
    return D, degree, edges, upper, topology.diameter(n)


def link_bound(n, collective, origin=0):
    """The fewest cycles ``collective`` can take on ``n`` nodes with one message per link
    direction per cycle (see the module docstring)."""
    if collective not in COLLECTIVES:
        raise ValueError(f"Collective must be one of {', '.join(COLLECTIVES)}, "
                         f"not {collective!r}")
    topology.check_node(n, origin, "Origin")
    if n == 1:
        return 0
    D, degree, edges, upper, diameter = _structure(n)
    ecc = max(topology.distances(n, origin))
    if collective == "broadcast":
        return ecc
    if collective == "scatter":
        far = [upper[i] if origin >> i & 1 == 0 else n - upper[i] for i in range(D)]
        return max([ecc, math.ceil((n - 1) / degree[origin])]
                   + [math.ceil(far[i] / edges[i]) for i in range(D)])
    receive = max(math.ceil((n - 1) / k) for k in degree)
    if collective in MULTINODE:
        cuts = [math.ceil(max(n - upper[i], upper[i]) / edges[i]) for i in range(D)]
    else:
        cuts = [math.ceil((n - upper[i]) * upper[i] / edges[i]) for i in range(D)]
    return max([diameter, receive] + cuts)


def port_bound(n, collective, depth, ports=1):
    """The fewest cycles ``collective`` can take through the PE ports: ``ports`` injection
    ports, each taking a message every ``g`` cycles, and eject ports chosen by
    :func:`ihcube.topology.eject_port`, each taking one message per cycle."""
    if n == 1:
        return 0
    gap = 2 if depth == 1 else 1
    # A relaying PE injects one message for each neighbour it passes a message to: n - 1
    # over the whole broadcast, as many as it receives (each message reaches it once).
    inject = {"broadcast": 1, "scatter": n - 1, "multinode": 1, "exchange": n - 1,
              "relay": n - 1, "segment": n - 1}[collective]
    accept = {"broadcast": 1, "scatter": 1, "multinode": n - 1, "exchange": n - 1,
              "relay": n - 1, "segment": n - 1}[collective]
    # The eject ports that a node's links reach: a node with fewer of them accepts less.
    reached = min(len({topology.eject_port(n, ports, l) for l in topology.links(n, a)})
                  for a in range(n))
    return max(gap * (math.ceil(inject / ports) - 1) + 1, math.ceil(accept / reached))


def relay_bound(n, depth=2, ports=1):
    """The fewest cycles a multinode broadcast by relays can take (``docs/collectives.md``,
    "A lower bound for relays"): every hop a one-hop unicast, which the receiving PE can
    offer again from the cycle after its delivery.

    A message taken in cycle ``s`` is delivered one hop away in ``s + 2`` and taken again
    at the earliest in ``s + 3``, so a message from ``k`` hops away reaches a node no earlier
    than cycle ``3k - 1`` after the first injection. Node ``x`` has ``S_k`` nodes ``k`` or
    more hops away, whose messages it accepts over its ``deg`` links (each one every ``g``
    cycles) and the ``E`` eject ports they reach (each one a cycle): at most
    ``min(deg ceil(w / g), E w)`` of them in the ``w`` cycles from ``3k - 1`` on. The last
    delivery, ``C + 1`` cycles after the first injection, needs every ``k``'s window."""
    if n == 1:
        return 0
    gap = 2 if depth == 1 else 1
    D, degree, _, _, _ = _structure(n)
    best = 0
    for x in range(n):
        reached = len({topology.eject_port(n, ports, l) for l in topology.links(n, x)})
        for k in range(1, D + 1):
            far = int(class_size(n, x, k, D))  # counted, not listed: O(n D**2) in all
            if far:
                w = max(math.ceil(far / reached), gap * (math.ceil(far / degree[x]) - 1) + 1)
                best = max(best, w + 3 * k - 3)
    return best


#: Cycles from a delivery to the first cycle in which the receiving PE can offer the message
#: again (it cannot offer in the cycle of a delivery what that delivery brings).
REOFFER = 1


def _multinode_impossible(d, C):
    """True if no multinode broadcast on the complete ``d``-cube can complete in ``C``
    cycles: the counting argument of :func:`broadcast_bound`."""
    n = 1 << d
    if C < d:  # the antipode's message crosses d links, one a cycle
        return True
    # Link crossings that deliver nothing new, that C cycles leave room for.
    spare = n * d * C - n * (n - 1)
    # A hardware broadcast puts n / 2 copies on the links of the last dimension of the
    # routing order, which carry n C messages in C cycles.
    broadcast = min(n, (n * C) // (n // 2))
    # A message never broadcast reaches its antipode by r segments of d hops in all,
    # delivered no earlier than d + r + REOFFER (r - 1); each segment passes k - 1 nodes
    # without delivering there.
    segments = min(d, (C + 1 + REOFFER - d) // (1 + REOFFER))
    return segments < 1 or (n - broadcast) * (d - segments) > spare


def broadcast_bound(n):
    """The fewest cycles any multinode broadcast this hardware allows can take on ``n`` nodes
    (``docs/collectives.md``, "A lower bound for every scheme"): hardware broadcasts,
    unicasts of any length and relays by PEs with any timing, one message per link direction
    per cycle. On a complete ``d``-cube the smallest ``C`` from the link bound up that the
    counting argument of :func:`_multinode_impossible` does not rule out; on other sizes
    the link bound."""
    C = link_bound(n, "multinode")
    if n < 4 or n & (n - 1):
        return C
    d = topology.dimensions(n)
    while _multinode_impossible(d, C):
        C += 1
    return C


def _bit_reversed(D):
    """``0 .. 2**D - 1`` in bit-reversed order: consecutive entries differ in the top bit."""
    k = np.arange(1 << D, dtype=np.int64)
    out = np.zeros_like(k)
    for bit in range(D):
        out |= (k >> bit & 1) << (D - 1 - bit)
    return out


def _requests(n, collective, origin=0):
    """Each node's messages: ``start`` (n + 1; node ``a`` sends messages ``start[a] ..
    start[a + 1] - 1``, in order), their ``dests`` and ``kinds`` (:class:`~ihcube.rtl.Kind`
    values), and the expected ``(src, dest)`` deliveries as an ``(n, n)`` matrix."""
    expected = np.zeros((n, n), np.int32)
    if collective == "broadcast":
        counts = np.zeros(n, np.int64)
        counts[origin] = 1
        dests = np.zeros(1, np.int64)
        kinds = np.full(1, Kind.BROADCAST.value, np.int64)
        expected[origin] = 1
    elif collective == "scatter":
        counts = np.zeros(n, np.int64)
        counts[origin] = n - 1
        distance = np.array(topology.distances(n, origin))
        others = np.array([b for b in range(n) if b != origin], np.int64)
        dests = others[np.argsort(-distance[others], kind="stable")]
        kinds = np.full(len(dests), Kind.UNICAST.value, np.int64)
        expected[origin] = 1
    elif collective == "multinode":
        counts = np.ones(n, np.int64)
        dests = np.zeros(n, np.int64)
        kinds = np.full(n, Kind.BROADCAST.value, np.int64)
        expected[:] = 1
    else:
        D = topology.dimensions(n)
        every = np.arange(n, dtype=np.int64)[:, None] ^ _bit_reversed(D)[1:]
        keep = every < n
        counts = keep.sum(axis=1)
        dests = every[keep]
        kinds = np.full(len(dests), Kind.UNICAST.value, np.int64)
        expected[:] = 1
    np.fill_diagonal(expected, 0)
    start = np.zeros(n + 1, np.int64)
    start[1:] = np.cumsum(counts)
    return start, dests, kinds, expected


def _uses(n, ports, sources, dests, order):
    """The resources each unicast needs and when, relative to its injection cycle: the
    links of its path in cycles ``1 .. h`` and the eject port of its last link in ``h + 1``
    (the argument ``start, resource, offset, spaced`` of
    :func:`~ihcube.sim.schedule.greedy`)."""
    D = topology.dimensions(n)
    sources, dests = np.asarray(sources, np.int64), np.asarray(dests, np.int64)
    resource, offset, spaced = [], [], []
    # In blocks, to bound the memory of the hop table.
    starts = [np.zeros(1, np.int64)]
    for first in range(0, len(sources), 1 << 18):
        block = slice(first, first + (1 << 18))
        links, count = hops(n, sources[block], dests[block], order)
        width = links.shape[1] + 1
        eject = n * D + dests[block] * ports + topology.eject_port(
            n, ports, links[np.arange(len(count)), count - 1] % D)
        table = np.concatenate([links, eject[:, None]], axis=1)
        table[np.arange(len(count)), count] = eject
        used = np.arange(width)[None, :] <= count[:, None]
        resource.append(table[used].astype(np.int32))
        offset.append(np.broadcast_to(np.arange(1, width + 1, dtype=np.int16),
                                      table.shape)[used])
        spaced.append((np.arange(width)[None, :] < count[:, None])[used])
        starts.append(starts[-1][-1] + np.cumsum(count + 1))
    return (np.concatenate(starts), np.concatenate(resource), np.concatenate(offset),
            np.concatenate(spaced))


#: The collectives that :func:`run` times with :func:`schedule` when a node has several PE
#: ports. The others are hardware broadcasts, offered at once: a node sends one message, and
#: the routers' arbiters order the copies (with ``D + 1`` ports, multinode broadcast then
#: meets its route bound on complete cubes).
TIMED = ("scatter", "exchange")


def schedule(n, collective, ports, depth=2, order=topology.MSB_FIRST, priority=None):
    """Injection cycles and ports for the messages of :func:`_requests` on ``ports`` PE
    ports, chosen by :func:`~ihcube.sim.schedule.greedy` so that no message waits.

    ``priority`` is the order in which messages choose: ``"given"`` (each node's list in
    turn, as :func:`_requests` gives them); ``"round"`` (every node's first message, then
    every node's second, and so on); ``"falling"`` (by ``source XOR destination``, from the
    largest: on a complete cube each value is a permutation of the nodes, and all nodes get
    the same cycle for it); ``"longest"`` (the longest paths first, then by ``source XOR
    destination`` from the smallest). The default, the best measured
    (``docs/collectives.md``): ``"falling"`` on complete cubes, ``"longest"`` on the
    others. Returns ``(at, port, predicted)``: the cycles, the ports, and the
    completion the schedule gives if no message waits."""
    if collective not in TIMED:
        raise ValueError(f"Timed collectives are {', '.join(TIMED)}, not {collective!r}")
    if priority is None:
        priority = "falling" if n & (n - 1) == 0 else "longest"
    start, dests, _, _ = _requests(n, collective)
    sources = np.repeat(np.arange(n), np.diff(start))
    uses = _uses(n, ports, sources, dests, order)
    pattern = sources ^ dests
    rank = np.arange(len(sources)) - start[sources]
    keys = {"given": (rank, sources),
            "round": (sources, rank),
            "falling": (sources, -pattern),
            "longest": (sources, pattern, -(np.diff(uses[0]) - 1))}  # hops: uses less one
    order_ = np.lexsort(keys[priority])
    at, port = greedy(n, ports, depth, sources, *uses, order_)
    ends = at + np.maximum.reduceat(uses[2], uses[0][:-1]) if len(at) else at
    predicted = int(ends.max() - 1 - at.min()) if len(at) else 0
    return at, port, predicted


def _translated(n, node, parent, slot, port):
    """Every source's copy of a tree rooted at node 0, as hops in slot order: source ``a``'s
    copy of the edge ``parent -> node`` goes from ``a XOR parent`` to ``a XOR node``."""
    origin = np.repeat(np.arange(n, dtype=np.int64), len(node))
    hops_ = (np.tile(slot, n), origin ^ np.tile(parent, n), origin ^ np.tile(node, n), origin,
             np.tile(port, n))
    by_slot = np.argsort(hops_[0], kind="stable")
    return tuple(column[by_slot] for column in hops_)


def relay_hops(n, ports, depth=2):
    """The hops of the relayed multinode broadcast, in slot order: ``(slot, sender, dest,
    origin, port)`` arrays, one entry a one-hop unicast (``sender`` passes ``origin``'s
    message to its neighbour ``dest``, taken from injection port ``port`` in ``slot``). On a
    complete cube, the spanning tree of :func:`~ihcube.sim.schedule.translated_tree`
    translated to every source; on the others, the link-by-link relays of
    :func:`~ihcube.sim.schedule.relays`."""
    if n & (n - 1):
        slot, sender, dim, origin, port = relays(n, ports, depth)
        return slot, sender, sender ^ (1 << dim), origin, port
    node, dim, slot, port = translated_tree(topology.dimensions(n), ports, depth)
    return _translated(n, node, node ^ (1 << dim), slot, port)


def segment_hops(n, ports, depth=2, order=topology.MSB_FIRST):
    """The hops of the multinode broadcast by segments, as :func:`relay_hops` gives them, but
    a hop may be a unicast of several links: on a complete cube with a tree of
    :func:`~ihcube.sim.schedule.segment_tree` for ``ports``, ``depth`` and the routing
    ``order``, that tree translated to every source; otherwise :func:`relay_hops` (a one-hop
    unicast is a segment too)."""
    tree = (None if n & (n - 1)
            else segment_tree(topology.dimensions(n), ports, depth, order))
    if tree is None:
        return relay_hops(n, ports, depth)
    return _translated(n, *tree)


def _offer_relays(model, n, schedule, max_cycles):
    """Drive ``model`` with the relays of ``schedule`` one cycle at a time: a hop is offered
    in its cycle (its slot + 1: no buffer takes a message in the reset cycle) if its sender
    has been delivered the message by then, which the model's delivery records tell, and
    otherwise as soon as it has. Returns the deliveries of the run and the cycle of its
    first injection."""
    slot, sender, dest, origin, port = schedule
    due = slot + 1
    holds = np.eye(n, dtype=bool)  # holds[x, a]: node x has been delivered a's message
    waiting = np.zeros(0, np.int64)
    taken = 0
    records = []
    extra = None  # cycles to run on after the last hop, for deliveries that should not come
    first = -1
    while model.cycle < max_cycles and extra != 0:
        now = model.cycle
        upto = int(np.searchsorted(due, now, side="right"))
        batch = np.concatenate([waiting, np.arange(taken, upto)])
        taken = upto
        ready = holds[sender[batch], origin[batch]]
        go, waiting = batch[ready], batch[~ready]
        if len(go):
            model.offer(sender[go], dest[go], Kind.UNICAST.value, origin[go], now, port[go])
        step = model.advance(1, count_links=True)
        got = step.deliveries
        holds[got["node"], got["payload"]] = True
        records.append(got)
        if first < 0 and len(step.injections):
            first = int(step.injections["cycle"][0])
        if extra is None and taken == len(due) and not len(waiting) and model.idle:
            extra = 2 * topology.dimensions(n) + 4
        elif extra is not None:
            extra -= 1
    return np.concatenate(records), first


def _run_relay(model, n, collective, depth, order, ports, max_cycles):
    """:func:`run` for ``"relay"`` and ``"segment"``: the hops of :func:`relay_hops` or
    :func:`segment_hops`, each message's origin in its payload; the deliveries must bring
    every origin's message to every other node exactly once."""
    plan = (relay_hops(n, ports, depth) if collective == "relay"
            else segment_hops(n, ports, depth, order))
    got, first = _offer_relays(model, n, plan, max_cycles)
    expected = 1 - np.eye(n, dtype=np.int32)
    received = np.zeros((n, n), np.int32)
    np.add.at(received, (got["payload"], got["node"]), 1)
    misrouted = int((got["dest"] != got["node"]).sum())
    complete = bool(misrouted == 0 and np.array_equal(received, expected))
    # Deliveries later than planned (taken in slot + 1, delivered h + 1 cycles later): a hop
    # that waited, for a busy resource or for its sender to get the message.
    slot, sender, dest, origin, _ = plan
    length = np.bitwise_count(sender ^ dest).astype(np.int64)  # hops (Katseff, Theorem 1)
    planned = np.full((n, n), -1, np.int64)
    planned[origin, dest] = slot + length + 2
    late = int((got["cycle"] != planned[got["payload"], got["node"]]).sum())
    link_count = model.link_counts
    busiest = int(link_count.max()) if len(link_count) else 0
    return Run(n=n, collective=collective, depth=depth, order=order, cycles=model.cycle,
               completion=int(got["cycle"].max()) - first - 1 if complete and len(got) else
               (0 if complete else None),
               complete=complete, delivered=len(got), expected=int(expected.sum()),
               misrouted=misrouted, hops=model.transfers, received=received,
               expected_matrix=expected, link_count=link_count, busiest=busiest,
               route_bound=route_bound(busiest, depth), ports=ports, late=late,
               predicted=int((slot + length).max() - slot.min()) if len(slot) else 0)


#: Cycles a :meth:`Model.advance <ihcube.sim.model.Model.advance>` call of a run covers,
#: which bounds the deliveries it records at once.
CHUNK = 256


class Run:
    """What :func:`run` measured: ``completion`` (``C``, or None if not every message
    arrived), ``complete`` (every expected message exactly once, nothing misrouted),
    ``delivered``, ``expected``, ``hops`` (link messages), ``cycles`` simulated, ``ports``,
    and ``predicted``, the completion of the timed schedule (None if not timed); for
    ``relay``, ``late``: deliveries that came later than the schedule planned."""

    def __init__(self, **fields):
        self.__dict__.update(fields)


def run(n, collective, depth=2, order=topology.MSB_FIRST, max_cycles=None, ports=1,
        priority=None, threads=1):
    """Simulate ``collective`` on a fresh ``n``-node model with ``ports`` PE ports, on
    ``threads`` threads (:func:`~.model.threads_for`); return a :class:`Run`. With one port
    each PE offers its messages back to back from cycle 0, on port 0; with more, each message
    of a :data:`TIMED` collective is offered from the cycle and on the port of
    :func:`schedule` (``priority``), so that no message waits."""
    if collective not in COLLECTIVES:
        raise ValueError(f"Collective must be one of {', '.join(COLLECTIVES)}, "
                         f"not {collective!r}")
    model = Model(FabricSpec.of(n, depth=depth, order=order, ports=ports),
                  threads=threads_for(n, threads))
    if max_cycles is None:
        max_cycles = 4 * (link_bound(n, collective) + port_bound(n, collective, depth)) + 100
    if collective in ("relay", "segment"):
        return _run_relay(model, n, collective, depth, order, ports, max_cycles)
    start, dests, kinds, expected = _requests(n, collective)
    sources = np.repeat(np.arange(n), np.diff(start))
    payloads = np.arange(start[-1])  # a payload is the message's number
    predicted = None
    if ports == 1 or collective not in TIMED:
        model.offer(sources, dests, kinds, payloads=payloads)
    else:
        at, port, predicted = schedule(n, collective, ports, depth, order, priority)
        # A port's source queue is first in, first out: offer its messages by cycle. The
        # schedule starts in cycle 1: in cycle 0, the reset cycle, no buffer takes a message.
        queue = np.lexsort((at, port, sources))
        model.offer(sources[queue], dests[queue], kinds[queue], payloads[queue],
                    at[queue] + 1, port[queue])
    total = int(expected.sum())
    received = np.zeros((n, n), np.int32)
    first = last = -1
    misrouted = 0
    # Run until every expected delivery has come, then 2 D + 4 cycles more for extra ones.
    watch = None
    while model.cycle < max_cycles and watch != 0:
        if watch is None:
            run = model.advance(min(CHUNK, max_cycles - model.cycle), count_links=True,
                                until_delivered=total - model.delivered)
        else:
            run = model.advance(min(watch, max_cycles - model.cycle), count_links=True)
            watch = 0
        got = run.deliveries
        if first < 0 and len(run.injections):
            first = int(run.injections["cycle"][0])
        counted = min(total - (model.delivered - len(got)), len(got))
        if counted > 0:
            last = int(got["cycle"][counted - 1])
        misrouted += int(((got["kind"] == Kind.UNICAST.value)
                          & (got["dest"] != got["node"])).sum())
        np.add.at(received, (got["src"], got["node"]), 1)
        if watch is None and model.delivered >= total:
            watch = 2 * topology.dimensions(n) + 4
    cycles, got, hops = model.cycle, model.delivered, model.transfers
    link_count = model.link_counts
    complete = bool(misrouted == 0 and np.array_equal(received, expected))
    busiest = int(link_count.max()) if len(link_count) else 0
    return Run(n=n, collective=collective, depth=depth, order=order, cycles=cycles,
               completion=last - first - 1 if complete else None, complete=complete,
               delivered=got, expected=int(expected.sum()), misrouted=misrouted, hops=hops,
               received=received, expected_matrix=expected,
               link_count=link_count, busiest=busiest,
               route_bound=route_bound(busiest, depth), ports=ports, predicted=predicted)


def route_bound(busiest, depth):
    """The fewest cycles for ``busiest`` messages across one link direction: one per cycle,
    one every other cycle at depth 1 (SPEC section 3)."""
    if busiest == 0:
        return 0
    return (2 if depth == 1 else 1) * (busiest - 1) + 1


def run_all(task):
    """Every collective (or those named) on ``n`` nodes at ``depth`` (with ``ports`` PE ports,
    default 1; each model on ``threads`` threads, default 1, which changes no row), as rows
    (for a process pool); ``task`` is ``(n, depth)``, ``(n, depth, ports)``, ``(n, depth,
    ports, collectives)`` or ``(n, depth, ports, collectives, threads)``."""
    n, depth = task[:2]
    pe_ports = task[2] if len(task) > 2 else 1
    which = task[3] if len(task) > 3 else COLLECTIVES
    threads = task[4] if len(task) > 4 else 1
    rows = []
    for collective in which:
        result = run(n, collective, depth, ports=pe_ports, threads=threads)
        links = link_bound(n, collective)
        ports = port_bound(n, collective, depth, pe_ports)
        relayed = relay_bound(n, depth, pe_ports) if collective == "relay" else None
        every = broadcast_bound(n) if collective in MULTINODE else None
        bound = max(links, ports, result.route_bound, relayed or 0, every or 0)
        C = result.completion
        rows.append(dict(
            n=n, complete_cube=int(n & (n - 1) == 0), d=topology.dimensions(n), depth=depth,
            ports=pe_ports, collective=collective, completion=C, exactly_once=int(result.complete),
            link_bound=links, port_bound=ports, busiest_link=result.busiest,
            route_bound=result.route_bound, relay_bound=relayed, bound=bound,
            ratio_link=None if C is None else round(C / links, 3),
            ratio_port=None if C is None else round(C / max(links, ports), 3),
            ratio_bound=None if C is None else round(C / bound, 3),
            link_messages=result.hops))
    return rows


_COLUMNS = ("n", "complete_cube", "d", "depth", "ports", "collective", "completion", "exactly_once",
            "link_bound", "port_bound", "busiest_link", "route_bound", "relay_bound", "bound",
            "ratio_link", "ratio_port", "ratio_bound", "link_messages")


def write_csv(path, rows):
    with open(path, "w") as out:
        out.write(",".join(_COLUMNS) + "\n")
        for row in rows:
            out.write(",".join("" if row[c] is None else str(row[c]) for c in _COLUMNS) + "\n")


def table(rows):
    """A Markdown table: per size, depth, PE ports and collective, ``C`` and its ratios to the link
    bound, to the larger of the link and port bounds, and to the largest of all the bounds
    (for ``relay``, the relay bound too)."""
    present = [c for c in COLLECTIVES if any(row["collective"] == c for row in rows)]
    lines = ["| n | depth | ports | "
             + " | ".join(f"{c}: C, C/link, C/max(link, port), C/max(all)" for c in present)
             + " |", "|---:|---:|---:|" + "---:|" * len(present)]
    keys = []
    for row in rows:
        if (row["n"], row["depth"], row["ports"]) not in keys:
            keys.append((row["n"], row["depth"], row["ports"]))
    for n, depth, ports in keys:
        cells = []
        for c in present:
            row = next(r for r in rows
                       if (r["n"], r["depth"], r["ports"], r["collective"]) == (n, depth, ports, c))
            if row["completion"] is None:
                cells.append("incomplete")
            else:
                cells.append(f"{row['completion']}, {row['ratio_link']:.2f}, "
                             f"{row['ratio_port']:.2f}, {row['ratio_bound']:.2f}")
        lines.append(f"| {n} | {depth} | {ports} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
