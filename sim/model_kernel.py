"""The compiled inner loop of :class:`ihcube.sim.model.Model`.

Numba functions over flat NumPy arrays; :mod:`ihcube.sim.model` builds the tables from
:mod:`ihcube.topology` and owns the state. Nothing here knows a routing rule: the route
selector's priority encoder, the link-existence vectors and the travel masks arrive as
tables.

Layout
------
Node ``a`` has ``S = D + P`` *slots* (``P`` the PE ports, ``docs/ports.md``): slot ``i < D``
is link ``i`` (the input buffer that link ``i`` feeds, and the output that drives link
``i``), slot ``D + p`` is PE port ``p`` (injection buffer ``p``, and eject port ``p``). Slots of
links that do not exist are never used. A message for the PE from slot ``s`` leaves on eject
port ``s mod P`` (:func:`ihcube.topology.eject_port`: the slot is the rule's ``source``).
Row ``a * S + s`` is output ``s`` of node ``a`` and the buffer that output writes: for a
link, the input buffer at the link's far end (node ``a ^ 1 << s``, slot ``s``), for the PE
the injection buffer. So node ``a``'s input buffer on link ``s`` is row ``(a ^ 1 << s) * S
+ s`` (:func:`_buffer`). A node checks its far buffers' room more often than it reads its
own heads, and this keeps the check in its own cache lines (8 % faster at ``n`` = 1024).
A mask over slots has bit ``s`` for slot ``s``. The RTL numbers a router's ports
``0 .. k``, existing links in increasing dimension and then the PE; slot order is that
order with gaps, so the arbiters' "first requester after ``last``" chooses the same input
here.

A row's record in ``cells`` is :func:`record_words` int64 words: two words of fields, read
through the views ``cells16`` and ``cells32``, then the buffer's ``depth`` entries, a header
word and a payload word each. The fields:

- ``COUNT``, ``HEAD``, ``TAIL`` (int16): the buffer's ring (LinkBuffer ``count``, ``head``,
  ``tail``).
- ``POPPED`` (int16): the cycle (modulo ``2**15 - 1``) of the buffer's last pop.
- ``LAST``, ``HELD`` (int16): the row's output's arbiter (RoundRobinArbiter): ``last`` (a
  slot; the PE after reset) and the input it is locked on (-1 when not locked). They sit
  with the far buffer's count, which the same visit reads.
- ``PENDING`` (int32): the copies the head still has to send, the InputBuffer's ``r.want``
  (its head's stored ``want`` at depth 1, ``head_want`` from depth 2). It is set when a
  message becomes the head and loses a bit with each copy sent.

Per node, ``S + 1`` int32 words of ``requests``: first the mask of its outputs with a
request (``requested``), then for each slot, as an output, the mask of the inputs whose valid
head still wants it (the Router's ``valid & want & ~done``, column by column). A post (a new
head's requests, see Registers) sets bits in both, of a neighbour's node: kept together, the
two are most often in one cache line (they were two arrays: 1.03 times the speed at ``n`` =
2**20 in one A/B, ``docs/scale.md``, Bytes). The link-existence and request masks (of at
most 31 slots) and the link-set numbers are int32, not int64: the large arrays a hop reads at
random (``exists`` of the hop's far node, and its requests) are half the size.

A header packs ``dest``, ``src`` and ``travel`` in ``A`` bits each, then ``kind``.

Registers
---------
One call of :func:`cycle` is one clock cycle. Every decision of the cycle must read the
registers as they were when it began, although the nodes are visited one after another and
a write into a neighbour's buffer, or a pop from one's own, changes it at once:

- A message that becomes a head is not valid before the next cycle. Its requests are posted
  after every node has been visited (``posts``), so every request an arbiter sees is valid,
  and no output is visited for requests it must ignore. (Posting them at once when the head's
  node had been visited, else at the end of its visit, took a branch on ``b < a`` for every
  hop, taken or not at random: posting them all at the end is 11 % faster at ``n`` = 1024.)
- Whether a link's far buffer has room: this node is its only writer, and writes after the
  check, so its count when the cycle began is ``COUNT``, plus one if its own node has
  popped it in this cycle (``POPPED``).

``room`` is not stored: the LinkBuffer register ``room <= count_next != depth`` holds
``count != depth`` in every cycle but the first after reset, where it is low.

Prefetching
-----------
A large fabric's state does not fit the caches (at ``n`` = 2**20, 0.8 GiB), and its loads
wait for memory: a node's own rows come in a stream, but its input buffers are in its
neighbours' rows, ``2**k`` nodes away on dimension ``k``, and the requests a post sets are
those of a neighbour too. When ``prefetching`` (``dims``; :class:`~ihcube.sim.model.Model`
sets it from the state's size), the visit of node ``a`` first asks the CPU (:func:`_prefetch`,
which changes nothing else) for node ``a + PREFETCH_NODES``'s own rows and requests, and for
the rows of its inputs on dimensions ``NEAR_LINKS`` and up whose heads request an output
(the ones a move can copy and pop); applying a post asks for the node of the post
``PREFETCH_POSTS`` later. The loads of the visits then find their lines in the cache, or on
their way. Asking for every input (not only requesting ones), or for the nearer dimensions,
was slower; so is prefetching a state that fits the caches (15 % at ``n`` = 4096).

Link stages
-----------
With ``link_stages=1`` (:class:`~ihcube.rtl.Router`) each link output's crossbar writes a
relay, a :class:`~ihcube.rtl.LinkBuffer` of ``depth`` messages whose read side drives the
link. :func:`cycle` then takes the relays' records (``relays``): row ``a * S + o`` for
output ``o`` of node ``a``, laid out as a buffer's record (``COUNT``, ``HEAD``, ``TAIL`` and
the entries; the other fields unused). In a node's visit, first each relay that holds a
message hands its oldest on if the far buffer has room, as a move did without link stages:
that is the hop. Then the arbiters decide, a link's "ready" being its relay's room, which
is its count when the cycle began (the count now, plus one if it handed a message on in
this visit: this node is the relay's only reader and writer). Then the moves write the
relays. A message written into a relay in cycle ``t`` crosses the link in ``t + 1`` at the
earliest: a cycle more per hop.

Switch and eject stages
-----------------------
With ``switch_stages=1`` (:class:`~ihcube.rtl.Router`'s) each output's grant
is registered: ``HELD`` is then the input the output's *stage* holds (-1: empty). In a
decision, a staged copy moves if the output is ready (the move's input, the stage's, is kept
in ``movers``, a row of ``S`` words a thread); the arbiter, with no hold of its own,
allocates into the stage when it is empty or being emptied, among the requests but the
staged input's, and ``LAST`` moves only then. A refusal is counted in the next cycle
(``late``, a word a node). With ``eject_stages=1`` each eject port is driven by a relay, the
record of row ``a * S + D + p`` in the relays' records: it hands its oldest message to the PE
(the delivery) at the start of the visit, if the PE is ready, and the eject output's ready is
its room, as a link relay's. ``relays`` carries them all, with ``stages`` (bits
:data:`LINK_STAGE`, :data:`SWITCH_STAGE`, :data:`EJECT_STAGE`) saying which are on; without
any stage it is None, and the loop is the one from before stages existed.

One port, one message
---------------------
A PE has one port and a buffer holds one message unless asked for more (``Model(ports=P,
depth=...)``), and the benchmarks run that. For one port :class:`~ihcube.sim.model.Model`
passes ``P`` in ``dims`` as None, and for depth 1 ``depth``; :func:`_count` turns None into
the constant 1. Numba compiles each kernel again for those types, and LLVM folds the
constants into the loop over the PE's ports, the eject port's ``s mod P``, the slot count
``S = D + 1`` and the rows ``a * P + p``, and into the rings (a pointer that is always 0,
the room ``count != 1``) and the records' sizes (``R64 = 4``: shifts, not multiplications).
The source is the same for every ``P`` and depth; only the compiled code differs. A model
that prefetches runs the general loop: there the loop waits on memory, and the specialised
one was no faster (0.97 times at ``n`` = 2**20, ``docs/scale.md``).

Threads
-------
On ``T`` threads (``Model(threads=T)``), each thread runs the whole run (:func:`run_uniform`,
or :func:`run_queues` on thread 0 and :func:`queue_worker` on the others) and visits a
contiguous chunk of the nodes in each cycle; the threads meet at a barrier (:func:`meet`:
one word per thread, written with release and spun on with acquire loads, the core yielded
after :data:`SPINS` turns) twice a cycle:

1. :func:`cycle` with ``split``: a thread visits its nodes as one thread visits all. The
   buffers between two of its nodes are as above. A buffer between chunks has its writer in
   one and its reader in the other: in this phase neither changes its ``COUNT`` nor its
   ``POPPED`` (each reads the count of the cycle's start, as a one-thread visit does). The
   writer writes the entry at the tail (the reader reads none but the messages of the
   cycle's start) and lists the push; the reader moves the head and lists the pop; a head
   that follows one that left is a message of the cycle's start. Posts for the thread's own
   nodes are applied at the end of its visits (no other thread reads its nodes' requests).
2. :func:`settle`, after every visit: each thread counts the pops of the buffers its nodes
   read, then the other threads' pushes into them; a pushed message that is alone in its
   buffer (it was empty, or its one message left) is the head from the next cycle and
   posts its requests.

So no word is written by two threads in a phase, nor read by one while another writes it
(the entries of a ring are the writer's or the reader's, never both), and every thread's
records are in node order: ``T`` threads give the records of one. Deliveries and hops are
written from the thread's first node's row and gathered by thread 0 (:func:`_gather`).
Prefetching stays in the thread's chunk. On one thread ``split`` is None, and Numba
compiles :func:`cycle` without these branches.

Array indices in :func:`cycle` are wrapped in :func:`_at` ("this index is not negative"),
which spares Numba's test for negative indices on every access: about a fifth of the time.
Its int16 and int32 fields are read and written through ``cells`` itself (:func:`_get16`,
:func:`_put16`, :func:`_get32`, :func:`_put32`, at the index the views ``cells16`` and
``cells32`` would take), not through the views: one base address instead of three leaves
the compiler more registers for the visit (3 % fewer instructions at ``n`` = 1024,
``docs/scale.md``).
"""

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from .by_distance import class_member

