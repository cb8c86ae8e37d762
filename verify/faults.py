"""Faulty parts: router variants broken on purpose, for the negative controls.

A check that never fails proves nothing, so every check of the router (the formal proofs
and BMCs of :mod:`ihcube.verify.formal`, the simulation scoreboard of
:mod:`ihcube.verify.scoreboard`, the stress engine's counts, the cocotb regression on the
Verilog, the board self-test's checkers) is also run on a router that is broken in a way it
must catch. This module holds every such part, once; each docstring says what is broken and
which checks must catch it.

Each variant works where a :class:`~ihcube.rtl.Router` does: ``Fabric(n, router=...)``,
``RouterCheck(spec, node, router=...)``, ``fabric_verilog(n, router=...)``,
``SelfTest(n, router=...)``. It is a subclass that replaces one of the router's parts
(``input_buffer``, ``relay_buffer``, ``arbiter``, ``route_select``) or rules (``travel_mask``,
``outputs_of``), or a function with the router's constructor's parameters. Pick one by name from
:data:`FAULTS` with :func:`faulty_router`; the buffer faults take options (how often, from
which message, which bit), as :func:`buffer_fault_router` does, and so do the relay faults
(:func:`relay_fault_router`), which break only the relays (of ``link_stages=1`` and
``eject_stages=1``).

The model's faulty variants (subclasses of :class:`ihcube.sim.model.Model`) stay beside
their tests.
"""

from amaranth.hdl import Module, Mux, Signal

from .. import topology
from ..boards.checker import Checker
from ..deadlock import FirstSetBitRouting
from ..params import check_positive_integer, head_fields
from ..rtl import (BroadcastBuffer, FlitBuffer, InputBuffer, LinkBuffer, RoundRobinArbiter,
                   RouteSelect, Router, VcAllocator, WormholeRouter)
from ..spec import as_spec

__all__ = [
    "BUFFER_FAULTS", "FaultyBuffer", "faulty_buffer", "buffer_fault_router",
    "DroppingRouter", "DuplicatingRouter", "CorruptingRouter",
    "RELAY_FAULTS", "StuckBuffer", "stuck_buffer", "relay_fault_router",
    "DroppingRelayRouter", "DuplicatingRelayRouter", "CorruptingRelayRouter",
    "ReorderingRelayRouter", "StuckRelayRouter",
    "BrokenTravelRouter", "KnownDestTooFarRouter", "NoTurnUpRouter", "RefuseNothingRouter",
    "CompleteCubeRouter", "StaleAddressRouter",
    "FixedPriorityArbiter", "UnfairRouter", "ForgetfulArbiter", "ForgetfulRouter",
    "MaskBlindRouteSelect", "MaskBlindRouter",
    "WEIGHT_PARITY", "weight_parity_router", "only_at",
    "FAULTS", "faulty_router",
    "WORMHOLE_FAULTS", "wormhole_buffer_fault_router", "NoReleaseAllocator",
    "ReorderingBuffer", "reordering_buffer", "weight_parity_wormhole_router",
    "SharedChannelAllocator", "NoReleaseWormholeRouter", "SharedChannelWormholeRouter",
    "UnfairAllocator", "LateReadBroadcastBuffer", "SrcOneFlitLateRouter",
    "RisingWriteChecker", "UnmaskedStageRouter",
]


# --- Buffers that lose, repeat or alter messages -------------------------------------------

#: What a :class:`FaultyBuffer` can do wrong, and the name of its router in :data:`FAULTS`.
BUFFER_FAULTS = {"drop": "dropping-buffer", "duplicate": "duplicating-buffer",
                 "corrupt": "corrupting-buffer"}


