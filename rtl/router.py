"""One node's router of an incomplete hypercube."""

import operator
from functools import reduce

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .. import topology
from ..spec import as_spec
from .arbiter import RoundRobinArbiter
from .buffer import LinkBuffer
from .input_buffer import InputBuffer, entry_layout
from .message import Kind, inject_layout, message_layout
from .route import RouteSelect

__all__ = ["Router", "router_signature", "configuration_members", "REFUSED_COUNT_WIDTH"]

#: Width of the saturating counter of refused injections.
REFUSED_COUNT_WIDTH = 16


def router_signature(n, node, payload_width=32, *, strap=True, ports=1, reconfigurable=False):
    """The signature of :class:`Router` ``(n, node, payload_width, strap=strap,
    ports=ports)``: ``inject`` and ``eject`` are one port each with ``ports=1`` (as before
    the parameter existed), arrays of ``ports`` otherwise. A ``reconfigurable`` router's has
    its configuration's ports too (:class:`Router`, Members)."""
    message = message_layout(n, payload_width)
    links = len(topology.links(n, node))
    inject = In(stream.Signature(inject_layout(n, payload_width)))
    eject = Out(stream.Signature(message))
    members = {
        "links_in":      In(stream.Signature(message)).array(links),
        "links_out":     Out(stream.Signature(message)).array(links),
        "inject":        inject if ports == 1 else inject.array(ports),
        "eject":         eject if ports == 1 else eject.array(ports),
        "refused":       Out(1),
        "refused_count": Out(REFUSED_COUNT_WIDTH),
    }
    if strap:
        members["address"] = In(topology.address_bits(n))
    if reconfigurable:
        members.update(configuration_members(n))
    return wiring.Signature(members)


def configuration_members(n):
    """The ports a reconfigurable router of an ``n``-router fabric has beside the others: its
    configuration in, its logical address, whether it is active and whether it is idle out."""
    return {
        "active_nodes":    In(n.bit_length()),
        "mask":            In(topology.address_bits(n)),
        "logical_address": Out(topology.address_bits(n)),
        "active":          Out(1),
        "idle":            Out(1),
    }


