"""The compiled cycle of :class:`ihcube.sim.wormhole_fast.FastWormholeModel`.

Numba functions over the state arrays of :class:`~ihcube.sim.wormhole_model.WormholeModel`
(the same arrays, the same meaning: ``docs/wormhole.md``, "The fast model") and tables that
:mod:`ihcube.sim.wormhole_fast` builds from the reference model's own tables, which come
from :mod:`ihcube.topology`. Nothing here knows a routing rule: the route selector's priority
encoder is the table ``route`` (:func:`ihcube.topology.first_set_bit` of every link vector),
the onward links of each input channel, the travel masks and the link-existence vectors
arrive as tables too.

Layout
------
A node's input channels are numbered as :meth:`WormholeRouter.input_channels` numbers them
(``c`` below, at most 63 of them), its outputs ``o`` are its links in increasing dimension
and then the eject port (``o = k``). Channel ``c``'s branches ``b`` are its possible outputs
(``outs`` of the reference model); ``branch[s, c, o]`` is the branch of output ``o`` or -1.
Requests are masks over channels: the users of an output, and its allocators' groups, are
lists in channel order, so the reference's round robin over a user list (its ``last`` an
index into the list) picks the same channel as "the lowest requesting channel above the
list's ``last`` entry, else the lowest".

Registers
---------
One call of :func:`cycle` is one clock cycle; every decision reads the registers as they
were when the cycle began. A node's own registers (its routing state, allocators, arbiters,
output channel numbers and the pops of its own buffers) are read by no other node, so a
node updates them during its visit, each after the last decision that reads it (the
channels' requests are all taken before any output is served). What its neighbours read,
the ``room`` and ``idle`` registers of its input buffers, is only written after every node
has been visited, as are the flits written into buffers (``writes``), and with them the
node's ``live`` mask: the channels that are routed or hold a flit, the only ones a visit
looks at (a write sets a channel's bit; a visit clears it when it finds the channel empty
and not routed).

A unicast buffer's ``room`` is not stored (after cycle 0): it is ``count != depth`` as the
cycle began, and since writes come after every visit, that is its count now plus one if its
node popped it in this cycle (``popped`` holds the cycle of each buffer's last pop). The
broadcast buffers' ``room`` and ``idle`` are stored and written after the visits
(``touched``). :class:`~ihcube.sim.wormhole_fast.FastWormholeModel` fills the unicast
``room`` registers in after each call, for the reference's state.

Sleeping channels
-----------------
A routed unicast channel that can do nothing until something else happens leaves ``live``
(it is not visited) and is woken by that event:

- its buffer is empty: the next write into it (the write pass sets its ``live`` bit);
- the far buffer it sends into is full now (``count == depth``, so no room in this cycle
  nor until that buffer pops): the far buffer's pop. The sending channel is that buffer's
  only writer while it holds the output channel, so ``sleeper[far node, far channel]``
  names it, and the pop sets its ``live`` bit. A pop in the cycle the sender is visited
  after it is harmless: the sender reads the room as the cycle began (none), and does not
  sleep, since the count is below depth now;
- its head waits for a channel of its output and all of them are busy (as the cycle
  began; its request could not be granted): a tail leaving on that output, in the node's
  own visit, which frees a channel for the next cycle (``waiters[node, output]``). While
  no channel is free, a request changes no arbiter, so the sleeper misses nothing.

At saturation (``n`` = 1024, 20 flits, 3 channels) this spares about one visit in four.
The flags ``wakes`` (in the tables, :data:`WAKE_ON_POP` and :data:`WAKE_ON_RELEASE`) are
both on but in the negative controls that show the lockstep tests would see a lost
wake-up.
"""

import numpy as np
from numba import njit

from .model_kernel import lowest_bit

__all__ = ["MAX_CHANNELS", "STAMP", "WAKE_ON_POP", "WAKE_ON_RELEASE", "cycle", "run_queues",
           "enqueue"]

#: Most input channels of a router: requests are masks in one int64 word.
MAX_CHANNELS = 63

#: What wakes a sleeping channel (``wakes`` in the tables: both, but in negative controls): its
#: far buffer's pop, a tail freeing a channel of the output it waits for.
WAKE_ON_POP = 1
WAKE_ON_RELEASE = 2

