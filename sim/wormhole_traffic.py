"""Random traffic for the wormhole fast model (issue 16's experiments; SPEC sections 6 and 8).

:class:`WormholeTrafficSource` is :class:`~.traffic.TrafficSource` for a
:class:`~.wormhole_fast.FastWormholeModel`: each node generates a unicast with probability
``rate`` per cycle (messages per node per cycle), its destination drawn from the same
:class:`~.traffic.Pattern` by the same sampler (:func:`~.traffic.sample`), into the
PE's unbounded source queue (:meth:`~.wormhole_fast.FastWormholeModel.offer`, the message's
``at`` cycle its generation cycle). A message is ``flits`` flits; every PE takes a flit every
cycle.

Latency is counted from the generation cycle to the cycle the destination PE takes the
message's *tail* flit (source queueing, the head's path and the body's serialization
included). Packet mode counts from generation to the cycle the PE takes the (one-word)
message, so for one-flit worms the two conventions are the same.

Which message a tail belongs to: the tail flit carries a tag, the message's sequence number
among the messages generated for its destination, modulo ``2**bits`` (``bits``: the tail's
free payload bits; for one-flit worms the bits above the head's routing fields). A tail at
node ``d`` with tag ``t`` is the message to ``d`` with the lowest sequence number not yet
delivered that is congruent to ``t``; that is unique while fewer than ``2**bits`` messages
to ``d`` are outstanding, which :meth:`WormholeTrafficSource.run` checks when it generates
(one line, ``ValueError``, if not).
"""

import numpy as np

from .. import topology
from ..params import header_bits
from ..rtl.message import Kind
from .traffic import STATS, sample

__all__ = ["WormholeTrafficSource"]


