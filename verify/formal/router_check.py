"""The formal check of one router: :class:`RouterCheck`, proved by k-induction.

One :class:`~ihcube.rtl.Router` in a free environment. The environment drives every input
freely: any injection, any ``ready`` on the outputs, and on each link any message that a
neighbour following the rules could send there (what is left to do lies inside the sender's
travel mask, :func:`ihcube.topology.onward_links`), every cycle. One message is *tagged*: its
payload equals ``tag``, a free value that stays constant, and it is assumed to enter at most
once (links and PE together); nothing else is assumed of it, except that a unicast arriving on
a link names a node that exists (the fabric refuses the others at injection, Spec 5). The
assertions:

- every copy of the tagged message that leaves, leaves on an output it should take, at most
  once per output, unchanged: ``src``, ``kind``, ``payload`` as they came in (``src`` = this
  node for an injection), a unicast's ``dest`` too; a broadcast copy on link ``l`` with the
  travel vector of :func:`ihcube.topology.broadcast_step` and its ``dest`` with the
  :func:`ihcube.topology.known_dest_mask` bits set to the far end's; a delivered copy with
  ``dest`` this node and ``travel`` 0. The outputs it should take come from
  :mod:`ihcube.topology`, not from the RTL: the link of :func:`~ihcube.topology.route_step`
  or the PE for a unicast, nothing for an injection to a node that does not exist, and for a
  broadcast the links of ``broadcast_step`` plus the PE unless this node is the origin
  (Katseff, Algorithms 2 and 6);
- conservation: until every copy has left, exactly one buffer entry holds the tagged message,
  unchanged, in the buffer of the input it came by, with the copies already sent cleared from
  its ``want``; afterwards none does. So nothing is lost, duplicated or altered;
- for every message, tagged or not: a unicast leaves on link ``l`` only if it is the Algorithm
  2 link (so the far end exists and bit ``l`` of ``node XOR dest`` is set) and reaches the PE
  only if ``dest == node``; and nothing at all is offered on a link that does not exist (the
  router has no port for one, so this is asserted of the ports of variants that have one for
  every dimension, such as :class:`~ihcube.verify.faults.CompleteCubeRouter`);
- every output keeps ``valid`` and its message until ``ready`` (stream rules);
- helper invariants that make the assertions inductive: buffer count, head, tail and ``room``
  agree; an entry wants what its message wants (:meth:`~ihcube.rtl.Router.elaborate_wants`),
  less what it has sent if it is the head, and never nothing once it has sent a copy; an
  entry not in use wants nothing; after a stall, an output's arbiter
  starts its priority at the input it stalled, which still requests that output (without
  switch stages: with them the stage holds the grant, below).

With ``link_stages=1`` each outgoing link leaves from a relay (:class:`~ihcube.rtl.Router`'s
``link_stages``): a copy is *sent* when the crossbar writes it into its link's relay (or hands
it to the PE) and *leaves* when the relay hands it on. The input buffer's ``want`` then loses
the copies sent, one buffer entry holds the tagged message until its last copy is sent, and
each relay holds the tagged copy for its link (at most one entry, unchanged, with the travel
vector of ``broadcast_step``) from the cycle it is sent until the cycle it leaves, and nothing
tagged otherwise. Every relay entry in use that is a unicast is one for its link (Algorithm
2), the relays' count, head, tail and room agree, and each output keeps its message until
``ready`` at the crossbar (the relay's write side) and at the link.

With ``eject_stages=1`` the eject port is driven by a relay too, and the check treats it as a
link's: the delivered copy is *sent* when the crossbar writes it into the eject relay and
*leaves* when the relay hands it to the PE, with the same assertions on that relay.

With ``switch_stages=1`` each output's grant is registered in a stage, and the arbiters do not
hold their grants (:class:`~ihcube.rtl.RoundRobinArbiter`'s ``hold=False``). A copy is sent
when its output (or relay) takes it from the stage; the assertions above stand, and the stage
gets its own invariants: it grants one input at most, is valid exactly when it grants one, and
the input it grants has a head that still wants the output. So a head whose copy is staged
does not ask for it again (the negative control ``unmasked-stage`` fails here), and the output
keeps its message until ``ready`` with no hold in the arbiter. The stages combine: with all
three, a copy goes from the stage into its link's or the eject port's relay.

With ``outputs_ready=True`` the outputs are assumed always ready, and the check adds the
router's fairness bound (without link, switch or eject stages only): every copy of a message
taken in cycle ``t`` has left by cycle ``t + depth * (k + 1)``, ``k`` the node's link count
(for ``depth=1`` the bound that :class:`~ihcube.rtl.Router` documents).
"""

