"""The formal check of one wormhole router: :class:`WormholeRouterCheck`, proved by k-induction
(``docs/wormhole.md``, "Formal").

One :class:`~ihcube.rtl.WormholeRouter` in a free environment: every input is free in every
cycle (flits on every link and virtual channel, the far ends' ``ready`` and ``idle``, the PE's
words and ``ready``). One unicast worm is *tagged*: its flits carry a mark (the top bit of the
payload, a bit the router never reads: above the routing fields in the head, anywhere in a
body flit) and body flit ``k`` carries ``k`` in its low bits. What is assumed of the tagged
worm only:

- its head enters on a unicast channel of a link, or from the PE, as a unicast for a node
  that exists and that a neighbour following the rules sends on that link
  (:func:`ihcube.topology.travel_mask`); it enters a channel that holds no worm (its buffer
  empty, nothing routed); from the PE, at a message boundary;
- after its head, every flit taken on that channel is its next flit, marked, numbered, the
  last one marked tail (the router marks the PE's flits itself), until its ``flits`` flits
  have entered; no other marked flit ever enters.

The assertions, each with the helper invariants that make them inductive:

- **Nothing lost, duplicated or reordered within the worm.** Every marked flit that leaves
  leaves on the output :func:`ihcube.topology.route_step` names (or the PE), the ``x``-th of
  them being flit ``x`` (head first with the routing fields it came with, ``src`` stamped for
  an injection; tail last), on one virtual channel, never more flits than have entered; and
  the flits entered and not yet left are exactly the front of the buffer of the channel it
  came by, in order (so none is lost: conservation); no other buffer holds a marked flit.
- **A reserved output is released by the tail.** From its head leaving until its tail
  leaves, the output channel it took is busy in that output's allocator and held by its input
  channel alone; in the cycle after the tail leaves, the channel is free again. For every
  output channel, ``busy`` is exactly "held by one input channel" (no two worms share it).
- Every link output offers a flit only on a channel whose far buffer has room.

Broadcast worms are not tagged (they move whole through broadcast buffers, another path); a
tagged head that waits behind another worm in its channel's buffer is not covered (it enters
an empty channel).
"""

import functools

from amaranth.hdl import (Cat, ClockDomain, ClockSignal, Const, Cover, Elaboratable, Fragment,
                          Module, Mux, Signal, Assert, Assume)

from ... import topology
from ...params import header_bits
from ...rtl import Kind, WormholeRouter
from ...rtl.flit import header_layout
from ...spec import Wormhole, as_wormhole_spec
from .arbiter_invariants import check_arbiter
from .environment import popcount
from .probe import Prebuilt, Probe, free_inputs

__all__ = ["WormholeRouterCheck"]