__all__ = ["COUNT", "HEAD", "TAIL", "POPPED", "PENDING", "LAST", "HELD", "ENTRIES", "MAX_DEPTH",
           "Q_HEADER", "Q_PAYLOAD", "Q_AT", "Q_ID", "Q_NEXT", "Q_FIRST", "Q_LAST", "Q_COUNT",
           "record_words", "cycle", "enqueue", "run_queues", "splitmix", "unit", "draw_dest",
           "run_uniform", "uniform_stream",
           "uniform_draw", "uniform_threshold", "uniform_dest", "lowest_bit", "LINE", "SPINS",
           "meet", "settle", "queue_worker", "relayed_dests", "LINK_STAGE", "SWITCH_STAGE",
           "EJECT_STAGE"]

#: The stages of ``relays`` (:func:`cycle`), bits of its ``stages``: relays on the links
#: (``link_stages``), the switch's registered grant (``switch_stages``), relays on the eject
#: ports (``eject_stages``).
LINK_STAGE, SWITCH_STAGE, EJECT_STAGE = 1, 2, 4

#: A row's fields: int16 words of its record, and an int32 word, then int64 words.
COUNT, HEAD, TAIL, POPPED = range(4)
LAST, HELD = 4, 5
PENDING = 3
ENTRIES = 2

#: Deepest buffer: counts and pointers are int16.
MAX_DEPTH = (1 << 15) - 1


def record_words(depth):
    """The int64 words of a slot's record: its fields, then ``depth`` entries."""
    return 2 + 2 * depth


#: ``refused_count`` saturates here, as the RTL's 16-bit counter does.
_REFUSED_MAX = (1 << 16) - 1
#: Stamps are cycles modulo this (they are int16).
_STAMPS = (1 << 15) - 1
#: A post (a new head's requests, see Registers) packs ``wants << 32 | node << 5 | slot``;
#: slots are fewer than 32 and nodes fewer than 2**27 (the model has at most 20 address bits).
_POST_SLOT_BITS = 5
_POST_NODE_MASK = (1 << 27) - 1
_POST_WANTS_SHIFT = 32
#: Prefetching (see the module's docstring): how many nodes ahead of the visit, and of the
#: posts ahead of the one applied; links of the dimensions below NEAR_LINKS are not fetched.
PREFETCH_NODES = 8
PREFETCH_POSTS = 16
NEAR_LINKS = 8


@intrinsic
def _at(typingctx, index):
    """``index`` as an unsigned integer, for indexing: the caller knows it is not negative."""
    if not isinstance(index, types.Integer):
        return None
    sig = types.uint64(types.int64)

    def codegen(context, builder, signature, args):
        return args[0]
    return sig, codegen


@intrinsic
def _lowest(typingctx, bits):
    """Index of the lowest set bit of a nonzero integer (LLVM ``cttz``)."""
    if not isinstance(bits, types.Integer):
        return None
    sig = types.int64(types.int64)

    def codegen(context, builder, signature, args):
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 1))
    return sig, codegen


#: The lowest set bit's index, for other kernels (:mod:`.wormhole_kernel`).
lowest_bit = _lowest


@intrinsic
def _select(typingctx, condition, if_true, if_false):
    """``if_true if condition else if_false`` as an int64, without a branch (LLVM ``select``):
    for outcomes that are random, where a branch would be mispredicted half the time."""
    if not all(isinstance(t, (types.Integer, types.Boolean))
               for t in (condition, if_true, if_false)):
        return None
    sig = types.int64(condition, if_true, if_false)

    def codegen(context, builder, signature, args):
        test = context.cast(builder, args[0], signature.args[0], types.boolean)
        chosen = builder.select(test,
                                context.cast(builder, args[1], signature.args[1], types.int64),
                                context.cast(builder, args[2], signature.args[2], types.int64))
        # Marked unpredictable: else LLVM may turn a select of a value loaded for it alone
        # back into a branch (CodeGenPrepare), as it did with the injection's PENDING (0.39
        # mispredicted a node and cycle in Valgrind's count, once no branch on `took`
        # came before it to predict it from).
        chosen.set_metadata("unpredictable", builder.module.add_metadata([]))
        return chosen
    return sig, codegen


@intrinsic
def _count(typingctx, value):
    """A count from ``dims`` (the PE's ports, the buffers' depth): an integer, or None for 1
    (One port, one message, in the module's docstring). None is a type of its own, so Numba
    compiles the caller for it separately, with the constant 1 that LLVM folds into every
    use."""
    if isinstance(value, types.NoneType):
        def codegen(context, builder, signature, args):
            return ir.Constant(ir.IntType(64), 1)
    elif isinstance(value, types.Integer):
        def codegen(context, builder, signature, args):
            return context.cast(builder, args[0], signature.args[0], types.int64)
    else:
        return None
    return types.int64(value), codegen


@intrinsic
def _prefetch(typingctx, array, index):
    """Ask the CPU to bring the cache line of ``array[index]`` in, for writing (LLVM
    ``prefetch``): nothing else happens, and an index past the end is harmless."""
    if not isinstance(array, types.Array) or not isinstance(index, types.Integer):
        return None
    sig = types.void(array, index)

    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        byte = ir.IntType(8).as_pointer()
        word = ir.IntType(32)
        function = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [byte, word, word, word]),
            "llvm.prefetch.p0")
        # Write (1), keep in every cache level (3), data (1).
        builder.call(function, [builder.bitcast(builder.gep(data, [args[1]]), byte),
                                ir.Constant(word, 1), ir.Constant(word, 3), ir.Constant(word, 1)])
        return context.get_dummy_value()
    return sig, codegen


@intrinsic
def _load_acquire(typingctx, array, index):
    """``array[index]`` read with acquire ordering (an LLVM atomic load): the loads after it
    see what the thread that stored the value with :func:`_store_release` wrote before; a
    spin on it is a load in every turn (a plain load may be hoisted out of the loop)."""
    if not isinstance(array, types.Array) or not isinstance(index, types.Integer):
        return None
    sig = types.int64(array, index)

    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        return builder.load_atomic(builder.gep(data, [args[1]]), "acquire", 8)
    return sig, codegen


@intrinsic
def _store_release(typingctx, array, index, value):
    """``array[index] = value`` with release ordering (an LLVM atomic store): every write
    before it is seen by a thread that reads ``value`` with :func:`_load_acquire`."""
    if not isinstance(array, types.Array) or not isinstance(index, types.Integer):
        return None
    sig = types.void(array, index, types.int64)

    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        value = context.cast(builder, args[2], signature.args[2], types.int64)
        builder.store_atomic(value, builder.gep(data, [args[1]]), "release", 8)
        return context.get_dummy_value()
    return sig, codegen


@intrinsic
def _relax(typingctx):
    """Give the core away: the C library's ``sched_yield``, for a thread that has spun long
    enough at a barrier (its partner may have lost its core to another process)."""
    sig = types.void()

    def codegen(context, builder, signature, args):
        function = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.IntType(32), []), "sched_yield")
        builder.call(function, [])
        return context.get_dummy_value()
    return sig, codegen


