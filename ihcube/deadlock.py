"""Deadlock freedom of the routing: the channel dependency graph (Dally and Seitz).

A *channel* is a place where a message waits: the one-message (or ``depth``-message) buffer at
the receiving end of a link direction ``a -> a XOR 2**i``, and, at each node, the PE's
injection buffer (a source) and eject port (a sink). Channel ``c1`` *depends on* channel
``c2`` when a message holding the buffer at the end of ``c1`` may wait for the buffer at the
end of ``c2``:

- a unicast for ``d`` that crossed ``c1 = a -(i)-> b`` waits for ``c2 = b -(j)-> ...`` when
  the route at ``b`` is ``j``;
- a broadcast copy that crossed ``c1`` with travel vector ``T`` waits for *every* link it is
  forked onto at ``b`` (Katseff, Algorithm 6, mirrored for least-significant-first routers:
  :func:`ihcube.topology.travel_mask`): the router releases an input buffer only when the
  last copy has left, so one blocked copy holds the buffer.

If the graph is acyclic the network cannot deadlock (Dally and Seitz): some message on a
longest chain of waits can always move. Every dependency found here is made by a message the
network carries, so a cycle is a real hazard: its buffers can all fill with messages that each
wait for the next. (Least-significant-first unicasts with Algorithm 6 broadcasts, which
descend the dimensions while the unicasts climb them, do this from n = 4; hence the mirrored
travel rule for that order.)

Two ways to build the graph:

- :func:`channel_dependencies` enumerates it from a route function and
  :func:`ihcube.topology.broadcast_step`: every destination at every node, every reachable
  broadcast copy. It is the reference, for any route function; it costs ``O(n**2)`` calls.
- :func:`dependency_table` computes it for first-set-bit routing
  (:class:`FirstSetBitRouting`, Katseff's Algorithm 2 in either scan order, chosen per node)
  in ``O(n D**2)`` compiled steps, by reasoning on the bits of ``r = a XOR d`` (see its
  docstring). The tests check that the two agree edge for edge.

:func:`check_deadlock_free` is what :class:`ihcube.rtl.Fabric` runs at construction; ``ihcube
deadlock --max-nodes 4096`` (:func:`sweep`) checks every fabric size up to 4096 in both orders.

Wormhole switching (``docs/wormhole.md``) splits each link into virtual channels: the graph over
(link, virtual channel) pairs (:func:`virtual_channel_dependencies`) is built from the link
graphs above, the unicasts' and the broadcasts' separately, with the edges a
:class:`VirtualChannelRule` allows; :func:`check_wormhole_deadlock_free` is what
:class:`ihcube.rtl.WormholeFabric` and the Verilog generator run.
"""

from __future__ import annotations

import functools
import time
from collections import deque
from typing import NamedTuple

import numpy as np
from numba import njit

from . import topology

__all__ = [
    "INJECT", "EJECT", "Channel", "FirstSetBitRouting", "routing_for",
    "link_tables", "route_table",
    "channel_dependencies", "dependency_table", "table_dependencies", "dependency_levels",
    "find_cycle", "find_graph_cycle", "format_cycle", "explain_cycle", "check_deadlock_free",
    "SweepResult", "sweep",
    "VirtualChannel", "WHOLE", "FORKED", "BROADCAST_SCHEMES", "VirtualChannelRule",
    "router_vc_rule", "virtual_channel_dependencies", "find_vc_cycle", "format_vc_cycle",
    "check_wormhole_deadlock_free",
]

#: The ``dim`` of a node's injection channel (its PE's input to the router).
INJECT = -1
#: The ``dim`` of a node's ejection channel (the router's output to its PE).
EJECT = -2


class Channel(NamedTuple):
    """A channel: link ``dim`` from ``node`` to ``node XOR 2**dim``, or a PE channel.

    ``dim`` is :data:`INJECT` for the PE's injection into the router of ``node``, and
    :data:`EJECT` for the router's delivery to it.
    """

    node: int
    dim: int

    @property
    def is_link(self):
        """Whether this channel is a link (not a PE channel)."""
        return self.dim >= 0

    @property
    def far(self):
        """The node at the receiving end: where a message that crossed it waits."""
        return topology.neighbor(self.node, self.dim) if self.is_link else self.node

    def __str__(self):
        if self.dim == INJECT:
            return f"PE {self.node} -> {self.node}"
        if self.dim == EJECT:
            return f"{self.node} -> PE {self.node}"
        return f"{self.node} -(dim {self.dim})-> {self.far}"


