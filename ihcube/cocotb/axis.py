"""A driver and a monitor for the AXI4-Stream PE ports (``--interface axis``:
``docs/axis.md``), on cocotbext-axi's ``AxiStreamSource`` and ``AxiStreamSink``.

:class:`AxisDriver` sends each message as a one-transfer frame on ``s_axis_<k>`` (the payload
in ``TDATA``'s bytes, least significant first; the destination on ``TDEST``; the kind on
``TUSER``); :class:`AxisMonitor` receives the frames of ``m_axis_<k>``, pausing as a pattern
says (backpressure), and tells a :class:`~ihcube.cocotb.scoreboard.Scoreboard` what each
carried, by :data:`ihcube.axis.MAPPING`. cocotbext-axi is in the ``verify`` extra.
"""

from ..axis import MAPPING
from ..extras import require
from ..spec import as_spec

__all__ = ["AxisDriver", "AxisMonitor"]


def _axi():
    return require("cocotbext.axi", "verify", "The AXI4-Stream driver and monitor")


def _packet(spec):
    spec = as_spec(spec)
    if not spec.packet:
        raise ValueError("The AXI4-Stream driver and monitor carry whole messages (packet "
                         "switching); a wormhole fabric's AXI4-Stream ports carry flits "
                         "(docs/axis.md)")
    return spec


def _prefix(direction, node, port=None):
    return f"{direction}_axis_{node}" + ("" if port is None else f"_{port}")


class AxisDriver:
    """Sends messages on the AXI4-Stream slave of ``node`` (PE port ``port`` with several).

    Parameters
    ----------
    dut : cocotb handle
        The fabric's top module (``ihcube_n<N>_w<W>_axis``).
    spec : :class:`~ihcube.spec.FabricSpec` or int
        The fabric the Verilog was generated from.
    scoreboard : :class:`~ihcube.cocotb.scoreboard.Scoreboard` or None
        Told of each message when the fabric takes it.
    pause : iterator of bool or None
        cocotbext-axi's pause generator: the source holds ``TVALID`` low in a cycle when it
        yields True.

    Attributes
    ----------
    source : cocotbext.axi.AxiStreamSource
    """

    def __init__(self, dut, spec, node, port=None, scoreboard=None, pause=None):
        axi = _axi()
        spec = _packet(spec)
        self.node, self.port, self.scoreboard = node, port or 0, scoreboard
        self._bytes = spec.payload_width // 8
        bus = axi.AxiStreamBus.from_prefix(dut, _prefix("s", node, port))
        self.source = axi.AxiStreamSource(bus, dut.clk, dut.rst)
        if pause is not None:
            self.source.set_pause_generator(pause)
        self._frame = axi.AxiStreamFrame

    def send(self, dest, payload, broadcast=False):
        """Queue a message to ``dest`` (or a broadcast), sent when the fabric takes it."""
        tdest = 0 if broadcast else dest
        frame = self._frame(payload.to_bytes(self._bytes, "little"), tdest=tdest,
                            tuser=int(bool(broadcast)), tx_complete=self._taken(
                                tdest, payload, broadcast))
        self.source.send_nowait(frame)

    def _taken(self, dest, payload, broadcast):
        def taken(_frame):
            if self.scoreboard is not None:
                self.scoreboard.sent(self.node, dest, payload, broadcast, self.port)
        return taken

    @property
    def idle(self):
        """Whether every queued message was taken."""
        return self.source.empty() and not self.source.active


class AxisMonitor:
    """Receives the frames of the AXI4-Stream master of ``node`` (PE port ``port`` with
    several), pausing ``TREADY`` as ``pause`` says (cocotbext-axi's pause generator; None:
    never), and tells ``scoreboard``.

    Attributes
    ----------
    sink : cocotbext.axi.AxiStreamSink
    received : list of dict
        Each message's fields (``src``, ``dest``, ``kind``, ``travel``, ``payload``), read
        from ``TID``, ``TDEST``, ``TUSER`` and ``TDATA`` by :data:`ihcube.axis.MAPPING`.
    problems : list of str
        Frames that were not one transfer with the same sideband in every byte.
    """

    def __init__(self, dut, spec, node, port=None, scoreboard=None, pause=None):
        axi = _axi()
        spec = _packet(spec)
        self.node, self.port, self.scoreboard = node, port or 0, scoreboard
        self._bytes = spec.payload_width // 8
        bus = axi.AxiStreamBus.from_prefix(dut, _prefix("m", node, port))
        self.sink = axi.AxiStreamSink(bus, dut.clk, dut.rst)
        if pause is not None:
            self.sink.set_pause_generator(pause)
        self.received, self.problems = [], []

    def collect(self):
        """Read every frame received so far into :attr:`received` (and the scoreboard);
        return how many."""
        count = 0
        while not self.sink.empty():
            frame = self.sink.recv_nowait()
            count += 1
            # cocotbext-axi gives a sideband value per byte, or one when they are all equal.
            sideband = {signal: ({value} if isinstance(value, int) else set(value))
                        for signal in ("tid", "tdest", "tuser")
                        for value in [getattr(frame, signal)]}
            if len(frame.tdata) != self._bytes or any(len(v) != 1 for v in sideband.values()):
                self.problems.append(f"node {self.node}: a frame of {len(frame.tdata)} bytes "
                                     f"or mixed sideband {sideband}: {frame}")
                continue
            signals = {"tdata": int.from_bytes(bytes(frame.tdata), "little"),
                       **{signal: values.pop() for signal, values in sideband.items()}}
            fields = {}
            for field, (signal, lsb) in MAPPING["eject"].items():
                fields[field] = signals[signal] >> lsb
            fields["kind"] &= 1
            self.received.append(fields)
            if self.scoreboard is not None:
                self.scoreboard.received(self.node, fields["src"], fields["dest"],
                                         fields["payload"], bool(fields["kind"]), self.port)
        return count