from amaranth.hdl import (Cat, ClockDomain, ClockSignal, Const, Elaboratable, Fragment, Module,
                          Mux, Signal, Assert, Assume, Cover, Value)

from ... import topology
from ...rtl import Kind, Router
from ...rtl.input_buffer import HEAD_WANT_FROM
from ...rtl.message import message_layout
from .arbiter_invariants import check_arbiter
from .environment import hold_constant, popcount
from .probe import Prebuilt, Probe, free_inputs

__all__ = ["RouterCheck"]


def _unicast_outputs(n, node, order, dims):
    """For every address ``d``, the output (one-hot: links in port order, then the PE) that
    :func:`ihcube.topology.route_step` sends a unicast for ``d`` to, or 0 if ``d >= n``."""
    local = len(dims)
    table = {}
    for d in range(1 << topology.address_bits(n)):
        if d >= n:
            table[d] = 0
            continue
        step = topology.route_step(n, node, d, order)
        if step is None:
            assert d == node, (n, node, d)  # Katseff, Theorem 1
            table[d] = 1 << local
        else:
            assert topology.link_exists(n, node, step)
            table[d] = 1 << dims.index(step)
    return table


def _broadcast_outputs(n, node, order, dims):
    """For every travel vector ``T``, the links (one-hot mask in port order) and the travel
    vectors that :func:`ihcube.topology.broadcast_step` gives the copies."""
    table = {}
    for travel in range(1 << topology.address_bits(n)):
        steps = topology.broadcast_step(n, node, travel, order)
        mask = sum(1 << dims.index(l) for l, _ in steps)
        table[travel] = (mask, {dims.index(l): copy for l, copy in steps})
    return table


class _Tagged:
    """What a check records of the tagged message.

    ``seen``: it has entered; ``input``: by which input; ``msg``: as what
    message (for an injection, the message the router must make of it); ``expect``: the
    outputs it must leave by, ``expect_travel``: the travel vector of each link copy; ``left``:
    the outputs it has left by; ``leaving``: those it leaves by in this cycle. ``sent``: the
    outputs whose copy the crossbar has written: into the output's relay (link or eject
    stages), or to the output itself (then the same as ``left``).
    """

    def __init__(self, message, outputs, links, width):
        self.seen = Signal(name="tag_seen")
        self.input = Signal(range(outputs), name="tag_input")
        self.msg = Signal(message, name="tag_msg")
        self.expect = Signal(outputs, name="tag_expect")
        self.expect_travel = [Signal(width, name=f"tag_expect_travel{o}") for o in range(links)]
        self.left = Signal(outputs, name="tag_left")
        self.leaving = Signal(outputs, name="tag_leaving")
        self.sent = self.left
        self.entering = None  # set by the check: one bit per input