class FirstSetBitRouting:
    """Katseff's Algorithm 2, with the scan order chosen per node.

    At node ``a`` a message for ``d`` leaves on the first set bit of ``(a XOR d) AND
    exists(a)`` in ``order_at(a)``: it is :func:`ihcube.topology.route_step` with that order.
    The same order at every node is the router's routing (:func:`routing_for`); the tests
    mix orders to make routings that can deadlock.

    Broadcast copies are forked by the travel-vector rule of each node's order
    (:func:`ihcube.topology.travel_mask`), as the router does; ``travel`` fixes one rule for
    every node instead, for the tests' deadlock-prone variants.

    Parameters
    ----------
    order : ``"msb"``, ``"lsb"`` or callable
        The scan order of every node, or a function from a node number to its scan order.
    name : str or None
        What messages call this routing; by default the order, or the function's name.
    travel : ``"msb"``, ``"lsb"`` or None
        The travel-vector rule of every node; None: each node's scan order.
    """

    def __init__(self, order=topology.MSB_FIRST, name=None, travel=None):
        if callable(order):
            self._order, self._order_of = None, order
            self._name = name if name is not None else getattr(order, "__name__", repr(order))
        else:
            self._order, self._order_of = topology.check_routing_order(order), None
            self._name = name if name is not None else order
        self._travel = None if travel is None else topology.check_routing_order(travel)

    name = property(lambda self: self._name)

    def order_at(self, node):
        """The scan order at ``node``: ``"msb"`` or ``"lsb"``."""
        if self._order is not None:
            return self._order
        return topology.check_routing_order(self._order_of(node))

    def travel_order_at(self, node):
        """The travel-vector rule at ``node``: ``"msb"`` (Algorithm 6) or ``"lsb"``."""
        return self._travel if self._travel is not None else self.order_at(node)

    def msb_first(self, n):
        """Whether each of the ``n`` nodes scans from the most significant bit, as an array."""
        if self._order is not None:
            return np.full(n, self._order == topology.MSB_FIRST)
        return np.array([self.order_at(node) == topology.MSB_FIRST for node in range(n)],
                        dtype=bool)

    def __call__(self, n, node, dest):
        """The link a message at ``node`` for ``dest`` leaves on, or None to deliver."""
        return topology.route_step(n, node, dest, self.order_at(node))

    def __repr__(self):
        return f"FirstSetBitRouting({self._name!r})"


_ROUTINGS = {order: FirstSetBitRouting(order) for order in topology.ROUTING_ORDERS}


def routing_for(order=topology.MSB_FIRST):
    """The router's unicast routing in ``order``: :func:`ihcube.topology.route_step`."""
    return _ROUTINGS[topology.check_routing_order(order)]


def _first_set_bit_routing(routing):
    """``routing``, or the default one for None, if it is a :class:`FirstSetBitRouting`."""
    routing = routing_for() if routing is None else routing
    if not isinstance(routing, FirstSetBitRouting):
        raise TypeError(f"Routing must be a FirstSetBitRouting, not {routing!r}")
    return routing


def travel_order(routing, node):
    """The travel-vector rule of the router at ``node``: as a :class:`FirstSetBitRouting`
    says, Algorithm 6 (``"msb"``) for any other route function."""
    travel_order_at = getattr(routing, "travel_order_at", None)
    return travel_order_at(node) if travel_order_at is not None else topology.MSB_FIRST


def _name_of(routing):
    """What a message calls ``routing``."""
    return getattr(routing, "name", None) or getattr(routing, "__name__", None) or repr(routing)


# --- Vectorized forms of the topology rules ------------------------------------------------
#
# The same formulas as ihcube.topology, over all nodes at once; tests/test_deadlock.py checks
# them against it.


def link_tables(n, msb_first=None):
    """The link-existence vector of every node and the travel masks of every link.

    ``msb_first`` says, per node, whether its router routes most-significant-first (the
    travel mask follows the order: :func:`ihcube.topology.travel_mask`); all of them if None.

    Returns
    -------
    exists : numpy.ndarray of int64, shape ``(n,)``
        ``exists[a] == topology.exists_mask(n, a)``.
    travel : numpy.ndarray of int64, shape ``(n, D)``
        ``travel[a, l] == topology.travel_mask(n, a, l, order of a)``.
    """
    dims = topology.dimensions(n)
    node = np.arange(n, dtype=np.int64)
    bit = np.int64(1) << np.arange(dims, dtype=np.int64)
    exists = (((node[:, None] ^ bit) < n) * bit).sum(axis=1, dtype=np.int64)
    full = np.int64(topology.full_travel(n))
    below, above = bit - 1, full & ~((bit << 1) - 1)
    if msb_first is None:
        msb_first = np.ones(n, dtype=bool)
    keep = np.where(np.asarray(msb_first, dtype=bool)[:, None], below[None, :], above[None, :])
    travel = keep | (full & ~exists)[:, None]
    return exists, travel


def route_table(n, routing=None):
    """The route of every (node, destination) pair of a :class:`FirstSetBitRouting`.

    Returns an ``(n, n)`` int8 array whose ``[a, d]`` entry is ``routing(n, a, d)``, with -1
    for None (``a == d``, and also where no usable link exists, which Theorem 1 rules out).
    """
    topology.check_node_count(n)
    routing = _first_set_bit_routing(routing)
    exists, _ = link_tables(n)
    node = np.arange(n, dtype=np.int64)
    candidates = (node[:, None] ^ node[None, :]) & exists[:, None]
    msb_first = routing.msb_first(n)[:, None]
    # Where several bits are set, the last assignment wins: ascending for msb, descending
    # for lsb.
    table = np.full((n, n), -1, dtype=np.int8)
    for k in range(topology.dimensions(n)):
        table = np.where(msb_first & (candidates >> k & 1 == 1), np.int8(k), table)
    for k in reversed(range(topology.dimensions(n))):
        table = np.where(~msb_first & (candidates >> k & 1 == 1), np.int8(k), table)
    return table


# --- The channel dependency graph -------------------------------------------------------------