class FaultyBuffer(LinkBuffer):
    """A :class:`~ihcube.rtl.LinkBuffer` (a relay) or :class:`~ihcube.rtl.InputBuffer` (a
    router's input) that, on a *strike*, breaks the message it handles.

    Make one with :func:`faulty_buffer`, which sets the class attributes. Strikes fall on
    handshakes (writes for ``drop`` and ``corrupt``, reads for ``duplicate``), counted from
    1: the ``first``-th, then every ``every``-th after it, or none after it if ``once``. On a
    strike the buffer

    - ``drop``: takes the message (``w.ready`` is high) and forgets it;
    - ``duplicate``: hands its head on and keeps it, so it leaves again. An input buffer has
      cleared its head's copies as they left, so a kept head would want nothing: it writes
      the last message written into it in again instead, as it was written (at depth 1, the
      message it handed on), in the next cycle, with ``w.ready`` low then;
    - ``corrupt``: stores the message with bit ``bit`` of its payload flipped.

    Otherwise it is the real buffer (a submodule ``inner``), so its registers keep their names
    (``count``, ``head``, ``entry0``, ...) for the formal checks' probes; the strike counter is
    called ``strikes`` so as not to shadow one of them.
    """

    #: ``"drop"``, ``"duplicate"`` or ``"corrupt"``.
    fault = None
    #: The handshake of the first strike, counting from 1.
    first = 1
    #: Strikes after the first: one every ``every`` handshakes (unless ``once``).
    every = 3
    #: Strike once only.
    once = False
    #: The payload bit that ``corrupt`` flips.
    bit = 0
    #: The buffer it breaks: :class:`~ihcube.rtl.LinkBuffer` or
    #: :class:`~ihcube.rtl.InputBuffer` (then it is one too, with its ``sent`` port).
    real = LinkBuffer

    def elaborate(self, platform):
        m = Module()
        inner = m.submodules.inner = self.real(self.w.payload.shape(), self.depth)
        copies = self.real is InputBuffer
        if self.fault == "duplicate":
            event = self.r.valid & self.r.ready
        else:
            event = self.w.valid & self.w.ready
        strike = self._count_strikes(m, event)

        m.d.comb += [
            inner.w.payload.eq(self.w.payload),
            inner.w.valid.eq(self.w.valid),
            self.w.ready.eq(inner.w.ready),
            self.r.payload.eq(inner.r.payload),
            self.r.valid.eq(inner.r.valid),
            inner.r.ready.eq(self.r.ready),
        ]
        if copies:
            m.d.comb += inner.sent.eq(self.sent)
        if self.fault == "drop":
            m.d.comb += inner.w.valid.eq(self.w.valid & ~strike)
        elif self.fault == "duplicate" and copies:
            self._write_again(m, inner, event & strike)
        elif self.fault == "duplicate":
            m.d.comb += inner.r.ready.eq(self.r.ready & ~strike)
        elif self.fault == "corrupt":
            written = self.w.payload.message if copies else self.w.payload
            payload = written.payload
            if self.bit >= len(payload):
                raise ValueError(f"Payload bit {self.bit} does not exist in a {len(payload)}-bit "
                                 f"payload")
            stored = inner.w.payload.message if copies else inner.w.payload
            m.d.comb += stored.payload.eq(payload ^ (strike << self.bit))
        else:
            raise ValueError(f"Buffer fault must be one of {', '.join(map(repr, BUFFER_FAULTS))}, "
                             f"not {self.fault!r}")
        return m

    def _write_again(self, m, inner, struck):
        """``duplicate`` in an input buffer: after the read ``struck``, write the last message
        written in again, with all it wanted, when there is room (the outside waits)."""
        last = Signal(self.w.payload.shape(), name="last_written", reset_less=True)
        again = Signal(name="again")
        with m.If(self.w.valid & self.w.ready):
            m.d.sync += last.eq(self.w.payload)
        with m.If(struck):
            m.d.sync += again.eq(1)
        with m.If(again):
            m.d.comb += [
                inner.w.payload.eq(last),
                inner.w.valid.eq(1),
                self.w.ready.eq(0),
            ]
            with m.If(inner.w.ready):
                m.d.sync += again.eq(0)

    def _count_strikes(self, m, event):
        """Count the handshakes ``event``; return whether this one is a strike."""
        if self.once:
            strikes = Signal(range(self.first + 1), name="strikes")  # saturates after it
            with m.If(event & (strikes != self.first)):
                m.d.sync += strikes.eq(strikes + 1)
            return strikes == self.first - 1
        # Starting at every - first puts the first strike on the first-th handshake.
        strikes = Signal(range(self.every), init=self.every - self.first, name="strikes")
        strike = strikes == self.every - 1
        with m.If(event):
            m.d.sync += strikes.eq(Mux(strike, 0, strikes + 1))
        return strike


def faulty_buffer(fault, *, every=3, first=1, once=False, bit=0, real=LinkBuffer):
    """The :class:`FaultyBuffer` class that strikes on the ``first``-th handshake, then on
    every ``every``-th (or never again if ``once``); ``bit`` is the payload bit ``corrupt``
    flips; ``real`` the buffer it breaks (:class:`~ihcube.rtl.LinkBuffer` or
    :class:`~ihcube.rtl.InputBuffer`)."""
    if fault not in BUFFER_FAULTS:
        raise ValueError(f"Buffer fault must be one of {', '.join(map(repr, BUFFER_FAULTS))}, "
                         f"not {fault!r}")
    check_positive_integer(every, "Strike period")
    check_positive_integer(first, "First strike")
    if not once and first > every:
        raise ValueError(f"First strike must be at most the strike period {every}, not {first}")
    if not isinstance(bit, int) or bit < 0:
        raise ValueError(f"Corrupted bit must be a non-negative integer, not {bit!r}")
    name = _buffer_fault_name(fault)
    if real is InputBuffer:
        name, bases = f"{name}Input", (FaultyBuffer, InputBuffer)
    elif real is LinkBuffer:
        bases = (FaultyBuffer,)
    else:
        raise ValueError(f"Faulty buffers break a LinkBuffer or an InputBuffer, not {real!r}")
    return type(f"{name}Buffer", bases,
                {"fault": fault, "every": every, "first": first, "once": once, "bit": bit,
                 "real": real, "__module__": __name__})


