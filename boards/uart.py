"""A UART transmitter and the report line the board self-test sends with it."""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

__all__ = ["HEX_DIGIT", "UARTTransmitter", "ReportLine"]

#: The code in :class:`ReportLine`'s ROM for "the next hex digit of the fields" (no ASCII
#: character has bit 7 set).
HEX_DIGIT = 0x80


class UARTTransmitter(wiring.Component):
    """8N1 serial output, one bit every ``divisor`` cycles.

    Members
    -------
    data : ``In(stream.Signature(8))``
        Bytes to send.
    tx : ``Out(1, init=1)``
        The serial line (idle high).
    """

    data: In(stream.Signature(8))
    tx:   Out(1, init=1)

    def __init__(self, divisor):
        if not (isinstance(divisor, int) and divisor >= 1):
            raise ValueError(f"Divisor must be a positive integer, not {divisor!r}")
        self._divisor = divisor
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        shift = Signal(10)  # stop bit, 8 data bits (LSB first), start bit
        bits = Signal(range(11))
        timer = Signal(range(self._divisor))
        m.d.comb += self.data.ready.eq(bits == 0)
        with m.If(self.data.valid & self.data.ready):
            m.d.sync += [
                shift.eq(Cat(0, self.data.payload, 1)),
                bits.eq(10),
                timer.eq(0),
            ]
        with m.Elif(bits != 0):
            m.d.sync += timer.eq(Mux(timer == self._divisor - 1, 0, timer + 1))
            with m.If(timer == 0):
                m.d.sync += [
                    self.tx.eq(shift[0]),
                    shift.eq(shift >> 1),
                ]
            with m.If(timer == self._divisor - 1):
                m.d.sync += bits.eq(bits - 1)
        return m


class ReportLine(wiring.Component):
    """Sends one line of text with fields in hexadecimal each time ``start`` is pulsed.

    The line's characters are a ROM (block RAM where there is some), one entry per character:
    the character itself, or :data:`HEX_DIGIT` where the next hexadecimal digit goes. The
    fields are taken into one shift register, first field's most significant digit at the
    top, and each digit sent shifts it by four bits. As a multiplexer over the characters and
    each field's digits this was 514 LUT4s on the iCE40, a tenth of the 8-node self-test
    (docs/fpga.md, fourth round).

    Parameters
    ----------
    template : list of str and (name, bits) pairs
        The line: text as is (ASCII), and a field ``name`` of ``bits`` bits as
        ``ceil(bits / 4)`` hex digits, its value taken when ``start`` is pulsed. Each field
        is a member ``In(bits)``.

    Members
    -------
    start : ``In(1)``
        Take the fields and send the line (ignored while a line is being sent).
    data : ``Out(stream.Signature(8))``
        The characters, to a :class:`UARTTransmitter`.
    """

    def __init__(self, template):
        self._template = list(template)
        members = {"start": In(1), "data": Out(stream.Signature(8))}
        for item in self._template:
            if not isinstance(item, str):
                name, bits = item
                members[name] = In(bits)
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        codes = []   # the ROM: a character, or HEX_DIGIT
        fields = []  # each field zero-extended to its digits, in template order
        for item in self._template:
            if isinstance(item, str):
                codes.extend(item.encode("ascii"))
            else:
                name, bits = item
                digits = (bits + 3) // 4
                codes.extend([HEX_DIGIT] * digits)
                fields.append(Cat(getattr(self, name), Const(0, 4 * digits - bits)))
        m.submodules.text = text = Memory(shape=8, depth=len(codes), init=codes,
                                          attrs={"ram_style": "block"})
        read = text.read_port()

        index = Signal(range(len(codes)))
        busy = Signal()
        fire = Signal()
        next_index = Signal.like(index)
        m.d.comb += fire.eq(self.data.valid & self.data.ready)
        with m.If(self.start & ~busy):
            m.d.comb += next_index.eq(0)
        with m.Elif(fire):
            m.d.comb += next_index.eq(Mux(index == len(codes) - 1, 0, index + 1))
        with m.Else():
            m.d.comb += next_index.eq(index)
        # The ROM's read is synchronous: given the index of the next cycle it has the
        # character of the current one.
        m.d.comb += read.addr.eq(next_index)
        m.d.sync += index.eq(next_index)

        # The first field at the top: Cat puts its first operand at the bottom.
        shift = Signal(4 * sum(len(field) // 4 for field in fields))
        nibble = shift[-4:] if fields else Const(0, 4)
        with m.If(self.start & ~busy):
            m.d.sync += busy.eq(1)
            if fields:
                m.d.sync += shift.eq(Cat(*reversed(fields)))
        with m.Elif(fire):
            with m.If(read.data == HEX_DIGIT):
                m.d.sync += shift.eq(shift << 4)
            with m.If(index == len(codes) - 1):
                m.d.sync += busy.eq(0)
        m.d.comb += [
            self.data.valid.eq(busy),
            self.data.payload.eq(Mux(read.data == HEX_DIGIT,
                                     Mux(nibble < 10, ord("0") + nibble,
                                         ord("A") - 10 + nibble),
                                     read.data)),
        ]
        return m
