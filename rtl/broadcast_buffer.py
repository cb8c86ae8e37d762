"""The broadcast channel's buffer: one whole message, read by each branch at its own pace."""

from amaranth.hdl import Array, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..params import check_positive_integer

__all__ = ["BroadcastBuffer"]


class BroadcastBuffer(wiring.Component):
    """Holds one broadcast of ``flits`` flits; each of ``branches`` outputs reads it whole.

    A broadcast enters only an ``idle`` buffer (its sender waits for that), so the buffer
    never holds more than one message and flit ``k`` is entry ``k``; it comes whole (its
    sender's buffer or the router's injection counts its flits), flit 0 marked head and flit
    ``flits - 1`` tail. Each branch that ``want``
    names reads the entries in order from its own index, as fast as its output lets it, never
    waiting for the other branches: a broadcast moves whole on each branch (virtual cut-through)
    and no branch holds a channel while another waits (``docs/wormhole.md``, "Broadcasts").
    When every wanted branch has read the last flit, the buffer empties.

    The entries' payloads are a :class:`~amaranth.lib.memory.Memory` with one asynchronous read
    port per branch, which Yosys maps to distributed RAM (a copy per branch), their marks the
    entry's number: on ECP5 the router of node 0 of 26 at 16-bit flits and 3 virtual channels
    needs 5,767 LUTs for its six broadcast buffers in flip-flops, each branch a 20-to-1
    multiplexer of 18 bits (``docs/fpga.md``).
    With ``registers`` they are flip-flops ``entry0``, ``entry1``, ..., which the formal
    check's invariants name (:mod:`ihcube.verify.formal.wormhole_check`); the two are the same
    cycle by cycle (``tests/test_broadcast_buffer.py``).

    Parameters
    ----------
    layout : StructLayout
        A flit (:func:`~ihcube.rtl.flit.flit_layout`: ``payload``, ``head``, ``tail``).
    flits : int
        Flits per message.
    branches : int
        Outputs that may read.
    registers : bool
        Hold the entries in flip-flops rather than a memory.

    Members
    -------
    w : ``In(stream.Signature(layout))``
        Flits in; ``w.ready`` is registered.
    head : ``Out(layout)``
        Entry 0, the head flit once ``written`` is non-zero.
    written : ``Out(range(flits + 1))``
        Flits held so far.
    want : ``In(branches)``
        The branches that read this message (fixed while it is held).
    r : ``Out(stream.Signature(layout)).array(branches)``
        Branch ``b``'s next flit.
    idle : ``Out(1)``
        Registered: the buffer is empty in this cycle.
    done : ``Out(1)``
        Combinational: every wanted branch reads its last flit by the end of this cycle, and
        the buffer empties.
    """

    def __init__(self, layout, flits, branches, *, registers=False):
        self._layout = layout
        self._registers = bool(registers)
        self._flits = check_positive_integer(flits, "Flit count")
        self._branches = check_positive_integer(branches, "Branch count")
        super().__init__({
            "w":       In(stream.Signature(layout)),
            "head":    Out(layout),
            "written": Out(range(self._flits + 1)),
            "want":    In(self._branches),
            "r":       Out(stream.Signature(layout)).array(self._branches),
            "idle":    Out(1, init=1),
            "done":    Out(1),
        })

    layout = property(lambda self: self._layout)
    flits = property(lambda self: self._flits)
    branches = property(lambda self: self._branches)
    registers = property(lambda self: self._registers)

    def elaborate(self, platform):
        m = Module()
        flits = self._flits
        room = Signal()  # low in reset
        read = [Signal(range(flits + 1), name=f"read_index{b}")
                for b in range(self._branches)]
        m.d.comb += self.w.ready.eq(room)
        write = self.w.valid & self.w.ready
        if self._registers:
            entries = Array(Signal(self._layout, name=f"entry{k}", reset_less=True)
                            for k in range(flits))
            with m.If(write):
                m.d.sync += entries[self.written].eq(self.w.payload)
            m.d.comb += self.head.eq(entries[0])
            flit_at = [entries[index] for index in read]
        else:
            # Only the payload is stored: a whole message's marks are its flits' numbers (the
            # head flit 0, the tail flit `flits - 1`), so each copy of the memory is two bits
            # narrower (a 4-bit-wide distributed RAM fewer per 16 entries at 32- and 16-bit
            # flits, one of three at 8).
            payload = self._layout["payload"].shape
            storage = m.submodules.storage = Memory(shape=payload, depth=flits, init=[])
            writer = storage.write_port()
            m.d.comb += [writer.addr.eq(self.written), writer.data.eq(self.w.payload.payload),
                         writer.en.eq(write)]
            # The head is read every cycle by the routing: a register of its own rather than
            # one more read port (a copy of the memory).
            head = Signal(payload, reset_less=True)
            with m.If(write & ~self.written.any()):
                m.d.sync += head.eq(self.w.payload.payload)
            m.d.comb += [self.head.payload.eq(head), self.head.head.eq(1),
                         self.head.tail.eq(flits == 1)]
            flit_at = []
            for b, index in enumerate(read):
                reader = storage.read_port(domain="comb")
                flit = Signal(self._layout, name=f"flit{b}")
                m.d.comb += [reader.addr.eq(index), flit.payload.eq(reader.data),
                             flit.head.eq(~index.any())]
                flit_at.append(flit)
        # The comparisons a branch's `valid` and the emptying need are flip-flops, each made
        # from the next indices, so that no adder or comparator lies between the registers and
        # `valid` or `done`, where the router's switch and allocation paths start.
        full = Signal(name="full")  # written == flits
        behind = [Signal(name=f"behind{b}") for b in range(self._branches)]  # read < written
        at_last = [Signal(name=f"at_last{b}", init=flits == 1)  # read == flits - 1
                   for b in range(self._branches)]
        at_end = [Signal(name=f"at_end{b}") for b in range(self._branches)]  # read == flits
        finished = self.done
        m.d.comb += finished.eq(full & (self.want != 0))
        read_next = []
        for b, index in enumerate(read):
            port = self.r[b]
            taken = port.valid & port.ready
            m.d.comb += [
                port.valid.eq(self.want[b] & behind[b]),
                port.payload.eq(flit_at[b]),
            ]
            with m.If(self.want[b] & ~at_end[b] & ~(at_last[b] & taken)):
                m.d.comb += finished.eq(0)
            index_next = Signal.like(index, name=f"read_index_next{b}")
            m.d.comb += index_next.eq(Mux(finished, 0, index + taken))
            read_next.append(index_next)
        written_next = Signal.like(self.written)
        m.d.comb += written_next.eq(Mux(finished, 0, self.written + write))
        m.d.sync += [
            self.written.eq(written_next),
            room.eq(written_next != flits),
            self.idle.eq(~written_next.any()),
            full.eq(written_next == flits),
        ]
        for b, index in enumerate(read):
            m.d.sync += [
                index.eq(read_next[b]),
                behind[b].eq(read_next[b] < written_next),
                at_last[b].eq(read_next[b] == flits - 1),
                at_end[b].eq(read_next[b] == flits),
            ]
            if not self._registers:  # the tail mark is the entry's number
                m.d.comb += flit_at[b].tail.eq(at_last[b])
        return m
