"""A driver and a monitor for the native PE ports of the generated Verilog
(``inject__<k>__*``, ``eject__<k>__*``: ``docs/verilog.md``).

:class:`NativeDriver` offers queued messages on a node's injection port;
:class:`NativeMonitor` takes what its eject port delivers, ready as a pause pattern says
(backpressure), and tells a :class:`~ihcube.cocotb.scoreboard.Scoreboard`. The payload fields
are packed at the offsets of :func:`ihcube.rtl.message.inject_layout` and
:func:`~ihcube.rtl.message.message_layout`. Both sample a handshake at the rising edge that
completes it, as cocotbext-axi does, so that they drive any clocked design the same way.
"""

from collections import deque

import cocotb
from cocotb.triggers import RisingEdge

from ..rtl.message import Kind, inject_layout, message_layout
from ..spec import as_spec

__all__ = ["Codec", "port_prefix", "NativeDriver", "NativeMonitor"]


class Codec:
    """Pack and unpack the bits of a :class:`~amaranth.lib.data.StructLayout` value, at the
    field offsets the layout itself gives."""

    def __init__(self, layout):
        self.fields = {name: (field.offset, field.width) for name, field in layout}

    def pack(self, **values):
        bits = 0
        for name, value in values.items():
            offset, width = self.fields[name]
            if not 0 <= value < 1 << width:
                raise ValueError(f"{name} = {value} does not fit in {width} bits")
            bits |= value << offset
        return bits

    def unpack(self, bits):
        return {name: bits >> offset & ((1 << width) - 1)
                for name, (offset, width) in self.fields.items()}


def port_prefix(group, node, port=None):
    """The name before ``__valid`` of a native port: ``inject__3``, or ``inject__3__1`` for
    PE port 1 of a fabric with several."""
    return f"{group}__{node}" + ("" if port is None else f"__{port}")


class NativeDriver:
    """Offers messages on the injection port of ``node`` (PE port ``port`` with several).

    Parameters
    ----------
    dut : cocotb handle
        The fabric's top module.
    spec : :class:`~ihcube.spec.FabricSpec` or int
        The fabric the Verilog was generated from.
    scoreboard : :class:`~ihcube.cocotb.scoreboard.Scoreboard` or None
        Told of each message when the fabric takes it.
    """

    def __init__(self, dut, spec, node, port=None, scoreboard=None):
        spec = as_spec(spec)
        prefix = port_prefix("inject", node, port)
        self.node, self.port, self.scoreboard = node, port or 0, scoreboard
        self._valid = getattr(dut, f"{prefix}__valid")
        self._ready = getattr(dut, f"{prefix}__ready")
        self._payload = getattr(dut, f"{prefix}__payload")
        self._clock, self._reset = dut.clk, dut.rst
        self._codec = Codec(inject_layout(spec.nodes, spec.payload_width))
        self._queue = deque()
        self._valid.value = 0
        self.taken = 0
        cocotb.start_soon(self._run())

    def send(self, dest, payload, broadcast=False):
        """Queue a message to ``dest`` (or a broadcast); the port offers the queue in order."""
        self._queue.append((dest, payload, broadcast))

    @property
    def idle(self):
        """Whether every queued message was taken."""
        return not self._queue

    async def _run(self):
        offered = None
        while True:
            await RisingEdge(self._clock)
            if self._reset.value:  # nothing is offered or taken in reset
                offered = None
                self._valid.value = 0
                continue
            if offered is not None and self._ready.value:
                dest, payload, broadcast = self._queue.popleft()
                self.taken += 1
                if self.scoreboard is not None:
                    self.scoreboard.sent(self.node, dest, payload, broadcast, self.port)
            offered = self._queue[0] if self._queue else None
            if offered is not None:
                dest, payload, broadcast = offered
                kind = Kind.BROADCAST if broadcast else Kind.UNICAST
                self._payload.value = self._codec.pack(dest=0 if broadcast else dest,
                                                       kind=kind.value, payload=payload)
            self._valid.value = int(offered is not None)


class NativeMonitor:
    """Takes what the eject port of ``node`` delivers (PE port ``port`` with several), ready
    in a cycle when ``pause`` (an iterator of booleans, one a cycle; None: never) says not to
    pause, and tells ``scoreboard``.

    Attributes
    ----------
    received : list of dict
        Each message's fields (``src``, ``dest``, ``kind``, ``travel``, ``payload``).
    """

    def __init__(self, dut, spec, node, port=None, scoreboard=None, pause=None):
        spec = as_spec(spec)
        prefix = port_prefix("eject", node, port)
        self.node, self.port, self.scoreboard, self.pause = node, port or 0, scoreboard, pause
        self._valid = getattr(dut, f"{prefix}__valid")
        self._ready = getattr(dut, f"{prefix}__ready")
        self._payload = getattr(dut, f"{prefix}__payload")
        self._clock, self._reset = dut.clk, dut.rst
        self._codec = Codec(message_layout(spec.nodes, spec.payload_width))
        self._ready.value = 0
        self.received = []
        cocotb.start_soon(self._run())

    async def _run(self):
        ready = False
        while True:
            await RisingEdge(self._clock)
            if self._reset.value:
                ready = False
                self._ready.value = 0
                continue
            if ready and self._valid.value:
                fields = self._codec.unpack(int(self._payload.value))
                self.received.append(fields)
                if self.scoreboard is not None:
                    self.scoreboard.received(self.node, fields["src"], fields["dest"],
                                             fields["payload"],
                                             fields["kind"] == Kind.BROADCAST.value, self.port)
            ready = self.pause is None or not next(self.pause)
            self._ready.value = int(ready)