class RouterCheck(Elaboratable):
    """One :class:`~ihcube.rtl.Router` in a free environment, with its invariants asserted.

    See the module documentation (:mod:`.router_check`) for what is assumed and asserted.

    Parameters
    ----------
    spec : FabricSpec
        The fabric whose router of ``node`` is checked (packet switching, one PE port): its
        payload width (2 bits are enough for a tag), depth, routing order and register
        stages.
    node : int
        The router's node.
    router : callable
        Builds the router as ``router(spec, node, strap=...)``, as
        :class:`~ihcube.rtl.Fabric` does; negative controls pass broken variants.
    outputs_ready : bool
        Assume every output is always ready, and assert the fairness bound.
    strap_as : int or None
        If given, build the router with ``strap=True`` for ``node`` and tie its ``address`` to
        ``strap_as``, a node of the same :func:`ihcube.topology.router_class`, as the
        generated Verilog does when one router module serves every node of a class
        (:func:`ihcube.generate.fabric_verilog`); the expectations are those of ``strap_as``.
    covers : bool
        Add ``Cover`` statements that show the scenarios happen (for a cover job).

    With ``spec``'s link stages the check follows the tagged copies into the relays, with
    its switch stages it asserts what a stage holds, with its eject stages it follows the
    delivered copy into the eject relay as into a link's (none with ``outputs_ready``).
    """

    def __init__(self, spec, node, *, router=Router, outputs_ready=False, strap_as=None,
                 covers=False):
        if not spec.packet or spec.ports != 1:
            raise ValueError(f"The router check is of a packet router with one PE port, not "
                             f"{spec!r}")
        n, order = spec.nodes, spec.order
        self.spec = spec
        self.n = n
        self.node = node if strap_as is None else strap_as  # whose rules it must follow
        self.payload_width = payload_width = spec.payload_width
        self.depth = spec.depth
        self.order = order
        self.outputs_ready = outputs_ready
        self.covers = covers
        self.strap = strap_as is not None
        if self.strap and (topology.router_class(n, strap_as, order)
                           != topology.router_class(n, node, order)):
            raise ValueError(f"Node {strap_as} is not of node {node}'s router class (n={n})")
        if outputs_ready and spec.stages:
            raise ValueError("The fairness bound is checked without link, switch or eject "
                             "stages only")
        self.link_stages = spec.stages.link
        self.switch_stages = spec.stages.switch
        self.eject_stages = spec.stages.eject
        self.router = router(spec, node, strap=self.strap)
        self.tag = Signal(payload_width, name="tag")
        self.ports = [ClockSignal(), self.tag, *free_inputs(self.router)]

        # Inputs and outputs in the router's port order: its links, then the PE.
        self._dims = self.router.dims
        self._local = len(self._dims)
        self._inputs = [*self.router.links_in, self.router.inject]
        self._outputs = [*self.router.links_out, self.router.eject]
        self._message = message_layout(n, payload_width)

    @property
    def bound(self):
        """Cycles from taking a message to its last copy leaving, outputs always ready."""
        return self.depth * (len(self.router.dims) + 1)

    def _output_name(self, o):
        return f"link {self._dims[o]}" if o < self._local else "the PE"

    def _input_name(self, j):
        return f"input {self._dims[j]}" if j < self._local else "the PE input"

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = ClockDomain(reset_less=True)
        probe = Probe(Fragment.get(self.router, platform))
        m.submodules.router = Prebuilt(probe.fragment)

        started = hold_constant(m, self.tag)
        if self.strap:
            m.d.comb += Assume(self.router.address == self.node)
        if self.outputs_ready:
            m.d.comb += [Assume(port.ready) for port in self._outputs]

        # What each output's arbiter and crossbar drive: the output itself, or its relay.
        local = self._local
        relays = {}  # output: the probe of its relay
        if self.link_stages:
            relays.update((o, probe.sub(f"relay{dim}")) for o, dim in enumerate(self._dims))
        if self.eject_stages:
            relays[local] = probe.sub("eject_relay")
        crossbar = [relays[o].component.w if o in relays else port
                    for o, port in enumerate(self._outputs)]

        self._check_missing_links(m)
        self._assume_sent_by_rule(m)
        tagged = self._track(m)
        self._expect(m, tagged)
        self._check_copies(m, tagged, dict(enumerate(self._outputs)), tagged.left,
                           tagged.leaving, "leaves")
        if relays:
            # Copies written into the relays; an output with none sends a copy as it leaves.
            sent = Signal(local + 1, name="tag_sent")
            sending = Signal(local + 1, name="tag_sending")
            self._check_copies(m, tagged, {o: crossbar[o] for o in relays}, sent, sending,
                               "is sent")
            tagged.sent = Cat(*(sent[o] if o in relays else tagged.left[o]
                                for o in range(local + 1)))
            self._check_relays(m, relays, tagged, started)
        holders = self._check_buffers(m, probe, tagged, started)
        self._check_arbiters(m, probe, crossbar)
        if self.switch_stages:
            self._check_stages(m, probe)
        self._check_unicast_routes(m, self._outputs)
        if relays:
            self._check_unicast_routes(m, crossbar)
        age = self._check_fairness(m, tagged) if self.outputs_ready else None
        if self.covers:
            self._add_covers(m, tagged, holders, age, relays, crossbar)
        return m

    def _check_missing_links(self, m):
        """No message is ever offered on a link that does not exist.

        :class:`~ihcube.rtl.Router` has ports for the links of its node only, so this holds by
        construction; it is asserted for the variants that have a port for every dimension.
        """
        for o, dim in enumerate(self._dims):
            if not topology.link_exists(self.n, self.node, dim):
                m.d.comb += [
                    Assume(~self._inputs[o].valid),  # nothing comes from a node not there
                    Assert(~self._outputs[o].valid,
                           f"a message is offered on link {dim}, which does not exist from "
                           f"node {self.node}"),
                ]

    def _assume_sent_by_rule(self, m):
        """Assume each link brings only what a router that follows the rules sends on it.

        What is left to do for a message that came by link ``l`` (the bits of ``node XOR dest``
        of a unicast, the travel vector of a broadcast) lies inside the sender's travel mask
        on ``l`` (:func:`ihcube.topology.onward_links`); the router has no path for the rest.
        """
        for j, port in enumerate(self._inputs[:self._local]):
            m.d.comb += Assume(~port.valid | self._sent_by_rule(j, port.payload))

    def _sent_by_rule(self, j, msg):
        """Whether ``msg``, on link input ``j``, is one a neighbour following the rules sends."""
        dim = self._dims[j]
        if not topology.link_exists(self.n, self.node, dim):
            return Const(1, 1)  # variants with a port for a missing link: nothing comes in
        width = topology.dimensions(self.n)
        sender = topology.neighbor(self.node, dim)
        outside = ((1 << width) - 1) & ~topology.travel_mask(self.n, sender, dim, self.order)
        left = Mux(msg.kind == Kind.BROADCAST, msg.travel, msg.dest ^ self.node)
        return (left & outside) == 0

    def _stamps(self):
        """``(address bits, nodes, src, travel)`` of :meth:`_track`: the width of the tag's
        input number, the bound of a unicast ``dest`` that comes by a link, and the ``src``
        and travel vector the router stamps on an injection."""
        n = self.n
        return topology.address_bits(n), n, self.node, topology.full_travel(n)

    def _track(self, m):
        """Assume the tagged message enters at most once; record it as it enters."""
        local = self._local
        address_bits, nodes, src, travel = self._stamps()
        tagged = _Tagged(self._message, local + 1, local, address_bits)
        tagged.entering = Cat(*(port.valid & port.ready & (port.payload.payload == self.tag)
                                for port in self._inputs))
        m.d.comb += Assume(popcount(tagged.entering) <= Mux(tagged.seen, 0, 1))
        # A unicast that arrives by a link names a node that exists: the fabric refuses the
        # others at injection (Spec 5).
        for j, port in enumerate(self._inputs[:local]):
            m.d.comb += Assume(~tagged.entering[j] | (port.payload.kind == Kind.BROADCAST)
                               | (port.payload.dest < nodes))

        with m.If(tagged.entering.any()):
            m.d.sync += tagged.seen.eq(1)
        for j, port in enumerate(self._inputs):
            with m.If(tagged.entering[j]):
                m.d.sync += tagged.input.eq(j)
                if j < local:
                    m.d.sync += tagged.msg.eq(port.payload)
                else:
                    m.d.sync += [
                        tagged.msg.dest.eq(port.payload.dest),
                        tagged.msg.src.eq(src),
                        tagged.msg.kind.eq(port.payload.kind),
                        tagged.msg.travel.eq(travel),
                        tagged.msg.payload.eq(port.payload.payload),
                    ]
        return tagged

    def _expect(self, m, tagged):
        """Drive ``tagged.expect`` and ``.expect_travel`` from :mod:`ihcube.topology`."""
        local = self._local
        msg = tagged.msg
        with m.If(msg.kind == Kind.UNICAST):
            with m.Switch(msg.dest):
                for d, mask in _unicast_outputs(self.n, self.node, self.order,
                                                self._dims).items():
                    with m.Case(d):
                        m.d.comb += tagged.expect.eq(mask)
        with m.Else():
            with m.Switch(msg.travel):
                for travel, (mask, copies) in _broadcast_outputs(self.n, self.node, self.order,
                                                                 self._dims).items():
                    with m.Case(travel):
                        # The origin does not deliver to itself.
                        m.d.comb += tagged.expect.eq(
                            mask | Mux(tagged.input != local, 1 << local, 0))
                        m.d.comb += [tagged.expect_travel[o].eq(copy)
                                     for o, copy in copies.items()]

    def _check_copies(self, m, tagged, outputs, left, leaving, verb):
        """Every copy of the tagged message ``verb`` (leaves, or is sent into a relay) by the
        ports ``outputs`` (output index: port) where it must, at most once, unchanged;
        ``left`` records those it has gone by, ``leaving`` those it goes by in this cycle
        (a bit per output of the router; those of other outputs stay 0)."""
        for o, port in outputs.items():
            name = self._output_name(o)
            out = port.payload
            m.d.comb += leaving[o].eq(port.valid & port.ready & (out.payload == self.tag))
            m.d.comb += [Assert(~leaving[o] | condition, f"the tagged message {verb} on {name}"
                                                          f"{what}")
                         for condition, what in self._copy_checks(tagged, o, out, left)]
        m.d.sync += left.eq(left | leaving)
        m.d.comb += [
            Assert(tagged.seen | (left == 0),
                   f"copies of the tagged message {verb} before it entered"),
            Assert((left & ~tagged.expect) == 0,
                   f"a copy of the tagged message {verb} where it must not go"),
        ]

    def _copy_checks(self, tagged, o, out, left):
        """What must hold of message ``out``, a copy of the tagged message going by output
        ``o``: ``(condition, what is wrong otherwise)`` pairs."""
        msg = tagged.msg
        same = (out.src == msg.src) & (out.kind == msg.kind)
        if o < self._local:
            # A unicast's dest as it came; a broadcast copy's with the bits that every
            # unicast on this link has in common with the far end set to the far end's
            # (the router drives them from its address, whatever the kind).
            dim = self._dims[o]
            known = topology.known_dest_mask(self.n, self.node, dim, self.order)
            relayed = msg.dest & ~known | topology.neighbor(self.node, dim) & known
            same &= out.dest == Mux(msg.kind == Kind.UNICAST, msg.dest, relayed)
            same &= (out.kind == Kind.UNICAST) | (out.travel == tagged.expect_travel[o])
        else:
            # Delivered: its dest is this node, its travel 0.
            same &= (out.dest == self.node) & (out.travel == 0)
        return [(tagged.seen, ", but it never entered"),
                (tagged.expect[o], ", where it must not go"),
                (~left[o], " twice"),
                (same, " altered")]

    def _check_ring(self, m, ring, name, started):
        """The invariants of one :class:`~ihcube.rtl.buffer.LinkBuffer` (an input buffer or a
        relay, probed as ``ring``): its count, head, tail and room agree. Return its count and
        head."""
        depth = self.depth
        count, head, tail, room = (ring.signal(reg) for reg in ("count", "head", "tail", "room"))
        wrapped = Mux(head + count >= depth, head + count - depth, head + count)
        m.d.comb += [
            Assert(count <= depth, f"{name} over-full"),
            Assert(head < depth, f"{name}: head out of range"),
            Assert(tail < depth, f"{name}: tail out of range"),
            Assert(~room | (count != depth), f"{name}: room when full"),
            Assert(~started | (room == (count != depth)), f"{name}: no room when not full"),
            Assert(tail == wrapped, f"{name}: tail disagrees with head and count"),
        ]
        return count, head

    def _check_relays(self, m, relays, tagged, started):
        """With link or eject stages (``relays``: output index: probe of its relay): the
        tagged copy for output ``o`` is in its relay (one entry, unchanged) exactly while it
        has been sent and has not left; every unicast in a relay is one for its output; each
        relay's count, head, tail and room agree; a relayed output keeps its message until
        ``ready``."""
        depth = self.depth
        for o, relay in relays.items():
            name = f"relay of {self._output_name(o)}"
            count, head = self._check_ring(m, relay, name, started)
            holders = []
            for i in range(depth):
                entry = self._message(Value.cast(relay.signal(f"entry{i}"))[:self._message.size])
                offset = Mux(i >= head, i - head, i + depth - head)
                used = offset < count
                holds = Signal(name=f"relay_holds_{o}_{i}")
                m.d.comb += holds.eq(used & (entry.payload == self.tag))
                holders.append(holds)
                m.d.comb += [Assert(~holds | condition, f"{name} holds the tagged message{what}")
                             for condition, what in self._copy_checks(tagged, o, entry,
                                                                      tagged.left)]
                m.d.comb += Assert(~used | (entry.kind != Kind.UNICAST)
                                   | self._right_output(m, entry.dest, o),
                                   f"{name} holds a unicast that is not for its link")
            in_relay = tagged.sent[o] & ~tagged.left[o]
            m.d.comb += [
                Assert(~tagged.left[o] | tagged.sent[o],
                       f"the tagged message leaves on {self._output_name(o)} unsent"),
                Assert(popcount(holders) == in_relay.as_unsigned(),
                       f"the tagged copy is lost or duplicated in the {name}"),
            ]
            port = self._outputs[o]
            stalled = Signal(name=f"relay_stalled{o}")
            stalled_msg = Signal(self._message, name=f"relay_stalled_msg{o}")
            m.d.sync += [stalled.eq(port.valid & ~port.ready), stalled_msg.eq(port.payload)]
            m.d.comb += Assert(~stalled | (port.valid & (Value.cast(port.payload)
                                                         == Value.cast(stalled_msg))),
                               f"{self._output_name(o)}: valid dropped or message changed "
                               f"before ready")

    def _pending(self, tagged):
        """The tagged message has entered and has copies still to leave."""
        return tagged.seen & (tagged.left != tagged.expect)

    def _unsent(self, tagged):
        """The tagged message has entered and has copies still to send (with link stages,
        to write into a relay): it is in its input buffer."""
        return tagged.seen & (tagged.sent != tagged.expect)

    def _check_buffers(self, m, probe, tagged, started):
        """Conservation: until its last copy has left, exactly one buffer entry holds the tagged
        message, unchanged, in the buffer of the input it came by; afterwards none does.

        With the invariants of each buffer and of what its entries still want that make this
        inductive. Return the holder flags, and the holder-at-head
        flags, of every buffer entry.
        """
        depth, local = self.depth, self._local
        keeps_head = depth >= HEAD_WANT_FROM
        pending = self._unsent(tagged)
        # A message with no copy to send (a broadcast in a one-node fabric) still passes through
        # its buffer for a cycle.
        idle = tagged.seen & (tagged.expect == 0) & (tagged.msg.kind == Kind.BROADCAST)
        m.d.comb += Assert(~tagged.seen | (tagged.input == local)
                           | (tagged.msg.kind == Kind.BROADCAST) | (tagged.msg.dest < self.n),
                           "a unicast from a link for no node was tagged")
        holders, at_heads = [], []
        for j in range(local + 1):
            buffer = probe.sub(f"in{self._dims[j]}" if j < local else "in_pe")
            # An entry keeps a bit per output that input j can use; spread them out.
            outputs = self.router.outputs_of(j)
            name = self._input_name(j)
            count, head = self._check_ring(m, buffer, f"buffer of {name}", started)
            head_want = self._spread(buffer.signal("head_want"), outputs) if keeps_head \
                else None
            for i in range(depth):
                entry = self._message(buffer.signal(f"entry{i}"))
                offset = Mux(i >= head, i - head, i + depth - head)
                used, at_head = offset < count, head == i
                # What its message wants (an inductive invariant ties the two).
                rule = self._spread(self.router.elaborate_wants(
                    m, j, entry, self.node, name=f"wants_{j}_{i}"), outputs)
                stored = self._spread(buffer.signal(f"want{i}"), outputs)
                if keeps_head:
                    # The stored bits stay as written; what the head still wants is in
                    # `head_want` (zero while the buffer is empty, by the first assertion
                    # below); an entry not in use and not the head is never read.
                    left = Mux(at_head, head_want, Mux(used, stored, 0))
                    m.d.comb += Assert(~used | (stored == rule),
                                       f"buffer of {name}: an entry's stored wants are not "
                                       f"its message's")
                else:
                    left = stored  # still to send
                m.d.comb += [
                    Assert(used | (left == 0), f"buffer of {name}: an entry not in use wants "
                                               f"copies"),
                    Assert(~used | at_head | (left == rule),
                           f"buffer of {name}: a waiting entry wants other outputs than its "
                           f"message"),
                    Assert(~used | ~at_head | ((left & ~rule) == 0),
                           f"{name}: the head wants an output its message does not"),
                    Assert(~used | ~at_head | (left != 0) | (left == rule),
                           f"{name}: every copy sent but the message still held"),
                ]
                if j < local:
                    m.d.comb += Assert(~used | self._sent_by_rule(j, entry),
                                       f"buffer of {name} holds what no neighbour sends")
                holds = Signal(name=f"holds_{j}_{i}")
                m.d.comb += holds.eq(used & (entry.payload == self.tag))
                holders.append(holds)
                at_heads.append(holds & at_head)
                m.d.comb += [
                    Assert(~holds | pending | idle,
                           f"buffer of {name} holds the tagged message after it has left"),
                    Assert(~holds | (tagged.input == j),
                           f"buffer of {name} holds a tagged message that came by another "
                           f"input"),
                    Assert(~holds | (Value.cast(entry) == Value.cast(tagged.msg)),
                           f"buffer of {name} holds the tagged message altered"),
                    Assert(~holds | Mux(at_head, left == (tagged.expect & ~tagged.sent),
                                        tagged.sent == 0),
                           f"{name}: copies left to send disagree with copies sent"),
                    Assert(~holds | (rule == tagged.expect),
                           f"buffer of {name}: the tagged message wants other outputs than "
                           f"the topology"),
                ]
        m.d.comb += Assert((popcount(holders) == pending.as_unsigned())
                           | (idle & (popcount(holders) <= 1)),
                           "the tagged message is lost or duplicated inside the router")
        return holders, at_heads

    def _spread(self, bits, outputs):
        """``bits``, one per output in ``outputs``, as a bit per output of the router."""
        return Cat(*(bits[outputs.index(o)] if o in outputs else Const(0, 1)
                     for o in range(self._local + 1)))

    def _check_arbiters(self, m, probe, outputs):
        """Every output of the crossbar (``outputs``: the links or their relays, then the PE)
        keeps ``valid`` and its message until ``ready`` (stream rules), with the arbiter
        invariants that make it inductive (:func:`.arbiter_invariants.check_arbiter`)."""
        local = self._local
        for o, port in enumerate(outputs):
            arbiter = probe.sub(f"arbiter_out{self._dims[o]}" if o < local else "arbiter_out_pe")
            name = self._output_name(o)
            stalled = Signal(name=f"stalled{o}")
            stalled_msg = Signal(self._message, name=f"stalled_msg{o}")
            m.d.sync += [stalled.eq(port.valid & ~port.ready), stalled_msg.eq(port.payload)]
            check_arbiter(m, arbiter, stalled, name)
            m.d.comb += Assert(~stalled | (port.valid
                                           & (Value.cast(port.payload)
                                              == Value.cast(stalled_msg))),
                               f"{name}: valid dropped or message changed before ready")

    def _check_stages(self, m, probe):
        """With switch stages: each output's stage holds one grant at most, and is valid
        exactly when it holds one; the input it holds has a head that still wants the output.
        So the head does not ask for it again (its request is masked while staged), the copy
        is sent once, as the output takes it, and the head stays until then: the output keeps
        its message until ``ready`` (asserted by :meth:`_check_arbiters`)."""
        local = self._local
        for o in range(local + 1):
            name = f"out{self._dims[o]}" if o < local else "out_pe"
            offer = probe.signal(f"{name}_staged")
            grant = probe.signal(f"{name}_staged_grant")
            stage = f"stage of {self._output_name(o)}"
            m.d.comb += [
                Assert(popcount(grant) <= 1, f"{stage} grants two inputs"),
                Assert(offer == grant.any(), f"{stage}: valid disagrees with its grant"),
            ]
            for i, j in enumerate(self.router.inputs_of(o)):
                head = probe.sub(f"in{self._dims[j]}" if j < local else "in_pe").component.r
                wants = self._spread(head.payload.want, self.router.outputs_of(j))
                m.d.comb += Assert(~grant[i] | (head.valid & wants[o]),
                                   f"{stage} holds {self._input_name(j)}, whose head does not "
                                   f"want it")

    def _right_output(self, m, dest, o):
        """Whether output ``o`` is the Algorithm 2 output of a unicast for ``dest``."""
        n, node = self.n, self.node
        right = Signal(name=f"right{o}")
        with m.Switch(dest):
            for d, mask in _unicast_outputs(n, node, self.order, self._dims).items():
                with m.Case(d):
                    if d >= n and o < self._local:
                        # Only from a link (the environment may send anything); it must
                        # still get closer to its destination.
                        m.d.comb += right.eq((d ^ node) >> self._dims[o] & 1)
                    else:
                        m.d.comb += right.eq(mask >> o & 1)
        return right

    def _check_unicast_routes(self, m, outputs):
        """Every unicast, tagged or not, is offered on its Algorithm 2 output only, at the
        ports ``outputs`` (the router's, or with link stages its relays' write sides)."""
        for o, port in enumerate(outputs):
            out = port.payload
            m.d.comb += Assert(~port.valid | (out.kind != Kind.UNICAST)
                               | self._right_output(m, out.dest, o),
                               f"a unicast is offered on {self._output_name(o)}, not its "
                               f"Algorithm 2 output")

    def _check_fairness(self, m, tagged):
        """With every output ready: a message taken in cycle t has sent its last copy by
        t + :attr:`bound`. Return the age of the tagged message (1 in the cycle after it was
        taken, saturating at ``bound + 1``)."""
        bound = self.bound
        pending = self._pending(tagged)
        age = Signal(range(bound + 2), name="tag_age")
        with m.If(tagged.seen & (age != bound + 1)):
            m.d.sync += age.eq(age + 1)
        with m.If(tagged.entering.any()):
            m.d.sync += age.eq(1)
        m.d.comb += [
            Assert(tagged.seen | (age == 0), "age counts with no tagged message"),
            Assert(~tagged.seen | (age != 0), "tagged message with no age"),
            Assert(age <= bound + 1, "age beyond saturation"),
            Assert((age <= bound) | ~pending,
                   f"the tagged message is still in the router {bound} cycles after it was "
                   f"taken"),
        ]
        return age

    def _add_covers(self, m, tagged, holders, age, relays, crossbar):
        """Show that the scenarios the assertions are about happen."""
        local, msg = self._local, tagged.msg
        pending = self._pending(tagged)
        complete = tagged.seen & ~pending
        broadcast = msg.kind == Kind.BROADCAST
        m.d.comb += [Cover(tagged.leaving[o]) for o in range(local + 1)]
        # A broadcast from the PE sends a copy on every link (none if n = 1).
        m.d.comb += Cover(complete & broadcast & (tagged.input == local))
        # Whether a message from some link can go on by a link (node 4 of 5 has one link, and
        # what comes in by it can only be for its PE).
        goes_on = any(topology.onward_links(self.n, self.node, dim, self.order)
                      for dim in self._dims if topology.link_exists(self.n, self.node, dim))
        if goes_on:
            # A broadcast from a link fans out to the PE and at least one link.
            m.d.comb += Cover(complete & broadcast & (tagged.input != local)
                              & tagged.expect[local] & (tagged.expect[:local] != 0))
        if goes_on or local > 1:
            # The copies of a broadcast leave in different cycles.
            m.d.comb += Cover(pending & broadcast & (tagged.left != 0))
        if (1 << topology.address_bits(self.n)) > self.n:
            # An injection to a node that does not exist is refused.
            m.d.comb += Cover(tagged.seen & (tagged.input == local)
                              & (msg.kind == Kind.UNICAST) & (msg.dest >= self.n)
                              & self.router.refused)
        holding, at_head = holders
        if self.depth > 1:  # the tagged message waits behind another
            m.d.comb += Cover(Cat(holding).any() & ~Cat(at_head).any())
        if self.outputs_ready:  # the fairness bound is tight
            m.d.comb += Cover(pending & (age == self.bound))
        for o in relays:
            # A copy waits in its relay while its output is not ready (and leaves by it later:
            # with a relay, every copy leaving above does).
            m.d.comb += Cover(tagged.sent[o] & ~tagged.left[o] & ~self._outputs[o].ready,
                              f"the tagged copy waits in the relay of {self._output_name(o)}")
        if self.switch_stages:
            # A staged copy waits in its stage while its output (or relay) is not ready.
            for o, port in enumerate(crossbar):
                m.d.comb += Cover(tagged.seen & port.valid & ~port.ready
                                  & (port.payload.payload == self.tag),
                                  f"the tagged copy waits in the stage of "
                                  f"{self._output_name(o)}")