#: A pop stamp is the cycle's low 31 bits (``popped`` is int32: half the cache lines of
#: int64, 4 % faster at ``n`` = 1024). Stamps are only compared with the current cycle's, and
#: every stamp is wiped when the low bits wrap to 0, so an old one never equals it.
STAMP = (1 << 31) - 1

@njit(cache=True, inline="always")
def _after(requests, last):
    """The lowest channel of ``requests`` above channel ``last``, else the lowest (-1 for
    none): a round robin over a channel list whose ``last`` was granted last."""
    if requests == 0:
        return -1
    higher = requests & ~((2 << last) - 1) if last < 62 else 0
    return lowest_bit(higher) if higher else lowest_bit(requests)


@njit(cache=True)
def cycle(tab, st, t, inj_valid, inj_word, eject_ready, ready_out, ej_out, hop_out,
          writes, touched, queues=None):
    """Simulate one cycle; return ``(ejects, hops, heads)``, the numbers of records
    written.

    ``ready_out[a]`` gets node ``a``'s injection ``ready``; ``ej_out`` rows
    ``(node, flit)`` and ``hop_out`` rows ``(node, dim, vc, flit)`` get the eject and link
    handshakes in node order (a node's outputs in order). ``writes`` and ``touched`` are
    scratch arrays (rows ``(node, channel, flit)`` and ``(node, channel)``).

    With ``queues`` (``(heads, tails, nexts, position, words, at, took)``, as
    :func:`run_queues` keeps them), each PE offers the next flit of its source queue
    instead of ``inj_valid`` and ``inj_word``, the queue moves on when the flit is taken,
    and ``took`` gets a row ``(node, message)`` for each head flit taken (``heads`` of
    them): one pass over the nodes instead of three.
    """
    (n, V, L, depth, abits, kind_bit, src0_low, src0_width, src1_width, wbits, full_travel,
     tail_releases, refused_max, bkind,
     lset, nchan, klinks, chan_v, nbranch, out_of, branch, user_at, user_pos, user_mask,
     group_at, group_pos, group_mask, dims, dim_out, masks, far_node, far_j, exists, route,
     choice, wakes) = tab
    (fifo, fifo_head, fifo_tail, count, room, entries, written, idle, read, routed, want_reg,
     held, ovc, busy, alloc_last, sw_last, sw_locked, sw_held, index, refusing, broadcasting,
     refused, refused_count, live, popped, sleeper, waiters) = st
    head_bit = 1 << wbits
    tail_bit = 1 << (wbits + 1)
    amask = (1 << abits) - 1
    wmask = head_bit - 1
    # ``src``'s place (ihcube.params.HeadFields): src0_width bits from bit src0_low of the
    # head flit, the rest (src1_width bits) from bit 0 of the second flit.
    src0_mask = ((1 << src0_width) - 1) << src0_low
    src1_mask = (1 << src1_width) - 1
    C = want_reg.shape[1]
    O = busy.shape[1]
    want_new = np.zeros(C, np.int64)
    route_now = np.zeros(C, np.int64)
    sent = np.zeros(C, np.int64)
    alloc_req = np.zeros(O, np.int64)
    sw_req = np.zeros(O, np.int64)
    n_ej = 0
    n_hop = 0
    n_wr = 0
    n_touch = 0
    n_took = 0
    if (t & STAMP) == 0:  # a new epoch of pop stamps: none of the last one may match
        popped[:, :] = -1
    if queues is not None:
        q_heads, q_tails, q_nexts, q_position, q_words, q_at, q_took = queues
    for a in range(n):
        s = lset[a]
        k = klinks[s]
        nc = nchan[s]
        dirty = 0  # channels routed or sent from in this cycle
        wanted = 0  # outputs with a request
        # Routing (combinational) and the requests of the channels that are routed or hold
        # a flit (the others have nothing to do).
        todo = live[a]
        while todo:
            c = lowest_bit(todo)
            todo &= todo - 1
            is_b = chan_v[s, c] == V
            if not routed[a, c]:
                # Has a head arrived?
                if is_b:
                    if written[a, c] == 0:
                        continue
                elif count[a, c] == 0:
                    live[a] &= ~(1 << c)  # empty, not routed: nothing until a flit comes
                    continue
                elif (fifo[a, c, fifo_head[a, c]] & head_bit) == 0:
                    continue
                # A new head: its want bits.
                if is_b:
                    dest = entries[a, c, 0] & amask
                    want = 0
                    for b in range(nbranch[s, c]):
                        o = out_of[s, c, b]
                        if o >= k or (dest >> dims[s, o]) & 1:
                            want |= 1 << b
                else:
                    dest = fifo[a, c, fifo_head[a, c]] & amask
                    want = (1 << (nbranch[s, c] - 1)) if dest == a else 0
                    dim = route[(a ^ dest) & exists[a]]
                    if dim >= 0:
                        o = dim_out[s, dim]
                        if o >= 0 and branch[s, c, o] >= 0:
                            want |= 1 << branch[s, c, o]
                want_new[c] = want
                route_now[c] = 1
                dirty |= 1 << c
                unheld = want  # nothing is held before a head is routed
            else:
                want = want_reg[a, c]
                hb = held[a, c]
                unheld = want & ~hb
                # Switch requests: held branches with a flit, and room at the far end.
                if not is_b:
                    # A unicast holds one branch at most, on a unicast channel.
                    if hb and count[a, c] != 0:
                        b = lowest_bit(hb)
                        o = out_of[s, c, b]
                        if o == k:
                            sw_req[o] |= 1 << c
                            wanted |= 1 << o
                        else:
                            fn = far_node[a, o]
                            fc = far_j[a, o] * (V + 1) + ovc[a, c, b]
                            if _room(room, count, popped, fn, fc, False, t, depth):
                                sw_req[o] |= 1 << c
                                wanted |= 1 << o
                            elif count[fn, fc] == depth and unheld == 0:
                                # Blocked until the far buffer pops (its only writer is
                                # this channel): asleep until then.
                                live[a] &= ~(1 << c)
                                sleeper[fn, fc] = c
                    elif hb and unheld == 0:
                        live[a] &= ~(1 << c)  # its buffer is empty: asleep until a write
                    elif hb == 0 and unheld:
                        # A head waiting for a channel of its output: while they are all
                        # busy, asleep until a tail frees one (in this node's visit).
                        b = lowest_bit(unheld)
                        o = out_of[s, c, b]
                        every = 1 if o == k else (1 << V) - 1
                        if unheld == 1 << b and (group_mask[s, o, 0] >> c) & 1 and \
                                busy[a, o, 0] & every == every:
                            live[a] &= ~(1 << c)
                            waiters[a, o] |= 1 << c
                            unheld = 0
                    hb = 0
                while hb:
                    b = lowest_bit(hb)
                    hb &= hb - 1
                    if not ((want >> b) & 1 and read[a, c, b] < written[a, c]):
                        continue
                    o = out_of[s, c, b]
                    if o < k and not _room(room, count, popped, far_node[a, o],
                                           far_j[a, o] * (V + 1) + V, True, t, depth):
                        continue
                    sw_req[o] |= 1 << c
                    wanted |= 1 << o
            # Allocation requests: wanted branches not yet held.
            while unheld:
                b = lowest_bit(unheld)
                unheld &= unheld - 1
                o = out_of[s, c, b]
                alloc_req[o] |= 1 << c
                wanted |= 1 << o
        # Outputs: channel allocators, then the switch arbiter.
        if sw_locked[a, k]:
            wanted |= 1 << k
        while wanted:
            o = lowest_bit(wanted)
            wanted &= wanted - 1
            requested = alloc_req[o]
            alloc_req[o] = 0
            switch = sw_req[o]
            sw_req[o] = 0
            eject = o == k
            release0 = 0
            release1 = 0
            # Allocation (most outputs have only switch requests).
            for cls in range(2 if requested else 0):
                requests = requested & group_mask[s, o, cls]
                if requests == 0:
                    continue
                b_kind = cls == 1
                if eject or b_kind:
                    width = 1
                else:
                    width = V
                bz = busy[a, o, cls]
                available = (1 << width) - 1
                if b_kind:
                    fj = far_j[a, o]
                    available = idle[far_node[a, o], fj * (V + 1) + V]
                free = ~bz & available & ((1 << width) - 1)
                if free:
                    last = group_at[s, o, cls, alloc_last[a, o, cls]]
                    c = _after(requests, last)
                    b = branch[s, c, o]
                    held[a, c] |= 1 << b
                    if b_kind:
                        vc = 0
                        ovc[a, c, b] = V
                    elif eject:
                        vc = 0
                        ovc[a, c, b] = 0
                    else:
                        vc = choice[free]
                        ovc[a, c, b] = vc
                    busy[a, o, cls] = bz | (1 << vc)
                    alloc_last[a, o, cls] = group_pos[s, o, cls, c]
            if user_mask[s, o] == 0:
                continue
            if sw_locked[a, o]:
                c = user_at[s, o, sw_held[a, o]]
            else:
                c = _after(switch, user_at[s, o, sw_last[a, o]])
                if c < 0:
                    continue
            i = user_pos[s, o, c]
            if eject and not eject_ready[a]:
                sw_locked[a, o] = 1
                sw_held[a, o] = i
                continue
            sw_locked[a, o] = 0
            sw_last[a, o] = i
            b = branch[s, c, o]
            sent[c] |= 1 << b
            dirty |= 1 << c
            if chan_v[s, c] == V:
                r = read[a, c, b]
                flit = entries[a, c, r if r < L - 1 else L - 1]
            else:
                flit = fifo[a, c, fifo_head[a, c]]
            vc = ovc[a, c, b]
            tail = flit & tail_bit
            if eject:
                ej_out[n_ej, 0] = a
                ej_out[n_ej, 1] = flit
                n_ej += 1
                if tail:
                    release0 = 1
            else:
                if flit & head_bit and vc == V:
                    flit = (flit & ~amask) | (flit & amask & masks[s, o])
                hop_out[n_hop, 0] = a
                hop_out[n_hop, 1] = dims[s, o]
                hop_out[n_hop, 2] = vc
                hop_out[n_hop, 3] = flit
                n_hop += 1
                writes[n_wr, 0] = far_node[a, o]
                writes[n_wr, 1] = far_j[a, o] * (V + 1) + vc
                writes[n_wr, 2] = flit
                n_wr += 1
                if tail:
                    if vc == V:
                        release1 = 1
                    else:
                        release0 = 1 << vc
            if tail_releases:
                busy[a, o, 0] &= ~release0
                busy[a, o, 1] &= ~release1
                if release0 and wakes & WAKE_ON_RELEASE:  # the heads waiting for it wake
                    live[a] |= waiters[a, o]
                    waiters[a, o] = 0
        # Injection.
        if queues is None:
            valid = inj_valid[a] != 0
            word = inj_word[a] & wmask
        else:
            m = q_heads[a]
            valid = m >= 0 and (q_position[a] > 0 or q_at[m] <= t)
            word = q_words[m, q_position[a]] & wmask if valid else 0
        if valid:
            first = index[a] == 0
            dest = word & amask
            kind = (word >> kind_bit) & 1
            nowhere = kind != bkind and dest >= n
            drop = nowhere if first else refusing[a] != 0
            broadcast = kind == bkind if first else broadcasting[a] != 0
            if k == 0:
                drop = drop or broadcast
            uc = nc - 2 if k else nc - 1
            buf = nc - 1 if broadcast and k else uc
            ready = drop or _room(room, count, popped, a, buf, broadcast and k != 0, t,
                                  depth)
            ready_out[a] = ready
            if queues is not None and ready:
                if q_position[a] == 0:
                    q_took[n_took, 0] = a
                    q_took[n_took, 1] = m
                    n_took += 1
                if q_position[a] == L - 1:
                    q_position[a] = 0
                    q_heads[a] = q_nexts[m]
                    if q_nexts[m] < 0:
                        q_tails[a] = -1
                else:
                    q_position[a] += 1
            if ready:
                if first:
                    if kind == bkind:
                        dest = full_travel
                    flit = word & ~(amask | src0_mask) | dest | (a << src0_low) & src0_mask
                    flit |= head_bit
                elif index[a] == 1 and src1_width:
                    flit = word & ~src1_mask | (a >> src0_width) & src1_mask
                else:
                    flit = word
                if index[a] == L - 1:
                    flit |= tail_bit
                index[a] = 0 if index[a] == L - 1 else index[a] + 1
                if first:
                    refusing[a] = nowhere
                    broadcasting[a] = broadcast
                    if nowhere:
                        refused[a] = 1
                        if refused_count[a] != refused_max:
                            refused_count[a] += 1
                if not drop:
                    writes[n_wr, 0] = a
                    writes[n_wr, 1] = buf
                    writes[n_wr, 2] = flit
                    n_wr += 1
        else:
            ready_out[a] = 0
        # The node's registers.
        while dirty:
            c = lowest_bit(dirty)
            dirty &= dirty - 1
            if route_now[c]:
                route_now[c] = 0
                routed[a, c] = 1
                want_reg[a, c] = want_new[c]
                continue
            sc = sent[c]
            sent[c] = 0
            finished = False
            if chan_v[s, c] == V:
                want = want_reg[a, c]
                finished = written[a, c] == L
                for b in range(nbranch[s, c]):
                    if (sc >> b) & 1:
                        read[a, c, b] += 1
                    if (want >> b) & 1 and read[a, c, b] != L:
                        finished = False
                if finished:
                    for b in range(nbranch[s, c]):
                        read[a, c, b] = 0
                    written[a, c] = 0
                    touched[n_touch, 0] = a
                    touched[n_touch, 1] = c
                    n_touch += 1
            else:
                finished = (fifo[a, c, fifo_head[a, c]] & tail_bit) != 0
                fifo_head[a, c] = 0 if fifo_head[a, c] == depth - 1 else fifo_head[a, c] + 1
                count[a, c] -= 1
                popped[a, c] = t & STAMP
                w = sleeper[a, c]
                if w >= 0 and wakes & WAKE_ON_POP:  # the channel upstream waiting wakes
                    sleeper[a, c] = -1
                    up = a ^ (1 << dims[s, c // (V + 1)])
                    live[up] |= 1 << w
            if finished:
                routed[a, c] = 0
                held[a, c] = 0
    # Flits written into the buffers, then the room and idle registers.
    for w in range(n_wr):
        a = writes[w, 0]
        c = writes[w, 1]
        flit = writes[w, 2]
        if chan_v[lset[a], c] == V:
            entries[a, c, written[a, c]] = flit
            written[a, c] += 1
            touched[n_touch, 0] = a
            touched[n_touch, 1] = c
            n_touch += 1
        else:
            fifo[a, c, fifo_tail[a, c]] = flit
            fifo_tail[a, c] = 0 if fifo_tail[a, c] == depth - 1 else fifo_tail[a, c] + 1
            count[a, c] += 1
            live[a] |= 1 << c
    if t == 0:  # room is low in the first cycle after reset, whatever the buffer holds
        for a in range(n):
            s = lset[a]
            for c in range(nchan[s]):
                _settle(count, written, room, idle, routed, live, a, c, chan_v[s, c] == V, L,
                        depth)
    else:
        for x in range(n_touch):
            a = touched[x, 0]
            c = touched[x, 1]
            _settle(count, written, room, idle, routed, live, a, c, chan_v[lset[a], c] == V,
                    L, depth)
    return n_ej, n_hop, n_took


@njit(cache=True, inline="always")
def _room(room, count, popped, a, c, is_b, t, depth):
    """The ``room`` register of channel ``c`` of node ``a`` as it was when cycle ``t``
    began. A unicast buffer's is ``count != depth`` then (but in cycle 0): its count now,
    plus one if its node has popped it in this cycle (writes come after every visit). A
    broadcast buffer's is the stored register."""
    if is_b or t == 0:
        return room[a, c] != 0
    return count[a, c] + (popped[a, c] == (t & STAMP)) != depth


@njit(cache=True, inline="always")
def _settle(count, written, room, idle, routed, live, a, c, is_b, L, depth):
    """The buffer registers ``room`` (and a broadcast buffer's ``idle``) from its fill, and
    whether the channel is ``live`` (routed or holding a flit)."""
    if is_b:
        room[a, c] = written[a, c] != L
        idle[a, c] = written[a, c] == 0
        busy = written[a, c] != 0
    else:
        room[a, c] = count[a, c] != depth
        busy = count[a, c] != 0
    if busy or routed[a, c]:
        live[a] |= 1 << c
    else:
        live[a] &= ~(1 << c)


@njit(cache=True)
def enqueue(heads, tails, nexts, nodes, first_id):
    """Append messages ``first_id ..`` (one per entry of ``nodes``) to their nodes' source
    queues: linked lists through ``nexts`` from ``heads`` to ``tails`` (-1: empty)."""
    for i in range(len(nodes)):
        m = first_id + i
        a = nodes[i]
        nexts[m] = -1
        if tails[a] >= 0:
            nexts[tails[a]] = m
        else:
            heads[a] = m
        tails[a] = m


@njit(cache=True)
def run_queues(tab, st, t0, cycles, heads, tails, nexts, position, words, at,
               eject_ready, record_hops, record_ejects, injections, ejects, hops, totals,
               until_tails, link_counts, D1):
    """Simulate up to ``cycles`` cycles from cycle ``t0`` with each PE offering its source
    queue flit by flit (message ``m``'s flits are ``words[m]``, its head offered from cycle
    ``at[m]`` on; ``position[a]`` is the next flit of node ``a``'s head message).

    Records go into ``injections`` (a message's head taken: cycle, node, id), ``ejects``
    (every flit, or only tails unless ``record_ejects``: cycle, node, flit) and ``hops``
    (if ``record_hops``); the arrays are grown as needed and returned. ``totals`` counts
    messages injected, flits ejected, tails ejected and flit hops; ``link_counts[a * D1 +
    dim]`` the flits sent on link ``dim`` of node ``a`` (unless it is empty). Stops early at the
    end of
    the first cycle after which ``until_tails`` tails (>= 0) have been ejected in this call.
    Returns ``(cycles done, injections, ejects, hops, record counts)``.
    """
    n = tab[0]
    wbits = tab[9]  # the positions in ``tab`` of cycle's names n, wbits, lset and klinks
    tail_bit = 1 << (wbits + 1)
    links = 0
    for a in range(n):
        links += tab[16][tab[14][a]]
    valid = np.zeros(n, np.uint8)  # (unused: the PEs offer from the queues)
    word = np.zeros(n, np.int64)
    ready = np.zeros(n, np.uint8)
    took = np.zeros((n, 2), np.int64)
    ej_out = np.zeros((n, 2), np.int64)
    hop_out = np.zeros((max(links, 1), 4), np.int64)
    writes = np.zeros((links + n, 3), np.int64)
    C = st[9].shape[1]
    touched = np.zeros((links + n + n * C, 2), np.int64)
    n_inj = 0
    n_ej = 0
    n_hop = 0
    tails_seen = 0
    done = 0
    pattern_rows = eject_ready.shape[0]
    queues = (heads, tails, nexts, position, words, at, took)
    for step in range(cycles):
        t = t0 + step
        row = eject_ready[step if pattern_rows > 1 else 0]
        got_ej, got_hop, got_took = cycle(tab, st, t, valid, word, row, ready, ej_out,
                                          hop_out, writes, touched, queues)
        for h in range(got_took):
            if n_inj == len(injections):
                injections = _grow(injections)
            injections[n_inj, 0] = t
            injections[n_inj, 1] = took[h, 0]
            injections[n_inj, 2] = took[h, 1]
            n_inj += 1
        totals[0] += got_took
        for e in range(got_ej):
            flit = ej_out[e, 1]
            is_tail = (flit & tail_bit) != 0
            totals[1] += 1
            if is_tail:
                totals[2] += 1
                tails_seen += 1
            if record_ejects or is_tail:
                if n_ej == len(ejects):
                    ejects = _grow(ejects)
                ejects[n_ej, 0] = t
                ejects[n_ej, 1] = ej_out[e, 0]
                ejects[n_ej, 2] = flit
                n_ej += 1
        totals[3] += got_hop
        if len(link_counts):
            for h in range(got_hop):
                link_counts[hop_out[h, 0] * D1 + hop_out[h, 1]] += 1
        if record_hops:
            for h in range(got_hop):
                if n_hop == len(hops):
                    hops = _grow(hops)
                hops[n_hop, 0] = t
                for x in range(4):
                    hops[n_hop, 1 + x] = hop_out[h, x]
                n_hop += 1
        done += 1
        if until_tails >= 0 and tails_seen >= until_tails:
            break
    return done, injections, ejects, hops, n_inj, n_ej, n_hop


@njit(cache=True)
def _grow(records):
    bigger = np.zeros((2 * len(records) + 16, records.shape[1]), records.dtype)
    bigger[:len(records)] = records
    return bigger
