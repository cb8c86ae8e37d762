"""One node's on-chip delivery checker for the board self-test."""

from amaranth.hdl import ClockDomain, ClockSignal, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .. import topology
from ..rtl.message import Kind, message_layout
from .traffic import SEQ_BITS, payload_check

__all__ = ["Checker", "CheckerErrors"]


class CheckerErrors:
    """Bit positions of :attr:`Checker.errors`."""
    MISDELIVERED = 0  # a unicast for another node, or a node's own broadcast back at it
    BAD_SOURCE   = 1  # src names no node
    CORRUPT      = 2  # payload check bits do not match (seq, src, kind, dest)
    ORDER        = 3  # from one source, a sequence number not after the last one seen
    COUNT        = 4


class Checker(wiring.Component):
    """Takes one node's deliveries and checks each, with pseudo-random backpressure.

    What it checks, per delivery:

    - a unicast is for this node (``dest == node``); a broadcast is not this node's own;
    - ``src`` names a node;
    - the payload's check bits are :func:`~ihcube.boards.traffic.payload_check` of its
      sequence number and the header, so the message arrived as its source made it;
    - per source, sequence numbers increase. All messages from one source to this node,
      unicast or broadcast copy, follow the same path (Katseff, Algorithm 2 and Theorem 4)
      through FIFO buffers, so they arrive in the order they were sent: a duplicate or a
      reordering shows as a number that is not after the last one (modulo ``2**SEQ_BITS``, a
      step of 1 to ``2**(SEQ_BITS - 1) - 1`` counts as after). This needs one
      ``SEQ_BITS + 1``-bit word per source (a RAM of ``n`` words), read at the rising edge
      that ends the cycle of the delivery and written at the falling edge of the next
      cycle (:attr:`WRITE_EDGE`), so a delivery from the same source in that next cycle
      reads the new word.

    What it cannot see on its own: a message that never arrives (a step of more than one is
    normal, since the source also sends to other nodes). :class:`~ihcube.boards.selftest.SelfTest`
    catches those by counting.

    Parameters
    ----------
    n, node, payload_width :
        As for :class:`~ihcube.boards.traffic.TrafficGenerator`.
    ready_rate : int
        Cycles out of 16 in which the PE accepts a delivery (eject backpressure): those in
        which ``chance < ready_rate``.

    Members
    -------
    eject : ``In(stream.Signature(message_layout(n, payload_width)))``
        From the fabric's eject port of ``node``.
    chance : ``In(4)``
        Four pseudo-random bits a cycle, for the backpressure (the self-test gives the
        checker bits of its node's generator LFSR rather than an LFSR of its own: 32 logic
        cells per node fewer on the iCE40).
    received : ``Out(1)``
        A delivery was taken this cycle.
    errors : ``Out(CheckerErrors.COUNT)``
        Sticky error flags, by :class:`CheckerErrors` position.
    """

    #: The clock edge on which the table of last sequence numbers is written: ``"neg"``, half a
    #: cycle after the read of the same cycle (``verify/faults.py`` has a checker that writes
    #: on the rising edge, which misses a duplicate delivered in the next cycle).
    WRITE_EDGE = "neg"

    def __init__(self, n, node, payload_width=32, ready_rate=12):
        n = self._n = topology.check_node_count(n)
        node = self._node = topology.check_node(n, node)
        self._payload_width = payload_width
        if not (isinstance(ready_rate, int) and 1 <= ready_rate <= 16):
            raise ValueError(f"Ready rate must be an integer from 1 to 16, not {ready_rate!r}")
        self._ready_rate = ready_rate
        super().__init__({
            "eject":    In(stream.Signature(message_layout(n, payload_width))),
            "chance":   In(4),
            "received": Out(1),
            "errors":   Out(CheckerErrors.COUNT),
        })

    def elaborate(self, platform):
        m = Module()
        n, node = self._n, self._node
        message = self.eject.payload

        m.d.comb += self.eject.ready.eq(self.chance < self._ready_rate)
        take = Signal()
        m.d.comb += [
            take.eq(self.eject.valid & self.eject.ready),
            self.received.eq(take),
        ]

        seq = message.payload[:SEQ_BITS]
        check = message.payload[SEQ_BITS:]
        unicast = message.kind == Kind.UNICAST
        errors = Signal(CheckerErrors.COUNT)
        with m.If(take):
            with m.If(unicast & (message.dest != node) | ~unicast & (message.src == node)):
                m.d.sync += errors[CheckerErrors.MISDELIVERED].eq(1)
            if n < 1 << len(message.src):
                with m.If(message.src >= n):
                    m.d.sync += errors[CheckerErrors.BAD_SOURCE].eq(1)
            with m.If(check != payload_check(n, self._payload_width, message.src, seq,
                                             message.kind, message.dest)):
                m.d.sync += errors[CheckerErrors.CORRUPT].eq(1)

        # Last sequence number seen from each source: {valid, seq}.
        # In block RAM where there is some: as logic it was 17 flip-flops per source and
        # a read multiplexer, more than a third of the self-test's cells at n = 8 on the
        # iCE40 (docs/fpga.md).
        #
        # The word of a delivery is written on the falling edge of the cycle after it: after
        # the rising edge at which a delivery in that cycle reads the table, before the next.
        # So a read never meets a write to its word at the same edge and needs no bypass
        # around the block RAM (which has none: with both ports on the rising edge Yosys adds
        # 17 flip-flops, a 17-bit multiplexer and an address comparison per checker, about 300
        # of the 8-node self-test's logic cells on the iCE40; docs/fpga.md, fourth round).
        m.domains.table_write = ClockDomain(clk_edge=self.WRITE_EDGE, reset_less=True,
                                            local=True)
        m.d.comb += ClockSignal("table_write").eq(ClockSignal())
        m.submodules.last = last = Memory(shape=SEQ_BITS + 1, depth=1 << len(message.src),
                                          init=[], attrs={"ram_style": "block"})
        write = last.write_port(domain="table_write")
        read = last.read_port()
        pending = Signal()
        pending_src = Signal.like(message.src)
        pending_seq = Signal(SEQ_BITS)
        m.d.comb += read.addr.eq(message.src)
        m.d.sync += [
            pending.eq(take),
            pending_src.eq(message.src),
            pending_seq.eq(seq),
        ]
        step = Signal(SEQ_BITS)
        m.d.comb += [
            step.eq(pending_seq - read.data[:SEQ_BITS]),
            write.addr.eq(pending_src),
            write.data.eq(pending_seq | (1 << SEQ_BITS)),
            write.en.eq(pending),
        ]
        with m.If(pending & read.data[SEQ_BITS] &
                  ((step == 0) | step[SEQ_BITS - 1])):
            m.d.sync += errors[CheckerErrors.ORDER].eq(1)
        m.d.comb += self.errors.eq(errors)
        return m