class Router(wiring.Component):
    """The router of node ``node`` in an ``n``-node incomplete hypercube.

    It has a link port pair for each link that exists from ``node`` (and none for the
    others) and ``ports`` injection and eject ports for its processing element (PE).

    - Each incoming link direction, and each of the PE's injection ports, ends in an
      :class:`InputBuffer` of ``depth`` messages. A message waits at the head of its buffer
      until the buffer at the far end of its output is free, then moves (Katseff, Algorithm 3).
    - A unicast head is routed by a :class:`RouteSelect`: the first set bit of
      ``(node XOR dest) AND exists`` (Katseff, Algorithm 2), or the PE when
      ``dest == node``. A message for the PE leaves on the eject port
      :func:`ihcube.topology.eject_port` of where it came from (its link's dimension, or
      ``D + p`` for injection port ``p``), so each input can reach one eject port only.
    - What a message wants here (its route, or its broadcast copies) is decided as it is
      written into its buffer and stored beside it (:meth:`elaborate_wants`), so at the head
      its requests come from flip-flops (lookahead). No cycle changes: the decision depends
      only on the message and this router's address, never on when it is made. The buffer
      clears a copy's bit as the copy leaves, so the stored bits are the requests as they
      are, and the head leaves its buffer when none is left.
    - A broadcast head is delivered to the PE (unless this node is its origin) and copied
      to every existing link ``l`` whose travel bit is set, each copy carrying
      ``travel AND travel_mask(l)`` (Katseff, Algorithm 6, mirrored for least-significant-
      first routing: :func:`ihcube.topology.travel_mask`). Copies may leave in different
      cycles; the head leaves its buffer when its last copy has left.
    - Each output (every link, and each eject port) has a :class:`RoundRobinArbiter`
      over the inputs that can use it (:meth:`outputs_of`: at most the ``k`` links and the
      ``ports`` injection buffers) and an AND-OR crossbar on its one-hot grant (an output
      with one input presents that input's head, ungated: its payload is undefined while
      ``valid`` is low). Leaving out inputs that never ask for an output does not change any
      grant, and saves about a third of the crossbar. **Fairness bound**: a head that waits for an
      output is sent after at most ``r - 1`` transfers of other inputs on that output, ``r`` the
      output's inputs (:meth:`inputs_of`): ``r <= k + ports - 1`` for a link, ``r <= k + 1`` for
      the eject port with ``ports=1``. With ``depth=1`` and the output always ready, a message taken
      into an input buffer in cycle ``t`` leaves on that output by cycle ``t + r``.
    - Header bits the router knows are not switched. A message that leaves on link ``l``
      carries in the :func:`ihcube.topology.known_dest_mask` bits of its ``dest`` the far
      end's address, driven from this router's address (every unicast routed there has
      them, so a unicast's ``dest`` is unchanged; a broadcast's ``dest`` means nothing and
      reads as :func:`ihcube.topology.relayed_dest`). A delivered message's ``dest`` is this
      node and its ``travel`` 0. Those bits need no crossbar (wires from the address); the
      masked bits of ``travel`` are constants.
    - An injection with ``dest >= n`` is taken from the PE like any other (it does not block
      the PE), dropped before it enters the fabric, and counted: ``refused`` rises and stays
      up, and ``refused_count`` (saturating) counts them, on all injection ports together.

    Nothing that this router drives onto a link depends combinationally on anything it
    receives: ``links_in[i].ready`` is a flip-flop, and ``links_out[i].valid`` and
    ``.payload`` are functions of this router's own flip-flops (and, with ``strap=True``, of
    the ``address`` strap, which the fabric ties to a constant). So no combinational path
    crosses a router, and a fabric of them has no combinational loop for any ``n``.

    Parameters
    ----------
    spec : FabricSpec
        The fabric this router is part of (:class:`ihcube.spec.FabricSpec`, packet
        switching: payload width, buffer depth, routing order, PE ports and register stages,
        each described below), within the hardware's limits. The keyword form
        ``Router(n, node, payload_width=32, depth=1, order="msb", ports=1, link_stages=0,
        switch_stages=0, eject_stages=0)`` makes the spec.
    node : int
        This router's node number, ``0 <= node < n``. It sets which links exist.
    strap : bool
        Take the router's own address from the ``address`` port instead of the constant
        ``node``, so that one module serves every node of the same router class (the
        fabric's Verilog has one router module per :func:`ihcube.topology.router_class`,
        not one per node). Drive ``address`` with a node whose class is ``node``'s.

    Members
    -------
    links_in : ``In(stream.Signature(message_layout(n, payload_width))).array(k)``
        Incoming link ``dims[j]``.
    links_out : ``Out(stream.Signature(message_layout(n, payload_width))).array(k)``
        Outgoing link ``dims[j]``.
    inject : ``In(stream.Signature(inject_layout(n, payload_width)))``, arrayed by ``ports``
        Messages from the PE: a unicast to ``dest``, or a broadcast.
    eject : ``Out(stream.Signature(message_layout(n, payload_width)))``, arrayed by ``ports``
        Messages for the PE, one per cycle and port at most; ``src`` says who sent it,
        ``dest`` is this node (for a broadcast too) and ``travel`` is 0.
    refused : ``Out(1)``
        Sticky: an injection named a node that does not exist.
    refused_count : ``Out(REFUSED_COUNT_WIDTH)``
        Number of refused injections, saturating.
    address : ``In(address_bits(n))``
        With ``strap=True`` only: this router's node number, a static strap. It must be held
        constant (the fabric ties it to the node); timing paths from it are false paths.
    active_nodes, mask : ``In(n.bit_length())``, ``In(address_bits(n))``
        A reconfigurable router's only (the spec's ``reconfigurable``;
        ``docs/reconfiguration-hardware.md``): the configuration, held while the fabric is
        not idle. The router's logical address is ``address XOR mask``; the rules (link
        existence, refusal, route, travel vectors) are :mod:`ihcube.topology`'s over
        ``active_nodes`` nodes and the logical address. Its ports are those of its physical
        links, and a message from link ``l`` may leave on any other link.
    logical_address, active, idle : ``Out(address_bits(n))``, ``Out(1)``, ``Out(1)``
        A reconfigurable router's only: its logical address; whether that is below
        ``active_nodes`` (an inactive router takes every injection and refuses it, as a
        destination that does not exist); and whether no message is in any of its buffers
        or relays and its PE offers none.
    ports (of the spec) : int
        Injection ports and eject ports of the PE, each, 1 to ``D + 1``
        (:func:`ihcube.params.check_ports`). With 1 the router is the single-port router
        (the same Verilog, port names included).
    link_stages (the spec's ``stages.link``) : int
        0 (the default) or 1. With 1, each
        outgoing link leaves from a relay: a :class:`LinkBuffer` of ``depth`` messages
        between the output's crossbar and ``links_out``. The arbiter's "ready" is then the
        relay's room, and the relay sends its oldest message when the far buffer has room.
        So no path runs from one router's arbiter across a link into the next router's
        route selection, at the price of a cycle per hop. With 0 the Verilog is the same as
        before the parameter existed.
    switch_stages (the spec's ``stages.switch``) : int
        0 (the default) or 1 (the fast model
        follows it, cycle-exact; ``--switch-stages`` on the command line; ``docs/fpga.md``,
        "Pipelined switch"). With 1, each output's grant is
        registered: its arbiter allocates in one cycle (into the output's *stage*: the
        grant and a valid bit), and the output presents the staged input's head through
        the crossbar in the next, holding it until it is taken; the copy counts as sent,
        and the head's last copy pops it, when the output takes it. A head's request for an
        output that has it staged is masked, so it is not granted twice. The stage holds
        what the output presents, so the arbiters are built without their own hold
        (:class:`RoundRobinArbiter`'s ``hold=False``). A message spends
        two cycles in each router instead of one. A refused injection is counted a cycle
        after it is taken (``refused`` and ``refused_count`` follow a cycle later): the
        count's enable from the injected ``dest`` was the staged fabric's longest path. With
        0 the Verilog is the same as before the parameter existed.
    eject_stages (the spec's ``stages.eject``) : int
        0 (the default) or 1 (like
        ``switch_stages``, in the model too, ``--eject-stages`` on the command line;
        ``docs/fpga.md``, "Every output staged"). With 1, each eject port is driven by a
        relay, as a link is with ``link_stages=1``: the PE's ``ready`` then reaches no arbiter
        and no buffer in the cycle it is read, at the price of a cycle per delivery. With 0
        the Verilog is the same as before the parameter existed.
    """

    #: The route selector; negative-control variants in the tests replace it.
    route_select = RouteSelect
    #: The input buffer; negative-control variants in the tests replace it.
    input_buffer = InputBuffer
    #: The relay of each outgoing link with ``link_stages=1`` (and of each eject port with
    #: ``eject_stages=1``); the buffer faults of
    #: :mod:`ihcube.verify.faults` replace both, the relay faults the relays alone.
    relay_buffer = LinkBuffer
    #: The output arbiter; negative-control variants in the tests replace it.
    arbiter = RoundRobinArbiter
    #: With ``switch_stages=1``, mask a head's request for an output whose stage holds it
    #: (the negative control's variant sets it False, and copies are sent twice).
    mask_staged = True

    def __init__(self, spec, node, *args, strap=False, **keywords):
        spec = self._spec = as_spec(spec, *args, **keywords).check_hardware()
        if not spec.packet:
            raise ValueError(f"Router is the packet router; a {spec.mode} spec's router is "
                             f"its mode's (ihcube.modes)")
        n = self._n = spec.nodes
        node = self._node = topology.check_node(n, node)
        self._dims = topology.links(n, node)
        self._strap = bool(strap)
        super().__init__(router_signature(n, node, spec.payload_width, strap=self._strap,
                                          ports=spec.ports, reconfigurable=spec.reconfigurable))

    spec          = property(lambda self: self._spec)
    n             = property(lambda self: self._n)
    node          = property(lambda self: self._node)
    payload_width = property(lambda self: self._spec.payload_width)
    depth         = property(lambda self: self._spec.depth)
    order         = property(lambda self: self._spec.order)
    strap         = property(lambda self: self._strap)
    ports         = property(lambda self: self._spec.ports)
    link_stages   = property(lambda self: self._spec.stages.link)
    switch_stages = property(lambda self: self._spec.stages.switch)
    eject_stages  = property(lambda self: self._spec.stages.eject)
    reconfigurable = property(lambda self: self._spec.reconfigurable)

    @property
    def injects(self):
        """The injection ports, as a list (one with ``ports=1``)."""
        return [self.inject] if self.ports == 1 else list(self.inject)

    @property
    def ejects(self):
        """The eject ports, as a list (one with ``ports=1``)."""
        return [self.eject] if self.ports == 1 else list(self.eject)

    @property
    def dims(self):
        """The dimensions of this node's links, in port order."""
        return self._dims

    def _rules(self):
        """The node count and address the topology rules take: ``n`` and ``node``, or a
        reconfigurable router's configured values (Amaranth values, set in
        :meth:`elaborate`), with the physical fabric's address bits."""
        if self.reconfigurable:
            return self._active_nodes, self._logical, {"dims": topology.dimensions(self._n)}
        return self._n, self._node, {}

    def travel_mask(self, dim):
        """The travel-vector mask of a broadcast copy sent on link ``dim``."""
        n, node, dims = self._rules()
        return topology.travel_mask(n, node, dim, self.order, **dims)

    def known_dest_mask(self, dim):
        """The bits of ``dest`` that a message sent on link ``dim`` takes from this router's
        address, not from the crossbar (:func:`ihcube.topology.known_dest_mask`)."""
        n, node, dims = self._rules()
        return topology.known_dest_mask(n, node, dim, self.order, **dims)

    def _known_dest(self, dest, address, dim):
        """``dest`` (a message's, through the crossbar) with the :meth:`known_dest_mask`
        bits of link ``dim`` taken from ``address`` instead: those of the node at the far
        end. Wires, not logic: the crossbar of these bits is left unused and removed (a
        reconfigurable router's mask is a value: a multiplexer a bit)."""
        mask = self.known_dest_mask(dim)
        far = address ^ (1 << dim)
        if self.reconfigurable:
            return dest & ~mask | far & mask
        return Cat(*(far[i] if mask >> i & 1 else dest[i] for i in range(len(dest))))

    def eject_of(self, j):
        """The output index of the eject port that input ``j`` delivers on
        (:func:`ihcube.topology.eject_port`): inputs are the links in port order, then the
        injection buffers; outputs the links, then the eject ports."""
        links = len(self._dims)
        source = self._dims[j] if j < links else topology.dimensions(self._n) + j - links
        return links + topology.eject_port(self._n, self.ports, source)

    def outputs_of(self, j):
        """The outputs that input ``j`` can ever use, in port order (links, then the eject
        ports); the eject port is always last and there is one.

        An injection buffer can use every link and its eject port (a unicast to its own
        node). A message that arrived on link ``l`` can leave on
        :func:`ihcube.topology.onward_links` only, or reach the PE. A copy it wanted on any
        other link would be dropped: a correct neighbour never sends one.
        """
        links = len(self._dims)
        if j >= links:
            return (*range(links), self.eject_of(j))
        if self.reconfigurable:  # the onward links depend on the configuration
            return (*(o for o in range(links) if o != j), self.eject_of(j))
        # Strapped or not: a strapped module serves the nodes of one router class only
        # (topology.router_class), whose onward links are this node's.
        onward = topology.onward_links(self._n, self._node, self._dims[j], self.order)
        return (*(self._dims.index(dim) for dim in onward), self.eject_of(j))

    def inputs_of(self, o):
        """The inputs that can use output ``o``, in port order (:meth:`outputs_of`)."""
        return [j for j in range(len(self._dims) + self.ports) if o in self.outputs_of(j)]

    def elaborate(self, platform):
        m = Module()
        links = len(self._dims)
        inputs = links + self.ports  # the links, then the injection buffers
        message = message_layout(self._n, self.payload_width)
        if self._strap:
            address = self.address
        else:
            address = Const(self._node, topology.address_bits(self._n))
        if self.reconfigurable:
            address = self._elaborate_configuration(m, address)

        # Which outputs each input can ever use (:meth:`outputs_of`): only those get a
        # request, a place in the output's arbiter and crossbar, and a `done` bit.
        outputs_of = [self.outputs_of(j) for j in range(inputs)]
        inputs_of = [[j for j in range(inputs) if o in outputs_of[j]]
                     for o in range(links + self.ports)]

        # Inputs: one buffer per incoming link, then the PE's injection buffers. Each entry is
        # the message and what it still wants here (:meth:`elaborate_wants`), decided as it
        # is written, so a head's requests come from flip-flops.
        buffers = []
        pe_names = ["pe"] if self.ports == 1 else [f"pe{p}" for p in range(self.ports)]
        names = [str(dim) for dim in self._dims] + [f"_{name}" for name in pe_names]
        for j, name in enumerate(names):
            entry = entry_layout(message, len(outputs_of[j]))
            buffers.append(self.input_buffer(entry, self.depth))
            m.submodules[f"in{name}"] = buffers[j]
        # What is written into each buffer, as a stream of messages: a link, or what the PE
        # injects stamped (its own signals, so no bit of an entry is computed from another
        # bit of the same signal: Verilator would see a combinational loop).
        writes = [*self.links_in]
        for name in pe_names:
            writes.append(stream.Signature(message).flip().create(path=(f"written_{name}",)))
        self._elaborate_injection(m, writes[links:], address)
        heads = [buffer.r.payload.message for buffer in buffers]
        for j, (w, buffer) in enumerate(zip(writes, buffers)):
            m.d.comb += [
                buffer.w.payload.message.eq(w.payload),
                # What it will want: a bit per output it can use, in output order.
                buffer.w.payload.want.eq(self.elaborate_wants(m, j, w.payload, address)),
                buffer.w.valid.eq(w.valid),
                w.ready.eq(buffer.w.ready),
            ]

        # Outputs: an arbiter each over the inputs that can use it, and an AND-OR crossbar
        # on its one-hot grant; with link (eject) stages, a link's (eject port's) crossbar
        # writes its relay.
        outputs = [*self._relays(m, message), *self._eject_relays(m, message)]
        arbiters = []
        grants = []   # per output: the one-hot grant its crossbar follows
        offers = []   # per output: whether it presents a message
        for o, port in enumerate(outputs):
            name = f"out{self._dims[o]}" if o < links else f"out_{pe_names[o - links]}"
            # A staged output holds its grant in its stage, so its arbiter need not.
            hold = {"hold": False} if self.switch_stages else {}
            arbiter = m.submodules[f"arbiter_{name}"] = self.arbiter(len(inputs_of[o]), **hold)
            arbiters.append(arbiter)
            if self.switch_stages:
                grant, offer = self._stage(m, name, arbiter, port)
            else:
                grant, offer = arbiter.grant, arbiter.valid
            grants.append(grant)
            offers.append(offer)
            chosen = Signal(message, name=f"{name}_chosen")
            width = len(chosen.as_value())
            if len(inputs_of[o]) == 1:
                # One input: its head, ungated. The payload matters only while `valid`, and
                # then the grant is that input's; gating it cost a LUT per bit (92 in the
                # router of node 0 of 26 nodes).
                m.d.comb += chosen.eq(heads[inputs_of[o][0]])
            else:
                m.d.comb += chosen.eq(reduce(operator.or_, (
                    Value.cast(heads[j]) & grant[i].replicate(width)
                    for i, j in enumerate(inputs_of[o]))))
            m.d.comb += [
                port.valid.eq(offer),
                port.payload.eq(chosen),
            ]
            if not self.switch_stages:  # the stage drives it otherwise (_stage)
                m.d.comb += arbiter.ready.eq(port.ready)
            if o < links:
                dim = self._dims[o]
                m.d.comb += [
                    port.payload.travel.eq(chosen.travel & self.travel_mask(dim)),
                    port.payload.dest.eq(self._known_dest(chosen.dest, address, dim)),
                ]
            else:
                # Delivered: its dest is this node (a unicast's is already), its travel 0.
                m.d.comb += [
                    port.payload.dest.eq(address),
                    port.payload.travel.eq(0),
                ]

        # Each head asks for the copies it still wants; the buffer clears them as they leave,
        # and the head leaves with its last copy.
        for j, buffer in enumerate(buffers):
            want, sent = buffer.r.payload.want, buffer.sent
            for b, o in enumerate(outputs_of[j]):
                arbiter, i = arbiters[o], inputs_of[o].index(j)
                if not self.switch_stages:
                    m.d.comb += [
                        arbiter.requests[i].eq(want[b]),
                        sent[b].eq(arbiter.grant[i] & arbiter.ready),
                    ]
                    continue
                # Staged: the copy is sent when its output takes it from the stage; while
                # the stage holds it, asking again would send it twice.
                staged = offers[o] & grants[o][i]
                m.d.comb += [
                    arbiter.requests[i].eq(want[b] & ~staged if self.mask_staged else want[b]),
                    sent[b].eq(staged & outputs[o].ready),
                ]
            m.d.comb += buffer.r.ready.eq(buffer.r.valid & ((want & ~sent) == 0))
        if self.reconfigurable:
            m.d.comb += self.idle.eq(~Cat(*(buffer.r.valid for buffer in buffers),
                                          *self._relay_reads,
                                          *(port.valid for port in self.injects)).any())
        return m

    def _elaborate_configuration(self, m, physical):
        """A reconfigurable router's logical address (``physical XOR mask``), the values the
        topology rules take (:meth:`_rules`), and its ``logical_address`` and ``active``."""
        self._active_nodes = self.active_nodes
        self._logical = Signal(topology.address_bits(self._n), name="logical")
        m.d.comb += [
            self._logical.eq(physical ^ self.mask),
            self.logical_address.eq(self._logical),
            self.active.eq(self._logical < self.active_nodes),
        ]
        return self._logical

    def _stage(self, m, name, arbiter, port):
        """With ``switch_stages=1``: the registered grant of output ``name``. The arbiter
        allocates into the stage when it is empty or is being taken in this cycle; what it
        holds stays until ``port`` takes it (an eject port's ``ready`` may fall, a link's far
        room only after a message of this output). Returns the stage's one-hot grant and
        its valid bit, which drive the crossbar and the port."""
        grant = Signal(len(arbiter.grant), name=f"{name}_staged_grant")
        offer = Signal(name=f"{name}_staged")
        load = Signal(name=f"{name}_stage_load")
        m.d.comb += [
            load.eq(~offer | port.ready),
            arbiter.ready.eq(load),
        ]
        with m.If(load):
            m.d.sync += [
                offer.eq(arbiter.valid),
                grant.eq(arbiter.grant),
            ]
        return grant, offer

    def _relays(self, m, message):
        """What each link output's crossbar drives: ``links_out`` itself, or with
        ``link_stages=1`` the write side of a relay buffer whose read side drives it."""
        self._relay_reads = []  # whether each relay holds a message (a reconfigurable idle)
        if self.link_stages == 0:
            return list(self.links_out)
        writes = []
        for dim, port in zip(self._dims, self.links_out):
            relay = m.submodules[f"relay{dim}"] = self.relay_buffer(message, self.depth)
            wiring.connect(m, relay.r, wiring.flipped(port))
            writes.append(relay.w)
            self._relay_reads.append(relay.r.valid)
        return writes

    def _eject_relays(self, m, message):
        """What each eject port's crossbar drives: the port itself, or with
        ``eject_stages=1`` the write side of a relay buffer whose read side drives it."""
        if self.eject_stages == 0:
            return list(self.ejects)
        writes = []
        for p, port in enumerate(self.ejects):
            name = "eject_relay" if self.ports == 1 else f"eject_relay{p}"
            relay = m.submodules[name] = self.relay_buffer(message, self.depth)
            wiring.connect(m, relay.r, wiring.flipped(port))
            writes.append(relay.w)
            self._relay_reads.append(relay.r.valid)
        return writes

    def elaborate_wants(self, m, j, msg, address, name=None):
        """What message ``msg``, written into input ``j``'s buffer, will want at the head: a
        bit per output of :meth:`outputs_of` ``(j)``, in the same order. The logic goes into
        module ``m``, its route selector as submodule ``name`` (``route<j>`` if None); the
        formal check builds it again to tie each buffer entry's wants to its message.

        A unicast wants the output its :class:`RouteSelect` picks; a broadcast every link
        whose travel bit is set, and the PE unless it came from this node's own PE. It is
        decided on the way in (lookahead) and kept with the message, so at the head it is a
        flip-flop, not a route selection in the one-cycle path through the arbiters.
        """
        links = len(self._dims)
        outputs = self.outputs_of(j)
        route = m.submodules[name or f"route{j}"] = self.route_select(
            self._n, self._node, self.order,
            outputs=[self._dims[o] for o in outputs if o < links],
            **({"runtime": True} if self.reconfigurable else {}))
        m.d.comb += [
            route.dest.eq(msg.dest),
            route.address.eq(address),
        ]
        # The last output is the eject port (outputs_of), where `deliver` goes.
        copies = [msg.travel[self._dims[o]] if o < links
                  else Const(j < links, 1)  # the origin does not deliver to itself
                  for o in outputs]
        if self.reconfigurable:
            # A router has a port for each physical link: copies go on those that exist now
            # (ihcube.topology.broadcast_step).
            n, node, dims = self._rules()
            exists = Signal(len(route.exists), name=f"exists{j}" if name is None else None)
            m.d.comb += [exists.eq(topology.exists_mask(n, node, **dims)),
                         route.exists.eq(exists)]
            copies = [copy & exists[self._dims[o]] if o < links else copy
                      for o, copy in zip(outputs, copies)]
        steps = [*route.link, route.deliver]  # the same outputs, in the same order
        return Mux(msg.kind == Kind.BROADCAST, Cat(*copies), Cat(*steps))

    def _elaborate_injection(self, m, injected, address):
        """Stamp what the PE injects on each port into a message for that port's injection
        buffer (``injected``, a list of the streams into those buffers, each as
        ``stream.Signature(message).flip()``), refusing destinations that do not exist."""
        refusals = []
        n, _, dims = self._rules()
        for port, buffer in zip(self.injects, injected):
            request = port.payload
            if self.reconfigurable:  # an inactive router refuses everything
                nowhere = ~self.active | (request.kind == Kind.UNICAST) & (request.dest >= n)
            elif self._n < 1 << len(request.dest):
                nowhere = (request.kind == Kind.UNICAST) & (request.dest >= self._n)
            else:  # n is a power of two (n > 1): every address names a node
                nowhere = Const(0, 1)
            m.d.comb += [
                buffer.payload.dest.eq(request.dest),
                buffer.payload.src.eq(address),
                buffer.payload.kind.eq(request.kind),
                buffer.payload.travel.eq(topology.full_travel(n, **dims)),
                buffer.payload.payload.eq(request.payload),
                buffer.valid.eq(port.valid & ~nowhere),
                port.ready.eq(buffer.ready),
            ]
            refusals.append(port.valid & port.ready & nowhere)
        if self.switch_stages:
            # Counted a cycle later: a flip-flop between the injected dest and the count.
            seen = [Signal(name="refusal_seen" if len(refusals) == 1 else f"refusal_seen{p}")
                    for p in range(len(refusals))]
            m.d.sync += [late.eq(refusal) for late, refusal in zip(seen, refusals)]
            refusals = seen
        most = (1 << REFUSED_COUNT_WIDTH) - 1
        if len(refusals) == 1:
            # The increment's carry out says the count is at its top: no comparison needed.
            counted = Signal(REFUSED_COUNT_WIDTH + 1, name="refused_next")
            m.d.comb += counted.eq(self.refused_count + 1)
            with m.If(refusals[0]):
                m.d.sync += self.refused.eq(1)
                with m.If(~counted[-1]):
                    m.d.sync += self.refused_count.eq(counted)
            return
        # Several ports can refuse in one cycle: add them all, saturating.
        count = Signal(REFUSED_COUNT_WIDTH + 1, name="refused_next")
        m.d.comb += count.eq(self.refused_count + sum(refusals))
        with m.If(Cat(*refusals).any()):
            m.d.sync += [
                self.refused.eq(1),
                self.refused_count.eq(Mux(count > most, most, count)),
            ]
