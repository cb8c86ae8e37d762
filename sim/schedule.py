"""Timed collective schedules for all-port nodes: when, and on which injection port, each
message leaves its PE (issue 15).

With ``P`` PE ports a node can inject and accept several messages a cycle, and the fastest
total exchange keeps every link direction busy in every cycle. The routes are fixed (Katseff,
Algorithm 2; a hardware broadcast copy reaches each node along its unicast path, Theorem 4),
so a message injected in cycle ``s`` crosses the ``j``-th link of its path in cycle ``s + j``
and reaches its PE in ``s + h + 1``, *if it never waits*. :func:`greedy` chooses ``s`` and
the port for every message, in a given order, as the first cycle in which none of the
resources the message needs is taken, so that no message ever waits for another:

- the injection buffer of one of the ``P`` ports in cycle ``s``;
- every link direction of its path (of the whole tree, for a broadcast) in its cycle;
- the eject port (``topology.eject_port``) of every delivery in its cycle.

At buffer depth 1 a buffer learns that it is free a cycle late (SPEC section 3), so a link
and an injection buffer take a message every other cycle: their uses must then be at least
two cycles apart. The model runs the schedule (each message offered from its cycle ``s`` on
its port); a run that matches the prediction cycle for cycle shows that no message waited.

The multinode broadcast by relays (every hop a one-hop unicast that the receiving PE offers
again, three cycles a hop) is timed the same way, hop by hop: :func:`translated_tree` on
complete cubes (one spanning tree and its slots, the same for every source up to
translation), :func:`relays` on any ``n`` (link by link, rarest message first).
:func:`segment_tree` does the same with *segments*, unicasts of any length between two PEs
(a ``k``-hop segment is delivered ``k + 1`` cycles after it is taken, not ``3k - 1``), on
the complete 4-, 5- and 6-cubes, from the trees :func:`solve_segment_tree` found.
"""

import numpy as np
from numba import njit

from .. import topology

__all__ = ["hops", "greedy", "relays", "translated_tree", "SEGMENT_TREES", "segment_tree",
           "check_segment_tree", "solve_segment_tree"]


def hops(n, sources, dests, order=topology.MSB_FIRST):
    """The links of the unicast paths ``sources[m] -> dests[m]``, hop by hop.

    Returns ``(links, count)``: ``links[m, j]`` is ``x * D + i`` for the ``j``-th hop, from
    node ``x`` over dimension ``i`` (``-1`` after the last), and ``count[m]`` the hops. The
    route step is :func:`ihcube.topology.route_step`, vectorised: the first set bit of
    ``(x XOR dest) AND exists(x)`` in ``order``, both tabulated from ``ihcube.topology``.
    """
    D = topology.dimensions(n)
    exists = np.array([topology.exists_mask(n, a) for a in range(n)], np.int64)
    first = np.array([-1] + [topology.first_set_bit(b, order) for b in range(1, 1 << D)],
                     np.int64)
    x = np.asarray(sources, np.int64).copy()
    dests = np.asarray(dests, np.int64)
    links = np.full((len(x), max(D, 1)), -1, np.int64)
    count = np.zeros(len(x), np.int64)
    for j in range(D):
        dim = first[(x ^ dests) & exists[x]]
        moving = dim >= 0
        links[moving, j] = x[moving] * D + dim[moving]
        count += moving
        x = np.where(moving, x ^ (1 << np.maximum(dim, 0)), x)
    if (x != dests).any():  # pragma: no cover - Theorem 1: at most D steps
        raise AssertionError("a route did not arrive within D hops")
    return links, count


