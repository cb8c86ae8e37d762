"""One node's wormhole router with virtual channels (``docs/wormhole.md``)."""

import operator
from functools import reduce

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .. import topology
from ..params import head_fields
from ..spec import as_wormhole_spec
from .prefix_arbiter import PrefixArbiter
from .flit import eject_signature, flit_layout, inject_signature, link_signature, routing_layout
from .broadcast_buffer import BroadcastBuffer
from .flit_buffer import FlitBuffer
from .message import Kind
from .route import RouteSelect
from .router import REFUSED_COUNT_WIDTH
from .vc_allocator import VcAllocator

__all__ = ["WormholeRouter", "wormhole_router_signature"]


def _equals(value, constant):
    """``value == constant``; against 0 written ``~value.any()``, which Amaranth's Verilog
    writes as a one-bit reduction rather than ``!value`` (a width warning in Verilator)."""
    return ~value.any() if constant == 0 else value == constant


def wormhole_router_signature(n, node, wormhole, *, strap=True):
    """The signature of :class:`WormholeRouter` ``(n, node, wormhole, strap=strap)``."""
    link = link_signature(n, wormhole.flit_width, wormhole.vcs)
    links = len(topology.links(n, node))
    members = {
        "links_in":      In(link).array(links),
        "links_out":     Out(link).array(links),
        "inject":        In(inject_signature(wormhole.flit_width)),
        "eject":         Out(eject_signature(wormhole.flit_width)),
        "refused":       Out(1),
        "refused_count": Out(REFUSED_COUNT_WIDTH),
    }
    if strap:
        members["address"] = In(topology.address_bits(n))
    return wiring.Signature(members)


def _stamp_src(payload, fields, flit, address):
    """``payload``, flit number ``flit`` of a message, with its part of the ``src`` field
    (:class:`ihcube.params.HeadFields`) replaced by the bits of ``address``."""
    parts, at = [], 0
    for _k, low, width, src_low in sorted(p for p in fields.src_pieces if p[0] == flit):
        parts += [payload[at:low], address[src_low:src_low + width]]
        at = low + width
    return Cat(*parts, payload[at:])


