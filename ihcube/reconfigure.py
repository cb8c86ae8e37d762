"""Reconfiguration after faults: which physical router takes which logical address (SPEC 9).

A fabric of ``N`` physical routers (an incomplete hypercube itself: ``N`` need not be a power
of two) runs an incomplete hypercube of ``n <= N`` *logical* nodes. A :class:`Configuration`
places logical address ``l`` on physical router ``physical(l) = pi(l) XOR mask``: an
automorphism of the ``D``-cube (``D = dimensions(N)``), so the logical link ``l -- l XOR
2**i`` lies on the physical link ``p -- p XOR 2**pi(i)``. With the identity permutation (an
XOR mask alone, what the hardware supports) every link keeps its dimension: physical port
``i`` of router ``p`` leads to ``p XOR 2**i``, whose logical address is ``l XOR 2**i``, so no
router needs a port multiplexer.

A configuration is *valid* for a set of faulty routers when every logical address ``l < n``
lands on a router that exists (``physical(l) < N``) and is healthy; every logical link then
lies on a physical link. :func:`check_configuration` takes, for an XOR mask, the rule of
which masks fit from :func:`ihcube.topology.check_configuration` (the one the hardware and
the model apply) and adds the faulty routers; a permutation's mapping, and a mapping given
router by router (:func:`configuration_of`), it checks link by link with
:func:`ihcube.topology.link_exists` (:func:`check_mapping`). For a mask ``m`` the largest
valid ``n`` is the smallest ``l`` whose router ``l XOR m`` is *bad* (faulty or ``>= N``), that
is the smallest ``q XOR m`` over the bad routers ``q``: :func:`best_configuration` takes it
for every mask at once, so it is exact over XOR masks (``O(2**D * |bad|)``, milliseconds at
``N = 4096``). With ``permutations=True`` it searches every automorphism, ``x -> pi(x) XOR m``,
exactly, by branch and bound (:func:`_best_automorphism`): the hardware does not support those, and
the numbers that decide whether it should are in ``docs/reconfiguration.md``.

The alternative the literature compares against, the largest fault-free complete subcube
(some address bits fixed, the others free), is :func:`largest_healthy_subcube`, exact.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import NamedTuple

import numpy as np

from . import topology
from .params import check_integer, check_positive_integer

__all__ = ["Configuration", "Subcube", "check_faulty", "check_mapping", "check_configuration",
           "configuration_of",
           "active_sizes", "best_configuration", "upper_bound", "largest_healthy_subcube"]


@dataclasses.dataclass(frozen=True)
class Configuration:
    """Logical addresses ``0 .. active_nodes - 1`` placed on physical routers.

    Members
    -------
    active_nodes : int
        ``n``, the size of the logical incomplete hypercube.
    mask : int
        Logical address ``l`` sits on physical router ``pi(l) XOR mask``.
    permutation : tuple of int or None
        ``pi`` as the physical dimension of each logical dimension (``permutation[i]``);
        None for the identity, an XOR mask alone (the only kind the hardware takes).
    """
    active_nodes: int
    mask: int
    permutation: tuple | None = None

    def port(self, i):
        """The physical dimension (port) that carries logical dimension ``i``."""
        return i if self.permutation is None else self.permutation[i]

    def physical(self, l):
        """The physical router of logical address ``l``."""
        if self.permutation is None:
            return l ^ self.mask
        return sum(1 << self.permutation[i] for i in range(l.bit_length()) if l >> i & 1) \
            ^ self.mask

    def logical_address(self, p):
        """The logical address of physical router ``p`` (active if below ``active_nodes``)."""
        x = p ^ self.mask
        if self.permutation is None:
            return x
        return sum(1 << i for i, d in enumerate(self.permutation) if x >> d & 1)

    def describe(self):
        """One line: ``n = 1023, mask 0b1111111011`` (and the permutation, if any)."""
        text = f"n = {self.active_nodes}, mask {self.mask}"
        if self.permutation is not None:
            text += f", logical dimension i on physical port {list(self.permutation)}[i]"
        return text


class Subcube(NamedTuple):
    """The complete subcube of the nodes ``base | x`` for every ``x`` made of ``free`` bits."""
    base: int
    free: int

    @property
    def size(self):
        return 1 << bin(self.free).count("1")

    def nodes(self):
        """Its nodes, in increasing order."""
        bits = [1 << i for i in range(self.free.bit_length()) if self.free >> i & 1]
        return sorted(self.base | sum(b for b, on in zip(bits, choice) if on)
                      for choice in itertools.product((0, 1), repeat=len(bits)))


def check_faulty(N, faulty):
    """Return ``faulty`` as a sorted tuple if it names distinct routers of ``N`` and leaves one
    healthy, else raise with a message a user understands."""
    N = topology.check_node_count(N)
    nodes = [topology.check_node(N, q, "Faulty node") for q in faulty]
    seen = set()
    for q in nodes:
        if q in seen:
            raise ValueError(f"Faulty node {q} is listed twice; list each faulty node once")
        seen.add(q)
    if len(seen) == N:
        raise ValueError(f"Every one of the {N} nodes is faulty; at least one must be healthy")
    return tuple(sorted(seen))


def check_mapping(N, faulty, physical, same_dimensions=True):
    """Raise ``ValueError`` unless ``physical`` (the physical router of each logical address
    ``0 .. n-1``) places an ``n``-node incomplete hypercube on healthy routers of the
    ``N``-router fabric, every logical link on a physical link; with ``same_dimensions``, on
    the link of the same dimension (no port multiplexer: the hardware's mappings)."""
    N = topology.check_node_count(N)
    faulty = set(check_faulty(N, faulty))
    n = check_positive_integer(len(physical), "Active node count")
    if n > N:
        raise ValueError(f"Active node count must be at most the fabric's {N} routers, not {n}")
    owner = {}
    for l, p in enumerate(physical):
        p = check_integer(p, f"The router of logical address {l}", "an integer")
        if not 0 <= p < N:
            raise ValueError(f"Logical address {l} maps to router {p}, which does not exist "
                             f"(the fabric has routers 0 to {N - 1})")
        if p in faulty:
            raise ValueError(f"Logical address {l} maps to router {p}, which is faulty")
        if p in owner:
            raise ValueError(f"Logical addresses {owner[p]} and {l} both map to router {p}: "
                             f"the mapping is not one to one")
        owner[p] = l
    for l in range(n):
        for i in topology.links(n, l):
            p, q = physical[l], physical[topology.neighbor(l, i)]
            k = (p ^ q).bit_length() - 1
            if p ^ q != 1 << k or not topology.link_exists(N, p, k):
                raise ValueError(f"Logical link {l} -- {topology.neighbor(l, i)} maps to "
                                 f"routers {p} and {q}, which no link joins")
            if same_dimensions and k != i:
                raise ValueError(f"Logical link {l} -- {topology.neighbor(l, i)} (dimension "
                                 f"{i}) maps to physical dimension {k}: the fabric keeps "
                                 f"dimensions (XOR masks only)")


def check_configuration(N, faulty, config, permutations=False):
    """Return ``config`` if it is a valid :class:`Configuration` of the ``N``-router fabric
    with ``faulty`` routers, else raise with one line saying what is wrong.

    Without ``permutations`` only XOR masks are taken, as the hardware does: which of them
    fit the fabric is :func:`ihcube.topology.check_configuration`'s rule (the one the
    hardware and the model apply), and none may place a logical node on a faulty router."""
    N = topology.check_node_count(N)
    if not isinstance(config, Configuration):
        raise TypeError(f"Configuration must be a Configuration, not {config!r}")
    if config.permutation is None:
        n, mask = topology.check_configuration(N, config.active_nodes, config.mask)
        on_faulty = sorted((q ^ mask, q) for q in check_faulty(N, faulty) if q ^ mask < n)
        if on_faulty:
            l, q = on_faulty[0]
            raise ValueError(f"Logical address {l} maps to router {q}, which is faulty")
        return config
    if not permutations:
        raise ValueError("The fabric takes XOR masks only, not a permutation of dimensions")
    n = check_positive_integer(config.active_nodes, "Active node count")
    if n > N:
        raise ValueError(f"Active node count must be at most the fabric's {N} routers, not {n}")
    dims = topology.dimensions(N)
    mask = check_integer(config.mask, "Mask", "an integer")
    if not 0 <= mask < 1 << dims:
        raise ValueError(f"Mask must be an integer from 0 to {(1 << dims) - 1} ({dims} address "
                         f"bits), not {mask!r}")
    if sorted(config.permutation) != list(range(dims)):
        raise ValueError(f"Permutation must order the dimensions 0 to {dims - 1}, not "
                         f"{config.permutation!r}")
    check_mapping(N, faulty, [config.physical(l) for l in range(n)], same_dimensions=False)
    return config


def configuration_of(N, faulty, physical):
    """The :class:`Configuration` (an XOR mask) of a mapping given as the physical router of
    each logical address ``0 .. n-1``, if :func:`check_mapping` takes it as the hardware's
    (every logical link on the physical link of its dimension), else ``ValueError``: a
    mapping that is not an automorphism of the cube onto healthy routers is refused."""
    physical = list(physical)
    check_mapping(N, faulty, physical)
    return check_configuration(N, faulty, Configuration(len(physical), int(physical[0])))


def _bad_routers(N, faulty):
    """The faulty routers and the missing ones (``N .. 2**D - 1``), as an array."""
    dims = topology.dimensions(N)
    return np.concatenate([np.array(faulty, dtype=np.int64),
                           np.arange(N, 1 << dims, dtype=np.int64)])


def active_sizes(N, faulty):
    """The largest valid active size of every XOR mask ``0 .. 2**D - 1``, as an array: the
    smallest ``q XOR m`` over the bad routers ``q`` (``2**D`` if there are none)."""
    N = topology.check_node_count(N)
    faulty = check_faulty(N, faulty)
    dims = topology.dimensions(N)
    bad = _bad_routers(N, faulty)
    masks = np.arange(1 << dims, dtype=np.int64)
    if len(bad) == 0:
        return np.full(len(masks), 1 << dims, dtype=np.int64)
    sizes = np.empty(len(masks), dtype=np.int64)
    step = max(1, (1 << 22) // len(bad))  # a few tens of MB at a time
    for start in range(0, len(masks), step):
        chunk = masks[start:start + step]
        sizes[start:start + step] = (chunk[:, None] ^ bad[None, :]).min(axis=1)
    return sizes


def upper_bound(N, faulty):
    """No mapping keeps more than the healthy routers, ``N - len(faulty)``."""
    return topology.check_node_count(N) - len(check_faulty(N, faulty))


def best_configuration(N, faulty, permutations=False):
    """The valid :class:`Configuration` with the most active nodes.

    Exact over XOR masks (the smallest mask among the best), for every ``N`` up to
    :data:`ihcube.params.MAX_FABRIC_NODES`. With ``permutations``, exact over every
    automorphism ``x -> pi(x) XOR m`` (a branch and bound; it can take seconds when the bad
    routers are many and scattered).
    """
    N = topology.check_fabric_node_count(N)
    faulty = check_faulty(N, faulty)
    if permutations:
        return _best_automorphism(N, faulty)
    sizes = active_sizes(N, faulty)
    mask = int(np.argmax(sizes))
    return Configuration(active_nodes=int(sizes[mask]), mask=mask)


def _best_automorphism(N, faulty):
    """The automorphism ``pi(x) XOR m`` whose smallest preimage of a bad router is largest.

    The logical address bits are chosen from the top: logical bit ``k - 1`` is physical
    dimension ``d`` with polarity ``c``. If every bad router has the same bit ``d``, making that
    bit 1 in all their images is best (any other choice leaves one below ``2**(k-1)``) and
    adds ``2**(k-1)``; otherwise the bad routers whose logical bit is 0 alone decide the
    minimum, and the search recurses on them. ``2**k - |bad|`` bounds a branch (the logical
    nodes sit on distinct healthy routers).
    """
    dims = topology.dimensions(N)
    bad = frozenset(int(q) for q in _bad_routers(N, faulty))
    if not bad:
        return Configuration(active_nodes=N, mask=0, permutation=tuple(range(dims)))
    memo = {}

    def search(group, free):
        """``(value, choices)``: the best minimum over ``group`` with the physical dimensions
        ``free`` (a tuple) left, and the ``(d, c)`` choices from the top."""
        key = (group, free)
        if key in memo:
            return memo[key]
        k = len(free)
        if k == 0:
            result = (0, ())
        else:
            constant = [d for d in free if len({q >> d & 1 for q in group}) == 1]
            if constant:
                d = constant[0]
                c = 1 - (next(iter(group)) >> d & 1)
                value, rest = search(group, tuple(x for x in free if x != d))
                result = ((1 << (k - 1)) + value, ((d, c), *rest))
            else:
                options = []
                for d in free:
                    for c in (0, 1):
                        # the bad routers whose logical bit k-1, bit d XOR c, is 0
                        options.append(frozenset(q for q in group if q >> d & 1 == c))
                result = (-1, ())
                order = sorted(range(len(options)), key=lambda o: len(options[o]))
                for o in order:
                    below = options[o]
                    if (1 << (k - 1)) - len(below) <= result[0]:
                        continue  # cannot beat the best found
                    d, c = free[o // 2], o % 2
                    value, rest = search(below, tuple(x for x in free if x != d))
                    if value > result[0]:
                        result = (value, ((d, c), *rest))
        memo[key] = result
        return result

    value, choices = search(bad, tuple(range(dims)))
    permutation = [0] * dims
    mask = 0
    for k, (d, c) in zip(reversed(range(dims)), choices):
        permutation[k] = d
        mask |= c << d
    return Configuration(active_nodes=value, mask=mask, permutation=tuple(permutation))


def largest_healthy_subcube(N, faulty):
    """The largest complete subcube of existing, healthy routers: most free bits first, then
    the smallest free-bit set and base (deterministic). Exact: every set of free bits is
    tried, largest first."""
    N = topology.check_node_count(N)
    faulty = check_faulty(N, faulty)
    dims = topology.dimensions(N)
    bad = _bad_routers(N, faulty)
    everything = np.arange(1 << dims, dtype=np.int64)
    for k in reversed(range(dims + 1)):
        for bits in itertools.combinations(range(dims), k):
            free = sum(1 << b for b in bits)
            bases = everything[everything & free == 0]
            hit = np.unique(bad & ~free)
            clear = np.setdiff1d(bases, hit, assume_unique=True)
            if len(clear):
                return Subcube(int(clear[0]), free)
    raise AssertionError("unreachable: check_faulty leaves a healthy node")  # pragma: no cover
