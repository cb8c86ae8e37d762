"""The bare fabric behind three pins, for utilisation and Fmax figures."""

from amaranth.hdl import Cat, Elaboratable, Module, Signal, Value
from amaranth.lib import io
from amaranth.lib.wiring import In

__all__ = ["SynthShell"]


class SynthShell(Elaboratable):
    """A platform top that keeps all of a component's logic and adds no LUTs.

    A fabric has thousands of port bits and a board a few hundred pins, so the component's
    ports cannot be pins. Instead every input bit is a flip-flop of one shift register fed
    from the ``din`` pin, and every output bit is captured in a flip-flop kept with Yosys's
    ``keep`` attribute (nothing reads it, but nothing may remove it). Both cost flip-flops
    only (:attr:`shell_ffs` of them), no LUTs, so the LUT count of the build is the
    component's own; its flip-flop count is the build's less :attr:`shell_ffs`. ``dout``
    shows the end of the input shift register, so the chain itself is not dead either.

    Parameters
    ----------
    component : wiring.Component
        What to measure, e.g. a :class:`~ihcube.rtl.Fabric`.
    din, dout : (str, int)
        The platform resources (name, number) to use as the serial input and the output.
    """

    def __init__(self, component, din=("button", 0), dout=("led", 0)):
        self._component = component
        self._din = din
        self._dout = dout
        flat = list(component.signature.flatten(component))
        self._inputs = [value for _, member, value in flat if member.flow == In]
        self._outputs = [value for _, member, value in flat if member.flow != In]

    @property
    def shell_ffs(self):
        """The flip-flops the shell adds: one per port bit of the component."""
        return sum(len(Value.cast(value)) for value in self._inputs + self._outputs)

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = self._component

        din = m.submodules.din = io.Buffer("i", platform.request(*self._din, dir="-"))
        dout = m.submodules.dout = io.Buffer("o", platform.request(*self._dout, dir="-"))

        inputs = Cat(*self._inputs)
        chain = Signal(len(inputs))
        m.d.sync += chain.eq(Cat(din.i[0], chain[:-1]))
        m.d.comb += [
            inputs.eq(chain),
            dout.o.eq(chain[-1]),
        ]

        outputs = Cat(*self._outputs)
        captured = Signal(len(outputs), attrs={"keep": 1})
        m.d.sync += captured.eq(outputs)
        return m
