"""A UART transmitter and the report line the board self-test sends with it."""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["UARTTransmitter", "ReportLine"]


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

    Parameters
    ----------
    template : list of str and (name, bits) pairs
        The line: text as is, and a field ``name`` of ``bits`` bits as ``ceil(bits / 4)`` hex
        digits, its value taken when ``start`` is pulsed. Each field is a member ``In(bits)``.

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
        latched = {}
        chars = []  # an int (a character) or (latched field, nibble index)
        for item in self._template:
            if isinstance(item, str):
                chars.extend(item.encode("ascii"))
            else:
                name, bits = item
                latched[name] = Signal(bits, name=f"{name}_latched")
                digits = (bits + 3) // 4
                chars.extend((name, digit) for digit in reversed(range(digits)))

        index = Signal(range(len(chars) + 1))
        busy = Signal()
        with m.If(self.start & ~busy):
            m.d.sync += [busy.eq(1), index.eq(0)]
            m.d.sync += [latched[name].eq(getattr(self, name)) for name in latched]
        char = Signal(8)
        with m.Switch(index):
            for i, c in enumerate(chars):
                with m.Case(i):
                    if isinstance(c, int):
                        m.d.comb += char.eq(c)
                    else:
                        name, digit = c
                        nibble = latched[name][4 * digit:4 * digit + 4]
                        m.d.comb += char.eq(Mux(nibble < 10, ord("0") + nibble,
                                                ord("A") - 10 + nibble))
            with m.Default():
                m.d.comb += char.eq(0)
        m.d.comb += [
            self.data.valid.eq(busy),
            self.data.payload.eq(char),
        ]
        with m.If(self.data.valid & self.data.ready):
            m.d.sync += index.eq(index + 1)
            with m.If(index == len(chars) - 1):
                m.d.sync += busy.eq(0)
        return m