class WormholeTrafficSource:
    """Random traffic from a :class:`~.traffic.Pattern` into a
    :class:`~.wormhole_fast.FastWormholeModel`; :meth:`run` as
    :meth:`TrafficSource.run <.traffic.TrafficSource.run>`.

    Parameters
    ----------
    model : :class:`~.wormhole_fast.FastWormholeModel`, fresh from reset
    pattern : :class:`~.traffic.Pattern` with the model's ``n``
    rate : float
        Generation probability per node per cycle (messages), from 0 to 1.
    seed : int
    """

    def __init__(self, model, pattern, rate, seed=0):
        if pattern.n != model.n:
            raise ValueError(f"Pattern is for {pattern.n} nodes, the model has {model.n}")
        if not isinstance(rate, (int, float)) or not 0.0 <= rate <= 1.0:
            raise ValueError(f"Generation rate must be from 0 to 1, not {rate!r}")
        self.model, self.pattern, self.rate = model, pattern, float(rate)
        n, wh = model.n, model.wormhole
        self._rng = np.random.Generator(np.random.PCG64(int(seed)))
        self._columns = max(topology.dimensions(n), 1)
        self._routing = header_bits(n)
        # The tag's place: the tail's payload, or above the routing fields of a lone head.
        self._tag_shift = self._routing if wh.flits == 1 else 0
        self._tag_bits = wh.flit_width - self._tag_shift
        if self._tag_bits < 1:
            raise ValueError(f"One-flit messages need a flit wider than the {self._routing}-bit "
                             f"routing fields to carry a tag, not {wh.flit_width} bits")
        self._payload_mask = (1 << wh.flit_width) - 1
        # Per message: source, destination, generation cycle; per destination: the ids of
        # its messages in sequence order and the lowest sequence number not yet delivered.
        self._src = np.zeros(0, np.int64)
        self._dest = np.zeros(0, np.int64)
        self._born = np.zeros(0, np.int64)
        self._delivered = np.zeros(0, bool)
        self._ids = [[] for _ in range(n)]
        self._base = np.zeros(n, np.int64)
        self._taken_late = 0

    @property
    def queued(self):
        """Messages in the source queues, their head not yet taken by the fabric."""
        return self.model.queued

    def _generate(self, start, cycles):
        """Generate the messages of cycles ``start .. start + cycles - 1`` and offer them."""
        n, wh = self.model.n, self.model.wormhole
        cycle, src = np.nonzero(self._rng.random((cycles, n)) < self.rate)
        m = len(src)
        if not m:
            return 0
        dest = sample(self.pattern, src, int(self._rng.integers(1 << 62)))
        first = len(self._src)
        sequence = np.zeros(m, np.int64)
        for k, d in enumerate(dest.tolist()):
            sequence[k] = len(self._ids[d])
            self._ids[d].append(first + k)
        # Sequence numbers are per destination and increase with the message id, so a
        # destination's newest message is its last one here.
        backlog = sequence - self._base[dest]
        if backlog.max() >= 1 << self._tag_bits:
            raise ValueError(f"More than {1 << self._tag_bits} messages outstanding to one node: "
                             f"{self._tag_bits}-bit tags cannot tell them apart (wider flits)")
        words = np.zeros((m, wh.flits), np.int64)
        bits = topology.address_bits(n)
        words[:, 0] = dest | (Kind.UNICAST.value << 2 * bits)
        words[:, -1] |= self._tags(sequence) << self._tag_shift
        self.model.offer(src, words, at=start + cycle)
        self._src = np.concatenate([self._src, src.astype(np.int64)])
        self._dest = np.concatenate([self._dest, dest])
        self._born = np.concatenate([self._born, start + cycle.astype(np.int64)])
        self._delivered = np.concatenate([self._delivered, np.zeros(m, bool)])
        return m

    def _tags(self, sequence):
        """The tags of messages with these per-destination sequence numbers (a broken variant
        in ``tests/test_sweep_wormhole.py`` overrides it)."""
        return sequence & ((1 << self._tag_bits) - 1)

    def _match(self, tails):
        """The ids of the messages whose tails ``tails`` (EJECT records) are."""
        size = 1 << self._tag_bits
        out = np.zeros(len(tails), np.int64)
        nodes = tails["node"].tolist()
        tags = ((tails["flit"] & self._payload_mask) >> self._tag_shift).tolist()
        for k, (d, t) in enumerate(zip(nodes, tags)):
            base = int(self._base[d])
            ids = self._ids[d]
            s = base + ((t - base) % size)
            while self._delivered[ids[s]]:  # an earlier one with this tag went first
                s += size
            message = ids[s]
            self._delivered[message] = True
            out[k] = message
            while base < len(ids) and self._delivered[ids[base]]:
                base += 1
            self._base[d] = base
        return out

    def run(self, cycles, record_links=False):
        """Simulate ``cycles`` cycles; return what :meth:`TrafficSource.run
        <.traffic.TrafficSource.run>` returns, ``flits_ejected``, the flits the PEs took, and
        ``fastest_by_hops``, the least latency of the messages of each hop count (the int64
        maximum where none)."""
        model = self.model
        stats = np.zeros(len(STATS), np.int64)
        by_hops = np.zeros((2, self._columns + 1), np.int64)
        fastest = np.full(self._columns + 1, np.iinfo(np.int64).max, np.int64)
        links_before, transfers_before = model.link_counts, model.transfers
        ejected_before = model.ejected
        if cycles:
            stats[1] = self._taken_late
            stats[0] = self._generate(model.cycle, cycles)
        end = model.cycle + cycles
        got = model.advance(cycles, count_links=record_links)
        stats[1] += len(got.injections)
        self._taken_late = int((got.injections["cycle"] == end - 1).sum()) if cycles else 0
        stats[1] -= self._taken_late
        tails = got.ejects
        stats[2] = len(tails)
        if len(tails):
            ids = self._match(tails)
            latency = tails["cycle"] - self._born[ids]
            # ihcube.topology.distance: the bits set in source XOR destination.
            h = np.bitwise_count(self._src[ids] ^ self._dest[ids]).astype(np.int64)
            stats[3], stats[4], stats[5] = latency.sum(), h.sum(), latency.max()
            np.add.at(by_hops[0], h, 1)
            np.add.at(by_hops[1], h, latency)
            np.minimum.at(fastest, h, latency)
        stats[6] = model.transfers - transfers_before
        out = dict(zip(STATS, map(int, stats)))
        out["by_hops"] = by_hops
        out["link_count"] = model.link_counts - links_before
        out["queued"] = self.queued
        out["flits_ejected"] = model.ejected - ejected_before
        out["fastest_by_hops"] = fastest
        return out