@njit(cache=True)
def _greedy(n, ports, gap, sources, start, resource, offset, spaced, order, horizon):
    """The kernel of :func:`greedy`; ``busy`` is ``(resources, horizon)`` and grows."""
    resources = resource.max() + 1 if len(resource) else 0
    busy = np.zeros((resources, horizon), np.uint8)
    inject = np.zeros((n * ports, horizon), np.uint8)
    earliest = np.zeros(n, np.int64)
    cycle = np.full(len(sources), -1, np.int64)
    port = np.zeros(len(sources), np.int64)
    reach = offset.max() if len(offset) else 0
    low = np.zeros(resources, np.int64)  # every cycle before low[r] of resource r is taken
    for m in order:
        a = sources[m]
        s = earliest[a]
        for k in range(start[m], start[m + 1]):
            s = max(s, low[resource[k]] - offset[k])
        while True:
            if s + 2 * gap + reach + 2 >= busy.shape[1]:
                grown = np.zeros((busy.shape[0], 2 * busy.shape[1]), np.uint8)
                grown[:, :busy.shape[1]] = busy
                busy = grown
                grown = np.zeros((inject.shape[0], 2 * inject.shape[1]), np.uint8)
                grown[:, :inject.shape[1]] = inject
                inject = grown
            p = -1
            for q in range(ports):
                row = a * ports + q
                if inject[row, s] == 0 and (gap == 1 or ((s == 0 or inject[row, s - 1] == 0)
                                                         and inject[row, s + 1] == 0)):
                    p = q
                    break
            free = p >= 0
            k = start[m]
            while free and k < start[m + 1]:
                r, t = resource[k], s + offset[k]
                if busy[r, t] != 0:
                    free = False
                elif spaced[k] and gap == 2 and ((t > 0 and busy[r, t - 1] != 0)
                                                 or busy[r, t + 1] != 0):
                    free = False
                k += 1
            if free:
                break
            s += 1
        cycle[m], port[m] = s, p
        inject[a * ports + p, s] = 1
        for k in range(start[m], start[m + 1]):
            r = resource[k]
            busy[r, s + offset[k]] = 1
            while busy[r, low[r]] != 0:
                low[r] += 1
        # Cycles before the first free injection slot of a node stay full for later messages.
        while True:
            full = True
            for q in range(ports):
                if inject[a * ports + q, earliest[a]] == 0:
                    full = False
            if not full:
                break
            earliest[a] += 1
    return cycle, port


def greedy(n, ports, depth, sources, start, resource, offset, spaced, order):
    """Give each message an injection cycle and port, in ``order``, so that none waits.

    Parameters
    ----------
    n, ports, depth : int
        The fabric: nodes, PE ports per node, buffer depth (depth 1 spaces the uses of a
        link or an injection buffer two cycles apart).
    sources : array of int
        The PE that injects each message.
    start, resource, offset, spaced : arrays
        Message ``m`` uses resource ``resource[k]`` in cycle ``s + offset[k]`` for ``k`` in
        ``start[m] .. start[m + 1] - 1``: links as ``x * D + i``, eject ports after them;
        ``spaced[k]`` marks the resources (links) that depth 1 spaces.
    order : array of int
        The messages in the order they are given their cycles (earlier ones first choice).

    Returns
    -------
    cycle, port : ndarray of int64
        Each message's injection cycle ``s`` and injection port.
    """
    horizon = 64
    return _greedy(n, ports, 2 if depth == 1 else 1, np.asarray(sources, np.int64),
                   np.asarray(start, np.int64), np.asarray(resource, np.int32),
                   np.asarray(offset, np.int16), np.asarray(spaced, np.bool_),
                   np.asarray(order, np.int64), horizon)


#: How many of the messages a link could send :func:`relays` compares (the cost of a choice).
RELAY_WINDOW = 64


