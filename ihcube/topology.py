"""The rules of the incomplete hypercube, in plain Python.

This module is the single statement of the topology (which links exist), the unicast route
step (Katseff, Algorithm 2), the broadcast fan-out with travel vectors (Katseff, Algorithm 6)
and the paths and trees they produce. The RTL elaborates from it, the tests check against it;
nothing else restates these rules.

The rules of link existence, travel vectors and known destination bits are written so that
they evaluate on Python integers and, unchanged, on Amaranth values: a reconfigurable fabric
(``docs/reconfiguration-hardware.md``) builds its run-time logic by calling them with its
configured node count and logical address, ``dims`` saying how many address bits to cover.
:func:`configuration_fits` says which configurations of such a fabric are valid.
"""

from __future__ import annotations

from functools import lru_cache, reduce

import operator

from .params import MAX_FABRIC_NODES, check_at_most, check_positive_integer

__all__ = [
    "MSB_FIRST", "LSB_FIRST", "ROUTING_ORDERS",
    "check_node_count", "check_fabric_node_count", "check_node", "check_routing_order",
    "dimensions", "address_bits", "link_exists", "links", "exists_mask", "neighbor",
    "first_set_bit", "route_step", "path", "distance", "distances", "diameter",
    "full_travel", "travel_mask", "known_dest_mask", "relayed_dest", "broadcast_step",
    "broadcast_tree", "dimension_used", "configuration_fits", "check_configuration",
    "onward_links", "link_set_onward_links", "router_class", "eject_port", "arrival_port",
]

#: Route on the most significant usable bit of ``a XOR d`` first (Katseff; the default).
MSB_FIRST = "msb"
#: Route on the least significant usable bit first (Tzeng and Kumar's "Algorithm R").
LSB_FIRST = "lsb"
ROUTING_ORDERS = (MSB_FIRST, LSB_FIRST)


def check_node_count(n):
    """Return ``n`` if it is a valid node count, else raise with a message a user understands."""
    return check_positive_integer(n, "Node count")


def check_fabric_node_count(n):
    """Return ``n`` if it is a node count the hardware takes, at most
    :data:`ihcube.params.MAX_FABRIC_NODES`, else raise."""
    return check_at_most(n, MAX_FABRIC_NODES, "Node count")


def check_node(n, node, what="Node"):
    """Return ``node`` if it names one of the ``n`` nodes, else raise."""
    n = check_node_count(n)
    try:
        index = operator.index(node) if not isinstance(node, bool) else None
    except TypeError:
        index = None
    if index is None or not 0 <= index < n:
        raise ValueError(f"{what} must be an integer from 0 to {n - 1}, not {node!r}")
    return index


def check_routing_order(order):
    """Return ``order`` if it is one of :data:`ROUTING_ORDERS`, else raise."""
    if order not in ROUTING_ORDERS:
        raise ValueError(f"Routing order must be one of 'msb' or 'lsb', not {order!r}")
    return order


def dimensions(n):
    """Number of address bits ``D = ceil(log2 n)`` (0 for a single node)."""
    n = check_node_count(n)
    return (n - 1).bit_length()


def address_bits(n):
    """Width of a node address in hardware: ``D``, but at least 1.

    One bit more than the single-node fabric needs, so that its PE can still name a
    node that does not exist (and be refused).
    """
    return max(1, dimensions(n))


def dimension_used(n, i):
    """Whether dimension ``i`` is one of the ``D`` address bits of ``n`` nodes: ``2**i < n``,
    which is ``i < D``. A Python bool, or a 1-bit Amaranth value when ``n`` is one."""
    return (1 << i) < n


def link_exists(n, a, i):
    """Whether link ``i`` exists from node ``a``: ``i < D`` and ``a XOR 2**i < n``.

    The test is symmetric in the two ends, so links are bidirectional. ``n`` and ``a`` may be
    Amaranth values (or ``a`` a NumPy array): the result is then one too.
    """
    return 0 <= i and dimension_used(n, i) & ((a ^ (1 << i)) < n)


def links(n, a):
    """The dimensions of the links that exist from node ``a``, in increasing order."""
    return tuple(i for i in range(dimensions(n)) if link_exists(n, a, i))


