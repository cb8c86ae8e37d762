"""A cycle-exact software model of the wormhole fabric (``docs/wormhole.md``).

:class:`WormholeModel` computes what a :class:`~ihcube.rtl.WormholeFabric` with the same
parameters does, cycle by cycle: for the same flits offered at the PEs and the same eject
backpressure, the same injection handshakes, the same flits on the same (link, virtual
channel) and the same eject handshakes, in the same cycles.
``tests/test_wormhole_model.py`` runs it in lockstep with the Amaranth simulation.

It mirrors, register for register (``docs/wormhole.md``, "For a cycle-exact model"):

- each unicast input channel's :class:`~ihcube.rtl.FlitBuffer`: a ring of ``vc_depth`` flits
  with ``head``, ``tail``, ``count`` and its ``room`` register (low in the first cycle after
  reset);
- each broadcast channel's :class:`~ihcube.rtl.BroadcastBuffer`: ``flits`` entries,
  ``written``, ``room``, ``idle`` and one read index per branch;
- each input channel's ``routed``, ``want``, ``held`` and output channel numbers;
- each :class:`~ihcube.rtl.VcAllocator`'s ``busy`` and its arbiter's ``last``, and each
  output's switch :class:`~ihcube.rtl.RoundRobinArbiter` (``last``, ``locked``, ``held``);
- the injection's flit counter, its ``refusing`` and ``broadcasting`` state, and the
  ``refused`` flag and saturating ``refused_count``.

The state is NumPy arrays indexed by (node, channel) and a flit is one integer (its payload,
then the head and tail marks above it), so that :meth:`WormholeModel.step` can later be
compiled with Numba; it is plain Python now, written for correctness, not speed.

The routing rules are not restated: a unicast head's output is
:func:`ihcube.topology.first_set_bit` of ``(node XOR dest) AND exists_mask(node)``, restricted
to the input's onward links (:func:`ihcube.topology.link_set_onward_links`, the strapped
router's); a broadcast copy's travel vector is masked with
:func:`ihcube.topology.travel_mask`.
"""

import numpy as np

from .. import topology
from ..params import head_fields, header_bits
from ..spec import as_wormhole_spec
from ..rtl.message import Kind
from ..rtl.router import REFUSED_COUNT_WIDTH

__all__ = ["WormholeModel"]