def channel_dependencies(n, routing=None, *, broadcast=True, unicast=True):
    """Enumerate the channel dependency graph of ``routing`` on ``n`` nodes.

    The reference construction: every (node, destination) pair is routed with ``routing``, and
    every broadcast copy that can appear on a link is followed with
    :func:`ihcube.topology.broadcast_step`. It costs ``n**2`` calls of ``routing``.

    Parameters
    ----------
    n : int
        Number of nodes.
    routing : callable or None
        ``routing(n, node, dest)`` returns the link a unicast at ``node`` for ``dest`` leaves
        on, or None to deliver it; :func:`routing_for` ``("msb")`` if None.
    broadcast : bool
        Include the broadcasts (Algorithm 6, or its mirror image at least-significant-first
        routers: :func:`travel_order`).
    unicast : bool
        Include the unicasts (False: the broadcasts' dependencies alone).

    Returns
    -------
    dict
        Maps every :class:`Channel` to the set of channels it depends on.
    """
    topology.check_node_count(n)
    routing = routing_for() if routing is None else routing
    links = [topology.links(n, a) for a in range(n)]
    depends_on = {Channel(a, INJECT): set() for a in range(n)}
    depends_on.update({Channel(a, i): set() for a in range(n) for i in links[a]})
    depends_on.update({Channel(a, EJECT): set() for a in range(n)})

    def next_channel(node, dest):
        dim = route[node][dest]
        return Channel(node, EJECT) if dim is None else Channel(node, dim)

    route = ([[_checked_route(n, routing, a, d, links[a]) for d in range(n)] for a in range(n)]
             if unicast else None)
    for a in (range(n) if unicast else ()):
        for d in range(n):
            depends_on[Channel(a, INJECT)].add(next_channel(a, d))
            if route[a][d] is not None:
                channel = Channel(a, route[a][d])
                depends_on[channel].add(next_channel(channel.far, d))

    if broadcast:
        # Follow every distinct (link, travel) copy that some origin's broadcast puts on a
        # link; what a copy does next depends only on where it is and its travel vector.
        copies = set()
        frontier = []
        for origin in range(n):
            for dim, travel in topology.broadcast_step(n, origin, topology.full_travel(n),
                                                       travel_order(routing, origin)):
                depends_on[Channel(origin, INJECT)].add(Channel(origin, dim))
                frontier.append((Channel(origin, dim), travel))
        while frontier:
            channel, travel = frontier.pop()
            if (channel, travel) in copies:
                continue
            copies.add((channel, travel))
            node = channel.far
            depends_on[channel].add(Channel(node, EJECT))
            for dim, copy_travel in topology.broadcast_step(n, node, travel,
                                                            travel_order(routing, node)):
                depends_on[channel].add(Channel(node, dim))
                frontier.append((Channel(node, dim), copy_travel))
    return depends_on


def _checked_route(n, routing, node, dest, links):
    """``routing(n, node, dest)``, if it is a route the router could follow from ``links``."""
    dim = routing(n, node, dest)
    if dest == node and dim is not None:
        raise ValueError(f"Routing {_name_of(routing)!r} sends a message for node {dest} "
                         f"away from it, on link {dim!r}")
    if dest != node and dim is None:
        raise ValueError(f"Routing {_name_of(routing)!r} has no link at node {node} for node "
                         f"{dest}")
    if dest != node and dim not in links:
        raise ValueError(f"Routing {_name_of(routing)!r} sends a message at node {node} for "
                         f"node {dest} on link {dim!r}, which does not exist; the links of "
                         f"node {node} are {list(links)}")
    return dim


def dependency_table(n, routing=None, *, broadcast=True, unicast=True):
    """The link-to-link dependencies of a :class:`FirstSetBitRouting`, in ``O(n D**2)``.

    Channel ``a -(i)-> b`` (``b = a XOR 2**i``) depends on ``b -(j)-> ...`` in two cases.

    **Unicast.** Some ``d < n`` has ``route(a, d) = i`` and ``route(b, d) = j``. With
    ``r = a XOR d`` and ``E(x)`` the link-existence vector of node ``x``, that is: bits ``i``
    and ``j`` of ``r`` are set; ``j`` exists at ``b`` and ``j != i``; every bit of ``E(a)``
    that the scan at ``a`` reaches before ``i`` is clear in ``r``; and every bit of ``E(b)``
    other than ``i`` that the scan at ``b`` reaches before ``j`` is clear in ``r`` (the step
    clears bit ``i``, so ``b XOR d = r XOR 2**i``). These conditions fix some bits of ``r``
    and leave the others free, so the destinations that meet them are a subcube; the subcube
    holds a node ``d < n`` if and only if its smallest member, with every free bit 0, is below
    ``n``. That member is the witness destination.

    **Broadcast** (with ``broadcast=True``). A copy that crossed ``a -(i)-> b`` with travel
    ``T`` is forked onto every link ``j`` of ``b`` with ``T[j]`` set (Algorithm 6). A copy
    sent on ``i`` from ``a`` carries ``T_a AND travel_mask(a, i)``, where ``T_a`` is what ``a``
    holds, so ``travel_mask(a, i)`` contains every travel vector on that channel, and it is
    the one carried by the broadcast that ``a`` originates (``T_a`` all ones). So the
    dependency exists if and only if ``j`` exists at ``b`` and bit ``j`` of
    ``travel_mask(a, i)`` is set; the witness is the broadcast from ``a``.

    PE channels are left out: an injection channel has no predecessor and an ejection channel
    no successor, so neither can be on a cycle. (:func:`table_dependencies` adds them back.)

    Parameters
    ----------
    n : int
        Number of nodes.
    routing : :class:`FirstSetBitRouting` or None
        The unicast routing; :func:`routing_for` ``("msb")`` if None.
    broadcast : bool
        Include the broadcasts of Algorithm 6.
    unicast : bool
        Include the unicasts (False with ``broadcast=True``: the broadcasts' dependencies
        alone, which the wormhole check puts on their own virtual channel).

    Returns
    -------
    depends : numpy.ndarray of bool, shape ``(n, D, D)``
        ``depends[a, i, j]``: channel ``a -(i)-> b`` exists and depends on ``b -(j)-> ...``.
    witness : numpy.ndarray of int64, shape ``(n, D, D)``
        A destination whose unicast makes the dependency, or -1 where only a broadcast does.
    """
    topology.check_node_count(n)
    routing = _first_set_bit_routing(routing)
    dims = topology.dimensions(n)
    exists, travel = link_tables(
        n, [routing.travel_order_at(a) == topology.MSB_FIRST for a in range(n)])
    depends = np.zeros((n, dims, dims), dtype=bool)
    witness = np.full((n, dims, dims), -1, dtype=np.int64)
    _dependency_kernel(n, exists, travel, routing.msb_first(n), bool(broadcast), bool(unicast),
                       depends, witness)
    return depends, witness