def _field(bits):
    """An intrinsic pair for ``bits``-wide fields of an int64 array's records, at an index
    in units of the field (as a view of that width would index them): ``get(array, index)``
    sign-extended to int64, ``put(array, index, value)`` truncated. One base address for
    every view of ``cells``: the visit has fewer values to keep in registers."""
    field = ir.IntType(bits)

    @intrinsic
    def get(typingctx, array, index):
        if not isinstance(array, types.Array) or not isinstance(index, types.Integer):
            return None

        def codegen(context, builder, signature, args):
            data = context.make_array(signature.args[0])(context, builder, args[0]).data
            pointer = builder.gep(builder.bitcast(data, field.as_pointer()), [args[1]])
            return builder.sext(builder.load(pointer), ir.IntType(64))
        return types.int64(array, index), codegen

    @intrinsic
    def put(typingctx, array, index, value):
        if not isinstance(array, types.Array) or not isinstance(index, types.Integer):
            return None

        def codegen(context, builder, signature, args):
            data = context.make_array(signature.args[0])(context, builder, args[0]).data
            pointer = builder.gep(builder.bitcast(data, field.as_pointer()), [args[1]])
            v = context.cast(builder, args[2], signature.args[2], types.int64)
            builder.store(builder.trunc(v, field), pointer)
            return context.get_dummy_value()
        return types.void(array, index, value), codegen
    return get, put


_get16, _put16 = _field(16)
_get32, _put32 = _field(32)


#: The barrier's words (:func:`meet`) are this many int64 apart, a cache line each.
LINE = 8
#: Turns a thread spins at a barrier before it yields its core in each further turn.
SPINS = 4000


@njit(cache=True, nogil=True)
def meet(sync, k, T, e):
    """Barrier ``e`` (1, 2, ...) of thread ``k`` of ``T``: wait until every thread has
    arrived at it; False if a thread gave up (``sync[T * LINE]``, its exception), and at
    once if ``sync[T * LINE + 1]`` (a negative control: a barrier that does not wait).

    ``sync[j * LINE]`` is the last barrier thread ``j`` arrived at: one writer per word, no
    atomic read-modify-write. A thread spins :data:`SPINS` turns, then yields its core in
    each turn: on a loaded machine the partner may be waiting for a core.
    """
    _store_release(sync, k * LINE, e)
    if sync[T * LINE + 1]:
        return True
    for j in range(T):
        spins = 0
        while _load_acquire(sync, j * LINE) < e:
            if _load_acquire(sync, T * LINE):
                return False
            spins += 1
            if spins > SPINS:
                _relax()
    return True


@njit(cache=True, inline="always")
def _wants(header, b, exists_b, route_bit, slot_index, A, pe, P):
    """The outputs a head wants at node ``b`` (Router ``want``).

    A broadcast wants the existing links whose travel bit is set and, unless it is in an
    injection buffer (at its origin), its eject port. A unicast wants its eject port if it
    is for ``b``, else link ``route_bit``, the route selector's choice. The eject port of
    slot ``s`` is ``pe + s mod P``. (Helpers take no arrays: Numba would count references to
    them at every call.)
    """
    field = (1 << A) - 1
    # One PE port: no division (a modulo by a run-time divisor costs tens of cycles a hop).
    eject = 1 << (pe if P == 1 else pe + slot_index % P)
    if header >> (3 * A) & 1:
        wants = (header >> (2 * A) & field) & exists_b
        if slot_index < pe:
            wants |= eject
        return wants
    # Whether the message has arrived is random: a select, not a branch.
    return _select(header & field == b, eject, 1 << route_bit)


@njit(cache=True, inline="always")
def _buffer(a, s, S, links):
    """The row of node ``a``'s input buffer on slot ``s``: the PE's is in ``a``'s rows, a
    link's in the rows of the node that writes it, at the link's far end (see Layout).
    ``links`` is the mask of the link slots (all but the PE)."""
    return (a ^ ((1 << s) & links)) * S + s


@njit(cache=True, inline="always")
def _post(wants, b, slot):
    """A new head's requests: the outputs it ``wants`` at node ``b``, from input ``slot``."""
    return wants << _POST_WANTS_SHIFT | b << _POST_SLOT_BITS | slot


@njit(cache=True, inline="always")
def _advance(pointer, depth):
    return 0 if pointer == depth - 1 else pointer + 1


