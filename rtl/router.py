"""One node's router of an incomplete hypercube."""

import operator
from functools import reduce

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .. import topology
from ..params import check_fabric_depth, check_fabric_payload_width
from .arbiter import RoundRobinArbiter
from .buffer import LinkBuffer
from .message import Kind, inject_layout, message_layout
from .route import RouteSelect

__all__ = ["Router", "router_signature", "REFUSED_COUNT_WIDTH"]

#: Width of the saturating counter of refused injections.
REFUSED_COUNT_WIDTH = 16


def router_signature(n, node, payload_width=32, *, strap=True):
    """The signature of :class:`Router` ``(n, node, payload_width, strap=strap)``."""
    message = message_layout(n, payload_width)
    links = len(topology.links(n, node))
    members = {
        "links_in":      In(stream.Signature(message)).array(links),
        "links_out":     Out(stream.Signature(message)).array(links),
        "inject":        In(stream.Signature(inject_layout(n, payload_width))),
        "eject":         Out(stream.Signature(message)),
        "refused":       Out(1),
        "refused_count": Out(REFUSED_COUNT_WIDTH),
    }
    if strap:
        members["address"] = In(topology.address_bits(n))
    return wiring.Signature(members)


class Router(wiring.Component):
    """The router of node ``node`` in an ``n``-node incomplete hypercube.

    It has a link port pair for each link that exists from ``node`` (and none for the
    others) and a local port for its processing element (PE).

    - Each incoming link direction, and the PE's injection, ends in a :class:`LinkBuffer`
      of ``depth`` messages. A message waits at the head of its buffer until the buffer
      at the far end of its output is free, then moves (Katseff, Algorithm 3).
    - A unicast head is routed by a :class:`RouteSelect`: the first set bit of
      ``(node XOR dest) AND exists`` (Katseff, Algorithm 2), or the PE when
      ``dest == node``.
    - A broadcast head is delivered to the PE (unless this node is its origin) and copied
      to every existing link ``l`` whose travel bit is set, each copy carrying
      ``travel AND travel_mask(l)`` (Katseff, Algorithm 6, mirrored for least-significant-
      first routing: :func:`ihcube.topology.travel_mask`). Copies may leave in different
      cycles; the head leaves its buffer when its last copy has left.
    - Each output (every link, and the PE's eject port) has a :class:`RoundRobinArbiter`
      over the inputs that can use it (:meth:`outputs_of`: at most the ``k`` links and the
      PE) and an AND-OR crossbar on its one-hot grant. Leaving out inputs that never ask
      for an output does not change any grant, and saves about a third of the crossbar.
      **Fairness bound**: a head that waits for an output is sent after at most ``k``
      transfers of other inputs on that output. With ``depth=1`` and the output always
      ready, a message taken into an input buffer in cycle ``t`` leaves on that output by
      cycle ``t + k + 1``.
    - An injection with ``dest >= n`` is taken from the PE like any other (it does not block
      the PE), dropped before it enters the fabric, and counted: ``refused`` rises and stays
      up, and ``refused_count`` (saturating) counts them.

    Nothing that this router drives onto a link depends combinationally on anything it
    receives: ``links_in[i].ready`` is a flip-flop, and ``links_out[i].valid`` and
    ``.payload`` are functions of this router's own flip-flops (and, with ``strap=True``, of
    the ``address`` strap, which the fabric ties to a constant). So no combinational path
    crosses a router, and a fabric of them has no combinational loop for any ``n``.

    Parameters
    ----------
    n : int
        Number of nodes in the fabric.
    node : int
        This router's node number, ``0 <= node < n``. It sets which links exist.
    payload_width : int
        Payload bits per message.
    depth : int
        Messages per input buffer (1 is Katseff's one-message buffer).
    order : ``"msb"`` or ``"lsb"``
        Routing order of :func:`ihcube.topology.route_step`.
    strap : bool
        Take the router's own address from the ``address`` port instead of the constant
        ``node``, so that one module serves every node with the same links (the fabric's
        Verilog has one router module per link set, not one per node). Drive ``address``
        with a node whose links are ``links(n, node)``.

    Members
    -------
    links_in : ``In(stream.Signature(message_layout(n, payload_width))).array(k)``
        Incoming link ``dims[j]``.
    links_out : ``Out(stream.Signature(message_layout(n, payload_width))).array(k)``
        Outgoing link ``dims[j]``.
    inject : ``In(stream.Signature(inject_layout(n, payload_width)))``
        Messages from the PE: a unicast to ``dest``, or a broadcast.
    eject : ``Out(stream.Signature(message_layout(n, payload_width)))``
        Messages for the PE, one per cycle at most; ``src`` says who sent it.
    refused : ``Out(1)``
        Sticky: an injection named a node that does not exist.
    refused_count : ``Out(REFUSED_COUNT_WIDTH)``
        Number of refused injections, saturating.
    address : ``In(address_bits(n))``
        With ``strap=True`` only: this router's node number, a static strap. It must be held
        constant (the fabric ties it to the node); timing paths from it are false paths.
    """

    #: The route selector; negative-control variants in the tests replace it.
    route_select = RouteSelect
    #: The input buffer; negative-control variants in the tests replace it.
    link_buffer = LinkBuffer
    #: The output arbiter; negative-control variants in the tests replace it.
    arbiter = RoundRobinArbiter

    def __init__(self, n, node, payload_width=32, depth=1, order=topology.MSB_FIRST, *,
                 strap=False):
        n = self._n = topology.check_fabric_node_count(n)
        node = self._node = topology.check_node(n, node)
        payload_width = self._payload_width = check_fabric_payload_width(payload_width)
        depth = self._depth = check_fabric_depth(depth)
        self._order = topology.check_routing_order(order)
        self._dims = topology.links(n, node)
        self._strap = bool(strap)

        super().__init__(router_signature(n, node, payload_width, strap=self._strap))

    n             = property(lambda self: self._n)
    node          = property(lambda self: self._node)
    payload_width = property(lambda self: self._payload_width)
    depth         = property(lambda self: self._depth)
    order         = property(lambda self: self._order)
    strap         = property(lambda self: self._strap)

    @property
    def dims(self):
        """The dimensions of this node's links, in port order."""
        return self._dims

    def travel_mask(self, dim):
        """The travel-vector mask of a broadcast copy sent on link ``dim``."""
        return topology.travel_mask(self._n, self._node, dim, self._order)

    def outputs_of(self, j):
        """The outputs that input ``j`` can ever use, in port order (links, then the PE).

        The PE's injection can use every output (a unicast to its own node included). A
        message that arrived on link ``l`` can leave on :func:`ihcube.topology.onward_links`
        only (merged over the link set when strapped), or reach the PE. A copy it wanted on
        any other link would be dropped: a correct neighbour never sends one.
        """
        links = len(self._dims)
        if j == links:
            return tuple(range(links + 1))
        if self._strap:
            onward = topology.link_set_onward_links(self._n, self._node, self._dims[j],
                                                    self._order)
        else:
            onward = topology.onward_links(self._n, self._node, self._dims[j], self._order)
        return (*(self._dims.index(dim) for dim in onward), links)

    def elaborate(self, platform):
        m = Module()
        links = len(self._dims)
        local = links  # index of the PE among inputs and outputs
        message = message_layout(self._n, self._payload_width)
        if self._strap:
            address = self.address
        else:
            address = Const(self._node, topology.address_bits(self._n))

        # Inputs: one buffer per incoming link, then the PE's injection buffer.
        buffers = []
        for j, dim in enumerate(self._dims):
            buffer = m.submodules[f"in{dim}"] = self.link_buffer(message, self._depth)
            wiring.connect(m, wiring.flipped(self.links_in[j]), buffer.w)
            buffers.append(buffer)
        injected = m.submodules["in_pe"] = self.link_buffer(message, self._depth)
        buffers.append(injected)

        self._elaborate_injection(m, injected, address)

        # Which outputs each input can ever use (:meth:`outputs_of`): only those get a
        # request, a place in the output's arbiter and crossbar, and a `done` bit.
        outputs_of = [self.outputs_of(j) for j in range(links + 1)]
        inputs_of = [[j for j in range(links + 1) if o in outputs_of[j]]
                     for o in range(links + 1)]

        # What each head wants: a bit per output it can use, in output order.
        wants = []
        for j, buffer in enumerate(buffers):
            head = buffer.r.payload
            route = m.submodules[f"route{j}"] = self.route_select(
                self._n, self._node, self._order,
                outputs=[self._dims[o] for o in outputs_of[j] if o < links])
            m.d.comb += [
                route.dest.eq(head.dest),
                route.address.eq(address),
            ]
            copies = [head.travel[self._dims[o]] if o < links
                      else Const(j != local, 1)  # the origin does not deliver to itself
                      for o in outputs_of[j]]
            steps = [*route.link, route.deliver]  # the same outputs, in the same order
            want = Signal(len(outputs_of[j]), name=f"want{j}")
            m.d.comb += want.eq(Mux(head.kind == Kind.BROADCAST, Cat(*copies), Cat(*steps)))
            wants.append(want)

        # Outputs: an arbiter each over the inputs that can use it, and an AND-OR crossbar
        # on its one-hot grant.
        ports = [*self.links_out, self.eject]
        arbiters = []
        for o, port in enumerate(ports):
            name = f"out{self._dims[o]}" if o < links else "out_pe"
            arbiter = m.submodules[f"arbiter_{name}"] = self.arbiter(len(inputs_of[o]))
            arbiters.append(arbiter)
            chosen = Signal(message, name=f"{name}_chosen")
            width = len(chosen.as_value())
            m.d.comb += chosen.eq(reduce(operator.or_, (
                buffers[j].r.payload.as_value() & arbiter.grant[i].replicate(width)
                for i, j in enumerate(inputs_of[o]))))
            m.d.comb += [
                port.valid.eq(arbiter.valid),
                port.payload.eq(chosen),
                arbiter.ready.eq(port.ready),
            ]
            if o < links:
                m.d.comb += port.payload.travel.eq(chosen.travel
                                                   & self.travel_mask(self._dims[o]))

        # Track the copies each head has sent; it leaves when none is left to send.
        for j, (buffer, want) in enumerate(zip(buffers, wants)):
            done = Signal(len(want), name=f"done{j}")
            sent = Signal(len(want), name=f"sent{j}")
            for b, o in enumerate(outputs_of[j]):
                arbiter, i = arbiters[o], inputs_of[o].index(j)
                m.d.comb += [
                    arbiter.requests[i].eq(buffer.r.valid & want[b] & ~done[b]),
                    sent[b].eq(arbiter.grant[i] & arbiter.ready),
                ]
            last_copy = (want & ~done & ~sent) == 0
            m.d.comb += buffer.r.ready.eq(buffer.r.valid & last_copy)
            with m.If(buffer.r.ready):
                m.d.sync += done.eq(0)
            with m.Else():
                m.d.sync += done.eq(done | sent)
        return m

    def _elaborate_injection(self, m, injected, address):
        """Stamp what the PE injects into a message, refusing destinations that do not exist."""
        request = self.inject.payload
        if self._n < 1 << len(request.dest):
            nowhere = (request.kind == Kind.UNICAST) & (request.dest >= self._n)
        else:  # n is a power of two (n > 1): every address names a node
            nowhere = Const(0, 1)
        m.d.comb += [
            injected.w.payload.dest.eq(request.dest),
            injected.w.payload.src.eq(address),
            injected.w.payload.kind.eq(request.kind),
            injected.w.payload.travel.eq(topology.full_travel(self._n)),
            injected.w.payload.payload.eq(request.payload),
            injected.w.valid.eq(self.inject.valid & ~nowhere),
            self.inject.ready.eq(injected.w.ready),
        ]
        with m.If(self.inject.valid & self.inject.ready & nowhere):
            m.d.sync += self.refused.eq(1)
            with m.If(self.refused_count != (1 << REFUSED_COUNT_WIDTH) - 1):
                m.d.sync += self.refused_count.eq(self.refused_count + 1)