def buffer_fault_router(fault, **options):
    """A :class:`~ihcube.rtl.Router` whose input buffers (every link's and the PE's) and
    relays (with ``link_stages=1``) are ``faulty_buffer(fault, **options)``, of an
    :class:`~ihcube.rtl.InputBuffer` and of a :class:`~ihcube.rtl.LinkBuffer`."""
    return type(f"{_buffer_fault_name(fault)}Router", (Router,), {
        "input_buffer": faulty_buffer(fault, real=InputBuffer, **options),
        "relay_buffer": faulty_buffer(fault, **options),
        "__module__": __name__,
        "__doc__": f"A router whose input buffers and relays are "
                   f"``faulty_buffer({fault!r}, **{options!r})``."})


def _buffer_fault_name(fault):
    return {"drop": "Dropping", "duplicate": "Duplicating", "corrupt": "Corrupting"}[fault]


class DroppingRouter(Router):
    """Its input buffers forget the 1st, 4th, 7th, ... message written into them.

    Caught by: the formal router proof (``neg_router_drop``: the tagged message is lost
    inside the router) and fabric checks under smtbmc and ABC's BMC (``neg_fabric_drop``,
    ``neg_fabric_drop_bmc3``: not delivered within the bound); the scoreboard ("delivered 0
    times"), the stress engine's ``lost`` count and the self-test's ``LOST`` error, with the
    options those tests give.
    """
    input_buffer = faulty_buffer("drop", real=InputBuffer)
    relay_buffer = faulty_buffer("drop")


class DuplicatingRouter(Router):
    """Its input buffers hand the 1st, 4th, 7th, ... message they hold on twice.

    Caught by: the formal router proof (``neg_router_duplicate``), the fabric BMC and PDR
    proof (``neg_fabric_duplicate``, ``neg_fabric_duplicate_proof``: a node gets the tagged
    message twice); the scoreboard ("delivered 2 times"), the stress engine's
    ``duplicated`` count and the self-test's ``ORDER`` error (a sequence number seen twice).
    """
    input_buffer = faulty_buffer("duplicate", real=InputBuffer)
    relay_buffer = faulty_buffer("duplicate")


class CorruptingRouter(Router):
    """Its input buffers flip payload bit 0 of the 1st, 4th, 7th, ... message written.

    Caught by: the self-test's ``CORRUPT`` error (its payload check bits; the board test flips
    bit 20, a check bit), and by any check that compares payloads.
    """
    input_buffer = faulty_buffer("corrupt", real=InputBuffer)
    relay_buffer = faulty_buffer("corrupt")


class ReorderingBuffer(FaultyBuffer):
    """A buffer that, on a strike, swaps two flits: the one written is put aside, the next one
    goes into the queue first, and the one put aside follows it in the next cycle (``w.ready``
    is low in that cycle, a flip-flop still: the real buffer's room and a register).

    Make one with :func:`reordering_buffer`. Strikes fall on writes, counted as
    :class:`FaultyBuffer` counts them."""

    fault = "reorder"

    def elaborate(self, platform):
        m = Module()
        inner = m.submodules.inner = LinkBuffer(self.w.payload.shape(), self.depth)
        aside = Signal(self.w.payload.shape(), name="aside", reset_less=True)
        holding = Signal()  # a flit is put aside
        due = Signal()      # the flit after it has gone in: the one put aside goes in now
        write = self.w.valid & self.w.ready
        strike = self._count_strikes(m, write)
        m.d.comb += [
            self.w.ready.eq(inner.w.ready & ~due),
            self.r.payload.eq(inner.r.payload),
            self.r.valid.eq(inner.r.valid),
            inner.r.ready.eq(self.r.ready),
        ]
        with m.If(due):
            m.d.comb += [inner.w.payload.eq(aside), inner.w.valid.eq(1)]
            with m.If(inner.w.ready):
                m.d.sync += [due.eq(0), holding.eq(0)]
        with m.Else():
            m.d.comb += [inner.w.payload.eq(self.w.payload),
                         inner.w.valid.eq(self.w.valid & ~(strike & ~holding))]
            with m.If(write & strike & ~holding):
                m.d.sync += [aside.eq(self.w.payload), holding.eq(1)]
            with m.Elif(write & holding):
                m.d.sync += due.eq(1)
        return m


def reordering_buffer(*, every=3, first=1, once=False):
    """The :class:`ReorderingBuffer` class that strikes on the ``first``-th write, then on
    every ``every``-th (or never again if ``once``)."""
    check_positive_integer(every, "Strike period")
    check_positive_integer(first, "First strike")
    if not once and first > every:
        raise ValueError(f"First strike must be at most the strike period {every}, not {first}")
    return type("ReorderingBuffer", (ReorderingBuffer,),
                {"every": every, "first": first, "once": once, "__module__": __name__})