@njit(cache=True)
def _dependency_kernel(n, exists, travel, msb_first, broadcast, unicast, depends,
                       witness):  # pragma: no cover - compiled
    """Fill ``depends`` and ``witness`` of :func:`dependency_table` from the link tables."""
    dims = depends.shape[1]
    full = (1 << dims) - 1
    for a in range(n):
        for i in range(dims):
            bit_i = 1 << i
            if exists[a] & bit_i == 0:
                continue  # no channel a -(i)->
            b = a ^ bit_i
            # The bits that the scan at a node reaches before bit k: above k for msb, below
            # for lsb. Those of them that exist must be clear in r.
            before_i = full & ~(2 * bit_i - 1) if msb_first[a] else bit_i - 1
            zeros_a = exists[a] & before_i
            for j in range(dims):
                bit_j = 1 << j
                if exists[b] & bit_j == 0:
                    continue  # no channel b -(j)->
                before_j = full & ~(2 * bit_j - 1) if msb_first[b] else bit_j - 1
                ones = bit_i | bit_j
                zeros = zeros_a | (exists[b] & ~bit_i & before_j)
                smallest = (a ^ ones) & (ones | zeros)  # the smallest d of the subcube
                if unicast and j != i and zeros & ones == 0 and smallest < n:
                    depends[a, i, j] = True
                    witness[a, i, j] = smallest
                if broadcast and travel[a, i] & bit_j != 0:
                    depends[a, i, j] = True


def table_dependencies(n, depends):
    """Turn a :func:`dependency_table` into the form of :func:`channel_dependencies`.

    The PE channels are added as the router has them: a node's injection feeds each of its
    links (a unicast to the neighbour, or a broadcast) and its own eject port (a unicast to
    itself); every link feeds the eject port at its far end (a unicast for that node).
    """
    depends_on = {}
    for a in range(n):
        depends_on[Channel(a, INJECT)] = {Channel(a, i) for i in topology.links(n, a)}
        depends_on[Channel(a, INJECT)].add(Channel(a, EJECT))
        for i in topology.links(n, a):
            b = topology.neighbor(a, i)
            depends_on[Channel(a, i)] = {Channel(b, int(j)) for j in np.flatnonzero(depends[a, i])}
            depends_on[Channel(a, i)].add(Channel(b, EJECT))
        depends_on[Channel(a, EJECT)] = set()
    return depends_on


@njit(cache=True)
def _levels(depends, exists):  # pragma: no cover - compiled
    n, dims = depends.shape[0], depends.shape[1]
    indegree = np.zeros((n, dims), np.int64)
    for a in range(n):
        for i in range(dims):
            if exists[a] >> i & 1:
                for j in range(dims):
                    if depends[a, i, j]:
                        indegree[a ^ (1 << i), j] += 1
    level = np.full((n, dims), -1, np.int64)
    queue = np.empty(n * dims, np.int64)
    tail = 0
    for a in range(n):
        for i in range(dims):
            if exists[a] >> i & 1 and indegree[a, i] == 0:
                level[a, i] = 0
                queue[tail] = a * dims + i
                tail += 1
    head = 0
    while head < tail:
        a, i = queue[head] // dims, queue[head] % dims
        head += 1
        b = a ^ (1 << i)
        for j in range(dims):
            if depends[a, i, j]:
                level[b, j] = max(level[b, j], level[a, i] + 1)
                indegree[b, j] -= 1
                if indegree[b, j] == 0:
                    queue[tail] = b * dims + j
                    tail += 1
    for a in range(n):
        for i in range(dims):
            if indegree[a, i] > 0:
                level[a, i] = -1  # never sorted: some channel on or after a cycle needs it
    return level