class WormholeRouterCheck(Elaboratable):
    """One :class:`~ihcube.rtl.WormholeRouter` in a free environment, with a tagged unicast worm
    and the invariants of the module documentation asserted.

    Parameters
    ----------
    n, node, order
        As for the router.
    flits, vcs, vc_depth
        The wormhole parameters; the flit is one bit wider than the header (the mark), and at
        least wide enough to number the flits.
    router : callable
        Builds the router as ``router(spec, node)`` (:attr:`spec`), as
        :class:`~ihcube.rtl.WormholeFabric` does; negative controls pass broken variants
        (:data:`ihcube.verify.faults.WORMHOLE_FAULTS`).
    covers : bool
        Add ``Cover`` statements that show the scenarios happen (a cover job): a tagged worm
        from a link and one from the PE each leave whole, on a link and to the PE, and the
        output channel is released with another worm behind.

    Members
    -------
    spec : FabricSpec
        The fabric of the checked router: ``n``, these wormhole parameters, ``order``.
    """

    def __init__(self, n, node, flits=3, vcs=1, vc_depth=1, order=topology.MSB_FIRST, *,
                 router=WormholeRouter, covers=False):
        self.n, self.node, self.order = n, node, order
        self.covers = covers
        hbits = header_bits(n)
        self.index_bits = max(1, (flits - 1).bit_length())
        width = max(hbits, self.index_bits) + 1
        self.wormhole = Wormhole(flits, width, vcs, vc_depth)
        self.spec = as_wormhole_spec(n, self.wormhole, order)
        self.mark_bit = width - 1
        self.router = router(self.spec, node)
        # The invariants name the broadcast buffers' entries: hold them in flip-flops (the
        # same buffer cycle by cycle as the memory, tests/test_broadcast_buffer.py).
        self.router.broadcast_buffer = functools.partial(type(self.router).broadcast_buffer,
                                                         registers=True)
        self.ports = [ClockSignal(), *free_inputs(self.router)]
        self._dims = self.router.dims
        self._local = len(self._dims)

    def _marked(self, flit):
        return flit.payload[self.mark_bit]

    def _index(self, flit):
        return flit.payload[:self.index_bits]

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = ClockDomain(reset_less=True)
        probe = Probe(Fragment.get(self.router, platform))
        m.submodules.router = Prebuilt(probe.fragment)
        started = self._started = Signal(name="started")  # low in the first cycle only
        m.d.sync += started.eq(1)

        n, node, wh, local = self.n, self.node, self.wormhole, self._local
        L, V = wh.flits, wh.vcs
        router = self.router
        channels = router.input_channels()
        outs = [router.outputs_of(j, v == V) for j, v in channels]
        unicast = [c for c, (j, v) in enumerate(channels) if v != V]
        inject_c = channels.index((local, 0))
        hdr = header_layout(n)

        # --- The tagged worm: where it came in, how many flits entered and left ----------------
        seen = Signal(name="tag_seen")
        tin = Signal(range(len(channels)), name="tag_input")
        tdest = Signal(hdr.members["dest"].width, name="tag_dest")
        tsrc = Signal.like(tdest, name="tag_src")
        entered = Signal(range(L + 1), name="tag_entered")
        left = Signal(range(L + 1), name="tag_left")
        tvc = Signal(range(V + 1), name="tag_vc")
        finished = Signal(name="tag_finished")  # the tail left in the previous cycle

        # Expected output (router port order, one-hot) from the topology, not from the RTL.
        expect = Signal(local + 1, name="tag_expect")
        with m.Switch(tdest):
            for d in range(n):
                step = topology.route_step(n, node, d, self.order)
                with m.Case(d):
                    m.d.comb += expect.eq(1 << (local if step is None else
                                                self._dims.index(step)))

        # What enters each unicast channel in this cycle.
        buffers = {c: self._buffer(probe, channels[c]) for c in unicast}
        entering = {}
        for c in unicast:
            j, v = channels[c]
            if j < local:
                port = router.links_in[j]
                taken = port.valid & (port.vc == v) & port.ready[v]
                flit = port.flit
                m.d.comb += Assume(~port.valid | (port.vc <= V))
                head = flit.head
            else:
                port = router.inject
                taken = port.valid & port.ready
                flit = Signal(router.eject.payload.shape(), name="inject_flit")
                index = probe.signal("inject_index")
                m.d.comb += [flit.payload.eq(port.payload), flit.head.eq(index == 0),
                             flit.tail.eq(index == L - 1)]
                head = flit.head
            entering[c] = (taken, flit, head)
        # Nothing marked enters the broadcast channels; at most one marked flit a cycle.
        for j in range(local):
            port = router.links_in[j]
            m.d.comb += Assume(~(port.valid & (port.vc == V) & self._marked(port.flit)))
            # A neighbour's broadcast buffer sends whole worms: the k-th flit written into
            # this one is marked head for k = 0 and tail for k = flits - 1 (so the last read
            # frees the channel, as the router's own injection guarantees).
            written = probe.sub(f"in{self._dims[j]}_vc{V}").component.written
            m.d.comb += Assume(~(port.valid & (port.vc == V) & port.ready[V])
                               | ((port.flit.head == (written == 0))
                                  & (port.flit.tail == (written == L - 1))))
        marked_in = Cat(*(t & self._marked(f) for t, f, _ in entering.values()))
        m.d.comb += Assume(popcount(marked_in) <= 1)
        # An injected word is marked only while it goes into the unicast buffer.
        inj_head = header_layout(n)(router.inject.payload[:hdr.size])
        for c, (taken, flit, head) in entering.items():
            j, v = channels[c]
            mark = taken & self._marked(flit)
            data = hdr(flit.payload[:hdr.size])
            entry = Signal(name=f"tag_entry{c}")
            m.d.comb += entry.eq(mark & ~seen)
            buf = buffers[c]
            rule = self._sent_by_rule(j, data.dest) if j < local else Const(1, 1)
            m.d.comb += Assume(~entry | (head & (flit.tail == (L == 1))
                                         & (data.kind == Kind.UNICAST) & (data.dest < n) & rule
                                         & (buf["count"] == 0) & ~buf["routed"]))
            if j >= local:
                m.d.comb += Assume(~entry | (inj_head.kind == Kind.UNICAST))
            mine = seen & (tin == c) & (entered != L)
            # After the head: every flit taken on the channel is the next one, marked, numbered.
            body = taken & mine
            m.d.comb += Assume(~body | (self._marked(flit) & (self._index(flit) == entered)
                                        & ~head & (flit.tail == (entered == L - 1))))
            m.d.comb += Assume(~mark | entry | body)
            with m.If(entry):
                m.d.sync += [seen.eq(1), tin.eq(c), tdest.eq(data.dest), entered.eq(1),
                             tsrc.eq(node if j >= local else data.src)]
            with m.If(body):
                m.d.sync += entered.eq(entered + 1)

        # --- What leaves ------------------------------------------------------------------------
        outputs = [*router.links_out, router.eject]
        leaving = []
        for o, port in enumerate(outputs):
            name = f"link {self._dims[o]}" if o < local else "the PE"
            if o < local:
                flit = port.flit
                room = Cat(*(port.ready[v] & (port.vc == v) for v in range(V + 1))).any()
                m.d.comb += Assert(~port.valid | room,
                                   f"a flit is offered on {name} with no room at the far end")
                moves = port.valid & room
            else:
                flit, moves = port.payload, port.valid & port.ready
            out = Signal(name=f"tag_leaving{o}")
            m.d.comb += out.eq(moves & self._marked(flit))
            leaving.append(out)
            data = hdr(flit.payload[:hdr.size])
            right = Mux(left == 0,
                        flit.head & (data.dest == tdest) & (data.src == tsrc)
                        & (data.kind == Kind.UNICAST),
                        ~flit.head & (self._index(flit) == left))
            right &= flit.tail == (left == L - 1)
            if o < local:
                right &= (left == 0) | (port.vc == tvc)
                with m.If(out & (left == 0)):
                    m.d.sync += tvc.eq(port.vc)
            m.d.comb += [
                Assert(~out | (seen & (left < entered)),
                       f"a flit of the tagged worm leaves on {name} before it entered "
                       f"(duplicated)"),
                Assert(~out | expect[o], f"the tagged worm leaves on {name}, off its route"),
                Assert(~out | right, f"a flit of the tagged worm leaves on {name} out of "
                                     f"order or altered"),
            ]
        m.d.comb += Assert(popcount(leaving) <= 1, "two flits of the tagged worm leave at once")
        with m.If(Cat(*leaving).any()):
            m.d.sync += left.eq(left + 1)
        m.d.sync += finished.eq(Cat(*leaving).any() & (left == L - 1))

        # --- Conservation: the flits in, not out, are the front of the tagged channel ----------
        m.d.comb += [Assert(entered <= L, "entered count out of range"),
                     Assert(~finished | (seen & (left == L)), "finished before the tail left"),
                     Assert(left <= entered, "more flits left than entered"),
                     Assert(seen | ((entered == 0) & (left == 0)), "counts with no worm"),
                     Assert(~seen | (entered != 0), "a worm with no flit")]
        for c in unicast:
            buf = buffers[c]
            depth = wh.vc_depth
            count, head = buf["count"], buf["head"]
            name = self._channel_name(channels[c])
            wrapped = Mux(head + count >= depth, head + count - depth, head + count)
            m.d.comb += [
                Assert(count <= depth, f"buffer of {name} over-full"),
                Assert(head < depth, f"buffer of {name}: head out of range"),
                Assert(buf["tail"] < depth, f"buffer of {name}: tail out of range"),
                Assert(buf["tail"] == wrapped, f"buffer of {name}: tail, head and count"),
                Assert(~started | (buf["room"] == (count != depth)),
                       f"buffer of {name}: room disagrees with count"),
            ]
            inside = entered - left
            ours = seen & (tin == c)
            m.d.comb += [
                Assert(~ours | (count >= inside),
                       f"buffer of {name}: the tagged worm's flits in, not out, are not all "
                       f"there (lost)"),
                Assert(~ours | (entered == L) | (count == inside),
                       f"buffer of {name}: holds other flits than the tagged worm's before its "
                       f"tail"),
            ]
            for i in range(depth):
                flit = buf["entries"][i]
                offset = Mux(i >= head, i - head, i + depth - head)
                used = offset < count
                k = left + offset  # the flit it must be, if it is the tagged worm's
                m.d.comb += Assert(~used | (self._marked(flit) == (ours & (offset < inside))),
                                   f"buffer of {name}: marked flits are not the tagged worm's "
                                   f"flits in, not out")
                fields = hdr(flit.payload[:hdr.size])
                good = Mux(k == 0, flit.head & (fields.dest == tdest) & (fields.src == tsrc)
                           & (fields.kind == Kind.UNICAST),
                           ~flit.head & (self._index(flit) == k)) & (flit.tail == (k == L - 1))
                m.d.comb += Assert(~used | ~self._marked(flit) | good,
                                   f"buffer of {name}: the tagged worm's flits out of order")
        for j in range(local):
            bb = probe.sub(f"in{self._dims[j]}_vc{V}")
            written = bb.component.written
            for k in range(L):
                stored = router.eject.payload.shape()(bb.signal(f"entry{k}"))
                m.d.comb += Assert((k >= written) | ~self._marked(stored),
                                   f"broadcast buffer of link {self._dims[j]} holds a marked "
                                   f"flit")
        if local:
            bb = probe.sub("in_pe_broadcast")
            for k in range(L):
                stored = router.eject.payload.shape()(bb.signal(f"entry{k}"))
                m.d.comb += Assert((k >= bb.component.written) | ~self._marked(stored),
                                   "the PE's broadcast buffer holds a marked flit")

        # The PE's broadcast buffer fills with the injection's count: whole, or empty, or the
        # message being injected.
        if local:
            written = probe.sub("in_pe_broadcast").component.written
            index = probe.signal("inject_index")
            refusing = probe.signal("inject_refusing")
            broadcasting = probe.signal("inject_broadcasting")
            m.d.comb += [
                Assert(~(refusing & broadcasting), "the injection refuses a broadcast"),
                Assert(index < L, "the injection's count out of range"),
                Assert(Mux((index != 0) & broadcasting, written == index,
                           (written == 0) | (written == L)),
                       "the PE's broadcast buffer disagrees with the injection's count"),
            ]

        # --- Reservations: busy is "held by exactly one input channel" ------------------------
        held = {c: probe.signal(f"held{c}") for c in range(len(channels))}
        routed = {c: probe.signal(f"routed{c}") for c in range(len(channels))}
        ovc = {(c, b): probe.signal(f"ovc{c}_{b}") for c in range(len(channels))
               for b in range(len(outs[c]))}
        for c in range(len(channels)):
            name = self._channel_name(channels[c])
            want = probe.signal(f"want_reg{c}")
            m.d.comb += [
                Assert(routed[c] | (held[c] == 0), f"{name}: holds an output unrouted"),
                Assert((held[c] & ~want) == 0, f"{name}: holds an output it does not want"),
            ]
            if c in unicast:
                m.d.comb += Assert(~routed[c] | ((want & (want - 1)) == 0),
                                   f"{name}: a unicast routed to two outputs")
            else:
                self._broadcast_invariants(m, probe, c, channels[c], routed[c], held[c], want)
            for b, o in enumerate(outs[c]):
                # The channel number a held output was granted: of its allocator's class.
                number = ovc[c, b]
                fits = (number == 0 if o == local else number == V if c not in unicast
                        else number < V)
                m.d.comb += Assert(~held[c][b] | fits,
                                   f"{name}: holds an output channel of another class")
        busy_of = {}
        for o in range(local + 1):
            oname = f"out{self._dims[o]}" if o < local else "out_pe"
            groups = [("u", V, lambda c: channels[c][1] != V), ("b", 1,
                                                               lambda c: channels[c][1] == V)] \
                if o < local else [("e", 1, lambda c: True)]
            for kind, count, member in groups:
                users = [c for c in range(len(channels)) if o in outs[c] and member(c)]
                if not users:
                    continue
                busy = probe.sub(f"va_{oname}_{kind}").component.busy
                busy_of[o, kind] = busy
                for v in range(count):
                    value = v if kind == "u" else (V if kind == "b" else 0)
                    holders = [held[c][outs[c].index(o)] & (ovc[c, outs[c].index(o)] == value)
                               & self._branch_open(probe, channels[c], outs[c].index(o))
                               for c in users]
                    m.d.comb += [
                        Assert(busy[v] == Cat(*holders).any(),
                               f"{oname} channel {value}: busy is not 'held by an input'"),
                        Assert(popcount(holders) <= 1,
                               f"{oname} channel {value}: held by two input channels"),
                    ]

        # --- Switch arbiters: only the PE's waits (links take a flit whenever one is offered, so
        # theirs never stall), and a grant held across a stall is one live request.
        for o in range(local + 1):
            oname = f"out{self._dims[o]}" if o < local else "out_pe"
            if o == local and router.eject_switch_is_the_holder:
                # No arbiter: the grant is the request, so there must be one at most.
                requests = probe.signal(f"{oname}_requests")
                m.d.comb += Assert(popcount(requests) <= 1,
                                   f"switch {oname}: two input channels have a flit for it")
                continue
            arbiter = probe.sub(f"sa_{oname}")
            stalled = Signal(name=f"sa_{oname}_stalled")
            if o == local:
                waits = arbiter.component.valid & ~arbiter.component.ready
                m.d.sync += stalled.eq(waits)
            check_arbiter(m, arbiter, stalled, f"switch {oname}")

        # --- The tagged worm's route and reservation, and the release by its tail -------------
        for c in unicast:
            j, v = channels[c]
            name = self._channel_name(channels[c])
            want = probe.signal(f"want_reg{c}")
            exp = Cat(*(expect[o] for o in outs[c]))
            mine = seen & (tin == c)
            active = mine & (left != L)
            m.d.comb += [
                Assert(~mine | ((expect & ~Cat(*(Const(1, 1) if o in outs[c] else Const(0, 1)
                                                 for o in range(local + 1)))) == 0),
                       f"{name}: the tagged worm's route is not an output of this input"),
                Assert(~active | ~routed[c] | (want == exp),
                       f"{name}: routed elsewhere than the topology says"),
                Assert(~active | ((held[c] & ~exp) == 0),
                       f"{name}: the tagged worm holds an output off its route"),
                Assert(~active | (left == 0) | (routed[c] & (held[c] == exp)),
                       f"{name}: the tagged worm's output is not held while it passes"),
            ]
            if j >= local:
                m.d.comb += Assert(~mine | (entered == L)
                                   | ((probe.signal("inject_index") == entered)
                                      & ~probe.signal("inject_refusing")
                                      & ~probe.signal("inject_broadcasting")),
                                   "the injection's count disagrees with the tagged worm's")
            for b, o in enumerate(outs[c]):
                if o < local:
                    busy, value = busy_of[o, "u"], tvc
                    matches = Cat(*(busy[w] & (tvc == w) for w in range(V))).any()
                    free = Cat(*(~busy[w] & (tvc == w) for w in range(V))).any()
                else:
                    busy = busy_of[o, "e"]
                    matches, free = busy[0], ~busy[0]
                    value = Const(0)
                on = mine & expect[o]
                m.d.comb += [
                    Assert(~(on & (left != 0) & (left != L))
                           | (matches & (ovc[c, b] == value) & (o >= local or tvc < V)),
                           f"the output channel the tagged worm took on "
                           f"{'the PE' if o == local else f'link {self._dims[o]}'} is not "
                           f"reserved for it until its tail"),
                    Assert(~(on & finished) | free,
                           f"the output channel the tagged worm took on "
                           f"{'the PE' if o == local else f'link {self._dims[o]}'} is not "
                           f"released by its tail"),
                    Assert(~(on & finished) | ~held[c][b],
                           f"{name} still holds its output after the tagged worm's tail"),
                ]
        if self.covers:
            links = Const(0, 1) if not local else (tin != inject_c)
            m.d.comb += [
                Cover(finished & links & expect[local]),        # link -> PE, whole
                Cover(finished & ~links & (expect[:local] != 0)),  # PE -> link, whole
                Cover(finished & links & (expect[:local] != 0)),   # link -> link, whole
                # Another worm waited behind the tagged one on its channel.
                Cover(finished & (buffers[inject_c]["count"] != 0) & ~links),
            ]
        return m

    def _buffer(self, probe, channel):
        """The queue of a unicast channel's :class:`~ihcube.rtl.FlitBuffer`: its registers."""
        j, v = channel
        where = f"in{self._dims[j]}_vc{v}" if j < self._local else "in_pe"
        fifo = probe.sub(where).sub("fifo")
        try:
            queue = fifo.sub("inner")  # a faulty buffer wraps the real one
        except LookupError:
            queue = fifo
        shape = self.router.eject.payload.shape()
        c = self.router.input_channels().index(channel)
        return {
            "count": queue.signal("count"), "head": queue.signal("head"),
            "tail": queue.signal("tail"), "room": queue.signal("room"),
            "entries": [shape(queue.signal(f"entry{i}"))
                        for i in range(self.wormhole.vc_depth)],
            "routed": probe.signal(f"routed{c}"),
        }

    def _broadcast_invariants(self, m, probe, c, channel, routed, held, want):
        """A broadcast buffer's branches read within what was written, only once routed and
        granted, and not all of them are past the tail (the buffer would have emptied)."""
        j, v = channel
        where = f"in{self._dims[j]}_vc{v}" if j < self._local else "in_pe_broadcast"
        bb = probe.sub(where)
        written, L = bb.component.written, self.wormhole.flits
        name = self._channel_name(channel)
        reads = [bb.signal(f"read_index{b}") for b in range(len(held))]
        m.d.comb += [
            Assert(written <= L, f"{name}: written beyond the message"),
            Assert(~self._started | (bb.signal("room") == (written != L)),
                   f"{name}: room disagrees with what is written"),
            Assert(bb.component.idle == (written == 0), f"{name}: idle disagrees with written"),
            Assert(bb.signal("full") == (written == L), f"{name}: full disagrees with written"),
        ]
        shape = self.router.eject.payload.shape()
        for k in range(L):
            entry = shape(bb.signal(f"entry{k}"))
            m.d.comb += Assert((k >= written) | ((entry.head == (k == 0))
                                                 & (entry.tail == (k == L - 1))),
                               f"{name}: flit {k} held is not marked as the {k}-th of a worm")
        for b, read in enumerate(reads):
            m.d.comb += [
                Assert(read <= written, f"{name}: branch {b} read beyond what was written"),
                Assert((bb.signal(f"behind{b}") == (read < written))
                       & (bb.signal(f"at_last{b}") == (read == L - 1))
                       & (bb.signal(f"at_end{b}") == (read == L)),
                       f"{name}: branch {b}'s flags disagree with its index"),
                Assert((read == 0) | (routed & held[b]),
                       f"{name}: branch {b} read without its output"),
            ]
        m.d.comb += Assert(~routed | (want == 0) | Cat(*(want[b] & (read != L)
                                                          for b, read in enumerate(reads))).any(),
                           f"{name}: every branch past the tail but the buffer not emptied")

    def _branch_open(self, probe, channel, b):
        """Whether branch ``b`` of a broadcast channel has not yet sent its tail (a branch
        that has keeps its ``held`` bit until every branch has); always true for unicasts."""
        j, v = channel
        if v != self.wormhole.vcs:
            return Const(1, 1)
        where = f"in{self._dims[j]}_vc{v}" if j < self._local else "in_pe_broadcast"
        return probe.sub(where).signal(f"read_index{b}") != self.wormhole.flits

    def _channel_name(self, channel):
        j, v = channel
        if j >= self._local:
            return "the PE's unicast channel" if v == 0 else "the PE's broadcast channel"
        return f"link {self._dims[j]} vc {v}"

    def _sent_by_rule(self, j, dest):
        """Whether a unicast for ``dest`` on link input ``j`` is one a neighbour following the
        rules sends: what is left to do lies inside the sender's travel mask."""
        dim = self._dims[j]
        width = topology.dimensions(self.n)
        sender = topology.neighbor(self.node, dim)
        outside = ((1 << width) - 1) & ~topology.travel_mask(self.n, sender, dim, self.order)
        return ((dest ^ self.node) & outside) == 0