@njit(cache=True)
def _relays(n, D, ports, gap, neighbour, eject, window, horizon):
    """The kernel of :func:`relays`. ``sendable[y, m]``: the first slot in which node ``y``
    may send message ``m`` (``-1``: ``y`` neither has it nor is due to get it); ``got[y]``
    lists the messages ``y`` has or is due to get, in the order they became due, which is
    the order of ``sendable``; ``next_[y, i]`` is how far link ``(y, i)`` has read that list."""
    total = n * (n - 1)
    sendable = np.full((n, n), -1, np.int32)
    got = np.zeros((n, n), np.int32)
    count = np.zeros(n, np.int64)
    holders = np.ones(n, np.int64)
    next_ = np.zeros((n, D), np.int64)
    for y in range(n):
        sendable[y, y] = 0
        got[y, 0] = y
        count[y] = 1
    link_used = np.full((n, D), -2, np.int64)
    port_used = np.full((n, ports), -2, np.int64)
    eject_used = np.full((n, ports), -1, np.int64)
    slot = np.zeros(total, np.int64)
    sender = np.zeros(total, np.int64)
    dim = np.zeros(total, np.int64)
    origin = np.zeros(total, np.int64)
    port = np.zeros(total, np.int64)
    done = 0
    t = 0
    while done < total and t < horizon:
        for step in range(n):
            y = (step + t) % n  # a different node first in each slot: no node always wins
            for turn in range(D):
                i = (turn + t) % D
                z = neighbour[y, i]
                if z < 0 or link_used[y, i] > t - gap:
                    continue
                p = -1
                for q in range(ports):
                    if port_used[y, q] <= t - gap:
                        p = q
                        break
                if p < 0:
                    break
                if eject_used[z, eject[i]] == t:
                    continue
                # Messages the far end has or is due to get are never needed on this link.
                while next_[y, i] < count[y] and sendable[z, got[y, next_[y, i]]] >= 0:
                    next_[y, i] += 1
                # Of the next `window` messages the far end lacks, the one fewest nodes have.
                best = -1
                seen = 0
                k = next_[y, i]
                while k < count[y] and seen < window and sendable[y, got[y, k]] <= t:
                    m = got[y, k]
                    if sendable[z, m] < 0:
                        if best < 0 or holders[m] < holders[got[y, best]]:
                            best = k
                        seen += 1
                    k += 1
                if best < 0:
                    continue
                m = got[y, best]
                # Taken in slot t, across the link in t + 1, delivered in t + 2, offered
                # again (and taken at the earliest) in t + 3.
                sendable[z, m] = t + 3
                holders[m] += 1
                got[z, count[z]] = m
                count[z] += 1
                link_used[y, i] = t
                port_used[y, p] = t
                eject_used[z, eject[i]] = t
                slot[done], sender[done], dim[done] = t, y, i
                origin[done], port[done] = m, p
                done += 1
        t += 1
    return slot[:done], sender[:done], dim[:done], origin[:done], port[:done]


def relays(n, ports, depth=2, window=RELAY_WINDOW):
    """A multinode broadcast made of relays: every hop a one-hop unicast that the receiving
    PE offers again to its own neighbours (``docs/collectives.md``, "Multinode broadcast
    by relays").

    Slot by slot (a slot is the cycle in which a PE's injection buffer takes the message),
    every link direction ``(y, i)`` that is free sends, of the messages that node ``y`` can
    send and its neighbour ``z`` neither holds nor is due to get, the one that the fewest
    nodes hold or are due to get (among the first ``window`` in the order ``y`` got them;
    ties to the oldest), if ``y`` has an injection port free and the eject port of ``z``
    that link ``i`` reaches is free two cycles later.
    A message taken in slot ``s`` is delivered in ``s + 2`` and can be taken again, by the
    receiver, from ``s + 3``. Each message therefore spreads along a spanning tree of its
    own, shaped by what the links are doing, and every link direction is busy whenever its
    sender has something its receiver lacks.

    Returns ``(slot, sender, dim, origin, port)``, one entry a hop, in slot order: ``sender``
    takes ``origin``'s message on injection port ``port`` in slot ``slot`` and sends it over
    its link of dimension ``dim``.
    """
    D = topology.dimensions(n)
    neighbour = np.array([[a ^ (1 << i) if topology.link_exists(n, a, i) else -1
                           for i in range(D)] for a in range(n)], np.int64).reshape(n, D)
    eject = np.array([topology.eject_port(n, ports, i) for i in range(D)], np.int64)
    gap = 2 if depth == 1 else 1
    # While a message is missing somewhere, some link can send one within 3 gap slots (the
    # graph is connected, and a message waits at most three slots to be sendable).
    hops_ = _relays(n, D, ports, gap, neighbour, eject, window, 3 * gap * n * (n - 1) + 8)
    if len(hops_[0]) != n * (n - 1):  # pragma: no cover - the argument above
        raise AssertionError("the relays did not reach every node")
    return hops_


