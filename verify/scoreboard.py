"""Check a recorded run against the rules of :mod:`ihcube.topology`.

:func:`check_run` takes what a :class:`~ihcube.verify.harness.FabricHarness` recorded and lists
every way the fabric broke its promises: a message lost, duplicated, corrupted, delivered to
the wrong PE or eject port, or routed off its Katseff path; a broadcast copy missing,
doubled, or off its unicast path. An empty list is a clean run. Each request's payload must be
unique.
"""

from collections import defaultdict

from .. import topology
from ..rtl.message import Kind

__all__ = ["check_run", "check_worms"]


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
            port = topology.arrival_port(n, ports, src, delivery.node, request.port, order)
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


# --- Wormhole switching ---------------------------------------------------------------------


def check_worms(n, wormhole, injected, flits, order=topology.MSB_FIRST, limit=20):
    """Return up to ``limit`` problems of a wormhole run, as sentences.

    ``injected`` and ``flits`` are what a :class:`~ihcube.verify.harness.WormholeHarness`
    recorded. The flits on each (link, virtual channel) and at each eject port must form whole
    worms one after another, never two interleaved: a head, then the worm's body flits in
    order, then its tail, ``flits`` in all, each the flit that
    :func:`~ihcube.verify.harness.worm_flits` made. Each worm so assembled becomes a hop or a
    delivery of its message, and :func:`check_run` checks those as in packet mode: every
    unicast delivered once along its Algorithm 2 path, every broadcast once to every other
    node along the unicast paths (Katseff, Theorems 3 and 4), nothing that nobody sent.
    """
    from ..params import head_fields, header_bits
    from .harness import Delivery, Hop, Message
    problems = []
    bits = topology.address_bits(n)
    hbits = header_bits(n)
    fields = head_fields(n, wormhole.flit_width)
    free = (1 << fields.free_bits) - 1
    mask = (1 << wormhole.flit_width) - 1
    L = wormhole.flits
    # The message id is read from the first body flit that holds no bits of src (the second
    # flit holds some when the header does not fit in the head flit).
    id_flit = next((k for k in range(1, L) if not fields.src_width(k)), 1)
    streams = defaultdict(list)
    for flit in flits:
        streams[flit.node, flit.dim, flit.vc].append(flit)
    hops, deliveries = [], []
    for (node, dim, vc), stream in sorted(streams.items(), key=lambda item: str(item[0])):
        where = (f"at the eject port of node {node}" if dim is None
                 else f"on link {node} -(dim {dim})-> {node ^ 1 << dim}, vc {vc}")
        for start in range(0, len(stream), wormhole.flits):
            worm = stream[start:start + wormhole.flits]
            head = worm[0]
            marks = [(flit.head, flit.tail) for flit in worm]
            expected = [(k == 0, k == wormhole.flits - 1) for k in range(wormhole.flits)]
            if marks != expected:
                problems.append(f"flits {where} from cycle {head.cycle} do not form one worm: "
                                f"head/tail marks {marks}, a worm is {expected}")
                break
            header = head.payload
            payloads = [flit.payload for flit in worm]
            dest, src = header & ((1 << bits) - 1), fields.src_of(payloads)
            kind = Kind(header >> fields.kind_bit & 1)
            if L > 1:
                ident = ((payloads[id_flit] >> fields.src_width(id_flit)) - id_flit) // L
            else:
                ident = header >> hbits & free
            body = [fields.stamp(k, ((ident * L + k) << fields.src_width(k)) & mask, src)
                    for k in range(1, L)]
            if (payloads[1:] != body
                    or header >> hbits & free != ident & free):
                problems.append(f"worm {ident} {where} from cycle {head.cycle} is not whole and "
                                f"in order: {[hex(flit.payload) for flit in worm]}")
                break
            travel = dest if kind == Kind.BROADCAST else 0
            message = Message(dest=0 if kind == Kind.BROADCAST else dest, src=src, kind=kind,
                              travel=travel, payload=ident)
            if dim is None:
                deliveries.append(Delivery(head.cycle, node, message))
            else:
                hops.append(Hop(head.cycle, node, dim, message))
        else:
            continue
        if len(problems) >= limit:
            break
    broadcast = [(cycle, node, type(request)(request.payload, 0, request.kind, request.at))
                 if request.kind == Kind.BROADCAST else (cycle, node, request)
                 for cycle, node, request in injected]
    problems += check_run(n, broadcast, hops, deliveries, order, limit)
    return problems[:limit]