def _vector(bits):
    """The integer (or Amaranth value) whose bit ``i`` is the ``i``-th of ``bits``."""
    return reduce(operator.or_, (bit << i for i, bit in enumerate(bits)), 0)


def _dims(n, dims):
    return dimensions(n) if dims is None else dims


def exists_mask(n, a, dims=None):
    """The link-existence vector of node ``a`` as a ``D``-bit integer (bit ``i`` = link ``i``).

    With ``dims``, over that many bits (the rule leaves those from ``D`` on clear for ``a <
    n``), so that ``n`` and ``a`` may be Amaranth values.
    """
    return _vector(link_exists(n, a, i) for i in range(_dims(n, dims)))


def neighbor(a, i):
    """The node at the far end of link ``i`` from ``a``."""
    return a ^ (1 << i)


def first_set_bit(bits, order=MSB_FIRST):
    """The index of the first set bit of ``bits`` in the given scan order, or None if zero.

    This is the hardware route selector's priority encoder, stated once.
    """
    if bits == 0:
        return None
    if order == MSB_FIRST:
        return bits.bit_length() - 1
    return (bits & -bits).bit_length() - 1


def route_step(n, a, d, order=MSB_FIRST):
    """The link that a message at ``a`` for ``d`` leaves on, or None to deliver to ``a``'s PE.

    Katseff, Algorithm 2: the first set bit of ``(a XOR d) AND exists(a)``. Theorem 1
    guarantees such a bit for every ``d < n`` other than ``a``.
    """
    return first_set_bit((a ^ d) & exists_mask(n, a), order)


def path(n, src, dest, order=MSB_FIRST):
    """The nodes a unicast message visits from ``src`` to ``dest``, both included."""
    nodes = [src]
    while nodes[-1] != dest:
        step = route_step(n, nodes[-1], dest, order)
        if step is None:  # pragma: no cover - Theorem 1 says this cannot happen for dest < n
            raise AssertionError(f"no link from node {nodes[-1]} towards node {dest} (n={n})")
        nodes.append(neighbor(nodes[-1], step))
    return nodes


def distance(n, a, b):
    """The hops of the unicast path from ``a`` to ``b``: ``popcount(a XOR b)``.

    Katseff, Theorem 1: every route step clears one bit of ``a XOR b``, in any incomplete
    cube and either routing order, so this is also the shortest distance.
    """
    check_node(n, a)
    check_node(n, b)
    return bin(a ^ b).count("1")


def distances(n, a):
    """:func:`distance` from ``a`` to every node, as a list indexed by node."""
    check_node(n, a)
    return [bin(a ^ b).count("1") for b in range(n)]


def diameter(n):
    """The largest :func:`distance` between two of the ``n`` nodes: ``D``, as in the complete
    cube.

    For ``n > 1`` take ``a = n - 1``, whose bit ``D - 1`` is set, and ``b`` its low ``D - 1``
    bits inverted: ``b < 2**(D - 1) < n`` and ``a XOR b`` has all ``D`` bits set; no two
    nodes differ in more than their ``D`` address bits.
    """
    return dimensions(n)


def full_travel(n, dims=None):
    """The travel vector of a broadcast at its origin: all ``D`` bits set (over ``dims`` bits,
    as :func:`exists_mask`)."""
    if dims is None:
        return (1 << dimensions(n)) - 1
    return _vector(dimension_used(n, i) for i in range(dims))


def travel_mask(n, a, l, order=MSB_FIRST, dims=None):
    """The mask that a copy sent on link ``l`` from ``a`` applies to its travel vector.

    Katseff, Algorithm 6 (``order="msb"``): bit ``i`` survives iff ``i < l`` or link ``i``
    does not exist from ``a``, so a copy goes on to lower dimensions only, as a
    most-significant-first unicast does. Least-significant-first routing uses the mirror
    image, ``i > l`` or link ``i`` missing, so that its copies climb the dimensions as its
    unicasts do: with Algorithm 6 they would descend them, and the two directions close a
    cycle of channel dependencies from ``n = 4`` (see :mod:`ihcube.deadlock`). The tests
    check Theorems 3 and 4 (every node reached once, along its unicast path) for both.
    ``dims`` as for :func:`exists_mask`.
    """
    keep = (lambda i: i < l) if check_routing_order(order) == MSB_FIRST else (lambda i: i > l)
    return _vector(dimension_used(n, i) & (keep(i) or (a ^ (1 << i)) >= n)
                   for i in range(_dims(n, dims)))