def dependency_levels(n, depends):
    """Sort the link channels topologically (Kahn's algorithm).

    Returns an ``(n, D)`` int64 array: for each link channel ``a -(i)-> ...``, the length of
    the longest chain of dependencies ``c0 -> c1 -> ... -> a -(i)-> ...`` that ends at it (0
    when no channel depends on it), or -1 if it is on a cycle or depended on by one. Entries of
    links that do not exist are -1 too. The graph is acyclic if and only if no existing link
    has -1.
    """
    exists, _ = link_tables(n)
    if depends.size == 0:
        return np.full(depends.shape[:2], -1, np.int64)
    return _levels(np.ascontiguousarray(depends), exists)


def _short_cycle(stuck, successors, predecessors):
    """A short cycle of a graph, given the channels that Kahn's algorithm could not sort.

    ``stuck`` is the non-empty set of them; ``successors(channel)`` and
    ``predecessors(channel)`` list a channel's neighbours in the graph.
    """
    # A channel stays unsorted only while some unsorted channel depends on it, so walking back
    # through unsorted predecessors never stops, and comes round to a channel it has seen.
    channel, seen = min(stuck), {}
    while channel not in seen:
        seen[channel] = len(seen)
        channel = next(c for c in predecessors(channel) if c in stuck)
    cycle = [c for c, k in seen.items() if k >= seen[channel]][::-1]

    # Shorten it: the shortest cycle through some of its channels, by breadth-first search.
    for first in list(cycle[:16]):
        parent, queue, last = {first: None}, deque([first]), None
        while last is None:
            channel = queue.popleft()
            for successor in successors(channel):
                if successor == first:
                    last = channel
                    break
                if successor not in parent:
                    parent[successor] = channel
                    queue.append(successor)
        shorter = [last]
        while shorter[-1] != first:
            shorter.append(parent[shorter[-1]])
        if len(shorter) < len(cycle):
            cycle = shorter[::-1]
    start = cycle.index(min(cycle))
    return cycle[start:] + cycle[:start]


def _table_cycle(n, depends, level):
    """A short cycle of a :func:`dependency_table` whose :func:`dependency_levels` has one."""
    exists, _ = link_tables(n)
    dims = depends.shape[1]
    stuck = {Channel(int(a), int(i)) for a, i in np.argwhere(level < 0) if exists[a] >> i & 1}

    def successors(channel):
        b = channel.far
        return [Channel(b, int(j)) for j in np.flatnonzero(depends[channel.node, channel.dim])]

    def predecessors(channel):
        return [Channel(topology.neighbor(channel.node, i), i) for i in range(dims)
                if exists[channel.node] >> i & 1
                and depends[topology.neighbor(channel.node, i), i, channel.dim]]

    return _short_cycle(stuck, successors, predecessors) if stuck else None


def _graph_cycle(depends_on):
    """A short cycle of a graph in the form of :func:`channel_dependencies`, or None."""
    depended_on_by = {channel: [] for channel in depends_on}
    indegree = dict.fromkeys(depends_on, 0)
    for channel, successors in depends_on.items():
        for successor in successors:
            depended_on_by[successor].append(channel)
            indegree[successor] += 1
    queue = deque(channel for channel, count in indegree.items() if count == 0)
    while queue:
        for successor in depends_on[queue.popleft()]:
            indegree[successor] -= 1
            if indegree[successor] == 0:
                queue.append(successor)
    stuck = {channel for channel, count in indegree.items() if count > 0}
    if not stuck:
        return None
    return _short_cycle(stuck, lambda c: sorted(depends_on[c]), lambda c: depended_on_by[c])


def find_graph_cycle(depends_on):
    """A short cycle of any graph in the form of :func:`channel_dependencies` (a map from each
    channel to the set it depends on; a configured fabric's, in physical channels:
    :mod:`ihcube.configured_deadlock`), or None if it is acyclic."""
    return _graph_cycle(depends_on)


def find_cycle(n, routing=None, *, broadcast=True):
    """A cycle of the channel dependency graph of ``routing`` on ``n`` nodes, or None.

    A :class:`FirstSetBitRouting` is checked with :func:`dependency_table`, in ``O(n D**2)``;
    any other route function with :func:`channel_dependencies`, in ``O(n**2)`` calls.

    Returns
    -------
    list of :class:`Channel` or None
        Link channels ``c0, c1, ..., ck`` such that each depends on the next and ``ck`` on
        ``c0``; a shortest one through some channel, starting from the least channel.
    """
    topology.check_node_count(n)
    routing = routing_for() if routing is None else routing
    if isinstance(routing, FirstSetBitRouting):
        depends, _ = dependency_table(n, routing, broadcast=broadcast)
        level = dependency_levels(n, depends)
        exists, _ = link_tables(n)
        if not ((level < 0) & (exists[:, None] >> np.arange(depends.shape[1]) & 1 == 1)).any():
            return None
        return _table_cycle(n, depends, level)
    return _graph_cycle(channel_dependencies(n, routing, broadcast=broadcast))


def format_cycle(cycle):
    """Write a cycle of link channels as ``"0 -(dim 1)-> 2 -(dim 0)-> 3 ... -> 0"``."""
    return f"{cycle[0].node}" + "".join(f" -(dim {c.dim})-> {c.far}" for c in cycle)


