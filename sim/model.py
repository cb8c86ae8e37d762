"""A fast, cycle-exact software model of the fabric.

:class:`Model` computes what a :class:`~ihcube.rtl.Fabric` with the same parameters does,
cycle by cycle: the same injection handshakes, the same link transfers and the same
deliveries in the same cycles, for the same injection offers and eject backpressure.
``tests/test_model.py`` runs it in lockstep with the Amaranth simulation of the RTL. The
state is NumPy arrays and the loop is compiled with Numba (:mod:`.model_kernel`), so it
simulates millions of router-cycles per second (``python -m ihcube.bench.model``).

It mirrors, register for register:

- each input buffer (:class:`~ihcube.rtl.LinkBuffer`): a ring of ``depth`` messages with
  ``head``, ``tail``, ``count``; its ``room`` register (low in the first cycle after reset,
  then ``count != depth``); its head is valid when ``count != 0``;
- what each input's head still wants to send (the :class:`~ihcube.rtl.InputBuffer`'s head
  ``want`` at depth 1, its ``head_want`` from depth 2);
- each output's :class:`~ihcube.rtl.RoundRobinArbiter` (``last``, ``locked``, ``held``);
- each node's ``refused`` flag and saturating ``refused_count``;
- with ``link_stages=1``, each link output's relay (a :class:`~ihcube.rtl.LinkBuffer` of
  ``depth`` messages between the output's crossbar and the link, ``docs/model.md``, Link
  stages): its ring, and its ``room``, which the output's arbiter sees as its "ready".

The routing rules are not restated here. The route selector is a table of
:func:`ihcube.topology.first_set_bit` indexed, as :class:`~ihcube.rtl.RouteSelect` indexes
its priority encoder, by ``(node XOR dest) AND exists_mask(node)``; the travel masks are
:func:`ihcube.topology.travel_mask`, computed once per link set, as the Verilog generator
emits one router per link set. ``tests/test_model.py`` checks the route against
:func:`ihcube.topology.route_step` for every pair. The kernel carries each message's header
as injected; the records then get the fields the routers drive from their address
(``Model._as_driven``): a delivered message's ``dest`` is its node and its ``travel`` 0, and
a broadcast copy's ``dest`` on a link is :func:`ihcube.topology.relayed_dest`.
"""

import threading
from collections import namedtuple

import numpy as np

from .. import topology
from ..params import check_at_most, check_positive_integer
from ..spec import FabricSpec, as_spec
from ..rtl.message import Kind
from . import model_kernel
from .by_distance import class_sizes
from .model_kernel import COUNT, HELD, LAST, LINE, MAX_DEPTH, POPPED, Q_COUNT, record_words

__all__ = ["Model", "ModelRun", "RandomTraffic", "DELIVERY", "HOP", "INJECTION",
           "MAX_PAYLOAD_WIDTH", "MAX_ADDRESS_BITS", "threads_for"]

#: A delivery: a message taken by the PE of ``node`` in ``cycle``, on its eject ``port``.
DELIVERY = np.dtype([("cycle", np.int64), ("node", np.int64), ("dest", np.int64),
                     ("src", np.int64), ("kind", np.int64), ("travel", np.int64),
                     ("payload", np.uint64), ("port", np.int64)])
#: A hop: a message crossing link ``dim`` from ``node`` in ``cycle``.
HOP = np.dtype([("cycle", np.int64), ("node", np.int64), ("dim", np.int64), ("dest", np.int64),
                ("src", np.int64), ("kind", np.int64), ("travel", np.int64),
                ("payload", np.uint64)])
#: An injection: request number ``request`` taken from the PE of ``node`` in ``cycle``.
INJECTION = np.dtype([("cycle", np.int64), ("node", np.int64), ("request", np.int64)])

#: Widest payload the model carries (one 64-bit word per message).
MAX_PAYLOAD_WIDTH = 64
#: Widest address: dest, src and travel are packed with the kind into one 64-bit word.
MAX_ADDRESS_BITS = 20
#: Most slots (links and PE ports) of a node: the kernel's request masks are 31 bits wide.
MAX_SLOTS = 31

ModelRun = namedtuple("ModelRun", ["injections", "deliveries", "hops", "pending"])
ModelRun.__doc__ = """What :meth:`Model.run` or :meth:`Model.advance` recorded.

``injections``, ``deliveries`` and ``hops`` are structured arrays of :data:`INJECTION`,
:data:`DELIVERY` and :data:`HOP` records in cycle order (within a cycle in node order, and a
node's hops in increasing dimension). ``pending`` is the number of requests still queued at
the PEs at the end (:meth:`Model.run` then drops them).
"""


