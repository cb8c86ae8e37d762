"""The compiled, cycle-exact model of the wormhole fabric, and its message-level traffic.

:class:`FastWormholeModel` is :class:`~ihcube.sim.wormhole_model.WormholeModel` with its cycle
compiled (:mod:`.wormhole_kernel`): the same state arrays, the same :meth:`step`, the same
results, hundreds of times faster. ``tests/test_wormhole_fast.py`` runs the two in lockstep
and the fast one against the RTL. The rules it is built from are the reference model's own
tables and rule methods (:func:`ihcube.topology.first_set_bit` tabulated over every link
vector, the channel choice over every free mask), so the reference's broken variants, mixed
into this class, break it the same way.

Beside the flit-level :meth:`step`, it takes messages as the packet
:class:`~ihcube.sim.model.Model` does: :meth:`offer` puts whole messages (``flits`` words
each) into the PEs' source queues, :meth:`advance` runs many cycles in the compiled loop and
returns what they recorded (``docs/wormhole.md``, "The fast model").
"""

from collections import namedtuple

import numpy as np

from .. import topology
from ..spec import as_wormhole_spec
from ..rtl.message import Kind
from ..rtl.router import REFUSED_COUNT_WIDTH
from . import wormhole_kernel
from .wormhole_model import WormholeModel

__all__ = ["FastWormholeModel", "WormholeRun", "INJECTION", "EJECT", "HOP",
           "MAX_FLIT_WIDTH"]

#: A message's head flit taken from the PE of ``node`` in ``cycle``; ``message`` is its id.
INJECTION = np.dtype([("cycle", np.int64), ("node", np.int64), ("message", np.int64)])
#: A flit taken by the PE of ``node`` in ``cycle``: ``flit`` is payload, head and tail marks.
EJECT = np.dtype([("cycle", np.int64), ("node", np.int64), ("flit", np.int64)])
#: A flit crossing link ``dim`` from ``node`` on virtual channel ``vc`` in ``cycle``.
HOP = np.dtype([("cycle", np.int64), ("node", np.int64), ("dim", np.int64), ("vc", np.int64),
                ("flit", np.int64)])

#: Widest flit: its payload and two marks in an int64 word.
MAX_FLIT_WIDTH = 61

WormholeRun = namedtuple("WormholeRun", ["injections", "ejects", "hops", "pending"])
WormholeRun.__doc__ = """What :meth:`FastWormholeModel.advance` recorded, in cycle order
(within a cycle in node order): ``injections`` (:data:`INJECTION`), ``ejects``
(:data:`EJECT`: tails only, or every flit with ``record_ejects``), ``hops`` (:data:`HOP`,
empty unless ``record_hops``), and ``pending``, the messages still in the source queues.
"""