@njit(cache=True)
def cycle(dims, tables, state, t, inj_valid, inj_header, inj_payload, taken, eject_ready,
          deliveries, hops, record_hops, relays, split):
    """Simulate clock cycle ``t`` of the whole fabric.

    ``dims`` is ``(n, D, A, depth, ready_in_reset, P, prefetching, mask, active)`` (``depth``
    and ``P`` None for 1: One port, one message, in the module's docstring; ``mask`` and
    ``active`` a reconfigurable fabric's configuration, 0 and ``n`` for a fixed one: node
    ``a``'s logical address is ``a ^ mask``, and the headers carry physical addresses, the
    logical ones XOR ``mask``), ``tables`` ``(exists, route,
    link_set, travel_masks)``, ``state`` ``(cells, cells32, cells16, refused, refused_count,
    requests, posts)`` (``cells32`` and ``cells16`` are views of ``cells``; ``requests`` is
    ``n * (S + 1)`` words, a node's ``requested`` then its outputs' requests; the module's
    docstring describes them; ``posts``, ``n * S + 1`` int64 words, is scratch: a post is
    written in any case and kept by counting it).

    Port ``p`` of node ``a``'s PE (index ``a * P + p``) offers ``inj_header[a * P + p]`` (dest
    and kind packed as in a header; ``src`` and ``travel`` are stamped here) and
    ``inj_payload[...]`` when ``inj_valid[...]``; ``taken[...]`` is set to whether the
    handshake happened. ``eject_ready[a * P + p]`` is eject port ``p``'s ready. The cycle's
    deliveries are written to the rows of ``deliveries`` as ``(node, header, payload,
    port)``, and if ``record_hops`` its hops to ``hops`` as ``(node, dim,
    header, payload)``. Returns the numbers of deliveries and hops.

    ``relays`` is None for a fabric without stages, else ``(records, popped_room, stages,
    movers, late)``: the relays' records, whether a relay's room counts this cycle's pop (1,
    the RTL's registered room; 0 is a negative control's relay that sees its own pop at
    once), which stages are on (bits :data:`LINK_STAGE`, :data:`SWITCH_STAGE`,
    :data:`EJECT_STAGE`), the switch stages' scratch and late refusals. See Link stages, and
    Switch and eject stages, in the module's docstring. None is a type of its own to Numba,
    which compiles the function for it with every ``relays is not None`` branch left out: the
    loop without stages is the one from before they existed.

    ``split`` is None for the whole fabric on one thread, else thread ``k``'s part of the
    cycle on several (Threads in the module's docstring): ``(k, bounds, pushes, pops,
    counts)``; the thread visits nodes ``bounds[k]`` to ``bounds[k + 1] - 1``, writes its
    deliveries from row ``bounds[k] * P`` and its hops from row ``bounds[k] * max(D, 1)``,
    and its posts from word ``bounds[k] * S + k``. Without it (None) the compiled loop is
    the one-thread loop from before threads.
    """
    n, D, A, depth, ready_in_reset, P, prefetching, mask, active = dims
    depth = _count(depth)
    P = _count(P)
    ahead = PREFETCH_NODES if prefetching else 0
    exists, route, link_set, travel_masks = tables
    cells, cells32, cells16, refused, refused_count, requests, posts = state
    S = D + P
    T = S + 1  # a node's words in `requests`: its requested outputs, then theirs
    pe = D
    R64 = 2 + 2 * depth  # int64 words per slot
    R32 = 2 * R64
    R16 = 4 * R64
    stamp = t % _STAMPS
    if split is not None:
        me, bounds, pushes, pops, counts = split
        lo = bounds[me]
        hi = bounds[me + 1]
        d0 = lo * P
        h0 = lo * max(D, 1)
        p0 = lo * S + me
        n_pushes = lo * max(D, 1)  # the thread's part of `pushes` and `pops`
        n_pops = lo * S
        mo = me * S  # the thread's part of the stages' `movers`
    else:
        mo = 0
        lo = 0
        hi = n
        d0 = h0 = p0 = 0
        # Never written (no buffer is between threads), but typed for the compiler.
        pushes = pops = posts
        n_pushes = n_pops = 0
    if stamp == 0:
        # Old stamps could equal this cycle's: forget them (only this cycle's matter). A
        # thread forgets those of its rows: their pops by another thread's node are stamped
        # by that thread after the visits (settle), and so they are forgotten first.
        for row in range(lo * S, hi * S):
            cells16[row * R16 + POPPED] = -1
    rooms = t > 0 or ready_in_reset  # room is low in the first cycle after reset
    travel_shift = 2 * A
    address = (1 << A) - 1
    full_travel = (1 << D) - 1
    masks = max(D, 1)  # the row length of travel_masks
    n_deliveries = d0
    n_hops = h0
    # The messages that became heads in this cycle (_post): they are not valid before the
    # next cycle, so their requests are posted after every visit. A buffer gets at most one
    # new head per cycle. The array is the model's, not the cycle's: allocating its n * S
    # words afresh in every cycle cost a tenth of the time at n = 2**20 (page faults).
    n_posts = p0
    linked = staged = ejecting = False
    if relays is not None:
        records, popped_room, stages, movers, late = relays
        linked = stages & LINK_STAGE != 0
        staged = stages & SWITCH_STAGE != 0
        ejecting = stages & EJECT_STAGE != 0

    for a in range(lo, hi):
        base = a * S
        ex = exists[_at(a)]
        outputs = requests[_at(a * T)]
        if ahead:
            # A large fabric's state is in memory, not in the caches: ask for what the visit
            # of the node `ahead` places on will touch, so that its misses overlap with this
            # visit (Prefetching). Its own rows and requests; its inputs' rows, far apart,
            # only for the links whose heads request an output (the inputs a move can copy
            # and pop), and only those 2**NEAR_LINKS nodes away or more (the nearer ones
            # are still in the cache, or soon will be: the visits come in node order).
            c = min(a + ahead, hi - 1)
            for w in range(c * S * R64, (c + 1) * S * R64, 8):
                _prefetch(cells, w)
            _prefetch(requests, c * T)
            _prefetch(requests, c * T + S)
            inputs = 0
            wanted = requests[_at(c * T)]
            while wanted:
                o = _lowest(wanted)
                wanted &= wanted - 1
                inputs |= requests[_at(c * T + 1 + o)]
            inputs &= full_travel & ~((1 << NEAR_LINKS) - 1)
            while inputs:
                d = _lowest(inputs)
                inputs &= inputs - 1
                _prefetch(cells, _buffer(c, d, S, full_travel) * R64)
            if relays is not None:
                for w in range(c * S * R64, (c + 1) * S * R64, 8):
                    _prefetch(records, w)

        # The PE's injections: a handshake happens iff the port's injection buffer has
        # room. Its only writer is this PE and its only reader this node: neither has acted
        # yet. Whether a port offers and whether it has room are random: no branch on them.
        # An entry is written in any case: the one at the tail, a free one, unless the
        # buffer is full, where the tail is the head and keeps its own value.
        if relays is not None and staged:
            # Switch stages: the refusals of the cycle before count now (Router: a
            # flip-flop between the injected dest and the count).
            k = late[_at(a)]
            if k:
                refused[_at(a)] = 1
                refused_count[_at(a)] = min(refused_count[_at(a)] + k, _REFUSED_MAX)
                late[_at(a)] = 0
        fresh_pe = 0  # injection buffer 0's head arrived in this cycle
        for p in range(P):
            i = a * P + p
            slot = pe + p
            row = base + slot
            r = row * R16
            count = _get16(cells, r + COUNT)
            header = inj_header[_at(i)]
            took = (inj_valid[_at(i)] != 0) & rooms & (count != depth)
            taken[_at(i)] = took
            if ((header ^ mask) & address >= active and header >> (3 * A) & 1 == 0
                    or a ^ mask >= active) and took:
                # A destination that does not exist, or a node that is not active: taken,
                # dropped, counted. (The rare outcome is tested first: `took` first was a
                # branch on a random outcome, mispredicted 0.39 times a node and cycle in
                # Valgrind's count.)
                if relays is not None and staged:
                    late[_at(a)] += 1  # counted in the next cycle
                    continue
                refused[_at(a)] = 1
                if refused_count[_at(a)] != _REFUSED_MAX:
                    refused_count[_at(a)] += 1
                continue
            header |= a << A | full_travel << travel_shift
            tail = _get16(cells, r + TAIL)
            e = row * R64 + ENTRIES + 2 * tail
            cells[_at(e)] = _select(took, header, cells[_at(e)])
            cells[_at(e + 1)] = _select(took, inj_payload[_at(i)], cells[_at(e + 1)])
            _put16(cells, r + TAIL, _select(took, _advance(tail, depth), tail))
            _put16(cells, r + COUNT, count + took)
            # A message into an empty buffer is the head from the next cycle.
            fresh = took & (count == 0)
            wants = _wants(header, a, ex, route[_at((a ^ header) & ex)], slot, A, pe, P)
            q = row * R32 + PENDING
            _put32(cells, q, _select(fresh, wants, _get32(cells, q)))
            posts[_at(n_posts)] = _post(wants, a, slot)  # kept if fresh (the model's n*S+1)
            n_posts += fresh
            fresh_pe |= fresh & (p == 0)

        if ex == 0:
            # A node without links (n = 1): a broadcast from its PE has nothing to send and
            # leaves as soon as it is valid (Router: nothing left to send pops the head).
            row = base + pe
            q = row * R16
            if (_get16(cells, q + COUNT) > fresh_pe
                    and _get32(cells, row * R32 + PENDING) == 0):
                head = _advance(_get16(cells, q + HEAD), depth)
                _put16(cells, q + HEAD, head)
                _put16(cells, q + POPPED, stamp)
                _put16(cells, q + COUNT, _get16(cells, q + COUNT) - 1)
                if _get16(cells, q + COUNT):
                    header = cells[_at(row * R64 + ENTRIES + 2 * head)]
                    wants = _wants(header, a, ex, route[0], pe, A, pe, P)
                    _put32(cells, row * R32 + PENDING, wants)
                    posts[_at(n_posts)] = _post(wants, a, pe)  # valid from the next cycle
                    n_posts += 1

        # Link stages: each relay that holds a message hands its oldest on to the buffer at
        # the link's far end if that has room (its count when the cycle began, as for a
        # move below). This is the link's transfer, the hop. The relays that did are in
        # `sent`: their room (for the arbiters below) is that of the cycle's start.
        sent = 0
        if relays is not None and linked:
            scan = ex
            while scan:
                o = _lowest(scan)
                scan &= scan - 1
                port = base + o
                r = port * R16  # the relay's fields, and the far buffer's (_buffer)
                held = _get16(records, r + COUNT)
                if held == 0 or not rooms or (_get16(cells, r + COUNT)
                                              + (_get16(cells, r + POPPED) == stamp)) == depth:
                    continue
                oldest = _get16(records, r + HEAD)
                e = port * R64 + ENTRIES + 2 * oldest
                header = records[_at(e)]
                payload = records[_at(e + 1)]
                _put16(records, r + HEAD, _advance(oldest, depth))
                _put16(records, r + COUNT, held - 1)
                sent |= 1 << o
                b = a ^ (1 << o)
                tail = _get16(cells, r + TAIL)
                f = port * R64 + ENTRIES + 2 * tail
                cells[_at(f)] = header
                cells[_at(f + 1)] = payload
                _put16(cells, r + TAIL, _advance(tail, depth))
                crossing = False
                if split is not None:
                    crossing = b < lo or b >= hi
                if crossing:
                    # Another thread's node reads the buffer: the push counts in settle.
                    pushes[_at(n_pushes)] = _post(port, b, o)
                    n_pushes += 1
                else:
                    count = _get16(cells, r + COUNT) + 1
                    _put16(cells, r + COUNT, count)
                    if count == 1:  # the head from the next cycle
                        ex_b = exists[_at(b)]
                        wants = _wants(header, b, ex_b, route[_at((b ^ header) & ex_b)], o, A,
                                       pe, P)
                        _put32(cells, port * R32 + PENDING, wants)
                        posts[_at(n_posts)] = _post(wants, b, o)
                        n_posts += 1
                if record_hops:
                    hops[n_hops, 0] = a
                    hops[n_hops, 1] = o
                    hops[n_hops, 2] = header
                    hops[n_hops, 3] = payload
                n_hops += 1

        # Eject stages: each eject port's relay that holds a message hands its oldest to the
        # PE if the PE is ready: that is the delivery. The relays that did are in `ejected`
        # (their room, for the arbiters below, is that of the cycle's start).
        ejected = 0
        if relays is not None and ejecting:
            for p in range(P):
                row = base + pe + p
                r = row * R16
                held = _get16(records, r + COUNT)
                if held == 0 or eject_ready[_at(a * P + p)] == 0:
                    continue
                oldest = _get16(records, r + HEAD)
                e = row * R64 + ENTRIES + 2 * oldest
                deliveries[n_deliveries, 0] = a
                deliveries[n_deliveries, 1] = records[_at(e)]
                deliveries[n_deliveries, 2] = records[_at(e + 1)]
                deliveries[n_deliveries, 3] = p
                n_deliveries += 1
                _put16(records, r + HEAD, _advance(oldest, depth))
                _put16(records, r + COUNT, held - 1)
                ejected |= 1 << p

        # Every requested output's round-robin arbiter (RoundRobinArbiter) over the valid
        # heads that still want it (Router: valid & want & ~done) grants one input; the copy
        # moves if the output is ready, else the arbiter holds the grant. All of the node's
        # arbiters decide first, in one pass without a branch on the data (a decision reads
        # only its own output's registers and far buffer, none of which this node's moves
        # change), and the moves follow: the outcomes (ready or not, locked or not, which
        # input) are random, and a branch on each cost a mispredicted branch every other
        # output. The eject port is ready if the PE is; a link if the buffer at its far end
        # has room: this node is that buffer's only writer, so its count when the cycle
        # began is COUNT, plus one if its own node popped in this cycle. Row `port` is that
        # buffer for a link (_buffer), the injection buffer for the PE, read but unused.
        moves = 0
        scan = outputs
        while scan:
            o = _lowest(scan)
            scan &= scan - 1
            port = base + o
            req = requests[_at(a * T + 1 + o)]
            arbiter = port * R16
            locked = _get16(cells, arbiter + HELD)
            last = _get16(cells, arbiter + LAST)
            after = req & ~((2 << last) - 1)
            g = _select(locked >= 0, locked, _lowest(_select(after != 0, after, req)))
            if relays is not None and linked:
                # A link's arbiter sees its relay's room: the relay's count when the cycle
                # began (this node is its only reader and writer) is not the depth.
                link_ready = rooms & ((_get16(records, arbiter + COUNT)
                                       + (sent >> o & popped_room)) != depth)
            else:
                link_ready = rooms & ((_get16(cells, arbiter + COUNT)
                                       + (_get16(cells, arbiter + POPPED) == stamp)) != depth)
            port_ready = a if P == 1 else a * P + _select(o >= pe, o - pe, 0)
            eject = eject_ready[_at(port_ready)] != 0
            if relays is not None and ejecting and o >= pe:
                # The eject port's relay's room, as a link relay's above.
                eject = rooms & ((_get16(records, arbiter + COUNT)
                                  + (ejected >> (o - pe) & popped_room)) != depth)
            ready = _select(o >= pe, eject, link_ready)
            if relays is not None and staged:
                # Switch stages (Router._stage): HELD is the input the output's stage holds
                # (-1: empty). A staged copy moves if the output is ready; the arbiter (no
                # hold of its own) allocates into the stage when it is empty or being
                # emptied, among the requests but the staged input's, and its `last` moves
                # only then.
                has = locked >= 0
                transfer = has and ready != 0
                masked = req & ~(np.int64(has) << max(locked, 0))
                choice = -1
                if (not has or transfer) and masked:
                    after = masked & ~((2 << last) - 1)
                    choice = _lowest(after if after else masked)
                    _put16(cells, arbiter + LAST, choice)
                if not has or transfer:
                    _put16(cells, arbiter + HELD, choice)
                movers[_at(mo + o)] = locked
                waiting = req & ~(np.int64(transfer) << max(locked, 0))
                requests[_at(a * T + 1 + o)] = waiting
                moves |= np.int64(transfer) << o
                outputs &= ~(np.int64(waiting == 0) << o)
                continue
            _put16(cells, arbiter + HELD, _select(ready != 0, -1, g))
            _put16(cells, arbiter + LAST, _select(ready != 0, g, last))
            waiting = req & ~(ready << g)
            requests[_at(a * T + 1 + o)] = waiting
            moves |= ready << o
            outputs &= ~(np.int64(waiting == 0) << o)
        requests[_at(a * T)] = outputs

        # The moves: output o copies the head of input LAST (its grant).
        while moves:
            o = _lowest(moves)
            moves &= moves - 1
            port = base + o
            g = np.int64(_get16(cells, port * R16 + LAST))
            if relays is not None and staged:
                g = movers[_at(mo + o)]  # the input its stage held
            row = _buffer(a, g, S, full_travel)
            q = row * R16
            e = row * R64 + ENTRIES + 2 * _get16(cells, q + HEAD)
            header = cells[_at(e)]
            payload = cells[_at(e + 1)]
            relayed = False
            if relays is not None:
                relayed = ejecting if o >= pe else linked
            if relays is not None and relayed:
                # Into the output's relay at its tail (a link's, or an eject port's with eject
                # stages), which hands it on from the next cycle; the copy on link o as
                # travel AND travel_mask(o).
                if o < pe:
                    keep = travel_masks[_at(link_set[_at(a)] * masks + o)]
                    header &= ~(address << travel_shift) | keep << travel_shift
                rr = port * R16
                tail = _get16(records, rr + TAIL)
                f = port * R64 + ENTRIES + 2 * tail
                records[_at(f)] = header
                records[_at(f + 1)] = payload
                _put16(records, rr + TAIL, _advance(tail, depth))
                _put16(records, rr + COUNT, _get16(records, rr + COUNT) + 1)
            elif o >= pe:
                deliveries[n_deliveries, 0] = a
                deliveries[n_deliveries, 1] = header
                deliveries[n_deliveries, 2] = payload
                deliveries[n_deliveries, 3] = o - pe
                n_deliveries += 1
            else:
                b = a ^ (1 << o)
                far = port  # b's buffer on link o is in this node's rows (_buffer)
                r = far * R16
                # The copy on link o keeps travel AND travel_mask(o) (topology.travel_mask).
                keep = travel_masks[_at(link_set[_at(a)] * masks + o)]
                header &= ~(address << travel_shift) | keep << travel_shift
                tail = _get16(cells, r + TAIL)
                f = far * R64 + ENTRIES + 2 * tail
                cells[_at(f)] = header
                cells[_at(f + 1)] = payload
                _put16(cells, r + TAIL, _advance(tail, depth))
                crossing = False
                if split is not None:
                    crossing = b < lo or b >= hi
                if crossing:
                    # Another thread's node reads the buffer: the push counts in settle.
                    pushes[_at(n_pushes)] = _post(far, b, o)
                    n_pushes += 1
                else:
                    count = _get16(cells, r + COUNT) + 1
                    _put16(cells, r + COUNT, count)
                    if count == 1:  # the head from the next cycle
                        ex_b = exists[_at(b)]
                        wants = _wants(header, b, ex_b, route[_at((b ^ header) & ex_b)], o, A,
                                       pe, P)
                        _put32(cells, far * R32 + PENDING, wants)
                        posts[_at(n_posts)] = _post(wants, b, o)
                        n_posts += 1
                if record_hops:
                    hops[n_hops, 0] = a
                    hops[n_hops, 1] = o
                    hops[n_hops, 2] = header
                    hops[n_hops, 3] = payload
                n_hops += 1
            # The copy is done; the head leaves with its last copy, and the next message is
            # the head from the next cycle.
            p = row * R32 + PENDING
            pending = _get32(cells, p) & ~(1 << o)
            _put32(cells, p, pending)
            if pending == 0:
                head = _advance(_get16(cells, q + HEAD), depth)
                _put16(cells, q + HEAD, head)
                crossing = False
                if split is not None:
                    w = a ^ ((1 << g) & full_travel)  # the buffer's writer
                    crossing = w < lo or w >= hi
                if crossing:
                    # Another thread's node writes the buffer and checks its room: the pop
                    # counts, and is stamped, in settle. The messages left are those of the
                    # cycle's start: a copy written in this cycle is the head from settle.
                    count = _get16(cells, q + COUNT) - 1
                    pops[_at(n_pops)] = row
                    n_pops += 1
                else:
                    _put16(cells, q + POPPED, stamp)
                    count = _get16(cells, q + COUNT) - 1
                    _put16(cells, q + COUNT, count)
                if count:
                    header = cells[_at(row * R64 + ENTRIES + 2 * head)]
                    wants = _wants(header, a, ex, route[_at((a ^ header) & ex)], g, A, pe, P)
                    _put32(cells, p, wants)
                    posts[_at(n_posts)] = _post(wants, a, g)
                    n_posts += 1
    # Every arbiter has decided: the new heads' requests count from the next cycle. (On
    # several threads, these are the thread's own nodes': the others' are made in settle.)
    for k in range(p0, n_posts):
        if ahead:
            # The node of a post a few ahead (posts[n_posts], not a post, is harmless).
            later = posts[_at(min(k + PREFETCH_POSTS, n_posts))]
            c = later >> _POST_SLOT_BITS & _POST_NODE_MASK
            _prefetch(requests, c * T)
            _prefetch(requests, c * T + 1 + _lowest(later >> _POST_WANTS_SHIFT | 1 << 31))
        post = posts[_at(k)]
        b = post >> _POST_SLOT_BITS & _POST_NODE_MASK
        slot = post & ((1 << _POST_SLOT_BITS) - 1)
        wants = post >> _POST_WANTS_SHIFT
        requests[_at(b * T)] |= wants
        while wants:
            p = _lowest(wants)
            wants &= wants - 1
            requests[_at(b * T + 1 + p)] |= 1 << slot
    if split is not None:
        counts[_at(me * LINE)] = n_pushes - lo * max(D, 1)
        counts[_at(me * LINE + 1)] = n_pops - lo * S
    return n_deliveries - d0, n_hops - h0