class WormholeModel:
    """Cycle-exact model of an ``n``-node :class:`~ihcube.rtl.WormholeFabric`.

    Cycle 0 is the first cycle after reset. :meth:`step` takes one cycle's PE inputs and
    returns what happened in it. The tests' broken variants subclass it and override
    ``_allocator_start``, ``_channel_choice``, ``_first_set_bit``, ``_ready_in_reset``,
    ``_tail_releases`` or ``_travel_mask``.

    Parameters
    ----------
    spec : FabricSpec
        The fabric (:class:`ihcube.spec.FabricSpec` with :class:`~ihcube.spec.Wormhole`
        switching); the older form ``(n, wormhole, order)`` makes it
        (:func:`ihcube.spec.as_wormhole_spec`).
    """

    #: Whether buffers have room in the first cycle after reset (False in the RTL).
    _ready_in_reset = False
    #: Whether a tail frees the output channel it leaves on (True in the RTL).
    _tail_releases = True

    def __init__(self, spec, wormhole=None, order=topology.MSB_FIRST):
        self.spec = spec = as_wormhole_spec(spec, wormhole, order).check_hardware()
        self.n, self.wormhole, self.order = spec.nodes, spec.wormhole, spec.order
        self._build_tables()
        self.reset()

    # Rules that the broken variants replace.

    def _travel_mask(self, node, dim):
        return topology.travel_mask(self.n, node, dim, self.order)

    def _first_set_bit(self, bits):
        """The route selector's priority encoder (Katseff, Algorithm 2)."""
        return topology.first_set_bit(bits, self.order)

    def _channel_choice(self, free):
        """The channel a unicast allocator grants among the ``free`` ones: the lowest."""
        return (free & -free).bit_length() - 1

    def _allocator_start(self, requesters):
        """Where an allocator's arbiter ``last`` starts: on its last requester."""
        return requesters - 1

    # Tables.

    def _build_tables(self):
        n, wh = self.n, self.wormhole
        V = wh.vcs
        self.abits = topology.address_bits(n)
        self.hbits = header_bits(n)
        self.fields = head_fields(n, wh.flit_width)
        self.head_bit = 1 << wh.flit_width
        self.tail_bit = 1 << (wh.flit_width + 1)
        self.dims = [topology.links(n, a) for a in range(n)]
        # Input channels (j, v) in WormholeRouter.input_channels() order, and their outputs.
        self.channels, self.outs, self.users, self.groups, self.far = [], [], [], [], []
        for a in range(n):
            k = len(self.dims[a])
            chans = [(j, v) for j in range(k) for v in range(V + 1)] + [(k, 0)] + \
                ([(k, V)] if k else [])
            outs = []
            for j, v in chans:
                broadcast = v == V
                if j >= k:
                    outs.append(tuple(range(k)) if broadcast else (*range(k), k))
                else:
                    onward = topology.link_set_onward_links(n, a, self.dims[a][j], self.order)
                    outs.append((*(self.dims[a].index(d) for d in onward), k))
            users = [[c for c in range(len(chans)) if o in outs[c]] for o in range(k + 1)]
            groups = []
            for o in range(k + 1):
                if o < k:
                    g = {"u": [c for c in users[o] if chans[c][1] != V],
                         "b": [c for c in users[o] if chans[c][1] == V]}
                else:
                    g = {"e": list(users[o])}
                groups.append({kind: cs for kind, cs in g.items() if cs})
            self.channels.append(chans)
            self.outs.append(outs)
            self.users.append(users)
            self.groups.append(groups)
            self.far.append([(topology.neighbor(a, d),
                              topology.links(n, topology.neighbor(a, d)).index(d))
                             for d in self.dims[a]])
        self.masks = [[self._travel_mask(a, d) for d in self.dims[a]] for a in range(n)]
        self.exists = [topology.exists_mask(n, a) for a in range(n)]
        self.C = max(len(c) for c in self.channels)
        self.B = max(len(o) for outs in self.outs for o in outs)
        self.O = max(len(d) for d in self.dims) + 1

    def reset(self):
        """Return to the state after reset (cycle 0 next)."""
        n, wh, C, B, O = self.n, self.wormhole, self.C, self.B, self.O
        self.cycle = 0
        self.fifo = np.zeros((n, C, wh.vc_depth), np.int64)
        self.fifo_head = np.zeros((n, C), np.int64)
        self.fifo_tail = np.zeros((n, C), np.int64)
        self.count = np.zeros((n, C), np.int64)       # FIFO count
        self.room = np.full((n, C), int(self._ready_in_reset), np.int64)
        self.entries = np.zeros((n, C, wh.flits), np.int64)
        self.written = np.zeros((n, C), np.int64)
        self.idle = np.ones((n, C), np.int64)
        self.read = np.zeros((n, C, B), np.int64)
        self.routed = np.zeros((n, C), np.int64)
        self.want_reg = np.zeros((n, C), np.int64)    # bit b: branch outs[c][b]
        self.held = np.zeros((n, C), np.int64)
        self.ovc = np.zeros((n, C, B), np.int64)
        # Allocators: [node, output, class] with class 0 unicast/eject, 1 broadcast.
        self.busy = np.zeros((n, O, 2), np.int64)
        self.alloc_last = np.zeros((n, O, 2), np.int64)
        self.sw_last = np.zeros((n, O), np.int64)
        self.sw_locked = np.zeros((n, O), np.int64)
        self.sw_held = np.zeros((n, O), np.int64)     # index into users[o]
        for a in range(n):
            for o, groups in enumerate(self.groups[a]):
                for kind, group in groups.items():
                    self.alloc_last[a, o, int(kind == "b")] = self._allocator_start(len(group))
                self.sw_last[a, o] = len(self.users[a][o]) - 1
        self.index = np.zeros(n, np.int64)
        self.refusing = np.zeros(n, np.int64)
        self.broadcasting = np.zeros(n, np.int64)
        self.refused = np.zeros(n, np.int64)
        self.refused_count = np.zeros(n, np.int64)

    # One cycle.

    @staticmethod
    def _round_robin(requests, count, last):
        """The first requester after ``last`` (wrapping), or -1."""
        for i in range(1, count + 1):
            j = (last + i) % count
            if requests >> j & 1:
                return j
        return -1

    def _front(self, a, c, b):
        """The flit branch ``b`` of channel ``c`` at node ``a`` would send, and whether it has
        one."""
        if self.channels[a][c][1] == self.wormhole.vcs:
            want = self.want_reg[a, c] if self.routed[a, c] else 0
            index = self.read[a, c, b]
            # The index reaches `flits` once the branch has read the tail: no flit then.
            return int(self.entries[a, c, min(index, self.wormhole.flits - 1)]), \
                bool(want >> b & 1 and index < self.written[a, c])
        return int(self.fifo[a, c, self.fifo_head[a, c]]), bool(self.count[a, c])

    def _want_new(self, a, c):
        """Route the head at the front of channel ``c`` of node ``a`` (its ``want`` bits)."""
        V, k = self.wormhole.vcs, len(self.dims[a])
        outs = self.outs[a][c]
        if self.channels[a][c][1] == V:
            dest = int(self.entries[a, c, 0]) & ((1 << self.abits) - 1)
            return sum(1 << b for b, o in enumerate(outs)
                       if o >= k or dest >> self.dims[a][o] & 1)
        dest = int(self.fifo[a, c, self.fifo_head[a, c]]) & ((1 << self.abits) - 1)
        dim = self._first_set_bit((a ^ dest) & self.exists[a])
        want = 1 << (len(outs) - 1) if dest == a else 0
        for b, o in enumerate(outs):
            if o < k and self.dims[a][o] == dim:
                want |= 1 << b
        return want

    def step(self, inject_valid, inject_payload, eject_ready):
        """Simulate one cycle with these PE inputs (one entry per node).

        Returns ``(inject_ready, ejects, hops)``: each node's injection ``ready``, the eject
        handshakes as ``(node, flit)`` and the link transfers as ``(node, dim, vc, flit)``,
        a flit being ``payload | head << flit_width | tail << flit_width + 1``.
        """
        n, wh = self.n, self.wormhole
        V, L = wh.vcs, wh.flits
        abits = self.abits
        amask = (1 << abits) - 1
        wmask = (1 << wh.flit_width) - 1
        inject_ready = [0] * n
        ejects, hops = [], []
        writes = []        # (node, channel, flit): input buffer writes, applied at the end
        updates = []       # per node: what its own registers become

        for a in range(n):
            k = len(self.dims[a])
            chans, outs = self.channels[a], self.outs[a]
            nc = len(chans)
            # Routing, combinational: want of each channel and whether it is active.
            active, want, want_new = [False] * nc, [0] * nc, [0] * nc
            route_now = [False] * nc
            for c, (_j, v) in enumerate(chans):
                if v == V:
                    arrived = self.written[a, c] != 0
                else:
                    arrived = bool(self.count[a, c]) and bool(
                        self.fifo[a, c, self.fifo_head[a, c]] & self.head_bit)
                if arrived and not self.routed[a, c]:
                    route_now[c] = True
                    want_new[c] = self._want_new(a, c)
                want[c] = int(self.want_reg[a, c]) if self.routed[a, c] else want_new[c]
                active[c] = arrived or bool(self.routed[a, c])
            granted = [0] * nc
            new_ovc = {}
            busy_next = {}
            alloc_last_next = {}
            sent = [0] * nc
            sw_next = {}
            # Outputs: allocators, then switch arbiters.
            for o in range(k + 1):
                eject = o == k
                releases = {}
                for kind, group in self.groups[a][o].items():
                    cls = int(kind == "b")
                    count = 1 if kind != "u" else V
                    busy = int(self.busy[a, o, cls])
                    available = (1 << count) - 1
                    if kind == "b":
                        far, far_j = self.far[a][o]
                        available = int(self.idle[far, self._bchannel(far_j)])
                    free = ~busy & available & ((1 << count) - 1)
                    requests = 0
                    for i, c in enumerate(group):
                        b = outs[c].index(o)
                        if active[c] and want[c] >> b & 1 and not self.held[a, c] >> b & 1:
                            requests |= 1 << i
                    if not free:
                        requests = 0
                    i = self._round_robin(requests, len(group), int(self.alloc_last[a, o, cls]))
                    taken = 0
                    if i >= 0:
                        c = group[i]
                        b = outs[c].index(o)
                        granted[c] |= 1 << b
                        vc = self._channel_choice(free)
                        new_ovc[(c, b)] = vc if kind == "u" else (V if kind == "b" else 0)
                        taken = 1 << vc
                        alloc_last_next[(o, cls)] = i
                    busy_next[(o, cls)] = busy | taken
                # Switch allocation.
                users = self.users[a][o]
                if not users:
                    continue
                requests = 0
                for i, c in enumerate(users):
                    b = outs[c].index(o)
                    if not self.held[a, c] >> b & 1:
                        continue
                    _, has = self._front(a, c, b)
                    if not has:
                        continue
                    if not eject:
                        far, far_j = self.far[a][o]
                        ovc = int(self.ovc[a, c, b])
                        if not self.room[far, far_j * (V + 1) + ovc]:
                            continue
                    requests |= 1 << i
                if self.sw_locked[a, o]:
                    i = int(self.sw_held[a, o])
                else:
                    i = self._round_robin(requests, len(users), int(self.sw_last[a, o]))
                if i < 0:
                    continue
                go = bool(eject_ready[a]) if eject else True
                if go:
                    sw_next[o] = ("last", i)
                else:
                    sw_next[o] = ("lock", i)
                    continue
                c = users[i]
                b = outs[c].index(o)
                sent[c] |= 1 << b
                flit, _ = self._front(a, c, b)
                vc = int(self.ovc[a, c, b])
                tail = bool(flit & self.tail_bit)
                if eject:
                    ejects.append((a, flit))
                    if tail:
                        releases[0] = 1
                else:
                    if flit & self.head_bit and vc == V:
                        dest = flit & amask
                        flit = (flit & ~amask) | (dest & self.masks[a][o])
                    hops.append((a, self.dims[a][o], vc, flit))
                    writes.append((*self.far[a][o], vc, flit))
                    if tail:
                        releases[1 if vc == V else 0] = 1 << (0 if vc == V else vc)
                if self._tail_releases:
                    for cls, bits in releases.items():
                        if (o, cls) in busy_next:
                            busy_next[(o, cls)] &= ~bits
            # Injection.
            inj = None
            if inject_valid[a]:
                word = int(inject_payload[a]) & wmask
                first = self.index[a] == 0
                dest, kind = word & amask, word >> self.fields.kind_bit & 1
                nowhere = kind == Kind.UNICAST.value and dest >= n
                drop = nowhere if first else bool(self.refusing[a])
                broadcast = (kind == Kind.BROADCAST.value) if first else \
                    bool(self.broadcasting[a])
                if k == 0:
                    drop = drop or broadcast
                uc = nc - 2 if k else nc - 1
                buffer = nc - 1 if broadcast and k else uc
                ready = drop or bool(self.room[a, buffer])
                inject_ready[a] = int(ready)
                if ready:
                    payload = self.fields.stamp(self.index[a], word, a)
                    if first:
                        dest = topology.full_travel(n) if kind == Kind.BROADCAST.value else dest
                        payload = payload & ~amask | dest
                    flit = payload | (self.head_bit if first else 0) | \
                        (self.tail_bit if self.index[a] == L - 1 else 0)
                    inj = (first, nowhere, broadcast, None if drop else (buffer, flit))
            updates.append((route_now, want_new, granted, new_ovc, busy_next, alloc_last_next, sent,
                            sw_next, inj))

        # Registers.
        for a in range(n):
            route_now, want_new, granted, new_ovc, busy_next, alloc_last_next, sent, sw_next, \
                inj = updates[a]
            chans = self.channels[a]
            for (o, cls), busy in busy_next.items():
                self.busy[a, o, cls] = busy
            for (o, cls), i in alloc_last_next.items():
                self.alloc_last[a, o, cls] = i
            for o, (what, i) in sw_next.items():
                if what == "last":
                    self.sw_locked[a, o] = 0
                    self.sw_last[a, o] = i
                else:
                    self.sw_locked[a, o] = 1
                    self.sw_held[a, o] = i
            for (c, b), vc in new_ovc.items():
                self.ovc[a, c, b] = vc
            for c, (_j, v) in enumerate(chans):
                # The broadcast buffer's `want`, from the start of the cycle.
                want = int(self.want_reg[a, c]) if self.routed[a, c] else 0
                if route_now[c]:
                    self.routed[a, c] = 1
                    self.want_reg[a, c] = want_new[c]
                self.held[a, c] |= granted[c]
                if v == V:
                    finished = want != 0 and \
                        self.written[a, c] == L and all(
                            self.read[a, c, b] + (sent[c] >> b & 1) == L
                            for b in range(len(self.outs[a][c])) if want >> b & 1)
                    for b in range(len(self.outs[a][c])):
                        if sent[c] >> b & 1:
                            self.read[a, c, b] += 1
                    if finished:
                        self.read[a, c, :] = 0
                else:
                    finished = False
                    if sent[c]:
                        finished = bool(self.fifo[a, c, self.fifo_head[a, c]] & self.tail_bit)
                        self.fifo_head[a, c] = (self.fifo_head[a, c] + 1) % self.wormhole.vc_depth
                        self.count[a, c] -= 1
                if finished:
                    self.routed[a, c] = 0
                    self.held[a, c] = 0
                    if v == V:
                        self.written[a, c] = 0  # no flit is written in this cycle: no room
            if inj is not None:
                first, nowhere, broadcast, write = inj
                self.index[a] = 0 if self.index[a] == L - 1 else self.index[a] + 1
                if first:
                    self.refusing[a] = nowhere
                    self.broadcasting[a] = broadcast
                    if nowhere:
                        self.refused[a] = 1
                        if self.refused_count[a] != (1 << REFUSED_COUNT_WIDTH) - 1:
                            self.refused_count[a] += 1
                if write is not None:
                    writes.append((a, *write))
        for a, c, flit in self._writes(writes):
            if self.channels[a][c][1] == V:
                self.entries[a, c, self.written[a, c]] = flit
                self.written[a, c] += 1
            else:
                self.fifo[a, c, self.fifo_tail[a, c]] = flit
                self.fifo_tail[a, c] = (self.fifo_tail[a, c] + 1) % self.wormhole.vc_depth
                self.count[a, c] += 1
        for a in range(n):
            for c, (_j, v) in enumerate(self.channels[a]):
                if v == V:
                    self.room[a, c] = int(self.written[a, c] != L)
                    self.idle[a, c] = int(self.written[a, c] == 0)
                else:
                    self.room[a, c] = int(self.count[a, c] != self.wormhole.vc_depth)
        self.cycle += 1
        return inject_ready, ejects, hops

    def _writes(self, writes):
        """Input buffer writes as ``(node, channel, flit)``; a link write names
        ``(node, link index, vc, flit)``."""
        V = self.wormhole.vcs
        for write in writes:
            if len(write) == 4:
                far, far_j, vc, flit = write
                yield far, far_j * (V + 1) + vc, flit
            else:
                yield write

    def _bchannel(self, j):
        return j * (self.wormhole.vcs + 1) + self.wormhole.vcs