def explain_cycle(n, cycle, routing=None, *, broadcast=True):
    """Name a message that makes each dependency of ``cycle``.

    Returns one phrase per channel of the cycle, such as ``"at node 3 a unicast for node 1
    waits for dim 1"``: a message that holds the buffer at the end of the channel and waits
    for the next one. A unicast is named when one exists, else a broadcast.
    """
    routing = routing_for() if routing is None else routing
    phrases = []
    for held, wanted in zip(cycle, cycle[1:] + cycle[:1]):
        a, b = held.node, held.far
        dest = next((d for d in range(n) if routing(n, a, d) == held.dim
                     and routing(n, b, d) == wanted.dim), None)
        if dest is not None:
            phrases.append(f"at node {b} a unicast for node {dest} waits for dim {wanted.dim}")
            continue
        if broadcast:
            # The broadcast that node a originates carries every travel bit any copy on
            # this channel can carry (see dependency_table).
            steps = topology.broadcast_step(n, a, topology.full_travel(n),
                                            travel_order(routing, a))
            for dim, travel in steps:
                if dim == held.dim and any(
                        dim_ == wanted.dim for dim_, _ in
                        topology.broadcast_step(n, b, travel, travel_order(routing, b))):
                    phrases.append(f"at node {b} a broadcast from node {a} waits for dim "
                                   f"{wanted.dim}")
                    break
            else:
                phrases.append(f"at node {b} nothing known waits for dim {wanted.dim}")
        else:
            phrases.append(f"at node {b} nothing known waits for dim {wanted.dim}")
    return phrases


@functools.lru_cache(maxsize=None)
def _deadlock_message(n, routing, broadcast):
    cycle = find_cycle(n, routing, broadcast=broadcast)
    if cycle is None:
        return None
    because = "; ".join(explain_cycle(n, cycle, routing, broadcast=broadcast))
    return (f"Routing {_name_of(routing)!r} of {n} nodes can deadlock: its channel dependency "
            f"graph has the cycle {format_cycle(cycle)} ({because})")


def check_deadlock_free(n, order=topology.MSB_FIRST, routing=None, *, broadcast=True):
    """Raise ``ValueError`` naming a cycle if the channel dependency graph has one.

    This is the check that :class:`ihcube.rtl.Fabric` runs at construction. The answer is
    cached per ``(n, routing, broadcast)``. For a :class:`FirstSetBitRouting`, such as the
    router's own (``routing=None``), it takes about ``n D**2`` compiled steps: some
    milliseconds for ``n = 1024``, some tens of milliseconds for ``n = 4096``, and time linear
    in ``n D**2`` beyond (memory too: ``9 n D**2`` bytes), after about half a second to load
    the compiled kernels in a new process. Any other route function is enumerated with
    ``n**2`` calls, which is about ``n**2 * 15`` microseconds: fine to a few hundred nodes.

    Parameters
    ----------
    n : int
        Number of nodes.
    order : ``"msb"`` or ``"lsb"``
        The routing order, when ``routing`` is None.
    routing : callable or None
        The unicast route function, ``routing(n, node, dest)``; :func:`routing_for`
        ``(order)`` if None.
    broadcast : bool
        Include broadcasts (Algorithm 6), as the router carries them.
    """
    topology.check_node_count(n)
    topology.check_routing_order(order)
    message = _deadlock_message(n, routing_for(order) if routing is None else routing,
                                bool(broadcast))
    if message is not None:
        raise ValueError(message)


# --- Every size at once -----------------------------------------------------------------------


class SweepResult(NamedTuple):
    """What :func:`sweep` found for one routing order."""

    #: The routing order.
    order: str
    #: The sizes checked.
    sizes: int
    #: The sizes whose graph has a cycle.
    cyclic: list
    #: The first cyclic size and its cycle, or None.
    first_cycle: tuple | None
    #: The longest chain of dependencies among the acyclic sizes, in channels, and its size.
    longest_chain: tuple
    #: Time taken.
    seconds: float


def sweep(max_nodes, orders=topology.ROUTING_ORDERS, *, broadcast=True, sizes=None,
          progress=None):
    """Check the channel dependency graph of every size ``n = 1 .. max_nodes``.

    Parameters
    ----------
    max_nodes : int
        The largest size.
    orders : sequence of ``"msb"`` / ``"lsb"``
        The routing orders to check.
    broadcast : bool
        Include broadcasts (Algorithm 6).
    sizes : iterable of int or None
        Check these sizes instead of ``1 .. max_nodes``.
    progress : callable or None
        Called with no argument after each size of each order (a progress line's step).

    Returns
    -------
    list of :class:`SweepResult`
        One per order.
    """
    sizes = list(range(1, max_nodes + 1)) if sizes is None else list(sizes)
    results = []
    for order in orders:
        routing = routing_for(order)
        started = time.perf_counter()
        cyclic, first_cycle, longest = [], None, (0, None)
        for n in sizes:
            depends, _ = dependency_table(n, routing, broadcast=broadcast)
            level = dependency_levels(n, depends)
            exists, _ = link_tables(n)
            links = exists[:, None] >> np.arange(depends.shape[1]) & 1 == 1
            if ((level < 0) & links).any():
                cyclic.append(n)
                if first_cycle is None:
                    first_cycle = (n, _table_cycle(n, depends, level))
            elif links.any() and level.max() + 1 > longest[0]:
                longest = (int(level.max()) + 1, n)
            if progress is not None:
                progress()
        results.append(SweepResult(order, len(sizes), cyclic, first_cycle, longest,
                                   time.perf_counter() - started))
    return results


