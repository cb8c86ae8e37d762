"""The bare fabric behind three pins, for utilisation and Fmax figures."""

import json
import pathlib

from amaranth.hdl import Cat, Elaboratable, Module, Signal, Value
from amaranth.lib import io
from amaranth.lib.wiring import In

__all__ = ["SynthShell"]


class SynthShell(Elaboratable):
    """A platform top that keeps all of a component's logic and adds no LUTs.

    A fabric has thousands of port bits and a board a few hundred pins, so the component's
    ports cannot be pins. Instead every input bit is a flip-flop of one shift register fed
    from the ``din`` pin, and every output bit is captured in a flip-flop of a register
    Yosys keeps (``keep``: nothing reads it, but nothing may remove it). Both cost
    flip-flops only, no LUTs, so the LUT count of the build is the component's own; its
    flip-flop count is the build's less the shell's, :meth:`ffs_in_netlist` (at most
    :attr:`shell_ffs`). ``dout`` shows the end of the input shift register, so the chain
    itself is not dead either.

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

    #: The name of the register that captures the outputs, in Yosys's netlist too.
    CAPTURED = "captured"

    @property
    def shell_ffs(self):
        """The most flip-flops the shell can add: one per port bit of the component."""
        return sum(len(Value.cast(value)) for value in self._inputs + self._outputs)

    @property
    def input_ffs(self):
        """The flip-flops of the input shift register, one per input bit: Yosys keeps them
        all, since each feeds the next."""
        return sum(len(Value.cast(value)) for value in self._inputs)

    def ffs_in_netlist(self, netlist):
        """The shell's flip-flops in Yosys's JSON ``netlist`` of the build (the file nextpnr
        reads): :attr:`input_ffs` and the capture flip-flops Yosys kept. An output bit that
        is a constant (the eject port's ``dest`` is the node's own address) leaves no
        capture flip-flop, and output bits that are one signal share one, so subtracting
        :attr:`shell_ffs` from the build's count would undercount the component's."""
        modules = json.loads(pathlib.Path(netlist).read_text())["modules"]
        top = next(module for module in modules.values()
                   if int(module.get("attributes", {}).get("top", "0"), 2))
        captured = {bit for bit in top["netnames"][self.CAPTURED]["bits"]
                    if not isinstance(bit, str)}  # "0"/"1": a constant bit, no flip-flop
        kept = {bit for cell in top["cells"].values()
                if cell.get("port_directions", {}).get("Q") == "output"
                for bit in cell["connections"]["Q"] if bit in captured}
        return self.input_ffs + len(kept)

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
        captured = Signal(len(outputs), name=self.CAPTURED, attrs={"keep": 1})
        m.d.sync += captured.eq(outputs)
        return m
