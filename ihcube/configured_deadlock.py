"""Deadlock freedom of a configured fabric: every configuration, by relabelling (SPEC 9).

A configured fabric (:class:`ihcube.reconfigure.Configuration`) routes in logical addresses:
the router of physical ``p``, logical ``l``, sends a message for logical ``d`` on its port
``port(i)`` where ``i = route_step(n, l, d)``, and that port leads to the router of logical
``l XOR 2**i`` (the mapping is an automorphism). So every message's physical path is its
logical path in the ``n``-node fabric relabelled by ``phi(l, i) = (physical(l), port(i))``, and
the configured fabric's channel dependency graph is the ``n``-node fabric's
(:func:`ihcube.deadlock.dependency_table`, proved acyclic by ``ihcube deadlock`` for every
``n <= 4096``) relabelled: isomorphic, hence acyclic. Three checks state this with the graph
code:

- :func:`configured_dependencies` builds the configured graph directly, in physical
  channels, as the routers route (each router from its own logical address, each hop along a
  physical link, which must exist); it refuses a configuration whose routes leave the fabric.
- :func:`relabelled_dependencies` maps the ``n``-node graph by ``phi``, checking that ``phi``
  is one to one on channels and puts each link channel on an existing physical link.
- :func:`check_configurations` checks, for every ``N`` up to a bound, every ``n <= N`` and
  every valid mask, that the relabelling lands on physical links, after checking each ``n``'s
  graph acyclic (:func:`ihcube.deadlock.find_cycle`); the tests compare the first two graphs
  edge for edge and run :func:`ihcube.deadlock.find_graph_cycle` on them for small ``N``.
"""

from __future__ import annotations

import numpy as np

from . import deadlock, topology
from .deadlock import EJECT, INJECT, Channel
from .reconfigure import active_sizes

__all__ = ["configured_dependencies", "relabelled_dependencies", "check_configurations"]


def _hop(N, config, p, i):
    """The router that physical ``p``'s port for logical dimension ``i`` leads to."""
    port = config.port(i)
    if not topology.link_exists(N, p, port):
        raise ValueError(f"Router {p} (logical {config.logical_address(p)}) sends on port "
                         f"{port}, which has no link in the {N}-router fabric")
    q = topology.neighbor(p, port)
    if config.logical_address(q) >= config.active_nodes:
        raise ValueError(f"Router {p} (logical {config.logical_address(p)}) sends to router "
                         f"{q}, whose logical address {config.logical_address(q)} is not active")
    return Channel(p, port)


def configured_dependencies(N, config, order=topology.MSB_FIRST):
    """The channel dependency graph of the ``N``-router fabric configured by ``config``, in
    physical channels, enumerated from the routers' rules as :func:`ihcube.deadlock.
    channel_dependencies` enumerates a fixed fabric's (every destination at every active
    router; every broadcast copy). ``O(n**2)`` route steps: for small fabrics."""
    n = config.active_nodes
    active = [p for p in range(N) if config.logical_address(p) < n]
    depends_on = {}
    for p in active:
        depends_on[Channel(p, INJECT)] = set()
        depends_on[Channel(p, EJECT)] = set()

    def next_channel(p, d):
        i = topology.route_step(n, config.logical_address(p), d, order)
        return Channel(p, EJECT) if i is None else _hop(N, config, p, i)

    for p in active:
        for d in range(n):
            channel = next_channel(p, d)
            depends_on[Channel(p, INJECT)].add(channel)
            if channel.is_link:
                depends_on.setdefault(channel, set()).add(next_channel(channel.far, d))
    seen, frontier = set(), []
    for p in active:
        for i, travel in topology.broadcast_step(n, config.logical_address(p),
                                                 topology.full_travel(n), order):
            channel = _hop(N, config, p, i)
            depends_on[Channel(p, INJECT)].add(channel)
            frontier.append((channel, travel))
    while frontier:
        channel, travel = frontier.pop()
        if (channel, travel) in seen:
            continue
        seen.add((channel, travel))
        q = channel.far
        successors = depends_on.setdefault(channel, set())
        successors.add(Channel(q, EJECT))
        for j, copy_travel in topology.broadcast_step(n, config.logical_address(q), travel,
                                                      order):
            successors.add(_hop(N, config, q, j))
            frontier.append((_hop(N, config, q, j), copy_travel))
    return depends_on


