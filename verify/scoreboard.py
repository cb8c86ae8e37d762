"""Check a recorded run against the rules of :mod:`ihcube.topology`.

:func:`check_run` takes what a :class:`~ihcube.verify.harness.FabricHarness` recorded and lists
every way the fabric broke its promises: a message lost, duplicated, corrupted, delivered to
the wrong PE or eject port, or routed off its Katseff path; a broadcast copy missing,
doubled, or off its unicast path. An empty list is a clean run. Each request's payload must be unique.
"""

from collections import defaultdict

from .. import topology
from ..rtl.message import Kind

__all__ = ["check_run"]


def check_run(n, injected, hops, deliveries, order=topology.MSB_FIRST, limit=20, ports=1):
    """Return up to ``limit`` problems found in a run, as sentences.

    Parameters
    ----------
    n : int
        Number of nodes.
    injected : list of (cycle, node, Request)
        What each PE handed to the fabric.
    hops, deliveries : lists of :class:`Hop` and :class:`Delivery`
        What the link monitors and the PEs saw.
    order : ``"msb"`` or ``"lsb"``
        The routing order the fabric was built with.
    ports : int
        PE ports per node: each delivery must come out of the eject port of
        :func:`ihcube.topology.eject_port` for where it arrived from.
    """
    problems = []
    hops_of = defaultdict(list)
    for hop in hops:
        hops_of[hop.message.kind, hop.message.payload].append(hop)
    deliveries_of = defaultdict(list)
    for delivery in deliveries:
        deliveries_of[delivery.message.kind, delivery.message.payload].append(delivery)

    known = set()
    for _, src, request in injected:
        key = request.kind, request.payload
        if key in known:
            raise ValueError(f"payload {request.payload} was injected twice; the scoreboard "
                             f"needs unique payloads")
        known.add(key)
        if request.kind == Kind.BROADCAST:
            problems += _check_broadcast(n, src, request, hops_of[key], deliveries_of[key],
                                         order)
        else:
            problems += _check_unicast(n, src, request, hops_of[key], deliveries_of[key], order)
        for delivery in deliveries_of[key]:
            port = _eject_port(n, ports, src, delivery.node, request.port, order)
            if delivery.port != port:
                problems.append(f"{request.kind.name.lower()} {request.payload} from {src} "
                                f"left node {delivery.node} on eject port {delivery.port}, "
                                f"not {port}")

    for key, found in deliveries_of.items():
        if key not in known:
            problems.append(f"{len(found)} deliveries of a message nobody sent: {found[0]}")
    for key, found in hops_of.items():
        if key not in known:
            problems.append(f"{len(found)} hops of a message nobody sent: {found[0]}")
    return problems[:limit]


def _eject_port(n, ports, src, node, inject_port, order):
    """The eject port at ``node`` of a message from ``src`` injected on ``inject_port``: by
    the link of the last hop of its path, or by its injection port if ``node == src``."""
    if node == src:
        return topology.eject_port(n, ports, topology.dimensions(n) + inject_port)
    last = topology.path(n, src, node, order)[-2]
    return topology.eject_port(n, ports, (last ^ node).bit_length() - 1)


def _check_unicast(n, src, request, hops, deliveries, order):
    name = f"unicast {request.payload} from {src} to {request.dest}"
    if request.dest >= n:
        if hops or deliveries:
            return [f"{name} names no node but entered the fabric: {(hops + deliveries)[0]}"]
        return []

    problems = []
    if len(deliveries) != 1:
        problems.append(f"{name} was delivered {len(deliveries)} times")
    for delivery in deliveries:
        message = delivery.message
        if (delivery.node, message.dest, message.src) != (request.dest, request.dest, src):
            problems.append(f"{name} arrived wrong: {delivery}")

    expected = topology.path(n, src, request.dest, order)
    visited = [hop.node for hop in sorted(hops, key=lambda hop: hop.cycle)] + [request.dest]
    if visited != expected:
        problems.append(f"{name} went {visited}, Algorithm 2 says {expected}")
    for hop in hops:
        if (hop.message.dest, hop.message.src) != (request.dest, src):
            problems.append(f"{name} was altered on a link: {hop}")
    return problems


def _check_broadcast(n, src, request, hops, deliveries, order):
    name = f"broadcast {request.payload} from {src}"
    problems = []
    delivered = defaultdict(int)
    for delivery in deliveries:
        delivered[delivery.node] += 1
        if delivery.message.src != src:
            problems.append(f"{name} arrived with the wrong src: {delivery}")
    for node in range(n):
        copies = delivered[node]
        if node == src and copies:
            problems.append(f"{name} was delivered {copies} times to its own origin")
        elif node != src and copies != 1:
            problems.append(f"{name} was delivered {copies} times to node {node}")

    # Katseff, Theorem 4: the copy for each node comes along the unicast path to it, so the
    # link into node v is the last link of path(src, v), and there is exactly one. (The
    # travel rule of each order follows that order's paths: topology.travel_mask.)
    arrivals = defaultdict(list)
    for hop in hops:
        arrivals[hop.far].append(hop.node)
    for node in range(n):
        if node == src:
            if arrivals[node]:
                problems.append(f"{name} came back to its origin from {arrivals[node]}")
            continue
        expected_from = topology.path(n, src, node, order)[-2]
        if arrivals[node] != [expected_from]:
            problems.append(f"{name} reached node {node} from {arrivals[node]}, "
                            f"its unicast path comes from {expected_from}")
    return problems
