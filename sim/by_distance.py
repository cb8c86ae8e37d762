"""Nodes by their distance from a source, counted and numbered without ``n x n`` tables.

A traffic pattern's class (:class:`~.traffic.Pattern`) is the nodes ``b < n`` whose distance
from the source ``a``, :func:`ihcube.topology.distance` (``popcount(a XOR b)``, Katseff's
Theorem 1), lies in a range ``lo .. hi`` (``lo >= 1``, so never ``a`` itself). Both what a
pattern needs of a class follow from ``a``, ``n`` and the range, digit by digit from the most
significant bit, with binomial counts: :func:`class_size`, how many nodes it has, and
:func:`class_member`, its ``j``-th node in node-number order (the order of the tables that
:class:`~.model.RandomTraffic` also takes). Below bit ``i`` of a node whose higher bits are
settled, the ``2**i`` choices of the low bits give every low distance ``t`` to ``a``
``C(i, t)`` times. Each costs ``O(D)`` steps; the patterns need ``O(n * K)`` memory.
"""

import math

import numpy as np
from numba import njit

__all__ = ["hops", "class_size", "class_member", "class_sizes"]

#: ``_BELOW[i, t]``: how many ``i``-bit numbers have fewer than ``t`` bits set
#: (``t = 0 .. 63``; 2**i from ``t = i + 1`` on).
_BELOW = np.array([[sum(math.comb(i, s) for s in range(t)) for t in range(64)]
                   for i in range(63)], np.int64)


@njit(cache=True, inline="always")
def hops(a, b):
    """:func:`ihcube.topology.distance` of nodes ``a`` and ``b``, compiled: the bits set in
    ``a XOR b``."""
    x = a ^ b
    count = 0
    while x:
        x &= x - 1
        count += 1
    return count


@njit(cache=True, inline="always")
def _within(i, lo, hi):
    """How many ``i``-bit numbers ``x`` have from ``lo`` to ``hi`` bits set (``lo <= hi``)."""
    return (_BELOW[i, min(max(hi + 1, 0), i + 1)]
            - _BELOW[i, min(max(lo, 0), i + 1)])


@njit(cache=True, inline="always")
def _bit_length(x):
    length = 0
    while x >> length:
        length += 1
    return length


@njit(cache=True)
def class_size(n, a, lo, hi):
    """How many nodes ``b < n`` are ``lo`` to ``hi`` hops from ``a``.

    The ``b`` below ``n`` are those that equal ``n`` above some set bit ``i`` of ``n`` and
    have a 0 there, their ``i`` low bits free."""
    total = 0
    differ = 0  # the bits above i where n (so far the only b counted) differs from a
    for i in range(_bit_length(n) - 1, -1, -1):
        here = a >> i & 1
        if n >> i & 1:
            total += _within(i, lo - differ - here, hi - differ - here)
            differ += 1 - here
        else:
            differ += here
    return total


@njit(cache=True)
def class_member(n, a, lo, hi, j):
    """The ``j``-th (from 0) node ``b < n``, in node-number order, that is ``lo`` to ``hi``
    hops from ``a``; ``j`` must be below :func:`class_size`.

    From the most significant bit: a 0 at bit ``i`` leaves ``_within(i, ...)`` nodes, so
    ``b`` takes a 0 there if ``j`` is below that and a 1 otherwise (``j`` less that count);
    while ``b``'s high bits equal ``n``'s, where ``n`` has a 0 ``b`` must too. Once ``b`` is
    below ``n``, the low bits are ``j`` if every choice of them is in the class, and ``a``'s
    if none may differ."""
    width = _bit_length(n - 1)
    if lo == 1 and hi >= width:  # every node but a
        return j + (j >= a)
    b = 0
    differ = 0
    below_n = n == 1 << width  # whether b's bits above i are already below n's
    for i in range(width - 1, -1, -1):
        here = a >> i & 1
        if below_n:
            if lo - differ <= 0 and hi - differ > i:
                return b | j
            if hi == differ:  # no more bits may differ: the rest are a's
                return b | a & ((1 << i + 1) - 1)
        elif not n >> i & 1:
            differ += here
            continue
        count = _within(i, lo - differ - here, hi - differ - here)
        if j < count:
            differ += here
            below_n = True
        else:
            j -= count
            b |= 1 << i
            differ += 1 - here
    return b


@njit(cache=True)
def class_sizes(n, ranges):
    """:func:`class_size` of every source ``0 .. n - 1`` and every range ``ranges[k]``
    (``(lo, hi)``), an ``(n, K)`` array."""
    out = np.empty((n, len(ranges)), np.int64)
    for a in range(n):
        for k in range(len(ranges)):
            out[a, k] = class_size(n, a, ranges[k, 0], ranges[k, 1])
    return out