# --- Relays (link_stages=1) that lose, repeat, alter, swap or keep messages ----------------

#: What a faulty relay does, and the name of its router in :data:`FAULTS`.
RELAY_FAULTS = {"drop": "dropping-relay", "duplicate": "duplicating-relay",
                "corrupt": "corrupting-relay", "reorder": "reordering-relay",
                "stuck": "stuck-relay"}


class StuckBuffer(FaultyBuffer):
    """A buffer that, on a strike (a write, counted as :class:`FaultyBuffer` counts them),
    takes the message and from the next cycle on never offers anything again: ``r.valid``
    stays low, so what it holds stays there, and once full it takes nothing more. Its
    ``w.ready`` is the real buffer's room, a flip-flop still.

    Make one with :func:`stuck_buffer`."""

    fault = "stuck"
    once = True

    def elaborate(self, platform):
        m = Module()
        inner = m.submodules.inner = LinkBuffer(self.w.payload.shape(), self.depth)
        stuck = Signal(name="stuck")
        strike = self._count_strikes(m, self.w.valid & self.w.ready)
        with m.If(self.w.valid & self.w.ready & strike):
            m.d.sync += stuck.eq(1)
        m.d.comb += [
            inner.w.payload.eq(self.w.payload),
            inner.w.valid.eq(self.w.valid),
            self.w.ready.eq(inner.w.ready),
            self.r.payload.eq(inner.r.payload),
            self.r.valid.eq(inner.r.valid & ~stuck),
            inner.r.ready.eq(self.r.ready & ~stuck),
        ]
        return m


def stuck_buffer(*, first=1):
    """The :class:`StuckBuffer` class that sticks on its ``first``-th write."""
    check_positive_integer(first, "First strike")
    return type("StuckBuffer", (StuckBuffer,), {"first": first, "__module__": __name__})


def relay_fault_router(fault, **options):
    """A :class:`~ihcube.rtl.Router` whose relays (``link_stages=1``: one on each outgoing
    link; ``eject_stages=1``: one on each eject port) are faulty and whose input buffers are
    the real ones: ``faulty_buffer(fault,
    **options)`` for ``drop``, ``duplicate`` and ``corrupt``, ``reordering_buffer(**options)``
    for ``reorder``, ``stuck_buffer(**options)`` for ``stuck``. Without link stages it is the
    real router."""
    if fault not in RELAY_FAULTS:
        raise ValueError(f"Relay fault must be one of {', '.join(map(repr, RELAY_FAULTS))}, "
                         f"not {fault!r}")
    if fault == "reorder":
        buffer = reordering_buffer(**options)
    elif fault == "stuck":
        buffer = stuck_buffer(**options)
    else:
        buffer = faulty_buffer(fault, **options)
    name = buffer.__name__.removesuffix("Buffer")
    doc = (f"A router whose relays (link and eject stages only) are {buffer.__name__} with "
           f"{options or 'the default strikes'}; its input buffers are real.")
    return type(f"{name}RelayRouter", (Router,),
                {"relay_buffer": buffer, "input_buffer": InputBuffer, "__module__": __name__,
                 "__doc__": doc})


class DroppingRelayRouter(Router):
    """With ``link_stages=1`` (``eject_stages=1``), its link (eject) relays forget the 1st,
    4th, 7th, ... message written into them; its input buffers are real (so are its relays'
    ``w.ready``, a flip-flop).

    Caught by: the lockstep with the model (``tests/test_model.py``: a hop that does not
    happen), the stress engine's ``lost`` count and its drain (``tests/test_stress.py``), the
    fabric's delivery BMC with link stages (``neg_fabric_s1_relay_drop``), and the router's
    k-induction with link stages (``neg_router_s1_relay_drop``) and with eject stages
    (``neg_router_e1_relay_drop``: the tagged copy is lost in the relay of the PE).
    """
    relay_buffer = faulty_buffer("drop")


class DuplicatingRelayRouter(Router):
    """With ``link_stages=1`` (``eject_stages=1``), its link (eject) relays hand the 1st,
    4th, 7th, ... message they hold on twice; its input buffers are real.

    Caught by: the fabric's PDR safety proof with link stages
    (``neg_fabric_s1_relay_duplicate_proof``: a node gets the tagged message twice), the
    router's k-induction with link stages (``neg_router_s1_relay_duplicate``) and with eject
    stages (``neg_router_e1_relay_duplicate``: the relay of the PE holds the tagged message
    twice), the lockstep with the model and the stress engine's ``duplicated`` count.
    """
    relay_buffer = faulty_buffer("duplicate")