class FastWormholeModel(WormholeModel):
    """Cycle-exact, compiled model of an ``n``-node :class:`~ihcube.rtl.WormholeFabric`.

    Same parameters, state, :meth:`step` and broken-variant hooks as
    :class:`~ihcube.sim.wormhole_model.WormholeModel`; at most
    :data:`~ihcube.sim.wormhole_kernel.MAX_CHANNELS` input channels a router (``k * (vcs +
    1) + 2`` for ``k`` links) and flits of at most :data:`MAX_FLIT_WIDTH` bits.

    Members
    -------
    offered : int
        Messages offered since reset (the next message's id).
    queued : int
        Messages in the source queues, their head flit not yet taken.
    injected, ejected, delivered, transfers : int
        Since reset, in :meth:`advance`: messages whose head was taken, flits and tails
        taken by the PEs, flits sent on links.
    link_counts : ndarray
        Flits sent on each link direction (:meth:`advance` with ``count_links``).
    """

    #: What wakes the kernel's sleeping channels: a far buffer's pop, a tail freeing an output
    #: channel (both; fewer only in the negative controls that show the lockstep sees them).
    _wakes = wormhole_kernel.WAKE_ON_POP | wormhole_kernel.WAKE_ON_RELEASE

    def __init__(self, spec, wormhole=None, order=topology.MSB_FIRST):
        spec = as_wormhole_spec(spec, wormhole, order).check_hardware()
        beyond = self.beyond(spec.nodes, spec.wormhole)
        if beyond:
            raise ValueError(beyond)
        super().__init__(spec)

    @staticmethod
    def beyond(n, wormhole):
        """Why the fast model cannot take these parameters (a sentence), or None if it can:
        its flits and request masks are int64 words."""
        if wormhole.flit_width > MAX_FLIT_WIDTH:
            return (f"Flit width must be at most {MAX_FLIT_WIDTH} in the fast model, not "
                    f"{wormhole.flit_width}")
        # Node 0 has every link: k (V + 1) unicast and broadcast link channels, and the
        # injection's two.
        links = topology.dimensions(n)
        if links * (wormhole.vcs + 1) + 2 > wormhole_kernel.MAX_CHANNELS:
            most = (wormhole_kernel.MAX_CHANNELS - 2) // links - 1
            return (f"Virtual channel count must be at most {most} in the fast model for {n} "
                    f"nodes, not {wormhole.vcs}")
        return None

    def _build_tables(self):
        super()._build_tables()
        n, wh = self.n, self.wormhole
        C, B, O, V = self.C, self.B, self.O, wh.vcs
        D = topology.dimensions(n)
        nchan = np.zeros(n, np.int64)
        klinks = np.zeros(n, np.int64)
        chan_v = np.zeros((n, C), np.int64)
        nbranch = np.zeros((n, C), np.int64)
        out_of = np.zeros((n, C, B), np.int64)
        branch = np.full((n, C, O), -1, np.int64)
        user_at = np.zeros((n, O, C), np.int64)
        user_pos = np.zeros((n, O, C), np.int64)
        user_mask = np.zeros((n, O), np.int64)
        group_at = np.zeros((n, O, 2, C), np.int64)
        group_pos = np.zeros((n, O, 2, C), np.int64)
        group_mask = np.zeros((n, O, 2), np.int64)
        far_node = np.zeros((n, O), np.int32)  # (the per-node tables are int32: fewer
        far_j = np.zeros((n, O), np.int32)     # cache lines, 4 % faster at n = 1024)
        dims = np.zeros((n, O), np.int64)
        dim_out = np.full((n, max(D, 1)), -1, np.int64)
        masks = np.zeros((n, O), np.int64)
        for a in range(n):
            k = len(self.dims[a])
            nchan[a], klinks[a] = len(self.channels[a]), k
            for c, (_, v) in enumerate(self.channels[a]):
                chan_v[a, c] = v
                nbranch[a, c] = len(self.outs[a][c])
                for b, o in enumerate(self.outs[a][c]):
                    out_of[a, c, b] = o
                    branch[a, c, o] = b
            for o, users in enumerate(self.users[a]):
                for i, c in enumerate(users):
                    user_at[a, o, i], user_pos[a, o, c] = c, i
                    user_mask[a, o] |= 1 << c
                for kind, group in self.groups[a][o].items():
                    cls = int(kind == "b")
                    for i, c in enumerate(group):
                        group_at[a, o, cls, i], group_pos[a, o, cls, c] = c, i
                        group_mask[a, o, cls] |= 1 << c
            for o, d in enumerate(self.dims[a]):
                far_node[a, o], far_j[a, o] = self.far[a][o]
                dims[a, o], dim_out[a, d], masks[a, o] = d, o, self.masks[a][o]
        # Nodes whose tables are the same share one row (a complete cube has one): the
        # tables stay in the cache. A node's row is its "link set" (lset).
        per_node = (nchan, klinks, chan_v, nbranch, out_of, branch, user_at, user_pos,
                    user_mask, group_at, group_pos, group_mask, dims, dim_out, masks)
        keys = {}
        lset = np.zeros(n, np.int32)
        for a in range(n):
            lset[a] = keys.setdefault(b"".join(t[a].tobytes() for t in per_node), len(keys))
        rows = np.unique(lset, return_index=True)[1]
        shared = tuple(np.ascontiguousarray(t[rows]) for t in per_node)
        route = np.array([-1 if bit is None else bit
                          for bit in map(self._first_set_bit, range(1 << D))], np.int64)
        choice = np.array([0] + [self._channel_choice(free) for free in range(1, 1 << V)],
                          np.int64)
        self._tables = (
            n, V, wh.flits, wh.vc_depth, self.abits, *self._src_place(), wh.flit_width,
            topology.full_travel(n), int(self._tail_releases), (1 << REFUSED_COUNT_WIDTH) - 1,
            Kind.BROADCAST.value, lset, *shared, far_node, far_j,
            np.array(self.exists, np.int32), route, choice, int(self._wakes))
        self._links = int(klinks.sum())
        self._unicast = (np.arange(C)[None, :] < nchan[:, None]) & (chan_v != V)

    def _src_place(self):
        """``(kind_bit, src0_low, src0_width, src1_width)``: where the kernel reads a head's
        ``kind`` and stamps ``src``, from the reference's :class:`~ihcube.params.HeadFields`
        (``src`` in the head flit, or split with the second flit when the header is wider
        than a flit)."""
        pieces = {flit: (low, width, at) for flit, low, width, at in self.fields.src_pieces}
        low0, width0, _ = pieces.get(0, (0, 0, 0))
        low1, width1, at1 = pieces.get(1, (0, 0, width0))
        assert low1 == 0 and at1 == width0 and set(pieces) <= {0, 1}
        return self.fields.kind_bit, low0, width0, width1

    def reset(self):
        """Return to the state after reset (cycle 0 next), with empty source queues and the
        counts at zero."""
        super().reset()
        n = self.n
        # Narrow types where the values are small: the state of a 1024-node fabric then fits
        # a core's cache (the flits stay int64).
        for name, dtype in _NARROW.items():
            setattr(self, name, getattr(self, name).astype(dtype))
        self._state = (
            self.fifo, self.fifo_head, self.fifo_tail, self.count, self.room, self.entries,
            self.written, self.idle, self.read, self.routed, self.want_reg, self.held, self.ovc,
            self.busy, self.alloc_last, self.sw_last, self.sw_locked, self.sw_held, self.index,
            self.refusing, self.broadcasting, self.refused, self.refused_count,
            np.zeros(n, np.int64),  # the kernel's mask of live channels a node
            np.full((n, self.C), -1, np.int32),  # and the cycle each buffer last popped
            np.full((n, self.C), -1, np.int8),  # the channel upstream asleep until it pops
            np.zeros((n, self.O), np.int64))  # the heads asleep until an output frees a channel
        self._heads = np.full(n, -1, np.int64)
        self._tails = np.full(n, -1, np.int64)
        self._position = np.zeros(n, np.int64)
        self._nexts = np.zeros(0, np.int64)
        self._words = np.zeros((0, self.wormhole.flits), np.int64)
        self._at = np.zeros(0, np.int64)
        self._totals = np.zeros(4, np.int64)
        self._link_columns = max(topology.dimensions(n), 1)
        self._link_counts = np.zeros(n * self._link_columns, np.int64)
        # The scratch arrays of one cycle.
        self._writes = np.zeros((self._links + n, 3), np.int64)
        self._touched = np.zeros((self._links + n + n * self.C, 2), np.int64)

    def step(self, inject_valid, inject_payload, eject_ready):
        """Simulate one cycle, as :meth:`WormholeModel.step
        <ihcube.sim.wormhole_model.WormholeModel.step>` does, in the compiled code."""
        n = self.n
        # New, writable arrays (np.array copies): a read-only view of an array given whole is
        # another type to Numba, and the kernel would be compiled once more for it.
        valid = np.array(np.broadcast_to(inject_valid, (n,)), np.uint8)
        words = np.array(np.broadcast_to(
            np.asarray(inject_payload, np.uint64) & np.uint64((1 << 63) - 1), (n,)), np.int64)
        ready = np.array(np.broadcast_to(eject_ready, (n,)), np.uint8)
        taken = np.zeros(n, np.uint8)
        ej = np.zeros((n, 2), np.int64)
        hop = np.zeros((max(self._links, 1), 4), np.int64)
        got_ej, got_hop, _ = wormhole_kernel.cycle(self._tables, self._state, self.cycle, valid,
                                                words, ready, taken, ej, hop, self._writes,
                                                self._touched)
        self.cycle += 1
        self._settle_room()
        return ([int(x) for x in taken], [(int(a), int(f)) for a, f in ej[:got_ej]],
                [tuple(int(x) for x in row) for row in hop[:got_hop]])

    # Messages: whole worms offered into source queues, many cycles a call.

    def offer(self, nodes, words, at=None):
        """Append messages to the PEs' source queues; return their ids.

        In every cycle :meth:`advance` simulates, a PE offers the next flit of its queue's
        head message (the head flit once the message's ``at`` cycle has come), holding it
        until the fabric takes it, as :class:`~ihcube.verify.harness.WormholeHarness` does.

        Parameters
        ----------
        nodes : array of int, length ``m``
            The PE that offers each message; a PE's messages queue in the order given.
        words : array of int, shape ``(m, flits)``
            Each message's flit words as the PE offers them (the head's routing fields
            first, :func:`~ihcube.verify.harness.worm_flits`).
        at : array of int, length ``m``, optional
            The first cycle each message may be offered in (default: at once).
        """
        nodes = np.array(nodes, np.int64, ndmin=1)  # contiguous: one type to Numba
        m = len(nodes)
        words = np.asarray(words, np.int64).reshape(m, -1) if m else \
            np.zeros((0, self.wormhole.flits), np.int64)
        if nodes.ndim != 1 or words.shape != (m, self.wormhole.flits):
            raise ValueError(f"Messages must be {self.wormhole.flits} flit words each, one "
                             f"row a node, not an array of shape {words.shape}")
        if m and (nodes.min() < 0 or nodes.max() >= self.n):
            raise ValueError(f"Node must be from 0 to {self.n - 1}, not "
                             f"{int(nodes[(nodes < 0) | (nodes >= self.n)][0])}")
        at = np.zeros(m, np.int64) if at is None else \
            np.broadcast_to(np.asarray(at, np.int64), (m,))
        first = len(self._at)
        self._words = np.concatenate([self._words, words & ((1 << self.wormhole.flit_width) - 1)])
        self._at = np.concatenate([self._at, at])
        self._nexts = np.concatenate([self._nexts, np.full(m, -1, np.int64)])
        wormhole_kernel.enqueue(self._heads, self._tails, self._nexts, nodes, first)
        return np.arange(first, first + m, dtype=np.int64)

    def advance(self, cycles=1, eject_ready=None, record_hops=False, record_ejects=False,
                until_delivered=None, count_links=False):
        """Simulate ``cycles`` cycles with each PE offering its source queue (:meth:`offer`).

        Parameters
        ----------
        cycles : int
            Most cycles to simulate.
        eject_ready : array of bool, shape ``(cycles, n)`` or ``(n,)``, or None
            Which PEs take a flit in each cycle (a row: the same every cycle); None: all,
            always.
        record_hops, record_ejects : bool
            Record every link flit; every ejected flit, not only the tails.
        until_delivered : int, optional
            Stop after the first cycle in which this call has seen that many tails ejected.
        count_links : bool
            Add the flits sent on each link direction to :attr:`link_counts`.

        Returns
        -------
        :class:`WormholeRun`
        """
        n = self.n
        if eject_ready is None:
            pattern = np.ones((1, n), np.uint8)
        else:
            pattern = np.ascontiguousarray(eject_ready, np.uint8)
            if pattern.shape == (n,):
                pattern = pattern[None]
            elif pattern.shape != (cycles, n):
                raise ValueError(f"Eject-ready pattern must have shape {(cycles, n)}, "
                                 f"not {pattern.shape}")
        until = -1 if until_delivered is None else int(until_delivered)
        done, inj, ej, hop, n_inj, n_ej, n_hop = wormhole_kernel.run_queues(
            self._tables, self._state, self.cycle, int(cycles), self._heads, self._tails,
            self._nexts, self._position, self._words, self._at, pattern, bool(record_hops),
            bool(record_ejects), np.zeros((1024, 3), np.int64), np.zeros((1024, 3), np.int64),
            np.zeros((1024 if record_hops else 0, 5), np.int64), self._totals, until,
            self._link_counts if count_links else self._link_counts[:0], self._link_columns)
        self.cycle += done
        self._settle_room()
        return WormholeRun(_records(inj[:n_inj], INJECTION), _records(ej[:n_ej], EJECT),
                           _records(hop[:n_hop], HOP), self.queued)

    def _settle_room(self):
        """The unicast buffers' ``room`` registers, which the kernel does not keep (it
        computes them from the counts), as the reference keeps them."""
        if self.cycle:
            unicast = self._unicast
            self.room[unicast] = self.count[unicast] != self.wormhole.vc_depth

    @property
    def offered(self):
        return len(self._at)

    @property
    def queued(self):
        return self.offered - int(self._totals[0]) if self.offered else 0

    injected = property(lambda self: int(self._totals[0]))
    ejected = property(lambda self: int(self._totals[1]))
    delivered = property(lambda self: int(self._totals[2]))
    transfers = property(lambda self: int(self._totals[3]))
    links = property(lambda self: self._links)

    @property
    def link_counts(self):
        """Flits sent on each link direction while :meth:`advance` counted them, since
        reset: an ``(n, max(D, 1))`` array, row ``a`` column ``i`` the link of dimension
        ``i`` from node ``a``."""
        return self._link_counts.reshape(self.n, -1).copy()


#: The state arrays the fast model keeps in narrower types than the reference: masks over
#: a router's at most 12 outputs or 8 channels, counts and indices below 2**15, flags.
_NARROW = {name: np.int16 for name in (
    "fifo_head", "fifo_tail", "count", "written", "read", "want_reg", "held", "busy",
    "alloc_last", "sw_last", "sw_held", "index")} | {name: np.int8 for name in (
    "room", "idle", "routed", "ovc", "sw_locked", "refusing", "broadcasting", "refused")}


def _records(rows, dtype):
    """Rows of int64 columns as a structured array of ``dtype``."""
    out = np.zeros(len(rows), dtype)
    for i, name in enumerate(dtype.names):
        out[name] = rows[:, i]
    return out