@njit(cache=True)
def relayed_dests(tables, D, src, node, dim, dest):
    """The ``dest`` fields that broadcast copies carry as the RTL drives them
    (:func:`ihcube.topology.relayed_dest`): copy ``k`` from ``src[k]``, sent by ``node[k]``
    on link ``dim[k]``, whose origin gave ``dest[k]``. Every router on the unicast path from
    the origin, and ``node[k]`` itself, drives the bits of an outgoing link's ``dest`` that
    the route selector has already decided (those the link's travel mask clears) with the
    far end's address. The path and masks come from the model's ``tables`` (``cycle``):
    ``O(D)`` steps a copy."""
    exists, route, link_set, travel_masks = tables
    masks = max(D, 1)
    full = (1 << D) - 1
    out = np.empty(len(src), np.int64)
    for k in range(len(src)):
        here = src[k]
        got = dest[k]
        while True:  # each hop of the path to node[k], then node[k]'s own link dim[k]
            last = here == node[k]
            step = dim[k] if last else np.int64(route[(here ^ node[k]) & exists[here]])
            there = here ^ (1 << step)
            known = full & ~travel_masks[link_set[here] * masks + step]
            got = got & ~known | there & known
            if last:
                break
            here = there
        out[k] = got
    return out


@njit(cache=True, nogil=True)
def settle(dims, tables, state, t, split):
    """The second phase of cycle ``t`` for thread ``split[0]``, after every thread's
    :func:`cycle`: the pops and pushes of the buffers between its nodes and another thread's
    count, and a message written into such a buffer that is its head from the next cycle
    (the buffer was empty, or its one message left) posts its requests (Threads).

    The thread settles the buffers its nodes read: its own pops, and the others' pushes into
    them, pops first (a buffer's count is never below zero). Only it writes those buffers'
    counts and stamps in this phase, and the requests of its nodes.
    """
    n, D, A, depth, ready_in_reset, P, prefetching, mask, active = dims
    depth = _count(depth)
    P = _count(P)
    exists, route, link_set, travel_masks = tables
    cells, cells32, cells16, refused, refused_count, requests, posts = state
    me, bounds, pushes, pops, counts = split
    S = D + P
    T = S + 1
    M = max(D, 1)
    R64 = 2 + 2 * depth
    R32 = 2 * R64
    R16 = 4 * R64
    stamp = t % _STAMPS
    lo = bounds[me]
    hi = bounds[me + 1]
    for i in range(lo * S, lo * S + counts[_at(me * LINE + 1)]):
        q = pops[_at(i)] * R16
        cells16[_at(q + COUNT)] -= 1
        cells16[_at(q + POPPED)] = stamp
    for j in range(len(bounds) - 1):
        if j == me:
            continue
        first = bounds[j] * M
        for i in range(first, first + counts[_at(j * LINE)]):
            push = pushes[_at(i)]
            b = push >> _POST_SLOT_BITS & _POST_NODE_MASK
            if b < lo or b >= hi:
                continue
            o = push & ((1 << _POST_SLOT_BITS) - 1)
            far = push >> _POST_WANTS_SHIFT
            r = far * R16
            count = cells16[_at(r + COUNT)] + 1
            cells16[_at(r + COUNT)] = count
            if count == 1:  # the head from the next cycle
                header = cells[_at(far * R64 + ENTRIES + 2 * cells16[_at(r + HEAD)])]
                ex_b = exists[_at(b)]
                wants = _wants(header, b, ex_b, route[_at((b ^ header) & ex_b)], o, A, D, P)
                cells32[_at(far * R32 + PENDING)] = wants
                requests[_at(b * T)] |= wants
                while wants:
                    p = _lowest(wants)
                    wants &= wants - 1
                    requests[_at(b * T + 1 + p)] |= 1 << o