class CorruptingRelayRouter(Router):
    """With ``link_stages=1``, its relays flip payload bit 0 of the 1st, 4th, 7th, ...
    message written into them; its input buffers are real.

    Caught by: the lockstep with the model (a hop with another payload) and any check that
    compares payloads (the stress engine's scoreboard).
    """
    relay_buffer = faulty_buffer("corrupt")


class ReorderingRelayRouter(Router):
    """With ``link_stages=1``, its relays swap the 1st, 4th, 7th, ... message written into
    them with the one after it on the same link; its input buffers are real.

    Caught by: the lockstep with the model (a hop with another message than the model's).
    """
    relay_buffer = reordering_buffer()


class StuckRelayRouter(Router):
    """With ``link_stages=1``, each relay keeps the first message written into it for ever
    and then takes nothing more once full; its input buffers are real.

    Caught by: the lockstep with the model (a hop that does not happen), the stress engine's
    watchdog and drain, whose report names the relay the message waits in, and the fabric's
    delivery BMC with link stages (``neg_fabric_s1_relay_stuck``).
    """
    relay_buffer = stuck_buffer()


# --- Wrong rules --------------------------------------------------------------------------

class BrokenTravelRouter(Router):
    """Broadcast copies lose travel bit 0, so some nodes are never reached.

    (A rule that keeps too many bits would be harmless: the receiving router has no path for
    the copies it would add, :meth:`~ihcube.rtl.Router.outputs_of`.)

    Caught by: the formal router proof (``neg_router_travel``: a copy leaves altered) and
    fabric BMC (``neg_fabric_travel``); the scoreboard (a broadcast not "delivered" to some
    node); the cocotb test ``broadcast_from_every_source``; the self-test's ``LOST`` error.
    """

    def travel_mask(self, dim):
        return super().travel_mask(dim) & ~1


class KnownDestTooFarRouter(Router):
    """Drives one bit too many of an outgoing link's ``dest`` from its address: the
    :meth:`~ihcube.rtl.Router.known_dest_mask` of link ``l`` and the next dimension in
    routing order (``l - 1`` most-significant-first, ``l + 1`` least-), a bit that a
    unicast may still have to correct.

    Caught by: the scoreboard (a unicast "altered on a link", then delivered to the wrong
    node or lost); the lockstep comparison with the model (a hop's ``dest`` differs); the
    formal router proof (``neg_router_known_dest``: a copy leaves altered).
    """

    def known_dest_mask(self, dim):
        step = -1 if self.order == topology.MSB_FIRST else 1
        beyond = dim + step
        extra = 1 << beyond if 0 <= beyond < topology.dimensions(self.n) else 0
        return super().known_dest_mask(dim) | extra


class NoTurnUpRouter(Router):
    """A message from link ``l`` may only go on by lower links (what the complete cube
    needs), not up by a link that its sender lacked.

    Caught by: the scoreboard on the 3-node fabric: node 1 has no link 1, and its message for
    node 2 turns at node 0 from link 0 to link 1, so it is "delivered 0 times".
    """

    def outputs_of(self, j):
        outputs = super().outputs_of(j)
        if j == len(self.dims):
            return outputs
        return tuple(o for o in outputs if o == len(self.dims) or self.dims[o] < self.dims[j])


class RefuseNothingRouter(Router):
    """Lets every injection in, even to nodes that do not exist (SPEC section 5 refuses
    them at the PE).

    Caught by: the scoreboard ("names no node but entered").
    """

    def _elaborate_injection(self, m, injected, address):
        super()._elaborate_injection(m, injected, address)
        for port, buffer in zip(self.injects, injected):  # one per PE port
            m.d.comb += buffer.valid.eq(port.valid)


class CompleteCubeRouter(Router):
    """The router of the complete ``2**D``-node cube, used in an ``n``-node fabric.

    It has a port for every dimension and routes on the first bit of ``node XOR dest``, link
    or no link; messages have the same layout, since ``D`` is the same.

    Caught by: the formal router proof (``neg_router_complete_cube``: "a message is offered on
    link 2, which does not exist from node 3" for n = 5).
    """

    def __init__(self, spec, node, *args, strap=False, **keywords):
        spec = as_spec(spec, *args, **keywords)
        super().__init__(spec.replace(nodes=1 << topology.dimensions(spec.nodes)), node,
                         strap=strap)


class MaskBlindRouteSelect(RouteSelect):
    """Takes the first set bit of ``node XOR dest``, link or no link."""

    @property
    def usable(self):
        return (1 << topology.dimensions(self._n)) - 1


class MaskBlindRouter(Router):
    """A router whose route selector ignores which links exist (:class:`MaskBlindRouteSelect`),
    so a unicast may be sent towards a node that is not there; the fabric has no port for it.

    Caught by: the cocotb test ``route_selection`` ("router chose wrong": in n = 5 node 1
    sends nothing for node 4, whose first differing bit is a link node 1 lacks).
    """
    route_select = MaskBlindRouteSelect