def known_dest_mask(n, a, l, order=MSB_FIRST, dims=None):
    """The bits of ``dest`` that every unicast leaving ``a`` on link ``l`` has equal to the
    address of the node it goes to, ``neighbor(a, l)``.

    :func:`route_step` picks ``l`` only when no link of ``a`` scanned before ``l`` in
    ``order`` leads towards ``dest`` (those bits of ``a XOR dest`` are clear) and bit ``l``
    of ``a XOR dest`` is set. The links scanned before ``l``, and ``l`` itself, are the
    existing links that :func:`travel_mask` clears for a copy on ``l``. So a router can drive
    these bits of an outgoing link's ``dest`` from its own address (bit ``l`` inverted)
    instead of switching them; the tests check the mask against :func:`route_step` for
    every destination. ``dims`` as for :func:`exists_mask`.
    """
    return full_travel(n, dims) & ~travel_mask(n, a, l, order, dims)


def relayed_dest(n, src, a, l, dest, order=MSB_FIRST):
    """The ``dest`` field of a broadcast copy from ``src`` sent by ``a`` on link ``l``, when
    its origin's PE gave ``dest`` (which means nothing for a broadcast).

    Each router drives the :func:`known_dest_mask` bits of an outgoing link's ``dest`` from
    its address whatever the message's kind, so a copy's ``dest`` has those bits of every
    link it has crossed set to that link's far end. The copy for ``neighbor(a, l)`` comes
    along the unicast path from ``src`` (Katseff, Theorem 4).
    """
    nodes = path(n, src, a, order)
    for here, there in [*zip(nodes, nodes[1:]), (a, neighbor(a, l))]:
        mask = known_dest_mask(n, here, (here ^ there).bit_length() - 1, order)
        dest = dest & ~mask | there & mask
    return dest


def broadcast_step(n, a, travel, order=MSB_FIRST):
    """The copies a router at ``a`` sends for a broadcast holding ``travel``.

    Returns ``(l, travel')`` pairs, one for every existing link ``l`` with ``travel[l]`` set,
    with the travel vectors of :func:`travel_mask` in ``order``.
    """
    return [(l, travel & travel_mask(n, a, l, order)) for l in links(n, a) if travel >> l & 1]


def broadcast_tree(n, origin, order=MSB_FIRST):
    """The link messages of a broadcast from ``origin``, as ``(from, to, travel)`` triples.

    Follows :func:`broadcast_step` from the origin; Katseff's Theorems 3 and 4 say every
    other node is reached exactly once, along its unicast path from ``origin`` (in
    ``order``: the tests check the mirrored rule too).
    """
    sends = []
    frontier = [(origin, full_travel(n))]
    while frontier:
        a, travel = frontier.pop()
        for l, copy_travel in broadcast_step(n, a, travel, order):
            sends.append((a, neighbor(a, l), copy_travel))
            frontier.append((neighbor(a, l), copy_travel))
    return sends


def configuration_fits(nodes, active_nodes, mask, dims=None):
    """Whether a reconfigurable fabric of ``nodes`` physical routers can take ``active_nodes``
    logical nodes with mapping ``mask``: ``0 < active_nodes <= nodes`` and every logical
    address ``l < active_nodes`` lies at a physical router, ``l XOR mask < nodes``.

    The largest ``l XOR mask`` over ``l <= m = active_nodes - 1`` is ``(m XOR mask)`` with
    every bit below the highest bit of ``m AND mask`` set (from the most significant bit
    down, ``l`` follows ``m`` until the first bit where both ``m`` and ``mask`` are 1, where
    ``l`` takes 0, and is then free). ``active_nodes`` and ``mask`` may be Amaranth values,
    ``dims`` (the physical fabric's address bits) wide; the tests check the rule against
    the search over every ``l``.
    """
    dims = max(address_bits(nodes), int(mask).bit_length()) if dims is None else dims
    last = active_nodes - 1
    below = _vector((last & mask) >= (1 << i) for i in range(dims))
    return (0 < active_nodes) & (active_nodes <= nodes) & (((last ^ mask) | below) < nodes)