def translated_tree(d, ports, depth=2):
    """A multinode broadcast by relays on the complete ``d``-cube that is the same for every
    source up to translation (``docs/collectives.md``, "Multinode broadcast by relays").

    One spanning tree ``T`` of the cube, rooted at node 0, and a slot for each of its edges;
    source ``a`` uses ``T XOR a`` with the same slots. In ``T`` node ``u != 0`` hangs from
    ``u XOR 2**i`` for a set bit ``i`` of ``u``, so the tree is one of shortest paths and an
    edge of dimension ``i`` is a one-hop unicast over dimension ``i``. Translated, the edge
    of ``u`` is used by every source at once, once on every link direction of dimension
    ``i``: two edges of ``T`` never share a slot and a dimension, and then no link direction
    carries two messages in a slot, nor an eject port (dimension ``i`` reaches eject port
    ``i mod P``) two deliveries; a node injects as many messages in a slot as ``T`` has
    edges in it, at most ``P``.

    Built slot by slot, list-scheduling style: an edge ``u`` may take slot ``t`` over bit
    ``i`` once its parent ``u XOR 2**i`` has its message by ``t`` (the root from slot 0;
    another node three slots after its own edge's slot: delivered two cycles after it is
    taken, then offered again). In each slot the edges that can go choose in turn, those
    with the fewest ready bits first (then the fewer set bits: the deeper subtrees; then a
    fixed scrambled order), each the free dimension that the fewest waiting edges could use;
    a dimension whose eject port is taken, or at depth 1 a dimension or port used in the
    slot before, is not free.

    Returns ``(node, dim, slot, port)`` for the ``2**d - 1`` edges of ``T``: node ``u``
    is reached over dimension ``dim`` from ``u XOR 2**dim``, taken in ``slot`` on
    injection ``port`` of the sender.
    """
    n = 1 << d
    gap = 2 if depth == 1 else 1
    eject = np.array([topology.eject_port(n, ports, i) for i in range(d)])
    bits = (np.arange(n)[:, None] >> np.arange(d)) & 1
    popcount = bits.sum(axis=1)
    # Ties go by a fixed scrambled order of the nodes (Knuth's multiplicative hash): in plain
    # node order they leave a dimension idle now and then (22, 35, 60 cycles at d = 7, 8, 9
    # against 21, 34, 59, the relay bound).
    scrambled = np.arange(n, dtype=np.uint64) * np.uint64(2654435761) % np.uint64(1 << 32)
    ready_from = np.full(n, np.iinfo(np.int64).max // 2, np.int64)
    ready_from[0] = 0
    dim, slot, port = (np.full(n, -1, np.int64) for _ in range(3))
    dim_used = np.full(d, -2, np.int64)
    port_used = np.full(ports, -2, np.int64)
    left = np.arange(1, n)
    t = 0
    while len(left):
        # Bit i of u is ready if u's parent over i holds the message by slot t.
        ready = (bits[left] == 1) & (ready_from[left[:, None] ^ (1 << np.arange(d))] <= t)
        demand = ready.sum(axis=0)
        choices = ready.sum(axis=1)
        free_ports = [q for q in range(ports) if port_used[q] <= t - gap]
        dims_free = dim_used <= t - gap
        ejects_taken = set()
        chosen = []
        for k in np.lexsort((scrambled[left], popcount[left], choices)):
            if choices[k] == 0 or len(chosen) == len(free_ports):
                continue
            options = [i for i in np.flatnonzero(ready[k])
                       if dims_free[i] and eject[i] not in ejects_taken]
            if not options:
                continue
            i = min(options, key=lambda i: (demand[i], i))
            dims_free[i] = False
            ejects_taken.add(eject[i])
            chosen.append(k)
            u = left[k]
            dim[u], slot[u], port[u] = i, t, free_ports[len(chosen) - 1]
            dim_used[i] = t
            port_used[port[u]] = t
            ready_from[u] = t + 3
        left = np.delete(left, chosen)
        t += 1
    return np.arange(1, n), dim[1:], slot[1:], port[1:]


# --- Multinode broadcast by segments: relays whose hops are unicasts of any length ---------

def _segment_dims(d, parent, node, order=topology.MSB_FIRST):
    """The dimensions the unicasts ``parent[m] -> node[m]`` cross, hop by hop (``-1`` after
    the last), and their hop counts: the fixed routes of :func:`hops`."""
    links, count = hops(1 << d, parent, node, order)
    return np.where(links >= 0, links % max(d, 1), -1), count


def check_segment_tree(d, node, parent, slot, ports, depth=2, order=topology.MSB_FIRST):
    """Check that a tree of segments is a conflict-free multinode broadcast on the complete
    ``d``-cube when every source ``a`` uses it translated (``docs/collectives.md``,
    "Relays by segments"), and give each edge its injection port.

    Edge ``parent[m] -> node[m]`` is a unicast along the fixed route, taken in ``slot[m]``;
    its ``j``-th hop crosses its dimension in cycle ``slot + j`` and it is delivered in
    ``slot + k + 1`` (``k`` hops) if it never waits. Checked: every node but 0 is reached
    once; a segment is taken no earlier than the cycle after its sender was delivered the
    message (the root from slot 0); no two hops of the tree cross one dimension in one cycle
    (so, translated, no link direction carries two messages a cycle); no two deliveries reach
    one eject port (``topology.eject_port``) in one cycle; at most ``ports`` segments leave in
    one slot. Only depth 2 or more (a link a message a cycle) is handled; the routes are
    those of ``order``.

    Returns ``(port, completion)``: each edge's injection port, and ``C``, the last delivery
    minus one. Raises ``ValueError`` naming the first property that fails.
    """
    if depth < 2:
        raise ValueError("Segment trees are timed for buffer depth 2 or more, not 1")
    n = 1 << d
    node, parent, slot = (np.asarray(c, np.int64) for c in (node, parent, slot))
    if sorted(node.tolist()) != list(range(1, n)):
        raise ValueError(f"The tree must reach every node 1 .. {n - 1} exactly once")
    if ((parent < 0) | (parent >= n) | (parent == node)).any():
        raise ValueError("A segment's sender must be another node of the cube")
    dims, count = _segment_dims(d, parent, node, order)
    arrival = np.full(n, np.iinfo(np.int64).max // 2, np.int64)
    arrival[0] = -1  # the root holds its message: it can send from slot 0
    for m in np.argsort(slot, kind="stable"):
        # Delivered in arrival[p], offered again (and taken at the earliest) a cycle later.
        if slot[m] < arrival[parent[m]] + 1:
            raise ValueError(f"Node {parent[m]} sends to {node[m]} in slot {slot[m]} before "
                             f"it has the message")
        arrival[node[m]] = slot[m] + count[m] + 1
    crossings = [(dims[m, j], slot[m] + 1 + j) for m in range(len(node))
                 for j in range(count[m])]
    if len(set(crossings)) != len(crossings):
        raise ValueError("Two hops cross one dimension in one cycle")
    last = dims[np.arange(len(node)), count - 1]
    ejects = [(topology.eject_port(n, ports, int(i)), int(arrival[u]))
              for i, u in zip(last, node)]
    if len(set(ejects)) != len(ejects):
        raise ValueError("Two deliveries reach one eject port in one cycle")
    port = np.zeros(len(node), np.int64)
    for t in np.unique(slot):
        leaving = np.flatnonzero(slot == t)
        if len(leaving) > ports:
            raise ValueError(f"{len(leaving)} segments leave in slot {t}, more than the "
                             f"{ports} injection ports")
        port[leaving] = np.arange(len(leaving))
    return port, int(arrival.max() - 1)


def solve_segment_tree(d, completion, ports, longest=None):
    """Search for a tree of segments that :func:`check_segment_tree` accepts and that
    completes in ``completion`` cycles, with the SMT solver z3 (the ``verify`` extra).

    One Boolean per possible edge (a node ``u``, its sender ``p`` at most ``longest`` hops
    away, a slot ``s``) and an integer delivery cycle per node: each node has one edge;
    an edge fixes ``arrival[u] = s + k + 1`` and needs ``arrival[p] <= s - 1``; each
    (dimension, cycle) and each (eject port, cycle) is used at most once and each slot by at
    most ``ports`` edges. Returns ``(node, parent, slot)`` sorted by node, or None if there
    is no such tree (z3's answer ``unsat``: then none exists, with segments of at most
    ``longest`` hops).
    """
    import z3  # only the search needs it; the trees it found are SEGMENT_TREES

    n = 1 << d
    longest = d if longest is None else longest
    solver = z3.Solver()
    arrival = [z3.Int(f"arrival{u}") for u in range(n)]
    solver.add(arrival[0] == -1)
    uses, edges = {}, {}
    for u in range(1, n):
        senders = [p for p in range(n) if p != u and bin(p ^ u).count("1") <= longest]
        dims, count = _segment_dims(d, senders, [u] * len(senders))
        options = []
        for p, path, k in zip(senders, dims, count):
            # A sender other than the root has the message from cycle 2 on: 3 is its first slot.
            for s in range(0 if p == 0 else 3, completion - k + 1):
                chosen = z3.Bool(f"e{u}_{p}_{s}")
                options.append(chosen)
                edges[chosen] = (u, p, s)
                solver.add(z3.Implies(chosen, z3.And(arrival[u] == s + k + 1,
                                                     arrival[p] <= s - 1)))
                keys = [("link", int(i), s + 1 + j) for j, i in enumerate(path[:k])]
                keys += [("eject", topology.eject_port(n, ports, int(path[k - 1])), s + k + 1),
                         ("slot", s)]
                for key in keys:
                    uses.setdefault(key, []).append(chosen)
        solver.add(z3.PbEq([(chosen, 1) for chosen in options], 1))
    for key, users in uses.items():
        most = ports if key[0] == "slot" else 1
        if len(users) > most:
            solver.add(z3.AtMost(*users, most))
    if solver.check() != z3.sat:
        return None
    model = solver.model()
    found = sorted(edges[chosen] for chosen in edges if z3.is_true(model.eval(chosen)))
    return tuple(found)


#: Trees of segments found by :func:`solve_segment_tree` for the complete ``d``-cube, at
#: depth 2 or more with ``P >= d`` ports and msb-first routes: ``(node, sender, slot)`` for
#: every node but the root. Their completions are 6, 8 and 13 (see ``docs/collectives.md``).
SEGMENT_TREES = {
    4: (
        (1, 0, 0), (2, 6, 4), (3, 0, 0), (4, 0, 5), (5, 1, 3), (6, 0, 0), (7, 0, 2), (8, 0, 2),
        (9, 1, 4), (10, 0, 3), (11, 0, 1), (12, 13, 5), (13, 0, 0), (14, 6, 5), (15, 13, 5)),
    5: (
        (1, 0, 0), (2, 0, 0), (3, 1, 3), (4, 0, 3), (5, 0, 2), (6, 2, 4), (7, 0, 0), (8, 0, 2),
        (9, 1, 4), (10, 2, 7), (11, 3, 6), (12, 0, 0), (13, 12, 4), (14, 12, 5), (15, 7, 5),
        (16, 0, 1), (17, 1, 3), (18, 16, 4), (19, 17, 6), (20, 16, 5), (21, 5, 6), (22, 18, 7),
        (23, 7, 5), (24, 0, 2), (25, 24, 6), (26, 0, 0), (27, 26, 5), (28, 12, 4), (29, 13, 7),
        (30, 28, 7), (31, 26, 6)),
    6: (
        (1, 0, 0), (2, 0, 0), (3, 2, 6), (4, 0, 0), (5, 1, 3), (6, 2, 4), (7, 6, 9), (8, 0, 1),
        (9, 1, 3), (10, 8, 10), (11, 8, 4), (12, 0, 0), (13, 12, 8), (14, 6, 12), (15, 11, 9),
        (16, 0, 3), (17, 0, 2), (18, 0, 0), (19, 18, 4), (20, 0, 1), (21, 5, 11), (22, 20, 8),
        (23, 19, 8), (24, 16, 11), (25, 9, 7), (26, 8, 5), (27, 19, 7), (28, 12, 4), (29, 13, 12),
        (30, 18, 4), (31, 30, 10), (32, 0, 3), (33, 0, 0), (34, 0, 2), (35, 34, 7), (36, 4, 4),
        (37, 33, 12), (38, 34, 6), (39, 38, 11), (40, 0, 1), (41, 33, 5), (42, 40, 5),
        (43, 41, 12), (44, 12, 7), (45, 33, 6), (46, 38, 10), (47, 15, 12), (48, 16, 8),
        (49, 33, 8), (50, 18, 6), (51, 33, 6), (52, 20, 5), (53, 49, 11), (54, 52, 9),
        (55, 51, 10), (56, 40, 9), (57, 25, 11), (58, 50, 9), (59, 27, 10), (60, 52, 8),
        (61, 45, 10), (62, 30, 9), (63, 60, 11)),
}


def segment_tree(d, ports, depth=2, order=topology.MSB_FIRST):
    """The stored tree of segments for the complete ``d``-cube (:data:`SEGMENT_TREES`) if
    there is one and :func:`check_segment_tree` accepts it for ``ports``, ``depth`` and
    ``order``, else None. Returns ``(node, parent, slot, port)`` arrays, one entry an edge."""
    if d not in SEGMENT_TREES or depth < 2:
        return None
    node, parent, slot = (np.array(c, np.int64) for c in zip(*SEGMENT_TREES[d]))
    try:
        port, _ = check_segment_tree(d, node, parent, slot, ports, depth, order)
    except ValueError:
        return None
    return node, parent, slot, port