# --- An unfair arbiter ---------------------------------------------------------------------

class FixedPriorityArbiter(RoundRobinArbiter):
    """Grants the lowest-numbered requester.

    Priority starts at requester 0 again after every transfer instead of just after the
    requester served; a stall holds the grant as the round-robin arbiter's does (the same mask,
    which the formal checks' invariants read). Only fairness is broken.
    """

    def after_served(self, grant):
        return 0


class UnfairRouter(Router):
    """Fixed-priority output arbiters (:class:`FixedPriorityArbiter`), which starve the PE's
    injections.

    Caught by: the formal fairness proof (``neg_router_unfair``: a message is still in the
    router ``depth * (k + 1)`` cycles after it was taken).
    """
    arbiter = FixedPriorityArbiter


class ForgetfulArbiter(RoundRobinArbiter):
    """A round-robin arbiter that does not hold its grant across a stall (``hold=False``):
    while its output is not ready, a request that comes before the stalled one in the
    round-robin order takes the grant, and the output changes its message before it is
    taken."""

    def __init__(self, count, hold=True):
        super().__init__(count, hold=False)


class ForgetfulRouter(Router):
    """Output arbiters that forget a stalled grant (:class:`ForgetfulArbiter`): a stalled
    output changes what it offers, against the stream rules.

    Caught by: the formal router proof (``neg_router_no_hold``: an output's message changes
    before ``ready``).
    """
    arbiter = ForgetfulArbiter


# --- A routing that can deadlock -----------------------------------------------------------

#: A routing whose order flips with the parity of the node's weight: the static deadlock check
#: (:mod:`ihcube.deadlock`) finds a cycle from n = 4.
WEIGHT_PARITY = FirstSetBitRouting(
    lambda node: "msb" if bin(node).count("1") % 2 == 0 else "lsb", name="weight parity")


class _FullCrossbarRouter(Router):
    """A router with a path from every input to every output: routers that mix orders send
    turns that one order's :func:`~ihcube.topology.onward_links` leave out."""

    def outputs_of(self, j):
        return tuple(range(len(self.dims) + 1))


def weight_parity_router(spec, node, *, strap=False):
    """The router of :data:`WEIGHT_PARITY` at ``node`` of the fabric ``spec`` (its routing
    order is ignored).

    Build its fabric with ``routing=WEIGHT_PARITY`` and the elaboration-time deadlock check
    turned off. Caught by: the stress engine's watchdog ("no transfer for ... cycles") under
    saturating unicasts, which names the cycle of waits.
    """
    return _FullCrossbarRouter(spec.replace(order=WEIGHT_PARITY.order_at(node)), node,
                               strap=strap)


# --- Composition and the registry ----------------------------------------------------------

def only_at(nodes, router):
    """A router factory: ``router`` at the nodes in ``nodes``, the real router elsewhere."""
    nodes = frozenset(nodes)

    def make(spec, node, *args, **kwargs):
        return (router if node in nodes else Router)(spec, node, *args, **kwargs)
    make.__name__ = f"{router.__name__}_at_{'_'.join(map(str, sorted(nodes)))}"
    return make


# --- The pipelined switch broken on purpose (docs/fpga.md, "Pipelined switch (spike)") ------

class UnmaskedStageRouter(Router):
    """With ``switch_stages=1``, a head still asks for an output whose stage holds its copy,
    so the copy is granted again as it leaves: a message is sent twice (and the stage can
    then present a buffer's next head, or a stale entry, on the wrong output). With
    ``switch_stages=0`` it is the real router.

    Caught by the scoreboard of ``tests/test_switch_stages.py`` (all-pairs unicasts,
    broadcasts and random traffic with the stage: "delivered 2 times"), and by the router's
    k-induction with switch stages (``neg_router_g1_unmasked``, and with every stage
    ``neg_router_s1_g1_e1_unmasked``: a stage holds an input whose head no longer wants its
    output; without the stage invariants, the tagged message leaves on a link twice)."""
    mask_staged = False


# --- A reconfigurable router broken on purpose (docs/reconfiguration-hardware.md) -----------

class StaleAddressRouter(Router):
    """A reconfigurable router whose logical address ignores the configuration's mask: it
    keeps its physical address, the one of the configuration after reset, so it routes,
    refuses and delivers as if it sat at the wrong logical node once a mask is loaded. In a
    fixed fabric it is the real router.

    Caught by the reconfigurable fabric's safety proof over every configuration
    (``neg_fabric_n3_reconf_stale_address``: the tagged message reaches a router it is not
    for, or altered) and the reconfigurable router's k-induction
    (``neg_router_reconf_stale_address``: a unicast offered on an output that is not its
    Algorithm 2 one)."""

    def _elaborate_configuration(self, m, physical):
        self._active_nodes = self.active_nodes
        self._logical = Signal(topology.address_bits(self._n), name="logical")
        m.d.comb += [
            self._logical.eq(physical),  # not physical ^ mask
            self.logical_address.eq(self._logical),
            self.active.eq(self._logical < self.active_nodes),
        ]
        return self._logical