def cross_check(max_nodes, orders=topology.ROUTING_ORDERS, *, broadcast=True):
    """Compare :func:`dependency_table` with :func:`channel_dependencies` (the enumerated
    reference) edge for edge for every ``n = 1 .. max_nodes``; slow, ``n**2`` route calls per
    size.

    Returns
    -------
    list of (str, int)
        The ``(order, n)`` whose two graphs differ, in the order checked; empty if none.
    """
    differ = []
    for order in orders:
        for n in range(1, max_nodes + 1):
            routing = routing_for(order)
            depends, _ = dependency_table(n, routing, broadcast=broadcast)
            if table_dependencies(n, depends) != channel_dependencies(
                    n, routing, broadcast=broadcast):
                differ.append((order, n))
    return differ


# --- Wormhole switching: channels are (link, virtual channel) pairs --------------------------
#
# docs/wormhole.md, "Deadlock". A worm holds every virtual channel from its tail to its head, so
# a blocked head makes each channel it holds wait for the one it wants: the graph is the link
# graph above, each link split into its virtual channels, with the edges that the rule for
# choosing virtual channels allows. A cycle there can deadlock (Dally and Seitz); none cannot.


class VirtualChannel(NamedTuple):
    """Virtual channel ``vc`` of link ``dim`` from ``node``, or a PE channel (``dim`` is
    :data:`INJECT` or :data:`EJECT`, ``vc`` 0)."""

    node: int
    dim: int
    vc: int

    @property
    def is_link(self):
        return self.dim >= 0

    @property
    def link(self):
        """The :class:`Channel` that carries it."""
        return Channel(self.node, self.dim)

    @property
    def far(self):
        return self.link.far

    def __str__(self):
        if not self.is_link:
            return str(self.link)
        return f"{self.node} -(dim {self.dim}, vc {self.vc})-> {self.far}"


#: Broadcast scheme: a broadcast moves whole (virtual cut-through). Its copy on a link takes
#: that link's broadcast channel only when the buffer at the far end is empty and holds a whole
#: message, so a copy never stops half way: it waits, whole, in the buffer it arrived in, for
#: the channels of its own branches only (the packet-mode dependencies of Algorithm 6).
WHOLE = "whole"
#: Broadcast scheme of the negative controls: a forked worm that takes its branches one at a
#: time with buffers smaller than a message. Every channel it holds (its whole tree so far) then
#: waits for every branch not yet taken, not only for its own children.
FORKED = "forked"
BROADCAST_SCHEMES = (WHOLE, FORKED)


class VirtualChannelRule:
    """Which virtual channels a message may take, as edges of the dependency graph.

    Parameters
    ----------
    vcs : int
        Unicast virtual channels per link, ``0 .. vcs - 1``.
    name : str
        What messages call this rule.
    unicast : callable or None
        ``unicast(vc, dim)`` lists the virtual channels a unicast that holds channel ``vc`` of
        a link may take on its next link ``dim`` (``vc`` is 0 for the PE's injection); every
        unicast channel if None (the router's rule: a free one, any).
    broadcast_vc : int or None
        The channel broadcasts take on every link; ``vcs`` (a channel of their own) if None.
    scheme : :data:`WHOLE` or :data:`FORKED`
        How a broadcast holds channels.
    """

    def __init__(self, vcs, name, unicast=None, broadcast_vc=None, scheme=WHOLE):
        self.vcs = vcs
        self.name = name
        self._unicast = unicast
        self.broadcast_vc = vcs if broadcast_vc is None else broadcast_vc
        if scheme not in BROADCAST_SCHEMES:
            raise ValueError(f"Broadcast scheme must be one of 'whole' or 'forked', not "
                             f"{scheme!r}")
        self.scheme = scheme

    def unicast_vcs(self, vc, dim):
        """The virtual channels of link ``dim`` that a unicast holding ``vc`` may take next."""
        if self._unicast is None:
            return range(self.vcs)
        return tuple(self._unicast(vc, dim))

    def __repr__(self):
        return f"VirtualChannelRule({self.name!r})"


@functools.lru_cache(maxsize=None)
def router_vc_rule(vcs):
    """The rule of :class:`ihcube.rtl.WormholeRouter`: a unicast takes any free one of the
    ``vcs`` unicast channels; a broadcast takes channel ``vcs`` of each link, whole."""
    return VirtualChannelRule(vcs, "any free unicast channel; broadcasts whole on their own")


def _link_graph(n, routing, *, unicast, broadcast):
    """The link-level graph (:func:`channel_dependencies`' form) of the unicasts or the
    broadcasts alone, from :func:`dependency_table` when ``routing`` is first-set-bit."""
    if isinstance(routing, FirstSetBitRouting):
        depends, _ = dependency_table(n, routing, broadcast=broadcast, unicast=unicast)
        return table_dependencies(n, depends)
    return channel_dependencies(n, routing, broadcast=broadcast, unicast=unicast)


