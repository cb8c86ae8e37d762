"""One node's on-chip traffic source for the board self-test."""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .. import topology
from ..params import check_payload_width
from ..rtl.message import Kind, inject_layout

__all__ = ["LFSR_SHARERS", "SEQ_BITS", "TrafficGenerator", "check_selftest_payload_width",
           "lfsr_step", "payload_check", "phase_shift", "seed_of"]

#: Bits of the per-source sequence number at the bottom of every payload.
SEQ_BITS = 16
#: Galois LFSR of 32 bits, x^32 + x^22 + x^2 + x + 1 (maximal length).
_LFSR_TAPS = 0x80200003


def check_selftest_payload_width(width):
    """Return ``width`` if the self-test can use it (a payload width, at least ``SEQ_BITS + 8``:
    the sequence number and eight check bits), else raise ``ValueError``."""
    check_payload_width(width)
    if width < SEQ_BITS + 8:
        raise ValueError(f"Payload width must be at least {SEQ_BITS + 8} for the self-test, "
                         f"not {width!r}")
    return width


def seed_of(node, salt=0):
    """A non-zero 32-bit LFSR seed for ``node`` (``salt`` tells apart a node's LFSRs)."""
    return ((node + 1) * 0x9E3779B9 ^ (salt + 1) * 0x7F4A7C15) & 0xFFFFFFFF or 1


def lfsr_step(state):
    """The next state of the 32-bit Galois LFSR ``state`` (an Amaranth value)."""
    return Mux(state[0], (state >> 1) ^ _LFSR_TAPS, state >> 1)


#: Nodes that share one LFSR, each at its own phase (:func:`phase_shift`).
LFSR_SHARERS = 8


def phase_shift(state, phase):
    """The 32-bit LFSR ``state`` as node ``phase`` of its :data:`LFSR_SHARERS` sees it: the state
    itself for phase 0, else each bit ``j`` XOR bit ``(j + phase + 2) mod 32``.

    Every bit of an LFSR's state, and every XOR of some of them, follows the same
    maximal-length sequence, each at its own phase (the shift-and-add property of
    m-sequences; BIST's phase shifters rest on it). So the nodes that share an LFSR see its
    sequence at different phases, not one node's bits a few cycles after another's, as
    windows of one register would be. Distances 1 and 2 are left out: with the taps at bits
    0, 1, 21 and 31, bit 0 XOR bit 1 (or 2) is what the register shifts into bit 0 (or 1), a
    node's bit one cycle early. ``tests/test_boards.py`` checks that no node's bit repeats
    another's within 64 cycles. Sharing saves the 32 flip-flops of an LFSR per node, each a
    logic cell of its own on the iCE40 (docs/fpga.md, fourth round).
    """
    if not (isinstance(phase, int) and 0 <= phase < LFSR_SHARERS):
        raise ValueError(f"Phase must be an integer from 0 to {LFSR_SHARERS - 1}, not {phase!r}")
    if phase == 0:
        return state
    distance = phase + 2
    return state ^ Cat(state[distance:], state[:distance])


def payload_check(n, payload_width, src, seq, kind, dest):
    """The check bits of a payload: a linear checksum of ``(seq, src, kind, dest)``.

    ``dest`` counts for unicasts only (a broadcast's ``dest`` is not meaningful). Every bit of
    the key changes at least one check bit, so one corrupted bit of the payload or of these
    header fields is always caught; it is a checksum, not a CRC, and misses some
    multi-bit corruptions. The generator and the :class:`~ihcube.boards.checker.Checker` both
    build it from here.
    """
    bits = payload_width - SEQ_BITS
    key = Cat(seq, src, Mux(kind == Kind.UNICAST, dest, 0), kind)
    width = len(key)
    while len(key) < bits:  # a short key is repeated to fill the check bits
        key = Cat(key, key)
    width = len(key)

    def rotl(value, r):
        r %= width
        return Cat(value[width - r:], value[:width - r]) if r else value

    mixed = key ^ rotl(key, 5) ^ rotl(key, 11)
    return mixed[:bits] ^ Const(0xA5C3_96E1_5A3C_69E1 & ((1 << bits) - 1), bits)


