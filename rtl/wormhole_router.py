"""One node's wormhole router with virtual channels (``docs/wormhole.md``)."""

import operator
from functools import reduce

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .. import topology
from ..params import Wormhole, check_fabric_depth
from .arbiter import RoundRobinArbiter
from .flit import eject_signature, flit_layout, header_layout, inject_signature, link_signature
from .flit_buffer import FlitBuffer
from .message import Kind
from .route import RouteSelect
from .router import REFUSED_COUNT_WIDTH
from .vc_allocator import VcAllocator

__all__ = ["WormholeRouter", "wormhole_router_signature"]


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


class WormholeRouter(wiring.Component):
    """The wormhole router of node ``node`` in an ``n``-node incomplete hypercube.

    - **Inputs.** Each incoming link ends in ``vcs + 1`` :class:`FlitBuffer` s: ``vcs`` unicast
      virtual channels of ``vc_depth`` flits and one broadcast channel of ``flits`` flits (a
      whole message). The PE's flits enter one injection buffer of ``vc_depth`` flits; the
      router counts them, marks every ``flits``-th first one the head and the last the tail,
      and stamps the head's ``src`` (and, for a broadcast, its full travel vector).
    - **Routing.** A head at the front of an input channel is routed once, in its first cycle
      there: a unicast by a :class:`RouteSelect` (Katseff, Algorithm 2), a broadcast to the
      links its travel vector names (Algorithm 6, :func:`ihcube.topology.travel_mask`) and to
      the PE unless it arrived from it.
    - **Virtual-channel allocation** (:class:`VcAllocator`, registered). Each output link has
      one allocator for its unicast channels (a unicast head takes any free one) and one for
      its broadcast channel (granted only while the far buffer is ``idle``, so a broadcast
      moves whole: it never waits half way for a branch); the eject port has one, so that the
      PE receives each message's flits together. A broadcast's branches are granted one by
      one, as their channels free up.
    - **Switch allocation.** Each output has a :class:`RoundRobinArbiter` over the input
      channels holding one of its channels whose front flit has not yet gone there and whose
      channel at the far end has room (``ready``). The flit leaves its buffer when every branch
      it holds has sent it; a tail frees each output channel it leaves on in that cycle.
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
    n : int
        Number of nodes.
    node : int
        This router's node number; it sets which links exist.
    wormhole : :class:`ihcube.params.Wormhole`
        Flits per message, flit width, virtual channels and their depth
        (:func:`ihcube.params.wormhole_parameters`).
    order : ``"msb"`` or ``"lsb"``
        Routing order.
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
    vc_allocator = VcAllocator
    arbiter = RoundRobinArbiter
    route_select = RouteSelect

    def __init__(self, n, node, wormhole, order=topology.MSB_FIRST, *, strap=False):
        n = self._n = topology.check_fabric_node_count(n)
        self._node = topology.check_node(n, node)
        if not isinstance(wormhole, Wormhole):
            raise TypeError(f"Wormhole parameters must be a Wormhole (from "
                            f"ihcube.params.wormhole_parameters), not {wormhole!r}")
        self._wormhole = wormhole
        check_fabric_depth(wormhole.vc_depth)
        self._order = topology.check_routing_order(order)
        self._dims = topology.links(n, self._node)
        self._strap = bool(strap)
        super().__init__(wormhole_router_signature(n, self._node, wormhole, strap=self._strap))

    n        = property(lambda self: self._n)
    node     = property(lambda self: self._node)
    wormhole = property(lambda self: self._wormhole)
    order    = property(lambda self: self._order)
    dims     = property(lambda self: self._dims)

    def outputs_of(self, j):
        """The outputs input ``j`` (links in port order, then the injection) can use: link
        indices, then the eject port (index ``k``). The rule is
        :func:`ihcube.topology.onward_links`, merged over the link set when strapped."""
        links = len(self._dims)
        if j >= links:
            return (*range(links), links)
        if self._strap:
            onward = topology.link_set_onward_links(self._n, self._node, self._dims[j],
                                                    self._order)
        else:
            onward = topology.onward_links(self._n, self._node, self._dims[j], self._order)
        return (*(self._dims.index(dim) for dim in onward), links)

    def input_channels(self):
        """Every input channel as ``(j, vc)``: each link's ``vcs + 1`` channels (the last the
        broadcast channel), then the injection ``(k, 0)``."""
        vcs = self._wormhole.vcs
        return [(j, v) for j in range(len(self._dims)) for v in range(vcs + 1)] + \
            [(len(self._dims), 0)]

    def inputs_of(self, o):
        """The input channels (indices into :meth:`input_channels`) that can use output
        ``o``."""
        return [c for c, (j, _) in enumerate(self.input_channels()) if o in self.outputs_of(j)]

    def elaborate(self, platform):
        m = Module()
        wh = self._wormhole
        n, links, vcs = self._n, len(self._dims), wh.vcs
        flit = flit_layout(wh.flit_width)
        header = header_layout(n)
        hbits = header.size
        address = self.address if self._strap else Const(self._node,
                                                         topology.address_bits(n))
        channels = self.input_channels()
        bvc = vcs  # the broadcast channel's number on every link

        # --- Input buffers ---------------------------------------------------------------
        buffers = []
        for j, dim in enumerate(self._dims):
            port = self.links_in[j]
            for v in range(vcs + 1):
                depth = wh.flits if v == bvc else wh.vc_depth
                buffer = m.submodules[f"in{dim}_vc{v}"] = self.flit_buffer(flit, depth)
                m.d.comb += [
                    buffer.w.valid.eq(port.valid & (port.vc == v)),
                    buffer.w.payload.eq(port.flit),
                    port.ready[v].eq(buffer.w.ready),
                ]
                if v == bvc:
                    m.d.comb += port.idle.eq(buffer.idle)
                buffers.append(buffer)
        injected = m.submodules.in_pe = self.flit_buffer(flit, wh.vc_depth)
        buffers.append(injected)
        self._elaborate_injection(m, injected, address)

        # --- Per input channel: route the head, hold outputs, send flits ---------------------
        outs = [self.outputs_of(j) for j, _ in channels]
        # Which allocator each (channel, output) asks: "u" unicast, "b" broadcast, "e" eject.
        state = []
        for c, ((j, v), buffer) in enumerate(zip(channels, buffers)):
            front = buffer.r.payload
            head = header(front.payload[:hbits])
            route = m.submodules[f"route{c}"] = self.route_select(
                n, self._node, self._order,
                outputs=[self._dims[o] for o in outs[c] if o < links])
            m.d.comb += [route.dest.eq(head.dest), route.address.eq(address)]
            copies = [head.dest[self._dims[o]] if o < links else Const(j < links, 1)
                      for o in outs[c]]
            steps = [*route.link, route.deliver]
            routed = Signal(name=f"routed{c}")
            want_reg = Signal(len(outs[c]), name=f"want_reg{c}")
            broadcast_reg = Signal(name=f"broadcast_reg{c}")
            want_new = Signal(len(outs[c]), name=f"want_new{c}")
            m.d.comb += want_new.eq(Mux(head.kind == Kind.BROADCAST, Cat(*copies), Cat(*steps)))
            want = Signal(len(outs[c]), name=f"want{c}")
            broadcast = Signal(name=f"broadcast{c}")
            m.d.comb += [
                want.eq(Mux(routed, want_reg, want_new)),
                broadcast.eq(Mux(routed, broadcast_reg, head.kind == Kind.BROADCAST)),
            ]
            with m.If(buffer.r.valid & front.head & ~routed):
                m.d.sync += [routed.eq(1), want_reg.eq(want_new),
                             broadcast_reg.eq(head.kind == Kind.BROADCAST)]
            held = Signal(len(outs[c]), name=f"held{c}")
            done = Signal(len(outs[c]), name=f"done{c}")
            sent = Signal(len(outs[c]), name=f"sent{c}")
            granted = Signal(len(outs[c]), name=f"granted{c}")
            ovc = [Signal(range(vcs + 1), name=f"ovc{c}_{b}") for b in range(len(outs[c]))]
            active = buffer.r.valid & (routed | front.head)
            state.append(dict(buffer=buffer, front=front, want=want, held=held, done=done,
                              sent=sent, granted=granted, ovc=ovc, active=active,
                              broadcast=broadcast, routed=routed, kind_link=(j < links, v)))

        # --- Outputs: allocators and switch arbiters ---------------------------------------
        outputs = [*self.links_out, self.eject]
        for o, port in enumerate(outputs):
            users = [c for c in range(len(channels)) if o in outs[c]]
            name = f"out{self._dims[o]}" if o < links else "out_pe"
            # Virtual-channel allocation.
            if o < links:
                # Link channels carry one kind each; the injection carries both.
                unicast_users = [c for c in users
                                 if channels[c][0] == links or channels[c][1] != bvc]
                broadcast_users = [c for c in users
                                   if channels[c][0] == links or channels[c][1] == bvc]
                groups = [("u", unicast_users, vcs), ("b", broadcast_users, 1)]
            else:
                groups = [("e", users, 1)]
            allocators = {}
            for kind, group, count in groups:
                allocator = m.submodules[f"va_{name}_{kind}"] = self.vc_allocator(len(group),
                                                                                 count)
                allocators[kind] = (allocator, group)
                for i, c in enumerate(group):
                    s = state[c]
                    b = outs[c].index(o)
                    if kind == "u":
                        wants_kind = ~s["broadcast"]
                    elif kind == "b":
                        wants_kind = s["broadcast"]
                    else:
                        wants_kind = Const(1, 1)
                    m.d.comb += allocator.requests[i].eq(s["active"] & s["want"][b]
                                                         & ~s["held"][b] & wants_kind)
                    with m.If(allocator.grant[i]):
                        m.d.comb += s["granted"][b].eq(1)
                        m.d.sync += s["ovc"][b].eq(allocator.vc if kind == "u" else
                                                   (bvc if kind == "b" else 0))
                if kind == "b":
                    m.d.comb += allocator.available.eq(port.idle)

            # Switch allocation.
            arbiter = m.submodules[f"sa_{name}"] = self.arbiter(len(users))
            for i, c in enumerate(users):
                s = state[c]
                b = outs[c].index(o)
                room = port.ready.bit_select(s["ovc"][b], 1) if o < links else Const(1, 1)
                m.d.comb += arbiter.requests[i].eq(s["buffer"].r.valid & s["held"][b]
                                                   & ~s["done"][b] & room)
                served = arbiter.grant[i] & (port.ready if o == links else Const(1, 1))
                m.d.comb += s["sent"][b].eq(served)
            chosen = Signal(flit, name=f"{name}_flit")
            width = flit.size
            m.d.comb += chosen.eq(reduce(operator.or_, (
                state[c]["front"].as_value() & arbiter.grant[i].replicate(width)
                for i, c in enumerate(users))))
            vc = Signal(range(vcs + 1), name=f"{name}_vc")
            m.d.comb += vc.eq(reduce(operator.or_, (
                state[c]["ovc"][outs[c].index(o)] & arbiter.grant[i].replicate(len(vc))
                for i, c in enumerate(users))))
            moved = arbiter.valid & (port.ready if o == links else Const(1, 1))
            m.d.comb += arbiter.ready.eq(port.ready if o == links else 1)
            if o < links:
                out_flit = Signal(flit, name=f"{name}_out")
                m.d.comb += out_flit.eq(chosen)
                out_head = header(out_flit.payload[:hbits])
                in_head = header(chosen.payload[:hbits])
                mask = topology.travel_mask(n, self._node, self._dims[o], self._order)
                with m.If(chosen.head & (in_head.kind == Kind.BROADCAST)):
                    m.d.comb += out_head.dest.eq(in_head.dest & mask)
                m.d.comb += [port.valid.eq(arbiter.valid), port.vc.eq(vc),
                             port.flit.eq(out_flit)]
                allocator_u, _ = allocators["u"]
                allocator_b, _ = allocators["b"]
                for v in range(vcs):
                    m.d.comb += allocator_u.release[v].eq(moved & chosen.tail & (vc == v))
                m.d.comb += allocator_b.release[0].eq(moved & chosen.tail & (vc == bvc))
            else:
                m.d.comb += [port.valid.eq(arbiter.valid), port.payload.eq(chosen)]
                allocator_e, _ = allocators["e"]
                m.d.comb += allocator_e.release[0].eq(moved & chosen.tail)

        # --- Per input channel: hold, mark sent, pop -----------------------------------------
        for s in state:
            buffer, front = s["buffer"], s["front"]
            last_copy = (s["want"] & ~s["done"] & ~s["sent"]) == 0
            pop = buffer.r.valid & s["routed"] & last_copy
            m.d.comb += buffer.r.ready.eq(pop)
            m.d.sync += s["held"].eq(s["held"] | s["granted"])
            with m.If(pop):
                m.d.sync += s["done"].eq(0)
                with m.If(front.tail):
                    m.d.sync += [s["routed"].eq(0), s["held"].eq(0)]
            with m.Else():
                m.d.sync += s["done"].eq(s["done"] | s["sent"])
        return m

    def _elaborate_injection(self, m, buffer, address):
        """Count the PE's flits into messages, stamp each head, refuse messages for nodes
        that do not exist (taken whole from the PE and dropped)."""
        wh, n = self._wormhole, self._n
        header = header_layout(n)
        hbits = header.size
        port = self.inject
        index = Signal(range(wh.flits), name="inject_index")
        refusing = Signal(name="inject_refusing")
        first = index == 0
        head = header(port.payload[:hbits])
        if n < 1 << len(head.dest):
            nowhere = (head.kind == Kind.UNICAST) & (head.dest >= n)
        else:
            nowhere = Const(0, 1)
        drop = Mux(first, nowhere, refusing)
        dest = Mux(head.kind == Kind.BROADCAST, topology.full_travel(n), head.dest)
        stamped = Cat(dest, address, head.kind, port.payload[hbits:])
        m.d.comb += [
            buffer.w.payload.payload.eq(Mux(first, stamped, port.payload)),
            buffer.w.payload.head.eq(first),
            buffer.w.payload.tail.eq(index == wh.flits - 1),
            buffer.w.valid.eq(port.valid & ~drop),
            port.ready.eq(Mux(drop, 1, buffer.w.ready)),
        ]
        taken = port.valid & port.ready
        with m.If(taken):
            m.d.sync += index.eq(Mux(index == wh.flits - 1, 0, index + 1))
            with m.If(first):
                m.d.sync += refusing.eq(nowhere)
        refused = taken & first & nowhere
        most = (1 << REFUSED_COUNT_WIDTH) - 1
        with m.If(refused):
            m.d.sync += self.refused.eq(1)
            with m.If(self.refused_count != most):
                m.d.sync += self.refused_count.eq(self.refused_count + 1)