class Model:
    """Cycle-exact model of an ``n``-node :class:`~ihcube.rtl.Fabric`.

    Cycle 0 is the first cycle after reset, as in the Amaranth simulation; the model counts
    cycles across calls of :meth:`step`, :meth:`run`, :meth:`advance` and :meth:`run_uniform`.

    Custom traffic (``docs/model.md``): :meth:`offer` puts messages into the PEs' source
    queues, :meth:`advance` runs many cycles in the compiled loop and returns what they
    recorded; with a :class:`RandomTraffic` it also generates random unicasts in that loop.
    The tests' broken variants subclass it and override the rules the tables are
    built from: ``_travel_mask``, ``_first_set_bit``, ``_arbiter_start``, ``_ready_in_reset``.

    Parameters
    ----------
    spec : FabricSpec
        The fabric (:class:`ihcube.spec.FabricSpec`, packet switching); the keyword form
        ``Model(n, payload_width=32, depth=1, order="msb", ports=1, link_stages=0,
        switch_stages=0, eject_stages=0)`` makes it. The model's own limits: at most
        ``2**20`` nodes, payloads of at most 64 bits (truncated to the width), buffers of at
        most 64 messages, ``ports`` at most ``31 - D`` (a node's slots fit the kernel's
        31-bit masks). Each PE port has its own source queue (:meth:`offer`'s ``ports``);
        random traffic (:meth:`run_uniform`, :class:`RandomTraffic`) takes one port. With a
        link stage a hop is recorded when the relay hands the message to the far buffer
        (where the RTL's ``links_out`` handshake is); with a switch stage a refused
        injection is counted a cycle later; with an eject stage a delivery is recorded when
        the relay hands the message to the PE.
    threads : int
        Threads that simulate each cycle of :meth:`advance` (and :meth:`run`,
        :meth:`run_arrays`) and :meth:`run_uniform`, each visiting a contiguous chunk of the
        nodes, meeting at a barrier twice a cycle (:mod:`.model_kernel`, Threads;
        ``docs/scale.md``, "The model on several threads"): from 1 (the default) to ``n``.
        Any number gives the same results, cycle for cycle. :meth:`step` runs on one thread
        only (it raises otherwise).

    Members
    -------
    cycle : int
        The next cycle to simulate.
    active_nodes, mask, logical_address
        A reconfigurable fabric's configuration (:meth:`configure`; ``n`` and 0 after reset)
        and each router's logical address.
    links : int
        Number of link directions.
    refused : ndarray of bool
        Each node's sticky flag for a refused injection.
    refused_count : ndarray of int
        Each node's count of refused injections (saturating at ``2**16 - 1``).
    offered, queued, idle, injected, delivered, transfers, link_counts
        The messages put into the source queues since reset, the queues' length, whether
        nothing is left to do, and the counts since reset
        (see their docstrings).
    """

    #: Whether buffers are ready in the first cycle after reset; a negative control sets it.
    _ready_in_reset = False
    #: Whether a relay's room counts the relay's pop in the same cycle (its room when the
    #: cycle began, as the RTL's registered room); a negative control clears it.
    _relay_room_at_start = True
    #: The size of the buffers' records (int64 words) from which the compiled loop prefetches
    #: (:mod:`.model_kernel`, Prefetching): a smaller state stays in the caches, where the
    #: prefetches are instructions for nothing. The tests set 0, to prefetch at any size.
    _prefetch_from = 1 << 19
    #: Whether the threads' barriers wait; a negative control clears it, and then runs the
    #: threads one after another (what a barrier that does not wait allows).
    _barrier_waits = True
    #: The number of PE ports, and the depth, for which the compiled loop is the one compiled
    #: for one port, and for buffers of one message (:mod:`.model_kernel`, One port, one
    #: message: a constant 1), unless it prefetches. The tests set 0 to run the general
    #: loop, and negative controls 2 (the one-port loop on two ports: slots off by one; the
    #: one-message loop on buffers of two).
    _one_port_loop = 1
    _one_message_loop = 1

    def __init__(self, spec, *args, threads=1, **keywords):
        if not isinstance(spec, FabricSpec) and len(args) > 5:
            # The older positional form: threads stood between link_stages and switch_stages.
            args, threads = (*args[:5], *args[6:]), args[5]
        spec = self._spec = as_spec(spec, *args, **keywords)
        if not spec.packet:
            raise ValueError(f"Model is the packet model; a {spec.mode} spec's model is its "
                             f"mode's (ihcube.modes)")
        n = self._n = spec.nodes
        payload_width, depth, ports = spec.payload_width, spec.depth, spec.ports
        if depth > MAX_DEPTH:
            raise ValueError(f"Buffer depth must be at most {MAX_DEPTH} in the model, "
                             f"not {depth!r}")
        if payload_width > MAX_PAYLOAD_WIDTH:
            raise ValueError(f"Payload width must be at most {MAX_PAYLOAD_WIDTH} in the model, "
                             f"not {payload_width!r}")
        self._D = topology.dimensions(n)
        self._A = topology.address_bits(n)
        if self._A > MAX_ADDRESS_BITS:
            raise ValueError(f"Node count must be at most {1 << MAX_ADDRESS_BITS} in the "
                             f"model, not {n!r}")
        if self._D + ports > MAX_SLOTS:
            raise ValueError(f"Port count must be at most {MAX_SLOTS - self._D} in the model "
                             f"for {n} nodes, not {ports!r}")
        self._payload_width, self._depth, self._order = payload_width, depth, spec.order
        self._ports = ports
        self._link_stages = spec.stages.link
        self._switch_stages = spec.stages.switch
        self._eject_stages = spec.stages.eject
        self._threads = check_at_most(threads, n, "Thread count")
        # A reconfigurable fabric's configuration (configure); a fixed one's is this one.
        self._active_nodes, self._mask = n, 0
        self._tables = self._build_tables()
        self._links = int(sum(bin(int(mask)).count("1") for mask in self._tables[0]))
        self.reset()

    spec          = property(lambda self: self._spec)
    n             = property(lambda self: self._n)
    payload_width = property(lambda self: self._payload_width)
    depth         = property(lambda self: self._depth)
    order         = property(lambda self: self._order)
    ports         = property(lambda self: self._ports)
    link_stages   = property(lambda self: self._link_stages)
    switch_stages = property(lambda self: self._switch_stages)
    eject_stages  = property(lambda self: self._eject_stages)
    threads       = property(lambda self: self._threads)
    cycle         = property(lambda self: self._cycle)
    links         = property(lambda self: self._links)
    active_nodes  = property(lambda self: self._active_nodes)
    mask          = property(lambda self: self._mask)

    @property
    def logical_address(self):
        """Each physical router's logical address (``node XOR mask``), as an array."""
        return self._logical_address(np.arange(self._n, dtype=np.int64))

    @property
    def refused(self):
        return self._state[3].astype(bool)

    @property
    def refused_count(self):
        return self._state[4].astype(np.int64)

    @property
    def nbytes(self):
        """Bytes of the tables and state arrays."""
        arrays = (*self._tables, *self._state, self._movers, self._late) + (
            (self._relays,) if self._staged else ())
        return sum(array.nbytes for array in arrays if array.base is None)

    def configure(self, active_nodes, mask):
        """Load a configuration into a reconfigurable fabric's model (the spec's
        ``reconfigurable``): from the next cycle :meth:`step` or :meth:`advance` simulates,
        ``active_nodes`` logical nodes, node ``a`` at logical address ``a XOR mask``, as the
        RTL from the cycle after it takes the configuration on its ``config`` port
        (``docs/reconfiguration-hardware.md``). The RTL takes it only while idle: the source
        queues and the fabric must be empty, else ``ValueError``, as for a configuration
        that does not fit (:func:`ihcube.topology.check_configuration`). Records give
        logical addresses (``dest``, ``src``) and physical nodes (``node``)."""
        if not self._spec.reconfigurable:
            raise ValueError(f"Configure takes a reconfigurable fabric (reconfigurable=True), "
                             f"not {self._spec!r}")
        active_nodes, mask = topology.check_configuration(self._n, active_nodes, mask)
        if self.queued or self.in_flight:
            raise ValueError(f"Configure needs an idle fabric (the RTL takes a configuration "
                             f"only then), not {self.queued} messages queued and "
                             f"{self.in_flight} in the fabric")
        self._active_nodes, self._mask = active_nodes, mask
        self._tables = self._build_tables()

    # The rules, from ihcube.topology. Negative-control variants in the tests replace these.

    def _travel_mask(self, node, dim):
        if self._spec.reconfigurable:
            return topology.travel_mask(self._rule_nodes(), self._logical_address(node), dim,
                                        self._order, dims=self._D)
        return topology.travel_mask(self._n, node, dim, self._order)

    def _logical_address(self, nodes):
        """The logical address of each physical router in ``nodes`` (an int or an array)."""
        return nodes ^ self._mask

    def _rule_nodes(self):
        """The node count the rules take: the active nodes."""
        return self._active_nodes

    def _first_set_bit(self, bits):
        return topology.first_set_bit(bits, self._order)

    def _arbiter_start(self):
        """``last`` after reset: the last PE port's slot, after every requester of every
        output (RoundRobinArbiter: its last requester)."""
        return self._D + self._ports - 1

    def _random_configured(self):
        return (f"Random traffic takes the configuration after reset ({self._n} active nodes, "
                f"mask 0), not {self._active_nodes} active nodes with mask {self._mask}: "
                f"offer the messages instead")

    def _build_tables(self):
        n, D = self._n, self._D
        if self._spec.reconfigurable:
            # A router has ports for its physical links only (for a configuration that fits,
            # the links of its logical address are among them).
            exists = _exists_masks(self._rule_nodes(), D,
                                   self._logical_address(np.arange(n, dtype=np.int64)))
            exists &= _exists_masks(n, D)
        else:
            exists = _exists_masks(n, D)
        route = np.array([-1 if bit is None else bit
                          for bit in map(self._first_set_bit, range(1 << D))], np.int8)
        # Nodes with the same links have the same travel masks: a row per link set.
        _, representative, link_set = np.unique(exists, return_index=True,
                                                return_inverse=True)
        travel_masks = np.array([self._travel_mask(int(node), dim)
                                 for node in representative for dim in range(max(D, 1))],
                                np.int64)
        return exists, route, link_set.astype(np.int32), travel_masks

    def reset(self):
        """Return to the state right after reset: empty buffers whose ``room`` is low,
        arbiters not locked and with ``last`` on the PE input, no refusals; empty source
        queues, and the counts of :attr:`injected`, :attr:`delivered`, :attr:`transfers` and
        :attr:`link_counts` at zero."""
        n, S, depth = self._n, self._D + self._ports, self._depth
        if (self._active_nodes, self._mask) != (n, 0):  # reset's configuration: every node
            self._active_nodes, self._mask = n, 0
            self._tables = self._build_tables()
        words = record_words(depth)
        cells = np.zeros(n * S * words, np.int64)
        cells16 = cells.view(np.int16)
        cells16[POPPED::4 * words] = -1
        cells16[LAST::4 * words] = self._arbiter_start()
        cells16[HELD::4 * words] = -1  # not locked
        self._state = (
            cells, cells.view(np.int32), cells16,
            np.zeros(n, np.uint8),                            # refused
            np.zeros(n, np.int32),                            # refused_count
            np.zeros(n * (S + 1), np.int32),                  # requested, requests
            np.zeros(n * S + self._threads, np.int64),        # posts (the kernel's scratch)
        )
        # The threads' chunks of nodes (contiguous, as even as can be), their lists of pushes
        # into and pops from the buffers between chunks, and counts (model_kernel, Threads).
        T, M = self._threads, max(self._D, 1)
        self._split = (np.array([k * n // T for k in range(T + 1)], np.int64),
                       np.zeros(n * M, np.int64), np.zeros(n * S, np.int64),
                       np.zeros(T * LINE, np.int64))
        # The relays (link and eject stages): a record per output like the buffers', of which
        # only the ring (COUNT, HEAD, TAIL) and the entries are used; None without any stage,
        # which selects the kernel's specialisation without them.
        self._relays = np.zeros(n * S * words, np.int64) if self._staged else None
        # Switch stages: each thread's inputs whose copies move (the kernel's scratch), and
        # each node's refusals to count in the next cycle; empty without.
        switched = bool(self._switch_stages)
        self._movers = np.zeros(self._threads * S * switched, np.int64)
        self._late = np.zeros(n * switched, np.int32)
        self._cycle = 0
        # The PEs' source queues (model_kernel.enqueue) and what offer() numbered so far.
        self._pool = np.empty((0, 5), np.int64)
        self._ends = np.zeros((n * self._ports, 3), np.int64)  # a queue per node and port
        self._fill = np.zeros(1, np.int64)
        self._offered = 0
        # Injections, deliveries and link transfers since reset; messages per link direction.
        self._totals = np.zeros(3, np.int64)
        self._link_counts = np.zeros(n * max(self._D, 1), np.int64)

    def _counts(self, records):
        """The ``COUNT`` field of each row of ``records`` (the buffers' or the relays'), as an
        ``(n, D + P)`` array in row order."""
        return (records.view(np.int16)[COUNT::4 * record_words(self._depth)]
                .reshape(self._n, self._D + self._ports).astype(np.int64))

    @property
    def occupancy(self):
        """Messages in the input buffers, as an ``(n, D + P)`` array (the PE's ports last)."""
        S = self._D + self._ports
        counts = self._counts(self._state[0])
        # Row (a, s) holds the buffer that output s of node a writes (model_kernel's Layout):
        # node b's input buffer on link s is in the row of node b ^ 1 << s, its PE's in b's.
        slots = np.arange(S)
        owners = np.arange(self._n)[:, None] ^ np.where(slots < self._D, 1 << slots, 0)
        real = owners < self._n  # links that exist
        return np.where(real, counts[np.where(real, owners, 0), slots], 0)

    @property
    def relay_occupancy(self):
        """Messages in the link outputs' relays, as an ``(n, max(D, 1))`` array (zero without
        link stages): row ``a`` column ``i`` the relay of node ``a``'s link ``i``."""
        M = max(self._D, 1)
        if not self._link_stages or not self._D:
            return np.zeros((self._n, M), np.int64)
        return self._counts(self._relays)[:, :M]

    @property
    def eject_occupancy(self):
        """Messages in the eject ports' relays, as an ``(n, P)`` array (zero without eject
        stages)."""
        if not self._eject_stages:
            return np.zeros((self._n, self._ports), np.int64)
        return self._counts(self._relays)[:, self._D:]

    @property
    def in_flight(self):
        """Messages in the fabric: in the input buffers and the relays."""
        return int(self.occupancy.sum() + self.relay_occupancy.sum()
                   + self.eject_occupancy.sum())

    @property
    def prefetching(self):
        """Whether the compiled loop prefetches the state it will need (a state too large for
        the caches: :mod:`.model_kernel`, Prefetching). The results are the same either way."""
        return bool(self._state[0].size >= self._prefetch_from)

    @property
    def _staged(self):
        """Whether any stage is on (link, switch or eject): the kernel's ``relays``."""
        return bool(self._link_stages or self._switch_stages or self._eject_stages)

    @property
    def _relay_args(self):
        """The kernel's ``relays``: None without stages (:func:`model_kernel.cycle`)."""
        if self._relays is None:
            return None
        stages = (model_kernel.LINK_STAGE * self._link_stages
                  | model_kernel.SWITCH_STAGE * self._switch_stages
                  | model_kernel.EJECT_STAGE * self._eject_stages)
        return (self._relays, int(self._relay_room_at_start), stages, self._movers,
                self._late)

    @property
    def _dims(self):
        # The loop compiled for one port and one message: 1.17 times as fast at n = 1024, but
        # 0.97 times at 2**20, where the loop waits on memory (docs/scale.md): not there.
        fits = not self.prefetching
        ports = None if fits and self._ports == self._one_port_loop else self._ports
        depth = None if fits and self._depth == self._one_message_loop else self._depth
        return (self._n, self._D, self._A, depth, self._ready_in_reset, ports,
                self.prefetching, self._mask, self._active_nodes)

    # Messages: dest, src, travel (A bits each) and kind packed into a header word.

    # A reconfigured fabric's headers carry physical addresses (the logical ones XOR the
    # mask), so that the kernel routes by ``node XOR dest`` as for a fixed fabric: offers are
    # turned physical as they are queued, records logical in _as_driven. The configuration
    # changes only while the fabric and the queues are empty (configure).

    def _pack(self, dest, kind):
        return ((np.asarray(dest, np.int64) ^ self._mask)
                | np.asarray(kind, np.int64) << (3 * self._A))

    def _unpack(self, dtype, columns, header, payload):
        A, field = self._A, (1 << self._A) - 1
        out = np.zeros(len(header), dtype)
        for name, values in columns.items():
            out[name] = values
        out["dest"] = header & field
        out["src"] = header >> A & field
        out["travel"] = header >> 2 * A & field
        out["kind"] = header >> 3 * A & 1
        out["payload"] = payload.view(np.uint64)
        return out

    def _payloads(self, values):
        """Payloads truncated to the payload width, as int64 words."""
        mask = np.uint64((1 << self._payload_width) - 1)
        return (np.asarray(values, np.uint64) & mask).view(np.int64)

    def step(self, inject_valid, inject_dest=0, inject_kind=0, inject_payload=0,
             eject_ready=True, record_hops=False):
        """Simulate one cycle with the PE ports driven as given.

        Parameters
        ----------
        inject_valid : bool or array of bool, length ``n * ports``
            Which PE ports offer a message (port ``p`` of node ``a`` at ``a * ports + p``).
        inject_dest, inject_kind, inject_payload : int or array of int, length ``n * ports``
            What they offer (``kind`` is a :class:`~ihcube.rtl.Kind` value).
        eject_ready : bool or array of bool, length ``n * ports``
            Which eject ports accept a delivery.
        record_hops : bool
            Also return the link transfers.

        Returns
        -------
        taken : ndarray of bool
            The injection handshakes.
        deliveries : structured ndarray of :data:`DELIVERY`
        hops : structured ndarray of :data:`HOP` (empty unless ``record_hops``)
        """
        if self._threads > 1:
            raise ValueError(f"Model.step runs on one thread, not {self._threads}: use advance "
                             "or run_uniform, or threads=1")
        n = self._n * self._ports

        def column(values, dtype):
            # Always a new, writable array: a read-only view (of an array given whole) is
            # another type to Numba, and the kernel would be compiled once more for it.
            return np.array(np.broadcast_to(values, (n,)), dtype)

        valid = column(inject_valid, np.uint8)
        header = self._pack(column(inject_dest, np.int64), column(inject_kind, np.int64))
        payload = self._payloads(np.broadcast_to(inject_payload, (n,)))
        ready = column(eject_ready, np.uint8)
        taken = np.zeros(n, np.uint8)
        deliveries = np.zeros((n, 4), np.int64)
        hops = np.zeros((self._links if record_hops else 0, 4), np.int64)
        got_d, got_h = model_kernel.cycle(
            self._dims, self._tables, self._state, self._cycle, valid, header, payload, taken,
            ready, deliveries, hops, record_hops, self._relay_args, None)
        t = self._cycle
        self._cycle += 1
        deliveries = deliveries[:got_d]
        delivered = self._unpack(DELIVERY, {"cycle": t, "node": deliveries[:, 0],
                                            "port": deliveries[:, 3]},
                                 deliveries[:, 1], deliveries[:, 2])
        hops = hops[:got_h if record_hops else 0]
        hopped = self._unpack(HOP, {"cycle": t, "node": hops[:, 0], "dim": hops[:, 1]},
                              hops[:, 2], hops[:, 3])
        self._as_driven(delivered, hopped)
        return taken.astype(bool), delivered, hopped

    def _as_driven(self, delivered, hopped):
        """Set the fields the routers drive from their address, not from the message, in
        these records, as the RTL does (the kernel carries a message's header unchanged):
        a delivered message's ``dest`` is its node and its ``travel`` 0, and a broadcast
        copy's ``dest`` on a link is :func:`ihcube.topology.relayed_dest` (a unicast's
        known ``dest`` bits already are what the router drives), worked out in compiled code
        from the model's tables (``model_kernel.relayed_dests``: a loop in Python over the
        copies took most of a broadcast stress run's time)."""
        delivered["dest"] = self._logical_address(delivered["node"])
        delivered["travel"] = 0
        copies = np.flatnonzero(hopped["kind"] == Kind.BROADCAST.value)
        if len(copies):
            hop = hopped[copies]
            relayed = model_kernel.relayed_dests(self._tables, self._D, hop["src"],
                                                 hop["node"], hop["dim"], hop["dest"])
            # The known bits are the active nodes' D: those above come from the crossbar.
            low = topology.full_travel(self._active_nodes)
            hopped["dest"][copies] = relayed & low | hop["dest"] & ~low
        if self._mask:  # the kernel's physical addresses, as the routers' logical ones
            for records, fields in ((delivered, ("src",)), (hopped, ("dest", "src"))):
                for field in fields:
                    records[field] ^= self._mask

    def run(self, cycles, requests=(), eject_ready=None, record_hops=False):
        """Simulate ``cycles`` cycles with each PE offering a queue of requests.

        Each PE offers the first request of its queue once the request's ``at`` cycle has
        come, and holds it until the fabric takes it, as
        :class:`~ihcube.verify.harness.FabricHarness` does.

        Parameters
        ----------
        cycles : int
            Number of cycles.
        requests : iterable of (node, :class:`~ihcube.verify.harness.Request`)
            The PEs' queues, in the order of ``FabricHarness.send`` calls; an injection
            record's ``request`` is the position in this sequence.
        eject_ready : array of bool, shape ``(cycles, n * ports)``, or None
            Which eject ports accept a delivery in each cycle; None is all of them, always.
        record_hops : bool
            Also record every link transfer.

        Returns
        -------
        :class:`ModelRun`
        """
        requests = list(requests)
        return self.run_arrays(
            cycles, [node for node, _ in requests], [request.dest for _, request in requests],
            [Kind(request.kind).value for _, request in requests],
            [request.payload for _, request in requests],
            at=[request.at for _, request in requests], eject_ready=eject_ready,
            record_hops=record_hops,
            ports=[getattr(request, "port", 0) for _, request in requests])

    def run_arrays(self, cycles, nodes, dests, kinds, payloads, at=None, eject_ready=None,
                   record_hops=False, ports=None):
        """:meth:`run` with the requests given as arrays, one entry per request.

        ``nodes`` are the PEs that offer them, ``dests``, ``kinds`` (:class:`~ihcube.rtl.Kind`
        values) and ``payloads`` what they offer, ``at`` the cycles from which they are
        offered (None: from the start). A PE offers its requests in the order given. An
        injection record's ``request`` is the index into these arrays. It is :meth:`offer`,
        :meth:`advance` and :meth:`withdraw` in one call, so the source queues must be empty.
        """
        nodes = np.asarray(nodes, np.int64)
        if len(nodes) and (nodes.min() < 0 or nodes.max() >= self._n):
            raise ValueError(f"Request nodes must be from 0 to {self._n - 1}")
        if self.queued:
            raise ValueError(f"Run needs empty source queues, not {self.queued} messages "
                             f"offered (withdraw them first)")
        self._eject_pattern(cycles, eject_ready)  # checked before anything is offered
        first = self._offered
        self.offer(nodes, dests, kinds, payloads, at, ports)
        run = self.advance(cycles, eject_ready, record_hops)
        run.injections["request"] -= first
        return run._replace(pending=self.withdraw())

    # Custom traffic: messages offered into the PEs' source queues, then many cycles a call.

    def offer(self, nodes, dests, kinds=Kind.UNICAST.value, payloads=0, at=None, ports=None):
        """Append messages to the PEs' source queues; return their ids.

        Each PE has an unbounded first-in first-out source queue. In every cycle that
        :meth:`advance` simulates, a PE offers its queue's head once the head's ``at`` cycle
        has come, and holds the offer until the fabric takes it (then the next message is the
        head), as :class:`~ihcube.verify.harness.FabricHarness` does. Offer many messages a
        call: the arrays go to the compiled code at once.

        Parameters
        ----------
        nodes : int or array of int
            The PE that offers each message, from 0 to ``n - 1``; a PE's messages queue in the
            order given.
        dests : int or array of int
            Destinations, from 0 to ``2**address_bits - 1`` (a unicast to a node that does
            not exist is taken and refused, as in the RTL; a broadcast ignores it).
        kinds : int or array of int
            :class:`~ihcube.rtl.Kind` values: 0 unicast, 1 broadcast.
        payloads : int or array of int
            Payloads, truncated to the payload width.
        at : int or array of int, optional
            The first cycle in which each message may be offered (default: at once). With
            ``at`` set to the cycle a message is generated in, a delivery's latency includes
            the time in the source queue.
        ports : int or array of int, optional
            The injection port of each message, from 0 to ``ports - 1`` (default 0); each
            port of a PE has its own source queue.

        Returns
        -------
        ndarray of int64
            The messages' ids, numbered from 0 since reset in the order offered: the
            ``request`` of their :data:`INJECTION` records.
        """
        if not _integral(nodes) or np.ndim(nodes) > 1:
            raise ValueError(f"Nodes must be an integer or a list of integers, "
                             f"not {_shown(nodes)}")
        count = int(np.size(nodes))

        def column(values, name):
            array = np.atleast_1d(values)
            if not _integral(values) or array.ndim != 1 or len(array) not in (1, count):
                raise ValueError(f"{name} must be an integer or a list of {count} (one a "
                                 f"message), not {_shown(values)}")
            # A new, writable array: a read-only view is another type to Numba (a compile).
            return np.array(np.broadcast_to(array, (count,)), np.int64)

        nodes = column(nodes, "Nodes")
        dests, kinds = column(dests, "Destinations"), column(kinds, "Kinds")
        at = np.zeros(count, np.int64) if at is None else column(at, "Offer cycles")
        if ports is not None:
            ports = column(ports, "Ports")
            if len(ports) and (ports.min() < 0 or ports.max() >= self._ports):
                wrong = int(ports[(ports < 0) | (ports >= self._ports)][0])
                raise ValueError(f"Port must be from 0 to {self._ports - 1}, not {wrong}")
            queues = nodes * self._ports + ports
        elif self._ports != 1:
            queues = nodes * self._ports
        else:
            queues = nodes
        if self._ports != 1 and len(nodes) and (nodes.min() < 0 or nodes.max() >= self._n):
            wrong = int(nodes[(nodes < 0) | (nodes >= self._n)][0])
            raise ValueError(f"Node must be from 0 to {self._n - 1}, not {wrong}")
        try:
            if not _integral(payloads):
                raise TypeError
            # Not through column(): a list may mix int64 and uint64 values.
            payloads = np.array(np.broadcast_to(np.asarray(payloads, np.uint64), (count,)))
        except (TypeError, ValueError, OverflowError):
            raise ValueError(f"Payloads must be integers from 0 to 2**64 - 1, one or one a "
                             f"message, not {_shown(payloads)}") from None
        self._pool, wrong, field = model_kernel.enqueue(
            self._pool, self._ends, self._fill, queues, dests ^ self._mask, kinds, payloads, at,
            self._offered, self._A, np.uint64(self._payload_mask))
        if wrong >= 0:
            name, values, high = [("Node", nodes, self._n - 1),
                                  ("Destination", dests, (1 << self._A) - 1),
                                  ("Kind", kinds, 1)][field]
            raise ValueError(f"{name} must be from 0 to {high}, not {int(values[wrong])}")
        ids = np.arange(self._offered, self._offered + count, dtype=np.int64)
        self._offered += count
        return ids

    def advance(self, cycles=1, eject_ready=None, record_hops=False, count_links=False,
                until_delivered=None, traffic=None):
        """Simulate ``cycles`` cycles with each PE offering its source queue (:meth:`offer`).

        The loop is the compiled one of :meth:`run`: call it for many cycles at a time.

        Parameters
        ----------
        cycles : int
            Most cycles to simulate.
        eject_ready : array of bool, shape ``(cycles, n)`` or ``(n,)``, or None
            Which PEs accept a delivery in each cycle (a row of ``n``: the same every cycle);
            None is all of them, always.
        record_hops : bool
            Also record every link transfer.
        count_links : bool
            Add the link transfers to :attr:`link_counts`.
        until_delivered : int, optional
            Stop at the end of the first cycle after which this call has made at least this
            many deliveries.
        traffic : :class:`RandomTraffic`, optional
            Random unicasts to generate in every cycle, in the compiled loop, into the
            source queues (after what :meth:`offer` put there), with the next ids.

        Returns
        -------
        :class:`ModelRun`
            What these cycles did: injections (``request`` is the id from :meth:`offer`),
            deliveries, hops (empty unless ``record_hops``) and ``pending``, the messages
            left in the source queues. ``model.cycle`` tells where the run stopped.
        """
        n = self._n
        cycles = _check_count(cycles, "Cycles")
        pattern = self._eject_pattern(cycles, eject_ready)
        until = -1 if until_delivered is None else _check_count(until_delivered,
                                                                "Deliveries to wait for")
        if traffic is None:
            generate = _NO_TRAFFIC
        elif self._ports != 1:
            raise ValueError(f"Random traffic takes one PE port, not {self._ports}")
        elif (self._active_nodes, self._mask) != (n, 0):
            raise ValueError(self._random_configured())
        elif not isinstance(traffic, RandomTraffic) or traffic.n != n:
            raise ValueError(f"Traffic must be a RandomTraffic for {n} nodes, not {traffic!r}")
        else:
            generate = (traffic.threshold, traffic.rng, *traffic.tables, traffic.classes)
        see_hops = bool(record_hops or count_links)
        nq = n * self._ports
        shared = None  # the arrays the threads share (model_kernel.queue_worker)
        if self._threads > 1:
            shared = (np.zeros(nq, np.uint8), np.zeros(nq, np.int64), np.zeros(nq, np.int64),
                      np.zeros(nq, np.uint8), np.zeros((nq, 4), np.int64),
                      np.zeros((n * max(self._D, 1) if see_hops else 0, 4), np.int64),
                      np.zeros(3, np.int64))
        args = (self._dims, self._tables, self._state)

        def driver(split, sync):
            return model_kernel.run_queues(
                *args, self._cycle, cycles, self._pool, self._ends, self._fill, pattern,
                bool(record_hops), bool(count_links), self._link_counts, until, self._links,
                _records(INJECTION, cycles * nq), _records(DELIVERY, cycles * nq),
                _records(HOP, cycles * self._links if record_hops else 0), self._totals,
                generate, self._offered, np.uint64(self._payload_mask).astype(np.int64),
                self._relay_args, None if split is None else (split, sync, shared))

        def worker(split, sync):
            model_kernel.queue_worker(*args, pattern, see_hops, self._relay_args, split, sync,
                                      shared)

        done, injected, delivered, hopped, self._pool, generated = self._on_threads(driver,
                                                                                      worker)
        self._offered += generated
        self._cycle += done
        self._as_driven(delivered, hopped)
        return ModelRun(injected, delivered, hopped, self.queued)

    def _eject_pattern(self, cycles, eject_ready):
        """``eject_ready`` as :func:`model_kernel.run_queues` takes it, checked."""
        columns = self._n * self._ports  # port p of node a in column a * ports + p
        if eject_ready is None:
            return np.ones((1, columns), np.uint8)
        pattern = np.ascontiguousarray(eject_ready, np.uint8)
        if pattern.shape == (columns,):
            return pattern[None]
        if pattern.shape != (cycles, columns):
            raise ValueError(f"Eject-ready pattern must have shape {(cycles, columns)}, "
                             f"not {pattern.shape}")
        return pattern

    def withdraw(self):
        """Empty the PEs' source queues (the fabric keeps what it has taken); return how many
        messages were dropped."""
        dropped = self.queued
        self._ends[:] = 0
        self._fill[0] = 0
        return dropped

    @property
    def offered(self):
        """Messages put into the source queues since reset (by :meth:`offer`, or generated
        by :meth:`advance`'s ``traffic``): the next message's id."""
        return self._offered

    @property
    def _payload_mask(self):
        return (1 << self._payload_width) - 1

    @property
    def queued(self):
        """Messages in the PEs' source queues, not yet taken by the fabric."""
        return int(self._ends[:, Q_COUNT].sum())

    @property
    def idle(self):
        """Whether nothing is left to do: the source queues, the buffers and the relays are
        empty."""
        return self.queued == 0 and self.in_flight == 0

    @property
    def injected(self):
        """Messages taken from the PEs since reset."""
        return int(self._totals[0])

    @property
    def delivered(self):
        """Deliveries to the PEs since reset (a broadcast makes ``n - 1``)."""
        return int(self._totals[1])

    @property
    def transfers(self):
        """Link transfers since reset (in :meth:`advance`, :meth:`run` and the traffic that
        drives it; not :meth:`step` and :meth:`run_uniform`, which report their own)."""
        return int(self._totals[2])

    @property
    def link_counts(self):
        """Messages sent on each link direction while :meth:`advance` counted them, since
        reset: an ``(n, max(D, 1))`` array, row ``a`` column ``i`` the link of dimension
        ``i`` from node ``a``."""
        return self._link_counts.reshape(self._n, -1).copy()

    def run_uniform(self, rate, cycles, seed=0):
        """Simulate ``cycles`` cycles of uniform random traffic (Tzeng and Kumar, Section 5.1).

        Each node generates a unicast with probability ``rate`` per cycle, to a node drawn
        uniformly from the others, into an unbounded source queue whose head its PE offers;
        every PE accepts a delivery every cycle. The queues start empty and are dropped at
        the end (messages in the fabric stay).

        Returns
        -------
        dict
            ``cycles``, ``generated``, ``injected``, ``delivered``, ``hops`` (link
            transfers), ``mean_latency`` and ``max_latency`` (generation to acceptance, in
            cycles; they wrap at ``2**payload_width``, as the payload carries the generation
            cycle), ``queued`` (left in source queues), ``throughput`` (deliveries per node
            per cycle).
        """
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"Generation rate must be from 0 to 1, not {rate!r}")
        if self._ports != 1:
            raise ValueError(f"Random traffic takes one PE port, not {self._ports}")
        if (self._active_nodes, self._mask) != (self._n, 0):
            raise ValueError(self._random_configured())
        n, T = self._n, self._threads
        totals = np.zeros((T, 7), np.int64)
        mask = (1 << self._payload_width) - 1 if self._payload_width < 64 else -1
        shared = None  # the arrays the threads share (model_kernel.run_uniform)
        if T > 1:
            shared = (np.zeros(n, np.uint8), np.zeros(n, np.int64), np.zeros(n, np.int64),
                      np.zeros(n, np.uint8), np.zeros((n, 4), np.int64), np.zeros(n, np.int64),
                      np.zeros(n, np.int64))

        def run(split, sync):
            model_kernel.run_uniform(
                self._dims, self._tables, self._state, self._cycle, cycles, float(rate), seed,
                mask, totals[0 if split is None else split[0]], self._relay_args,
                None if split is None else (split, sync, shared))

        self._on_threads(run, run)
        self._cycle += cycles
        generated, injected, delivered, latency_sum, hops, _, queued = map(int, totals.sum(0))
        latency_max = int(totals[:, 5].max())
        return {
            "cycles": cycles, "generated": generated, "injected": injected,
            "delivered": delivered, "hops": hops,
            "mean_latency": latency_sum / delivered if delivered else float("nan"),
            "max_latency": latency_max, "queued": queued,
            "throughput": delivered / (self._n * cycles) if cycles else 0.0,
        }

    def _on_threads(self, first, other):
        """``first(split, sync)`` on this thread and ``other(split, sync)`` on each further
        thread, with thread ``k``'s ``split`` (``model_kernel.cycle``) and the barriers' words
        ``sync``; ``first(None, None)`` alone for one thread. Returns what ``first`` returns.

        An exception in any thread sets the word that makes the others' barriers give up, so
        that every thread ends; the first exception is raised here.
        """
        T = self._threads
        if T == 1:
            return first(None, None)
        sync = np.zeros((T + 1) * LINE + 2, np.int64)
        sync[T * LINE + 1] = not self._barrier_waits
        splits = [(k, *self._split) for k in range(T)]
        errors = []
        result = []

        def guarded(function, k):
            try:
                out = function(splits[k], sync)
                if k == 0:
                    result.append(out)
            except BaseException as error:  # noqa: BLE001 (raised again below)
                errors.append(error)
                sync[T * LINE] = 1  # the other threads' barriers give up

        if not self._barrier_waits:
            # The negative control: no barrier holds a thread, so one may run every cycle
            # before the next starts; this runs them so, one after another.
            for k in range(T):
                guarded(first if k == 0 else other, k)
        else:
            threads = [threading.Thread(target=guarded, args=(other, k), daemon=True)
                       for k in range(1, T)]
            for thread in threads:
                thread.start()
            guarded(first, 0)
            for thread in threads:
                thread.join()
        if errors:
            raise errors[0]
        return result[0]


def threads_for(n, threads):
    """The threads a :class:`Model` of ``n`` nodes runs on when an experiment asks for
    ``threads`` (``--threads``): at most one a node, since a model takes 1 to ``n``, so that a
    sweep's small sizes run on fewer. The records are the same on any number."""
    return min(check_positive_integer(threads, "Thread count"), n)


class RandomTraffic:
    """Random unicasts that :meth:`Model.advance` generates in its compiled loop.

    In every cycle, node by node, a node generates a unicast with its probability ``rate``
    and draws its destination from its row of a destination table: a class with the
    probabilities of ``cumulative``, then a node of the class uniformly. The message goes to
    the end of the node's source queue, offered from that cycle, its payload the cycle
    (generation to delivery is the latency, source queueing included). The draws are one
    SplitMix64 stream (:func:`~ihcube.sim.model_kernel.splitmix`) from ``state``: per node
    and cycle one draw, generating if its top 53 bits are below ``rate * 2**53``, and for a
    message two more, ``u`` for the class and ``v`` for the node
    (:func:`~ihcube.sim.model_kernel.draw_dest`). Successive ``advance`` calls continue the
    stream. It is what offering the same messages with :meth:`Model.offer` does, at the
    speed of the compiled loop (``tests/test_model_api.py`` compares the two).

    Parameters
    ----------
    n : int
        Number of nodes.
    rate : float or array of float, length ``n``
        Generation probability per node and cycle, from 0 to 1.
    dests : array of int, shape ``(n, m)``
        Row ``a``: source ``a``'s destinations, class by class (from 0 to ``2**A - 1``).
    start : array of int, shape ``(n, K + 1)``
        Class ``k`` of source ``a`` is ``dests[a, start[a, k]:start[a, k + 1]]``.
    cumulative : array of float, shape ``(n, K)``
        Running sums of the class probabilities; the last at least 1. A class whose
        probability is not 0 must have nodes.
    state : int
        The SplitMix64 state the draws start from, from 0 to ``2**64 - 1``.
    classes : array of int, shape ``(K, 2)``, optional
        Classes by distance instead of ``dests`` (then None): class ``k`` of every source
        ``a`` is the nodes ``b < n`` ``classes[k, 0]`` to ``classes[k, 1]`` hops from ``a``
        (at least 1), by node number, drawn without a table
        (:func:`~ihcube.sim.by_distance.class_member`); ``start`` must count them.

    :class:`ihcube.sim.traffic.Pattern` builds the tables of the sweeps' patterns, and
    :meth:`~ihcube.sim.traffic.Pattern.traffic` their classes by distance.
    """

    def __init__(self, n, rate, dests, start, cumulative, state=0, classes=None):
        self.n = topology.check_node_count(n)
        rate = np.asarray(rate, np.float64)
        if rate.shape not in ((), (n,)) or not ((rate >= 0) & (rate <= 1)).all():
            raise ValueError(f"Generation rates must be from 0 to 1, one or one a node, not "
                             f"{_shown(rate)}")
        rate = np.broadcast_to(rate, (n,))
        # P(53-bit draw < threshold) = rate; rate 1 always generates.
        self.threshold = np.round(rate * (1 << 53)).astype(np.int64)
        by_distance = classes is not None
        if by_distance and dests is not None:
            raise ValueError("Destinations come from a table or from classes by distance, "
                             "not both")
        dests = (np.zeros((n, 0), np.int32) if by_distance
                 else np.ascontiguousarray(dests, np.int32))
        start = np.ascontiguousarray(start, np.int64)
        cumulative = np.ascontiguousarray(cumulative, np.float64)
        K = cumulative.shape[-1] if cumulative.ndim == 2 else 0
        if (dests.ndim != 2 or len(dests) != n or cumulative.shape != (n, K)
                or K == 0 or start.shape != (n, K + 1)):
            raise ValueError(f"Destination tables must have shapes (n, m), (n, K + 1) and "
                             f"(n, K) with n = {n}")
        below = np.concatenate([np.zeros((n, 1)), cumulative[:, :-1]], axis=1)
        if ((start[:, 0] < 0).any() or (np.diff(start, axis=1) < 0).any()
                or (not by_distance and (start[:, -1] > dests.shape[1]).any())
                or (cumulative[:, -1] < 1).any()
                or ((cumulative > below) & (np.diff(start, axis=1) == 0)).any()):
            raise ValueError("Destination tables must have increasing class starts within "
                             "the rows, cumulative probabilities up to at least 1 and nodes "
                             "in every class with a probability")
        if by_distance:
            classes = _checked_classes(n, classes, start)
        else:
            classes = np.zeros((0, 2), np.int64)
            used = dests[:, :max(int(start[:, -1].max()), 0)] if n else dests
            if used.size and (used.min() < 0 or used.max() >= 1 << topology.address_bits(n)):
                raise ValueError(f"Destinations must be from 0 to "
                                 f"{(1 << topology.address_bits(n)) - 1}")
        self.tables = dests, start, cumulative
        self.classes = classes
        self.rng = np.array([state], np.uint64)


def _checked_classes(n, classes, start):
    """``classes`` (:class:`RandomTraffic`'s) as an int64 array, if it has a row for every
    class, from 1 hop up, and ``start`` counts their nodes; else raise."""
    classes = np.ascontiguousarray(classes, np.int64)
    K = start.shape[1] - 1
    if (classes.shape != (K, 2) or (classes[:, 0] < 1).any()
            or (classes[:, 1] < classes[:, 0]).any()):
        raise ValueError(f"Classes by distance must be {K} rows of the least and most hops, "
                         f"from 1 up")
    if (start[:, 0] != 0).any() or (np.diff(start, axis=1)
                                    != class_sizes(n, classes)).any():
        raise ValueError("Class starts must count the nodes at each class's distances")
    return classes


#: advance's traffic when there is none: empty tables of the types it takes.
_NO_TRAFFIC = (np.zeros(0, np.int64), np.zeros(1, np.uint64), np.zeros((0, 0), np.int32),
               np.zeros((0, 1), np.int64), np.zeros((0, 0), np.float64),
               np.zeros((0, 2), np.int64))

#: The most records :meth:`Model.advance` makes room for before it runs (it grows them if
#: more come): room untouched costs address space, not memory.
_RECORDS_AHEAD = 1 << 20


def _records(dtype, most):
    """An empty array for at most ``most`` records of ``dtype``, or :data:`_RECORDS_AHEAD`."""
    return np.empty(max(min(most, _RECORDS_AHEAD), 16), dtype)


def _integral(values):
    """Whether ``values`` are integers: an integer array, or Python integers (a list of
    them may mix ``int64`` and ``uint64`` ranges, which NumPy would turn into floats)."""
    if isinstance(values, (np.ndarray, np.generic)):
        return values.dtype.kind in "iu" or values.size == 0
    if isinstance(values, (list, tuple)):
        return all(isinstance(value, (int, np.integer)) and not isinstance(value, bool)
                   for value in values)
    return isinstance(values, (int, np.integer)) and not isinstance(values, bool)


def _shown(values):
    """``values`` for an error message: short arrays in full, long ones by their shape."""
    array = np.asarray(values)
    if array.ndim == 0 or array.size <= 8:
        return repr(values.tolist() if isinstance(values, np.ndarray) else values)
    return f"an array of shape {array.shape} and type {array.dtype}"


def _check_count(value, name):
    """``value`` if it is a non-negative integer, else raise."""
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, not {value!r}")
    return int(value)


def _exists_masks(n, D, addresses=None):
    """Every node's link-existence vector (:func:`ihcube.topology.exists_mask`), as an int32
    array (the kernel's masks are 31 bits wide); with ``addresses``, those of the nodes at
    those addresses (a reconfigurable fabric's routers, by logical address), over ``D`` bits.

    :func:`ihcube.topology.link_exists` is applied to all ``n`` nodes at once, a dimension at a
    time (its test ``a XOR 2**i < n`` holds elementwise on an array of nodes): a call of
    ``exists_mask`` per node took 5 s at ``n`` = 2**20, this some tens of milliseconds.
    ``tests/test_model_large.py`` compares the two node by node.
    """
    nodes = np.arange(n, dtype=np.int64) if addresses is None else addresses
    exists = np.zeros(len(nodes), np.int64)
    for i in range(D):
        exists |= np.asarray(topology.link_exists(n, nodes, i), np.int64) << i
    return exists.astype(np.int32)