def check_configuration(nodes, active_nodes, mask):
    """Return ``(active_nodes, mask)`` if :func:`configuration_fits` (``mask`` an address of
    the physical fabric), else raise with a message a user understands."""
    nodes = check_node_count(nodes)
    active_nodes = check_positive_integer(active_nodes, "Active node count")
    if active_nodes > nodes:
        raise ValueError(f"Active node count must be at most the {nodes} physical nodes, not "
                         f"{active_nodes!r}")
    if isinstance(mask, bool) or not isinstance(mask, int) or \
            not 0 <= mask < 1 << address_bits(nodes):
        raise ValueError(f"Mask must be an integer from 0 to {(1 << address_bits(nodes)) - 1}, "
                         f"not {mask!r}")
    if not configuration_fits(nodes, active_nodes, mask):
        raise ValueError(f"Mask {mask} places a logical node of the {active_nodes} at a "
                         f"physical node >= {nodes}: every logical address l < {active_nodes} "
                         f"must have l XOR mask < {nodes}")
    return active_nodes, mask


def onward_links(n, a, l, order=MSB_FIRST):
    """The links of ``a`` that a message which arrived on link ``l`` can leave on.

    The sender ``b = a XOR 2**l`` sends a unicast on ``l`` only when every bit of
    ``b XOR dest`` before ``l`` in ``order`` is on a link missing at ``b``, and sends a
    broadcast copy with ``travel AND travel_mask(n, b, l, order)``. Either way what is left to
    do at ``a`` lies inside that mask, so these are its links with the mask's bit set; the
    router needs no path from input ``l`` to its other links. The tests check this against
    every unicast path and broadcast tree.
    """
    mask = travel_mask(n, neighbor(a, l), l, order)
    return tuple(i for i in links(n, a) if mask >> i & 1)


def link_set_onward_links(n, a, l, order=MSB_FIRST):
    """:func:`onward_links` of input ``l`` for every node with ``a``'s links, merged.

    One router module serves every node of a link set (a strapped router), so it needs the
    union of their onward links.
    """
    return _link_set_onward_links(check_node_count(n), exists_mask(n, check_node(n, a)), l,
                                  check_routing_order(order))


def router_class(n, a, order=MSB_FIRST):
    """What the router of ``a`` is built from, besides its address: its link-existence vector
    and the :func:`onward_links` of each of its links, in link order.

    Nodes of one class have routers that differ only in their address, so one strapped
    router module (its address a port) serves them all with the crossbar of each
    (``ihcube.generate`` writes one module per class). A link set splits into several classes
    when ``n`` is not a power of two: at 26 nodes the 4 link sets make 7 classes.
    """
    n, order = check_node_count(n), check_routing_order(order)
    check_node(n, a)
    return exists_mask(n, a), tuple(onward_links(n, a, l, order) for l in links(n, a))


@lru_cache(maxsize=None)
def _link_set_onward_links(n, mask, l, order):
    onward = set()
    for a in _link_sets(n)[mask]:
        onward.update(onward_links(n, a, l, order))
    return tuple(sorted(onward))


@lru_cache(maxsize=8)
def _link_sets(n):
    """Nodes by link-existence vector."""
    sets = {}
    for a in range(n):
        sets.setdefault(exists_mask(n, a), []).append(a)
    return sets


def eject_port(n, ports, source):
    """The eject port (``0 .. ports - 1``) of a message that reaches its node's PE from
    ``source``: a link's dimension ``0 .. D - 1``, or ``D + p`` for injection port ``p`` (a
    unicast to its own node).

    ``source mod ports``: with ``ports = D + 1`` every link of a complete cube has an eject
    port of its own, and the rule is the same at every node, so that a router needs no table
    and the model none either (``docs/ports.md``).
    """
    return source % ports


def arrival_port(n, ports, src, node, inject_port=0, order=MSB_FIRST):
    """The eject port at ``node`` of a message from ``src`` injected on ``inject_port``
    (:func:`eject_port` of the link of its path's last hop, or of its injection port if
    ``node == src``): where a scoreboard expects each delivery."""
    if node == src:
        return eject_port(n, ports, dimensions(n) + inject_port)
    last = path(n, src, node, order)[-2]
    return eject_port(n, ports, (last ^ node).bit_length() - 1)