def _forked_dependencies(n, routing):
    """The link-level graph of :data:`FORKED` broadcasts: in each origin's tree (Algorithm 6,
    each node's travel rule), each channel depends on every other channel of the tree but its
    own ancestors."""
    depends_on = {}
    for origin in range(n):
        sends = topology.broadcast_tree(n, origin, travel_order(routing, origin))
        parent = {}
        for frm, to, _ in sends:
            channel = Channel(frm, (frm ^ to).bit_length() - 1)
            parent[to] = channel
        tree = [Channel(frm, (frm ^ to).bit_length() - 1) for frm, to, _ in sends]
        for channel in tree:
            ancestors, node = set(), channel.node
            while node in parent:
                ancestors.add(parent[node])
                node = parent[node].node
            depends_on.setdefault(channel, set()).update(
                other for other in tree if other != channel and other not in ancestors)
    return depends_on


def virtual_channel_dependencies(n, vcs, routing=None, rule=None):
    """The channel dependency graph of wormhole switching over (link, virtual channel).

    Unicast edges come from the link graph of the unicasts (:func:`dependency_table`, or
    :func:`channel_dependencies` for another route function): channel ``(c, v)`` depends on
    ``(c', v')`` when a unicast that crossed link ``c`` goes on by ``c'`` and ``rule`` lets it
    take ``v'`` from ``v``. Broadcast edges join the broadcast channels: those of Algorithm 6's
    trees (the link graph of the broadcasts) for :data:`WHOLE`, those of a held tree
    (:func:`_forked_dependencies`) for :data:`FORKED`. PE channels are the sources and sinks.

    Returns
    -------
    dict
        Maps every :class:`VirtualChannel` to the set of virtual channels it depends on.
    """
    topology.check_node_count(n)
    routing = routing_for() if routing is None else routing
    rule = router_vc_rule(vcs) if rule is None else rule
    unicasts = _link_graph(n, routing, unicast=True, broadcast=False)
    if rule.scheme == WHOLE:
        broadcasts = _link_graph(n, routing, unicast=False, broadcast=True)
    else:
        broadcasts = _forked_dependencies(n, routing)

    def next_channels(channel, vc):
        if not channel.is_link:
            return [VirtualChannel(channel.node, channel.dim, 0)]
        return [VirtualChannel(channel.node, channel.dim, v)
                for v in rule.unicast_vcs(vc, channel.dim)]

    depends_on = {}
    for channel, successors in unicasts.items():
        vcs_here = range(rule.vcs) if channel.is_link else (0,)
        for vc in vcs_here:
            held = VirtualChannel(channel.node, channel.dim, vc)
            depends_on.setdefault(held, set()).update(
                wanted for successor in successors for wanted in next_channels(successor, vc))
    bvc = rule.broadcast_vc
    for channel, successors in broadcasts.items():
        held = VirtualChannel(*channel, bvc if channel.is_link else 0)
        wanted = {VirtualChannel(*successor, bvc if successor.is_link else 0)
                  for successor in successors}
        depends_on.setdefault(held, set()).update(wanted)
    for successors in list(depends_on.values()):
        for channel in successors:
            depends_on.setdefault(channel, set())
    return depends_on


def find_vc_cycle(n, vcs, routing=None, rule=None):
    """A short cycle of :func:`virtual_channel_dependencies`, or None (the same search as
    :func:`find_cycle`)."""
    return _graph_cycle(virtual_channel_dependencies(n, vcs, routing, rule))


def format_vc_cycle(cycle):
    """Write a cycle of virtual channels, each waiting for the next, as ``"[0 -(dim 1, vc 3)->
    2] waits for [2 -(dim 0, vc 3)-> 3] ... waits for [0 -(dim 1, vc 3)-> 2]"``: a forked
    worm's channels need not be consecutive links."""
    return " waits for ".join(f"[{channel}]" for channel in [*cycle, cycle[0]])


@functools.lru_cache(maxsize=None)
def _wormhole_deadlock_message(n, vcs, routing, rule):
    cycle = find_vc_cycle(n, vcs, routing, rule)
    if cycle is None:
        return None
    rule = router_vc_rule(vcs) if rule is None else rule
    return (f"Wormhole routing {_name_of(routing)!r} with virtual-channel rule {rule.name!r} "
            f"and {rule.scheme} broadcasts, {vcs} channels per link, of {n} nodes can "
            f"deadlock: its dependency graph over (link, virtual channel) has the cycle "
            f"{format_vc_cycle(cycle)}")


def check_wormhole_deadlock_free(n, vcs, order=topology.MSB_FIRST, routing=None, rule=None):
    """Raise ``ValueError`` naming a cycle if the wormhole dependency graph over (link,
    virtual channel) pairs (:func:`virtual_channel_dependencies`) has one.

    :class:`ihcube.rtl.WormholeFabric` runs it at construction, and the Verilog generator
    before it writes a wormhole fabric. ``rule`` is the router's (:func:`router_vc_rule`) if
    None. Cached per arguments.
    """
    topology.check_node_count(n)
    topology.check_routing_order(order)
    message = _wormhole_deadlock_message(n, vcs, routing_for(order) if routing is None
                                         else routing, rule)
    if message is not None:
        raise ValueError(message)