@njit(cache=True, nogil=True)
def _phases(dims, tables, state, t, inj_valid, inj_header, inj_payload, taken, eject_ready,
            deliveries, hops, record_hops, relays, split, sync, e):
    """Thread ``split[0]``'s cycle ``t`` after barrier ``e``: its :func:`cycle`, barrier
    ``e + 1``, :func:`settle`, barrier ``e + 2``. Returns its numbers of deliveries and hops
    (also in its ``counts``), or -1 if a thread gave up."""
    me, counts = split[0], split[4]
    T = len(split[1]) - 1
    got_d, got_h = cycle(dims, tables, state, t, inj_valid, inj_header, inj_payload, taken,
                         eject_ready, deliveries, hops, record_hops, relays, split)
    counts[_at(me * LINE + 2)] = got_d
    counts[_at(me * LINE + 3)] = got_h
    if not meet(sync, me, T, e + 1):
        return -1, -1
    settle(dims, tables, state, t, split)
    if not meet(sync, me, T, e + 2):
        return -1, -1
    return got_d, got_h


@njit(cache=True, nogil=True)
def queue_worker(dims, tables, state, eject_ready, record_hops, relays, split, sync, shared):
    """Thread ``split[0]`` (not 0) of a threaded :func:`run_queues`: in each cycle, from the
    barrier at which thread 0 has offered the heads (``shared``'s ``control``: the cycle,
    the row of ``eject_ready``, and whether to stop), the thread's :func:`_phases`."""
    inj_valid, inj_header, inj_payload, taken, deliveries, hops, control = shared
    me = split[0]
    T = len(split[1]) - 1
    e = np.int64(1)  # not the literal 1, for which Numba compiles _phases once more
    while meet(sync, me, T, e) and not control[2]:
        got_d, got_h = _phases(dims, tables, state, control[0], inj_valid, inj_header,
                               inj_payload, taken, eject_ready[control[1]], deliveries, hops,
                               record_hops, relays, split, sync, e)
        if got_d < 0:
            return
        e += 3


@njit(cache=True, nogil=True)
def _gather(split, deliveries, hops, P, M, record_hops):
    """Thread 0, after a threaded cycle: move each thread's deliveries and hops after the
    previous thread's (the order of one thread's cycle); return their numbers."""
    bounds, counts = split[1], split[4]
    n_d = counts[2]
    n_h = counts[3]
    for j in range(1, len(bounds) - 1):
        first = bounds[j] * P
        for i in range(first, first + counts[_at(j * LINE + 2)]):
            for f in range(4):
                deliveries[_at(n_d), f] = deliveries[_at(i), f]
            n_d += 1
        first = bounds[j] * M
        for i in range(first, first + counts[_at(j * LINE + 3)]):
            if record_hops:
                for f in range(4):
                    hops[_at(n_h), f] = hops[_at(i), f]
            n_h += 1
    return n_d, n_h


#: A source queue entry's columns in ``pool`` (see :func:`enqueue`).
Q_HEADER, Q_PAYLOAD, Q_AT, Q_ID, Q_NEXT = range(5)
#: A node's columns in ``ends``: its queue's first and last entries and its length.
Q_FIRST, Q_LAST, Q_COUNT = range(3)


@njit(cache=True)
def _compact(pool, ends, fill, room):
    """``pool`` rewritten with each node's queue contiguous and in order, holding at least
    ``room`` more entries (taken entries are dropped; the size doubles as needed)."""
    n = ends.shape[0]
    live = 0
    for a in range(n):
        live += ends[a, Q_COUNT]
    size = max(pool.shape[0], 16)
    while size < 2 * (live + room):
        size *= 2
    out = np.empty((size, pool.shape[1]), np.int64)
    r = 0
    for a in range(n):
        i = ends[a, Q_FIRST]
        for k in range(ends[a, Q_COUNT]):
            out[r] = pool[i]
            i = pool[i, Q_NEXT]
            out[r, Q_NEXT] = r + 1
            if k == 0:
                ends[a, Q_FIRST] = r
            ends[a, Q_LAST] = r
            r += 1
        if ends[a, Q_COUNT]:
            out[r - 1, Q_NEXT] = -1
    fill[0] = r
    return out


@njit(cache=True)
def enqueue(pool, ends, fill, nodes, dests, kinds, payloads, at, first_id, A, payload_mask):
    """Append messages to the PEs' source queues; return the pool (a new one if it grew) and
    ``(-1, -1)``, or, appending nothing, the pool and the first wrong entry and its field
    (0: node not in ``0 .. n - 1``, 1: dest not in ``0 .. 2**A - 1``, 2: kind not 0 or 1).

    The queues are linked lists in one ``pool`` of rows ``(header, payload, at, id, next)``
    (:data:`Q_HEADER` ...), of which ``fill[0]`` are used; ``ends[a]`` is node ``a``'s
    ``(first, last, count)`` (:data:`Q_FIRST` ...). Message ``j`` goes to the end of node
    ``nodes[j]``'s queue with the id ``first_id + j``, its payload cut to ``payload_mask``.
    A full pool is compacted (and grown): appending costs a constant per message, whatever
    the queues' lengths.
    """
    n = ends.shape[0]
    k = len(nodes)
    for j in range(k):
        if not 0 <= nodes[j] < n:
            return pool, j, 0
        if dests[j] >> A != 0:
            return pool, j, 1
        if kinds[j] >> 1 != 0:
            return pool, j, 2
    if fill[0] + k > pool.shape[0]:
        pool = _compact(pool, ends, fill, k)
    for j in range(k):
        r = fill[0]
        fill[0] = r + 1
        a = nodes[j]
        pool[r, Q_HEADER] = dests[j] | kinds[j] << (3 * A)
        pool[r, Q_PAYLOAD] = np.int64(payloads[j] & payload_mask)
        pool[r, Q_AT] = at[j]
        pool[r, Q_ID] = first_id + j
        pool[r, Q_NEXT] = -1
        if ends[a, Q_COUNT]:
            pool[ends[a, Q_LAST], Q_NEXT] = r
        else:
            ends[a, Q_FIRST] = r
        ends[a, Q_LAST] = r
        ends[a, Q_COUNT] += 1
    return pool, -1, -1