def relabelled_dependencies(N, config, order=topology.MSB_FIRST, physical=None, routing=None):
    """The ``n``-node fabric's channel dependency graph (:func:`ihcube.deadlock.
    dependency_table` with its PE channels) relabelled into physical channels by
    ``phi(l, i) = (physical(l), port(i))``.

    ``physical`` replaces ``config.physical`` and ``routing`` the router's routing in
    ``order`` (the tests' broken variants). Raises
    ``ValueError`` if ``phi`` is not one to one on channels, or puts a link channel on a link
    the ``N``-router fabric does not have, or off its far end (``phi`` of the far end)."""
    n = config.active_nodes
    physical = config.physical if physical is None else physical

    def phi(channel):
        dim = config.port(channel.dim) if channel.is_link else channel.dim
        return Channel(physical(channel.node), dim)

    routing = deadlock.routing_for(order) if routing is None else routing
    graph = deadlock.table_dependencies(n, deadlock.dependency_table(n, routing)[0])
    mapped = {phi(channel): channel for channel in graph}
    if len(mapped) != len(graph):
        raise ValueError(f"{len(graph)} channels map to {len(mapped)}: the relabelling is not "
                         f"one to one")
    image = {}
    for channel, successors in graph.items():
        mapped = phi(channel)
        if channel.is_link:
            if not 0 <= mapped.node < N or not topology.link_exists(N, mapped.node, mapped.dim):
                raise ValueError(f"Channel {channel} maps to {mapped}, which is not a link of "
                                 f"the {N}-router fabric")
            if mapped.far != physical(channel.far):
                raise ValueError(f"Channel {channel} maps to {mapped}, which does not end at "
                                 f"router {physical(channel.far)}, the image of its far end")
        image[mapped] = {phi(successor) for successor in successors}
    return image


def check_configurations(max_nodes, order=topology.MSB_FIRST):
    """Check the relabelling argument for every ``N = 1 .. max_nodes``, every active size
    ``n <= N`` and every XOR mask valid for it (each logical address on a router ``< N``:
    :func:`ihcube.reconfigure.active_sizes` with no faults).

    For each ``n`` the ``n``-node graph is checked acyclic with the graph code
    (:func:`ihcube.deadlock.find_cycle`) and, for every ``N`` and valid mask at once, every
    link channel's image is checked to be a link of the ``N``-router fabric
    (:func:`ihcube.deadlock.link_tables`). Returns the number of configurations checked;
    raises ``ValueError`` naming the first failure.
    """
    topology.check_routing_order(order)
    count = 0
    sizes = {N: active_sizes(N, ()) for N in range(1, max_nodes + 1)}
    exists = {N: deadlock.link_tables(N)[0] for N in range(1, max_nodes + 1)}
    for n in range(1, max_nodes + 1):
        cycle = deadlock.find_cycle(n, deadlock.routing_for(order))
        if cycle is not None:
            raise ValueError(f"The {n}-node fabric's graph has the cycle "
                             f"{deadlock.format_cycle(cycle)}")
        depends, _ = deadlock.dependency_table(n, deadlock.routing_for(order))
        node, dim = np.nonzero(_links(n, depends.shape[1]))  # its link channels
        for N in range(n, max_nodes + 1):
            masks = np.flatnonzero(sizes[N] >= n)
            if len(masks) == 0 or len(node) == 0:
                count += len(masks)
                continue
            p = node[None, :] ^ masks[:, None]  # Configuration(n, mask).physical, vectorised
            ok = (p < N) & (exists[N][np.minimum(p, N - 1)] >> dim[None, :] & 1 == 1)
            if not ok.all():
                m, k = (int(v) for v in np.argwhere(~ok)[0])
                channel = Channel(int(node[k]), int(dim[k]))
                raise ValueError(f"Mask {int(masks[m])} puts channel {channel} of the {n}-node "
                                 f"fabric on no link of the {N}-router fabric")
            count += len(masks)
    return count


def _links(n, dims):
    """Whether each ``(node, dim)`` of the ``n``-node fabric is a link."""
    exists, _ = deadlock.link_tables(n)
    return (exists[:, None] >> np.arange(dims) & 1) == 1