#: Every faulty router by name. Each works as the ``router`` of a fabric or a formal check.
FAULTS = {
    "dropping-buffer": DroppingRouter,
    "duplicating-buffer": DuplicatingRouter,
    "corrupting-buffer": CorruptingRouter,
    "dropping-relay": DroppingRelayRouter,
    "duplicating-relay": DuplicatingRelayRouter,
    "corrupting-relay": CorruptingRelayRouter,
    "reordering-relay": ReorderingRelayRouter,
    "stuck-relay": StuckRelayRouter,
    "broken-travel": BrokenTravelRouter,
    "known-dest-one-too-many": KnownDestTooFarRouter,
    "no-turn-up": NoTurnUpRouter,
    "refuse-nothing": RefuseNothingRouter,
    "complete-cube": CompleteCubeRouter,
    "mask-blind-route": MaskBlindRouter,
    "unfair-arbiter": UnfairRouter,
    "forgetful-arbiter": ForgetfulRouter,
    "weight-parity": weight_parity_router,
    "unmasked-stage": UnmaskedStageRouter,
    "stale-address": StaleAddressRouter,
}


def faulty_router(name, **options):
    """The faulty router called ``name`` in :data:`FAULTS`.

    With ``options`` (only for the buffer and relay faults): a variant built by
    :func:`buffer_fault_router` or :func:`relay_fault_router`, e.g.
    ``faulty_router("dropping-buffer", every=5, first=5)`` drops every fifth message, or
    ``faulty_router("dropping-buffer", first=20, once=True)``
    the twentieth only. Without, the registered part (which strikes every third message from
    the first).
    """
    if name not in FAULTS:
        raise ValueError(f"Fault must be one of {', '.join(FAULTS)}, not {name!r}")
    if not options:
        return FAULTS[name]
    relays = {router_name: fault for fault, router_name in RELAY_FAULTS.items()}
    if name in relays:
        return relay_fault_router(relays[name], **options)
    faults = {router_name: fault for fault, router_name in BUFFER_FAULTS.items()}
    if name not in faults:
        raise TypeError(f"Fault {name!r} takes no options, not {', '.join(options)}")
    return buffer_fault_router(faults[name], **options)


# --- Wormhole routers broken on purpose (docs/wormhole.md, "Tests") -------------------------


def wormhole_buffer_fault_router(fault, **options):
    """A :class:`~ihcube.rtl.WormholeRouter` whose unicast flit buffers (every link's unicast
    virtual channels and the PE's injection) are :func:`faulty_buffer` ``(fault,
    **options)``, or for ``fault="reorder"`` :func:`reordering_buffer` ``(**options)``: they
    drop, repeat, alter or swap flits. The flit scoreboard
    (:func:`ihcube.verify.scoreboard.check_worms`) and the wormhole stress run's scoreboard
    (:mod:`ihcube.verify.wormhole_stress`) must catch each."""
    fifo = reordering_buffer(**options) if fault == "reorder" else faulty_buffer(fault, **options)
    buffer = type(f"{fifo.__name__}FlitBuffer", (FlitBuffer,),
                  {"fifo": fifo, "__module__": __name__})
    name = {"drop": "Dropping", "duplicate": "Duplicating", "corrupt": "Corrupting",
            "reorder": "Reordering"}[fault]
    doc = (f"Its unicast flit buffers {fault} flits ({options or 'every third from the first'}"
           f"). Caught by the flit scoreboard (check_worms) and the wormhole stress run's.")
    return type(f"{name}WormholeRouter", (WormholeRouter,),
                {"flit_buffer": buffer, "__module__": __name__, "__doc__": doc})


class _FullCrossbarWormholeRouter(WormholeRouter):
    """A wormhole router whose unicast inputs may use every output: routers that mix orders
    send turns that one order's :func:`~ihcube.topology.onward_links` leave out."""

    def outputs_of(self, j, broadcast=False):
        links = len(self.dims)
        if j >= links or broadcast:
            return super().outputs_of(j, broadcast)
        return tuple(range(links + 1))


def weight_parity_wormhole_router(spec, node, *, strap=False):
    """The wormhole router of :data:`WEIGHT_PARITY` at ``node`` of the fabric ``spec`` (its
    routing order is ignored; its
    unicasts only: broadcasts would follow the node's order too, which Algorithm 6 does not).

    The dependency graph over (link, virtual channel) is cyclic whatever channel a worm takes
    (``tests/test_wormhole_deadlock.py``), so :class:`~ihcube.rtl.WormholeFabric` refuses it:
    build the fabric with ``routing=WEIGHT_PARITY`` and the check turned off. Caught by: the
    wormhole stress run's watchdog under saturating unicasts, whose report names the cycle of
    waits over (link, virtual channel) (``tests/test_wormhole_stress.py``).
    """
    return _FullCrossbarWormholeRouter(spec.replace(order=WEIGHT_PARITY.order_at(node)), node,
                                       strap=strap)