@njit(cache=True)
def _grow(records, need):
    """Return ``records`` with at least ``need`` entries (doubling)."""
    size = records.shape[0]
    while size < need:
        size *= 2
    if size == records.shape[0]:
        return records
    bigger = np.empty(size, records.dtype)
    bigger[:records.shape[0]] = records
    return bigger


@njit(cache=True, inline="always")
def _message(record, header, payload, A):
    """Unpack a header and payload word into a DELIVERY or HOP record's fields."""
    field = (1 << A) - 1
    record.dest = header & field
    record.src = header >> A & field
    record.travel = header >> 2 * A & field
    record.kind = header >> 3 * A & 1
    record.payload = np.uint64(payload)


@njit(cache=True, inline="always")
def _injected(injections, n_inj, t, a, pool, ends, P):
    """Record that source queue ``a`` (node ``a // P``'s port ``a % P``) had its head taken in
    cycle ``t``, and pop it; return the records' new count."""
    i = ends[_at(a), Q_FIRST]
    record = injections[_at(n_inj)]
    record.cycle = t
    record.node = a // P
    record.request = pool[_at(i), Q_ID]
    ends[_at(a), Q_FIRST] = pool[_at(i), Q_NEXT]
    ends[_at(a), Q_COUNT] -= 1
    return n_inj + 1


@njit(cache=True, inline="always")
def splitmix(state):
    """The next state and output of SplitMix64 (Steele, Lea and Flood, 2014)."""
    state = state + np.uint64(0x9E3779B97F4A7C15)
    z = state
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return state, z ^ (z >> np.uint64(31))