class WormholeRouter(wiring.Component):
    """The wormhole router of node ``node`` in an ``n``-node incomplete hypercube.

    - **Inputs.** Each incoming link ends in ``vcs`` unicast virtual channels, each a
      :class:`FlitBuffer` of ``vc_depth`` flits, and one broadcast channel, a
      :class:`BroadcastBuffer` of ``flits`` flits (a whole message). The router counts the PE's
      flits into messages of ``flits`` (the first the head, the last the tail), stamps each
      message's ``src`` (in the head, and in the second flit where the header is wider than a
      flit: :func:`ihcube.params.head_fields`) and a broadcast's full travel vector, and puts
      each message into the injection's unicast :class:`FlitBuffer` (``vc_depth``) or its
      :class:`BroadcastBuffer`.
    - **Routing fields.** A router reads only ``dest`` and ``kind`` of a head
      (:func:`~ihcube.rtl.flit.routing_layout`), so a flit need only hold those.
    - **Routing.** A head at the front of an input channel is routed once, in its first cycle
      there: a unicast by a :class:`RouteSelect` (Katseff, Algorithm 2), a broadcast to the
      links its travel vector names (Algorithm 6, :func:`ihcube.topology.travel_mask`) and to
      the PE unless it arrived from it.
    - **Virtual-channel allocation** (:class:`VcAllocator`, registered). Each output link has
      one allocator for its unicast channels (a unicast head takes any free one) and one for
      its broadcast channel (granted only while the far buffer is ``idle``, so a broadcast
      moves whole); the eject port has one, so that the PE receives each message's flits
      together. A broadcast's branches are granted independently, as their channels free up,
      and each reads the broadcast buffer at its own pace: no branch waits for another.
    - **Switch allocation.** Each output has a round-robin arbiter (:class:`PrefixArbiter`,
      :class:`~ihcube.rtl.RoundRobinArbiter`'s function in fewer logic levels) over the input
      channels holding one of its channels that have a flit for it and room at the far end
      (``ready``). A tail frees the output channel it leaves on, in that cycle.
    - **Timing** (``docs/wormhole.md``): a head is routed and granted its channel in the cycle
      after it arrives and crosses the next link in the cycle after that (two cycles per hop);
      body flits follow one cycle per hop, one per cycle with ``vc_depth >= 2``.
    - **Fairness.** A requesting head is granted a channel of an output after at most
      ``r - 1`` grants to other input channels, and a flit with room is sent on an output after
      at most ``r - 1`` flits of others, ``r`` the input channels that can use the output
      (:meth:`inputs_of`).
    - An injected message whose head names a node that does not exist is taken from the PE
      whole and dropped, and counted (``refused``, ``refused_count``), as in packet mode.

    What this router drives onto a link depends on its own flip-flops, the ``address`` strap,
    and the far end's ``ready`` and ``idle`` flip-flops; ``ready`` and ``idle`` of its inputs
    are flip-flops. So no combinational loop closes through a fabric of them.

    Parameters
    ----------
    spec : FabricSpec
        The fabric (:class:`ihcube.spec.FabricSpec` with :class:`~ihcube.spec.Wormhole`
        switching: flits per message, flit width, virtual channels and their depth; the
        routing order), within the hardware's limits. The older form ``(n, node, wormhole,
        order)`` makes the spec (:func:`ihcube.spec.as_wormhole_spec`).
    node : int
        This router's node number; it sets which links exist.
    strap : bool
        Take the router's address from the ``address`` port (one module per link set).

    Members
    -------
    links_in : ``In(link_signature(n, flit_width, vcs)).array(k)``
    links_out : ``Out(link_signature(n, flit_width, vcs)).array(k)``
    inject : ``In(inject_signature(flit_width))``
    eject : ``Out(eject_signature(flit_width))``
    refused : ``Out(1)``
    refused_count : ``Out(REFUSED_COUNT_WIDTH)``
    address : ``In(address_bits(n))``, with ``strap=True`` only.
    """

    #: Parts that negative-control variants replace (``ihcube.verify.faults``).
    flit_buffer = FlitBuffer
    broadcast_buffer = BroadcastBuffer
    vc_allocator = VcAllocator
    arbiter = PrefixArbiter
    route_select = RouteSelect
    #: The eject port's switch grant is its one requester's request, no arbiter (False builds
    #: the round-robin arbiter there; the models arbitrate, so the lockstep tests hold the two
    #: to the same grants, and the formal check proves there is one requester at most).
    eject_switch_is_the_holder = True
    #: Where the header lies in a message's flits (:func:`ihcube.params.head_fields`).
    head_fields = staticmethod(head_fields)

    def __init__(self, spec, node, wormhole=None, order=topology.MSB_FIRST, *, strap=False):
        spec = self._spec = as_wormhole_spec(spec, wormhole, order).check_hardware()
        n = self._n = spec.nodes
        self._node = topology.check_node(n, node)
        self._wormhole = spec.wormhole
        self._order = spec.order
        self._dims = topology.links(n, self._node)
        self._strap = bool(strap)
        super().__init__(wormhole_router_signature(n, self._node, self._wormhole,
                                                   strap=self._strap))

    spec     = property(lambda self: self._spec)
    n        = property(lambda self: self._n)
    node     = property(lambda self: self._node)
    wormhole = property(lambda self: self._wormhole)
    order    = property(lambda self: self._order)
    dims     = property(lambda self: self._dims)

    def outputs_of(self, j, broadcast=False):
        """The outputs input ``j`` (links in port order, then the injection) can use: link
        indices, then the eject port (index ``k``). The rule is
        :func:`ihcube.topology.onward_links`, merged over the link set when strapped; the PE's
        own broadcasts do not come back to it."""
        links = len(self._dims)
        if j >= links:
            return tuple(range(links)) if broadcast else (*range(links), links)
        if self._strap:
            onward = topology.link_set_onward_links(self._n, self._node, self._dims[j],
                                                    self._order)
        else:
            onward = topology.onward_links(self._n, self._node, self._dims[j], self._order)
        return (*(self._dims.index(dim) for dim in onward), links)

    def input_channels(self):
        """Every input channel as ``(j, vc)``: each link's ``vcs + 1`` channels (the last, number
        ``vcs``, the broadcast channel), then the injection's unicast channel ``(k, 0)`` and
        broadcast channel ``(k, vcs)``."""
        vcs, links = self._wormhole.vcs, len(self._dims)
        # A single node has no broadcast channel: its PE's broadcasts reach nobody.
        return [(j, v) for j in range(links) for v in range(vcs + 1)] + \
            [(links, 0)] + ([(links, vcs)] if links else [])

    def inputs_of(self, o):
        """The input channels (indices into :meth:`input_channels`) that can use output
        ``o``."""
        vcs = self._wormhole.vcs
        return [c for c, (j, v) in enumerate(self.input_channels())
                if o in self.outputs_of(j, v == vcs)]

    def elaborate(self, platform):
        m = Module()
        wh = self._wormhole
        n, links, vcs = self._n, len(self._dims), wh.vcs
        flit = flit_layout(wh.flit_width)
        header = routing_layout(n, wh.flit_width)
        hbits = header.size
        address = self.address if self._strap else Const(self._node,
                                                         topology.address_bits(n))
        channels = self.input_channels()
        bvc = vcs  # the broadcast channel's number on every link
        outs = [self.outputs_of(j, v == bvc) for j, v in channels]

        # --- Input buffers: a FIFO per unicast channel, a BroadcastBuffer per broadcast one --
        buffers = []
        for c, (j, v) in enumerate(channels):
            where = f"in{self._dims[j]}_vc{v}" if j < links else \
                ("in_pe" if v == 0 else "in_pe_broadcast")
            if v == bvc:
                buffer = self.broadcast_buffer(flit, wh.flits, len(outs[c]))
            else:
                buffer = self.flit_buffer(flit, wh.vc_depth)
            m.submodules[where] = buffer
            buffers.append(buffer)
            if j < links:
                port = self.links_in[j]
                m.d.comb += [
                    buffer.w.valid.eq(port.valid & _equals(port.vc, v)),
                    buffer.w.payload.eq(port.flit),
                    port.ready[v].eq(buffer.w.ready),
                ]
                if v == bvc:
                    m.d.comb += port.idle.eq(buffer.idle)
        if links:
            self._elaborate_injection(m, buffers[-2], buffers[-1], address)
        else:
            self._elaborate_injection(m, buffers[-1], None, address)

        # --- Per input channel: route the head once, then hold its outputs --------------------
        state = []
        for c, ((_j, v), buffer) in enumerate(zip(channels, buffers)):
            is_broadcast = v == bvc
            routed = Signal(name=f"routed{c}")
            if is_broadcast:
                first = buffer.head
                arrived = ~buffer.idle  # a flip-flop: written != 0
            else:
                first = buffer.r.payload
                arrived = buffer.r.valid & first.head
            head = header(first.payload[:hbits])
            want_new = Signal(len(outs[c]), name=f"want_new{c}")
            if is_broadcast:  # Katseff, Algorithm 6: the links the travel vector names
                m.d.comb += want_new.eq(Cat(*(head.dest[self._dims[o]] if o < links
                                              else Const(1, 1) for o in outs[c])))
            else:  # Katseff, Algorithm 2
                route = m.submodules[f"route{c}"] = self.route_select(
                    n, self._node, self._order,
                    outputs=[self._dims[o] for o in outs[c] if o < links])
                m.d.comb += [route.dest.eq(head.dest), route.address.eq(address),
                             want_new.eq(Cat(*route.link, route.deliver))]
            want_reg = Signal(len(outs[c]), name=f"want_reg{c}")
            want = Signal(len(outs[c]), name=f"want{c}")
            m.d.comb += want.eq(Mux(routed, want_reg, want_new))
            with m.If(arrived & ~routed):
                m.d.sync += [routed.eq(1), want_reg.eq(want_new)]
            if is_broadcast:
                m.d.comb += buffer.want.eq(Mux(routed, want_reg, 0))
            held = Signal(len(outs[c]), name=f"held{c}")
            sent = Signal(len(outs[c]), name=f"sent{c}")
            granted = Signal(len(outs[c]), name=f"granted{c}")
            ovc = [Signal(range(vcs + 1), name=f"ovc{c}_{b}") for b in range(len(outs[c]))]
            if is_broadcast:
                flits = [buffer.r[b].payload for b in range(len(outs[c]))]
                ready = [buffer.r[b].valid for b in range(len(outs[c]))]
            else:
                flits = [buffer.r.payload] * len(outs[c])
                ready = [buffer.r.valid] * len(outs[c])
            state.append(dict(buffer=buffer, want=want, held=held, sent=sent, granted=granted,
                              ovc=ovc, flits=flits, ready=ready, routed=routed,
                              active=(arrived | routed), broadcast=is_broadcast))

        # --- Outputs: virtual-channel allocators and switch arbiters --------------------------
        outputs = [*self.links_out, self.eject]
        for o, port in enumerate(outputs):
            users = [c for c in range(len(channels)) if o in outs[c]]
            name = f"out{self._dims[o]}" if o < links else "out_pe"
            if o < links:
                groups = [("u", [c for c in users if not state[c]["broadcast"]], vcs),
                          ("b", [c for c in users if state[c]["broadcast"]], 1)]
            else:
                groups = [("e", users, 1)]
            allocators = {}
            for kind, group, count in groups:
                if not group:
                    continue
                allocator = m.submodules[f"va_{name}_{kind}"] = self.vc_allocator(len(group),
                                                                                 count)
                allocators[kind] = allocator
                for i, c in enumerate(group):
                    s, b = state[c], outs[c].index(o)
                    m.d.comb += allocator.requests[i].eq(s["active"] & s["want"][b]
                                                         & ~s["held"][b])
                    with m.If(allocator.grant[i]):
                        m.d.comb += s["granted"][b].eq(1)
                        m.d.sync += s["ovc"][b].eq(allocator.vc if kind == "u" else
                                                   (bvc if kind == "b" else 0))
                if kind == "b":
                    m.d.comb += allocator.available.eq(port.idle)

            # Switch allocation: the channels holding this output with a flit and room.
            eject = o == links
            if eject and self.eject_switch_is_the_holder:
                # The eject port has one channel: only the input channel that holds it has a
                # flit for it (a broadcast's branch that has sent its tail has none, though its
                # channel keeps `held` until every branch is done), so at most one requests,
                # and the round-robin grant is the request itself, in every cycle.
                requests = Signal(len(users), name=f"{name}_requests")
                grant, valid = requests, requests.any()
            else:
                arbiter = m.submodules[f"sa_{name}"] = self.arbiter(len(users))
                requests, grant, valid = arbiter.requests, arbiter.grant, arbiter.valid
                m.d.comb += arbiter.ready.eq(port.ready if eject else 1)
            for i, c in enumerate(users):
                s, b = state[c], outs[c].index(o)
                # The far buffer of the channel held has room (a one-hot select, not a shift).
                room = Const(1, 1) if eject else reduce(operator.or_, (
                    port.ready[v] & _equals(s["ovc"][b], v) for v in range(vcs + 1)))
                m.d.comb += [
                    requests[i].eq(s["ready"][b] & s["held"][b] & room),
                    s["sent"][b].eq(grant[i] & (port.ready if eject else 1)),
                ]
            chosen = Signal(flit, name=f"{name}_flit")
            m.d.comb += chosen.eq(reduce(operator.or_, (
                state[c]["flits"][outs[c].index(o)].as_value()
                & grant[i].replicate(flit.size) for i, c in enumerate(users))))
            vc = Signal(range(vcs + 1), name=f"{name}_vc")
            m.d.comb += vc.eq(reduce(operator.or_, (
                state[c]["ovc"][outs[c].index(o)] & grant[i].replicate(len(vc))
                for i, c in enumerate(users))))
            moved = valid & (port.ready if eject else 1)
            if eject:
                m.d.comb += [port.valid.eq(valid), port.payload.eq(chosen)]
                m.d.comb += allocators["e"].release[0].eq(moved & chosen.tail)
                continue
            out_flit = Signal(flit, name=f"{name}_out")
            m.d.comb += out_flit.eq(chosen)
            in_head, out_head = header(chosen.payload[:hbits]), header(out_flit.payload[:hbits])
            with m.If(chosen.head & (vc == bvc)):  # a broadcast copy's travel vector
                m.d.comb += out_head.dest.eq(in_head.dest & topology.travel_mask(
                    n, self._node, self._dims[o], self._order))
            m.d.comb += [port.valid.eq(valid), port.vc.eq(vc), port.flit.eq(out_flit)]
            if "u" in allocators:
                for v in range(vcs):
                    m.d.comb += allocators["u"].release[v].eq(moved & chosen.tail & _equals(vc, v))
            if "b" in allocators:
                m.d.comb += allocators["b"].release[0].eq(moved & chosen.tail & (vc == bvc))

        # --- Per input channel: take grants, read flits, let go after the tail ----------------
        for s in state:
            buffer = s["buffer"]
            m.d.sync += s["held"].eq(s["held"] | s["granted"])
            if s["broadcast"]:
                for b, port in enumerate(buffer.r):
                    m.d.comb += port.ready.eq(s["sent"][b])
                finished = buffer.done
            else:
                m.d.comb += buffer.r.ready.eq(s["sent"].any())
                finished = s["sent"].any() & buffer.r.payload.tail
            with m.If(finished):
                m.d.sync += [s["routed"].eq(0), s["held"].eq(0)]
        return m

    def _elaborate_injection(self, m, unicasts, broadcasts, address):
        """Count the PE's flits into messages, stamp each head (``dest`` of a broadcast, and
        ``src``, in the second flit too where it runs on, :func:`ihcube.params.head_fields`),
        and put each message into the injection's unicast or broadcast channel by its head's
        kind; refuse a message for a node that does not exist (taken whole from the PE and
        dropped)."""
        wh, n = self._wormhole, self._n
        header = routing_layout(n, wh.flit_width)
        hbits = header.size
        fields = self.head_fields(n, wh.flit_width)
        port = self.inject
        index = Signal(range(wh.flits), name="inject_index")
        refusing = Signal(name="inject_refusing")
        broadcasting = Signal(name="inject_broadcasting")
        first = ~index.any()  # index == 0, written so that Verilog compares one bit
        head = header(port.payload[:hbits])
        if n < 1 << len(head.dest):
            nowhere = (head.kind == Kind.UNICAST) & (head.dest >= n)
        else:
            nowhere = Const(0, 1)
        drop = Mux(first, nowhere, refusing)
        broadcast = Mux(first, head.kind == Kind.BROADCAST, broadcasting)
        dest = Mux(head.kind == Kind.BROADCAST, topology.full_travel(n), head.dest)
        stamped = [_stamp_src(port.payload, fields, flit, address)
                   for flit in range(1 + max(k for k, _, _, _ in fields.src_pieces))]
        stamped[0] = Cat(dest, stamped[0][len(dest):])
        written = port.payload
        for flit in reversed(range(1, len(stamped))):  # src's high bits in the second flit
            written = Mux(index == flit, stamped[flit], written)
        written = Mux(first, stamped[0], written)
        if broadcasts is None:  # a single node: a broadcast is taken and reaches nobody
            drop = drop | broadcast
        for buffer, mine in ((unicasts, ~broadcast), (broadcasts, broadcast)):
            if buffer is None:
                continue
            m.d.comb += [
                buffer.w.payload.payload.eq(written),
                buffer.w.payload.head.eq(first),
                buffer.w.payload.tail.eq(index == wh.flits - 1),
                buffer.w.valid.eq(port.valid & ~drop & mine),
            ]
        taking = unicasts.w.ready if broadcasts is None else \
            Mux(broadcast, broadcasts.w.ready, unicasts.w.ready)
        m.d.comb += port.ready.eq(drop | taking)
        taken = port.valid & port.ready
        with m.If(taken):
            m.d.sync += index.eq(Mux(index == wh.flits - 1, 0, index + 1))
            with m.If(first):
                m.d.sync += [refusing.eq(nowhere), broadcasting.eq(broadcast)]
        refused = taken & first & nowhere
        most = (1 << REFUSED_COUNT_WIDTH) - 1
        with m.If(refused):
            m.d.sync += self.refused.eq(1)
            with m.If(self.refused_count != most):
                m.d.sync += self.refused_count.eq(self.refused_count + 1)
