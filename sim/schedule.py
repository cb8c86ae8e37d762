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
"""

import numpy as np
from numba import njit

from .. import topology

__all__ = ["hops", "greedy"]


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