@njit(cache=True, inline="always")
def unit(bits):
    """A float in [0, 1) from the top 53 bits."""
    return np.float64(bits >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@njit(cache=True, inline="always")
def draw_dest(dests, start, cumulative, classes, a, u, v):
    """A destination for source ``a`` from its row of a destination table and two uniform
    numbers, ``u`` choosing the class (the first whose ``cumulative`` exceeds it) and ``v``
    the ``j``-th node of it, ``j = int((start[a, k + 1] - start[a, k]) * v)``
    (:class:`ihcube.sim.traffic.Pattern` describes the table). The node is ``dests[a,
    start[a, k] + j]``, or, if ``classes`` has rows (then ``dests`` is not read), the
    ``j``-th node ``b < n`` by number ``classes[k, 0]`` to ``classes[k, 1]`` hops from ``a``
    (:func:`~ihcube.sim.by_distance.class_member`): the same node as the table's."""
    k = 0
    while u >= cumulative[a, k]:
        k += 1
    lo = start[a, k]
    j = np.int64((start[a, k + 1] - lo) * v)
    if len(classes):
        return class_member(len(start), a, classes[k, 0], classes[k, 1], j)
    return dests[a, lo + j]


@njit(cache=True, nogil=True)
def run_queues(dims, tables, state, t0, cycles, pool, ends, fill, eject_ready, record_hops,
               count_links, link_count, until, links, injections, deliveries, hops, totals,
               traffic, first_id, payload_mask, relays, threads):
    """Run up to ``cycles`` cycles from cycle ``t0`` with each PE offering its source queue.

    Port ``p`` of node ``a``'s PE offers the head of queue ``a * P + p`` (``pool``, ``ends``
    and ``fill``, see :func:`enqueue`) once the head's ``at`` cycle has come, as
    :class:`~ihcube.verify.harness.FabricHarness` does, and the head leaves the queue when it
    is taken. ``eject_ready`` is ``(cycles, n * P)``, or ``(1, n * P)`` for the same row every
    cycle; ``links`` bounds a cycle's hops. If ``count_links``, ``link_count[a * M + i]``
    (``M = max(D, 1)``) counts the messages sent on link ``i`` from ``a``. The run stops
    early at the end of the first cycle after which it has made ``until`` deliveries, if
    ``until >= 0``.

    ``traffic`` is ``(threshold, rng, dests, start, cumulative, classes)``
    (:class:`~ihcube.sim.model.RandomTraffic`), or has an empty ``threshold`` for none; only
    with ``P = 1``. With it, every cycle, node by node, before the heads are offered:
    SplitMix64 from ``rng[0]`` draws once, and if the draw's top 53 bits are below
    ``threshold[a]`` draws twice more for a destination (:func:`draw_dest`); the unicast,
    its payload the cycle (cut to ``payload_mask``), goes to the end of the node's queue
    with the next id from ``first_id``. Generating here, in the pass that offers the heads,
    spares a pass of its own, the arrays between and :func:`enqueue`'s checks: a sweep point
    took 1.18 to 1.41 times the CPU time of the fused loop that preceded the source queues
    with those, about 1.15 with this.

    ``injections``, ``deliveries`` and ``hops`` are structured arrays of INJECTION, DELIVERY
    and HOP records (:mod:`ihcube.sim.model`) to write into (they are grown as needed);
    ``totals`` accumulates the injections, deliveries and hops. Returns the cycles run, the
    three arrays, trimmed (``hops`` is empty unless ``record_hops``), the pool (a new one if
    it grew) and the number of messages generated.

    ``threads`` is None, or ``(split, sync, shared)`` for thread 0 of several, the others
    running :func:`queue_worker`: this thread offers the heads and gathers the records, each
    cycle's visits are split (:func:`_phases`), and ``shared`` holds the arrays the threads
    share (:func:`queue_worker`).
    """
    n, D, A, P = dims[0], dims[1], dims[2], _count(dims[5])
    nq = n * P  # source queues: one per node and injection port
    M = max(D, 1)
    threshold, rng, dests, start, cumulative, classes = traffic
    generating = len(threshold) != 0
    see_hops = record_hops or count_links
    if threads is None:
        inj_valid = np.zeros(nq, np.uint8)
        inj_header = np.zeros(nq, np.int64)
        inj_payload = np.zeros(nq, np.int64)
        taken = np.zeros(nq, np.uint8)
        step_deliveries = np.zeros((nq, 4), np.int64)
        step_hops = np.zeros((links if see_hops else 0, 4), np.int64)
    else:
        split, sync, shared = threads
        inj_valid, inj_header, inj_payload, taken, step_deliveries, step_hops, control = shared
        n_threads = len(split[1]) - 1
        e = np.int64(1)  # not the literal 1, for which Numba compiles _phases once more
    same_ready = eject_ready.shape[0] == 1
    x = rng[0] if generating else np.uint64(0)
    next_id = first_id
    n_inj = 0
    n_del = 0
    n_hop = 0
    c = 0
    while c < cycles:
        t = t0 + c
        if generating and fill[0] + n > pool.shape[0]:
            pool = _compact(pool, ends, fill, n)
        injections = _grow(injections, n_inj + nq)
        for a in range(nq):  # a queue: node a // P, port a % P (a node when P = 1)
            if taken[_at(a)]:  # taken in the cycle before: the head leaves the queue
                n_inj = _injected(injections, n_inj, t - 1, a, pool, ends, P)
            if generating:
                x, bits = splitmix(x)
                if np.int64(bits >> np.uint64(11)) < threshold[_at(a)]:
                    x, u = splitmix(x)
                    x, v = splitmix(x)
                    r = fill[0]
                    fill[0] = r + 1
                    pool[_at(r), Q_HEADER] = draw_dest(dests, start, cumulative, classes, a,
                                                       unit(u), unit(v))
                    pool[_at(r), Q_PAYLOAD] = t & payload_mask
                    pool[_at(r), Q_AT] = t
                    pool[_at(r), Q_ID] = next_id
                    pool[_at(r), Q_NEXT] = -1
                    next_id += 1
                    if ends[_at(a), Q_COUNT]:
                        pool[_at(ends[_at(a), Q_LAST]), Q_NEXT] = r
                    else:
                        ends[_at(a), Q_FIRST] = r
                    ends[_at(a), Q_LAST] = r
                    ends[_at(a), Q_COUNT] += 1
            i = ends[_at(a), Q_FIRST]
            if ends[_at(a), Q_COUNT] and pool[_at(i), Q_AT] <= t:
                inj_valid[_at(a)] = 1
                inj_header[_at(a)] = pool[_at(i), Q_HEADER]
                inj_payload[_at(a)] = pool[_at(i), Q_PAYLOAD]
            else:
                inj_valid[_at(a)] = 0
        if threads is None:
            got_d, got_h = cycle(dims, tables, state, t, inj_valid, inj_header, inj_payload,
                                 taken, eject_ready[0 if same_ready else c], step_deliveries,
                                 step_hops, see_hops, relays, None)
        else:
            control[0] = t
            control[1] = 0 if same_ready else c
            if not meet(sync, 0, n_threads, e):
                break
            got_d, got_h = _phases(dims, tables, state, t, inj_valid, inj_header, inj_payload,
                                   taken, eject_ready[control[1]], step_deliveries, step_hops,
                                   see_hops, relays, split, sync, e)
            if got_d < 0:
                break
            e += 3
            got_d, got_h = _gather(split, step_deliveries, step_hops, P, M, see_hops)

        deliveries = _grow(deliveries, n_del + got_d)
        for k in range(got_d):
            record = deliveries[_at(n_del)]
            record.cycle = t
            record.node = step_deliveries[_at(k), 0]
            record.port = step_deliveries[_at(k), 3]
            _message(record, step_deliveries[_at(k), 1], step_deliveries[_at(k), 2], A)
            n_del += 1
        if record_hops:
            hops = _grow(hops, n_hop + got_h)
            for k in range(got_h):
                record = hops[n_hop]
                record.cycle = t
                record.node = step_hops[k, 0]
                record.dim = step_hops[k, 1]
                _message(record, step_hops[k, 2], step_hops[k, 3], A)
                n_hop += 1
        if count_links:
            for k in range(got_h):
                link_count[_at(step_hops[_at(k), 0] * M + step_hops[_at(k), 1])] += 1
        totals[2] += got_h
        c += 1
        if 0 <= until <= n_del:
            break
    if threads is not None:
        control[2] = 1  # the workers stop at the next barrier
        meet(sync, 0, n_threads, e)
    injections = _grow(injections, n_inj + nq)
    for a in range(nq):
        if taken[_at(a)]:
            n_inj = _injected(injections, n_inj, t0 + c - 1, a, pool, ends, P)
    if generating:
        rng[0] = x
    totals[0] += n_inj
    totals[1] += n_del
    return (c, injections[:n_inj], deliveries[:n_del], hops[:n_hop], pool,
            next_id - first_id)


@njit(cache=True, inline="always")
def _mix(key):
    """A 64-bit hash of ``key`` (the SplitMix64 finaliser, Steele et al., 2014): every
    output bit depends on every input bit, so neighbouring keys give unrelated draws."""
    key = (key ^ (key >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    key = (key ^ (key >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return key ^ (key >> np.uint64(31))


@njit(cache=True)
def uniform_stream(seed):
    """The hashed seed of a :func:`run_uniform` run: every draw of the run starts from it."""
    return _mix(np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(1))


@njit(cache=True, inline="always")
def uniform_draw(stream, a, t):
    """Node ``a``'s random draw for cycle ``t`` in the run of ``stream``: its high 32 bits
    decide whether a message is generated (:func:`uniform_threshold`), its low 32 bits the
    destination (:func:`uniform_dest`)."""
    return _mix(stream ^ (np.uint64(a) << np.uint64(40) | np.uint64(t)))


@njit(cache=True)
def uniform_threshold(rate, n):
    """The bound below which a draw's high 32 bits generate: probability ``rate`` (1 always
    generates). A one-node fabric generates nothing: there is no other node."""
    return np.uint64(rate * (1 << 32)) if n > 1 else np.uint64(0)


@njit(cache=True, inline="always")
def uniform_dest(draw, a, n):
    """The destination of node ``a``'s message of ``draw``: uniform over the other nodes to
    within ``n / 2**32`` (Lemire's multiply-shift)."""
    d = np.int64(((draw & np.uint64(0xFFFFFFFF)) * np.uint64(max(n - 1, 1))) >> np.uint64(32))
    return d + (d >= a)


@njit(cache=True, nogil=True)
def run_uniform(dims, tables, state, t0, cycles, rate, seed, payload_mask, totals, relays,
                threads):
    """Run ``cycles`` cycles of uniform random traffic from cycle ``t0``.

    Each node generates a unicast with probability ``rate`` per cycle to a node drawn
    uniformly from the others, into an unbounded source queue whose head its PE offers. The
    payload carries the generation cycle, so that a delivery gives its latency. Every PE
    accepts every cycle.

    The queues take no memory: node ``a``'s draw for cycle ``t`` is a hash of ``(seed, a,
    t)`` (:func:`uniform_draw`), so a queue is its length and its head's generation cycle,
    and the message after the head is found again by drawing the cycles after the head's
    until one generates. Each cycle is drawn at most twice, and a saturated run's backlog costs
    nothing (a queue in memory cost a cache miss per node and cycle at ``n`` = 1024, and
    grew without bound).

    ``totals`` (int64) accumulates ``generated, injected, delivered, latency_sum, hops,
    latency_max, queued``; the last is the number left in the queues at the end.

    ``threads`` is None, or ``(split, sync, shared)`` for thread ``split[0]`` of several,
    each running this function on the same ``shared`` arrays (``inj_valid, inj_header,
    inj_payload, taken, deliveries, q_count, q_head``) with its own ``totals``: each draws
    and offers for its own nodes, and the cycles' visits are split (:func:`_phases`).
    """
    n = dims[0]
    eject_ready = np.ones(n, np.uint8)
    step_hops = np.zeros((0, 4), np.int64)
    if threads is None:
        inj_valid = np.zeros(n, np.uint8)
        inj_header = np.zeros(n, np.int64)
        inj_payload = np.zeros(n, np.int64)
        taken = np.zeros(n, np.uint8)
        step_deliveries = np.zeros((n, 4), np.int64)
        q_count = np.zeros(n, np.int64)
        q_head = np.zeros(n, np.int64)  # the generation cycle of the queue's head
        lo = 0
        hi = n
    else:
        split, sync, shared = threads
        inj_valid, inj_header, inj_payload, taken, step_deliveries, q_count, q_head = shared
        lo = split[1][split[0]]
        hi = split[1][split[0] + 1]
        e = np.int64(1)  # not the literal 1, for which Numba compiles _phases once more

    # False as a bool, not the literal False: cycle and _phases are then the ones run_queues
    # runs (a literal would make Numba compile each of them once more).
    no_hops = np.bool_(False)
    stream = uniform_stream(seed)
    threshold = uniform_threshold(rate, n)
    generated = injected = delivered = latency_sum = hops = latency_max = 0

    for c in range(cycles):
        t = t0 + c
        for a in range(lo, hi):
            took = np.int64(taken[a])
            count = q_count[a] - took
            injected += took
            x = uniform_draw(stream, a, t)
            new = np.int64((x >> np.uint64(32)) < threshold)
            q_count[a] = count + new
            generated += new
            inj_valid[a] = count + new != 0
            if took and count:
                # The next message: the first cycle after the head's that generated one. It
                # is before this cycle (the queue held it).
                s = q_head[a] + 1
                x = uniform_draw(stream, a, s)
                while (x >> np.uint64(32)) >= threshold:
                    s += 1
                    x = uniform_draw(stream, a, s)
            elif count == 0 and new:
                s = t  # an empty queue: this cycle's message is the head at once
            else:
                continue
            q_head[a] = s
            inj_header[a] = uniform_dest(x, a, n)
            inj_payload[a] = s & payload_mask
        if threads is None:
            got_d, got_h = cycle(dims, tables, state, t, inj_valid, inj_header, inj_payload,
                                 taken, eject_ready, step_deliveries, step_hops, no_hops,
                                 relays, None)
            d0 = 0
        else:
            got_d, got_h = _phases(dims, tables, state, t, inj_valid, inj_header, inj_payload,
                                   taken, eject_ready, step_deliveries, step_hops, no_hops,
                                   relays, split, sync, e)
            if got_d < 0:
                return
            e += 2
            d0 = lo  # the thread's deliveries, from its first node's row (P = 1)
        delivered += got_d
        hops += got_h
        for k in range(d0, d0 + got_d):
            latency = (t - step_deliveries[k, 2]) & payload_mask
            latency_sum += latency
            latency_max = max(latency_max, latency)
    queued = 0
    for a in range(lo, hi):
        if taken[a]:
            q_count[a] -= 1
            injected += 1
        queued += q_count[a]
    totals[0] += generated
    totals[1] += injected
    totals[2] += delivered
    totals[3] += latency_sum
    totals[4] += hops
    totals[5] = max(totals[5], latency_max)
    totals[6] = queued