class TrafficGenerator(wiring.Component):
    """Random messages from one node: LFSR destinations and kinds, checkable payloads.

    A free-running 32-bit LFSR (``lfsr``, shared by up to :data:`LFSR_SHARERS` nodes, each
    seeing it at its own phase: :func:`phase_shift`) decides, each cycle the generator has
    nothing to offer and
    ``enable`` is high, whether to start a message (``rate``/16 of the time), whether it is a
    broadcast (``broadcast_share``/32 of them), and its destination (uniform over the ``2**D``
    addresses, folded onto the ``n`` nodes; the node itself included). The payload is the
    node's sequence number (``SEQ_BITS`` bits, one more per message) and the
    :func:`payload_check` of it and the header. A message stays offered until the fabric
    takes it, enable or not.

    Parameters
    ----------
    n : int
        Number of nodes in the fabric.
    node : int
        This generator's node.
    payload_width : int
        Payload bits; at least ``SEQ_BITS + 8``.
    rate : int
        Messages started per 16 idle cycles, 0 to 16.
    broadcast_share : int
        Broadcasts per 32 messages, 0 to 32.

    Members
    -------
    inject : ``Out(stream.Signature(inject_layout(n, payload_width)))``
        To the fabric's injection port of ``node``.
    lfsr : ``In(32)``
        The state of the LFSR this node shares (:func:`lfsr_step` each cycle; the
        :class:`~ihcube.boards.selftest.SelfTest` has one per :data:`LFSR_SHARERS` nodes); the
        generator uses it at phase ``node mod LFSR_SHARERS``.
    enable : ``In(1)``
        Start new messages.
    idle : ``Out(1)``
        Nothing offered.
    chance : ``Out(4)``
        Four bits of the LFSR that it does not use itself (the top ones: the decisions above
        take bits 0 to ``8 + D``), for the node's :class:`~ihcube.boards.checker.Checker`.
    """

    def __init__(self, n, node, payload_width=32, rate=8, broadcast_share=1):
        n = self._n = topology.check_node_count(n)
        node = self._node = topology.check_node(n, node)
        check_selftest_payload_width(payload_width)
        if not (isinstance(rate, int) and 0 <= rate <= 16):
            raise ValueError(f"Rate must be an integer from 0 to 16, not {rate!r}")
        if not (isinstance(broadcast_share, int) and 0 <= broadcast_share <= 32):
            raise ValueError(f"Broadcast share must be an integer from 0 to 32, "
                             f"not {broadcast_share!r}")
        self._payload_width = payload_width
        self._rate = rate
        self._broadcast_share = broadcast_share
        super().__init__({
            "inject": Out(stream.Signature(inject_layout(n, payload_width))),
            "lfsr":   In(32),
            "enable": In(1),
            "idle":   Out(1),
            "chance": Out(4),
        })

    def elaborate(self, platform):
        m = Module()
        n, dims = self._n, topology.dimensions(self._n)
        lfsr = Signal(32)
        m.d.comb += [
            lfsr.eq(phase_shift(self.lfsr, self._node % LFSR_SHARERS)),
            self.chance.eq(lfsr[28:32]),
        ]

        start = Signal()
        kind = Signal(Kind)
        dest = Signal(topology.address_bits(n))
        seq = Signal(SEQ_BITS)
        m.d.comb += [
            start.eq(lfsr[0:4] < self._rate),
            kind.eq(Mux(lfsr[4:9] < self._broadcast_share, Kind.BROADCAST, Kind.UNICAST)),
        ]
        if dims:
            guess = lfsr[9:9 + dims]
            # 2**(D-1) < n <= 2**D: clearing the top bit of an address >= n lands on a node.
            m.d.comb += dest.eq(Mux(guess >= n, guess ^ (1 << (dims - 1)), guess))

        message = self.inject.payload
        # `seq` is the number of the message on offer (or of the next one): it counts up when
        # a message is taken. The payload is computed from it and the registered header, not
        # registered itself: 32 flip-flops fewer per node (docs/fpga.md, the iCE40 build).
        offered_dest = Signal.like(dest)
        offered_kind = Signal(Kind)
        m.d.comb += [
            message.dest.eq(offered_dest),
            message.kind.eq(offered_kind),
            message.payload.eq(Cat(seq, payload_check(
                n, self._payload_width, Const(self._node, topology.address_bits(n)),
                seq, offered_kind, offered_dest))),
        ]
        with m.If(self.inject.valid & self.inject.ready):
            m.d.sync += [self.inject.valid.eq(0), seq.eq(seq + 1)]
        with m.If((~self.inject.valid | self.inject.ready) & self.enable & start):
            m.d.sync += [
                self.inject.valid.eq(1),
                offered_dest.eq(dest),
                offered_kind.eq(kind),
            ]
        m.d.comb += self.idle.eq(~self.inject.valid)
        return m