class NoReleaseAllocator(VcAllocator):
    """A tail does not free its channel: after one worm per channel, the output locks up."""
    releases = False


class SharedChannelAllocator(VcAllocator):
    """A grant does not reserve its channel, so two worms share one: their flits
    interleave."""
    reserves = False


class NoReleaseWormholeRouter(WormholeRouter):
    """Its outputs are never freed by a tail (:class:`NoReleaseAllocator`); a run stalls with
    flits owed. Caught by the harness's watchdog (``stalled_at``)."""
    vc_allocator = NoReleaseAllocator


class SharedChannelWormholeRouter(WormholeRouter):
    """It interleaves two worms on one virtual channel (:class:`SharedChannelAllocator`).
    Caught by the flit scoreboard (check_worms): worms not whole on a link or at a PE."""
    vc_allocator = SharedChannelAllocator


class UnfairAllocator(VcAllocator):
    """Grants the lowest-numbered requester (:class:`FixedPriorityArbiter`): the fairness
    bound of :class:`~ihcube.rtl.VcAllocator` fails. Caught by the allocator's fairness test."""
    arbiter = FixedPriorityArbiter


class LateReadBroadcastBuffer(BroadcastBuffer):
    """A broadcast buffer whose branch 0 reads its memory through a synchronous port (the
    data one cycle late) rather than an asynchronous one: that branch hands on the flit it
    read in the cycle before, so a broadcast leaves it with its head repeated and its tail
    lost. The real buffer is a submodule ``inner``; every other output is its own. Caught by
    the equivalence test against the flip-flop buffer (``tests/test_broadcast_buffer.py``)."""

    def elaborate(self, platform):
        m = Module()
        inner = m.submodules.inner = BroadcastBuffer(self.layout, self.flits, self.branches,
                                                     registers=self.registers)
        m.d.comb += [
            inner.w.valid.eq(self.w.valid), inner.w.payload.eq(self.w.payload),
            self.w.ready.eq(inner.w.ready), inner.want.eq(self.want),
            self.head.eq(inner.head), self.written.eq(inner.written),
            self.idle.eq(inner.idle), self.done.eq(inner.done),
        ]
        late = Signal.like(inner.r[0].payload)
        m.d.sync += late.eq(inner.r[0].payload)
        for b, port in enumerate(self.r):
            m.d.comb += [port.valid.eq(inner.r[b].valid), inner.r[b].ready.eq(port.ready),
                         port.payload.eq(late if b == 0 else inner.r[b].payload)]
        return m


def _src_one_flit_late(n, flit_width):
    """:func:`ihcube.params.head_fields` with the part of ``src`` that runs on past the head
    flit put one flit too late (into the third flit rather than the second)."""
    fields = head_fields(n, flit_width)
    fields.src_pieces = tuple((k + (k > 0), low, width, at)
                              for k, low, width, at in fields.src_pieces)
    return fields


class SrcOneFlitLateRouter(WormholeRouter):
    """Where the header does not fit in a flit, it stamps the high bits of ``src`` into the
    third flit of a message rather than the second: the second keeps the PE's bits and the
    third loses some. Caught by the flit scoreboard (check_worms: a worm not whole) and by the
    lockstep with the reference model (``tests/test_wormhole_model.py``). Where the header
    fits it is the real router."""
    head_fields = staticmethod(_src_one_flit_late)


#: Every faulty wormhole router by name; each works as the ``router`` of a
#: :class:`~ihcube.rtl.WormholeFabric`.
WORMHOLE_FAULTS = {
    "dropping-flit-buffer": wormhole_buffer_fault_router("drop", every=5, first=5),
    "duplicating-flit-buffer": wormhole_buffer_fault_router("duplicate", every=5, first=5),
    "reordering-flit-buffer": wormhole_buffer_fault_router("reorder", every=8, first=2),
    "weight-parity-routing": weight_parity_wormhole_router,
    "no-release-on-tail": NoReleaseWormholeRouter,
    "shared-channel": SharedChannelWormholeRouter,
}


# --- The board self-test's checker broken on purpose (docs/fpga.md, fourth round) -----------

class RisingWriteChecker(Checker):
    """A :class:`~ihcube.boards.checker.Checker` that writes its table of last sequence numbers
    on the rising edge, as the read: a delivery in the cycle after one from the same source
    reads the word from before that one (the block RAM has no bypass), so a duplicate
    delivered back to back passes. ``tests/test_boards.py`` must catch it."""
    WRITE_EDGE = "pos"
