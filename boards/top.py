"""The board self-test: :class:`SelfTest` on a board's LEDs and UART."""

from amaranth.build import ResourceError
from amaranth.hdl import ClockDomain, ClockSignal, Elaboratable, Module, ResetSignal, Signal
from amaranth.lib import io, wiring
from amaranth.lib.cdc import FFSynchronizer

from .pll import Pll, PllSettings
from .selftest import SelfTest, SelfTestErrors
from .uart import ReportLine, UARTTransmitter

__all__ = ["BoardTop"]

#: Baud rate of the report line.
BAUD = 115200
#: Cycles of the PLL's clock that the design stays in reset after the PLL locks: 50 us at
#: 20 MHz, more than the 3 us after configuration during which iCE40 block RAMs read zero.
START_CYCLES = 1 << 10


class BoardTop(Elaboratable):
    """The platform top of a board's self-test bitstream.

    LEDs, in the order the board has them: pass, fail, a heartbeat (toggles once a second),
    then the low bits of the round count. On a board with green and red LEDs (``led_g``,
    ``led_r``) those show pass and fail and the other ``led`` resources the rest. Once a
    second the UART sends (8N1, 115200 baud)::

        ihcube n=<n> rounds=<hex> sent=<hex> bcast=<hex> dlvd=<hex> err=<hex> pass=<0|1>

    ``err`` is :attr:`SelfTest.errors` (:class:`SelfTestErrors` positions). The self-test runs
    on the board's own clock, or with ``pll`` on that PLL's (:mod:`.pll`; the settings for a
    board come from :func:`~ihcube.boards.build.check_clock`); the design
    is held in reset until the PLL has locked and :data:`START_CYCLES` more have passed.

    Parameters
    ----------
    spec : FabricSpec
        The fabric, as :class:`SelfTest` takes it. Its payload width is 32 unless asked: below
        it the checksum has fewer bits (``payload_width - 16``;
        :func:`~ihcube.boards.traffic.check_selftest_payload_width`).
    run_cycles : int
        Traffic cycles per round.
    pll : :class:`~ihcube.boards.pll.PllSettings` or None
        The board's PLL and the clock it makes; None for the board's oscillator.
    """

    def __init__(self, spec, *, run_cycles=1 << 16, pll=None):
        if pll is not None and not isinstance(pll, PllSettings):
            raise TypeError(f"PLL settings must come from pll_settings(), not {pll!r}")
        self.selftest = SelfTest(spec, run_cycles=run_cycles, drain_cycles=1 << 12)
        self.pll = pll

    def _clock(self, m, platform):
        """Make the ``sync`` domain from the board's PLL, if asked; return its frequency."""
        if self.pll is None:
            return int(platform.default_clk_frequency)
        pll = m.submodules.pll = Pll(self.pll, platform.request(platform.default_clk, dir="-"))

        # Reset until the PLL is locked and START_CYCLES of its clock have passed.
        m.domains.startup = ClockDomain(reset_less=True, local=True)
        m.domains.sync = ClockDomain()
        # No constraint of our own on the PLL's output: nextpnr derives it from the board
        # clock's and the dividers ("Derived frequency constraint ... for net clk").
        locked, count, ready = Signal(), Signal(range(START_CYCLES + 1)), Signal()
        m.submodules.locked = FFSynchronizer(pll.locked, locked, o_domain="startup")
        with m.If(~locked):
            m.d.startup += [count.eq(0), ready.eq(0)]
        with m.Elif(count == START_CYCLES):
            m.d.startup += ready.eq(1)
        with m.Else():
            m.d.startup += count.eq(count + 1)
        m.d.comb += [
            ClockSignal("startup").eq(pll.clk_out),
            ClockSignal("sync").eq(pll.clk_out),
            ResetSignal("sync").eq(~ready),
        ]
        return round(self.pll.clk_out_hz)

    def _leds(self, platform):
        """Request the board's LEDs: (pass, fail, others)."""
        names = {name for name, _ in platform.resources}
        leds = []
        if "led_g" in names and "led_r" in names:
            good, bad = platform.request("led_g", 0, dir="-"), platform.request("led_r", 0,
                                                                              dir="-")
            number = 2  # `led` 0 and 1 are led_r 0 and led_g 0 again (iCEBreaker)
        else:
            good, bad, number = None, None, 0
        while True:
            try:
                leds.append(platform.request("led", number, dir="-"))
            except ResourceError:
                break
            number += 1
        if good is None:
            good, bad, leds = leds[0], leds[1], leds[2:]
        return good, bad, leds

    def elaborate(self, platform):
        m = Module()
        selftest = m.submodules.selftest = self.selftest
        clk_hz = self._clock(m, platform)

        second = Signal(range(clk_hz))
        tick = Signal()
        heartbeat = Signal()
        m.d.comb += tick.eq(second == clk_hz - 1)
        m.d.sync += second.eq(second + 1)
        with m.If(tick):
            m.d.sync += [second.eq(0), heartbeat.eq(~heartbeat)]

        good, bad, others = self._leds(platform)
        outputs = [(good, selftest.passed), (bad, selftest.failed)]
        values = [heartbeat, *selftest.rounds]
        outputs += list(zip(others, values))
        for k, (pin, value) in enumerate(outputs):
            buffer = m.submodules[f"led{k}"] = io.Buffer("o", pin)
            m.d.comb += buffer.o.eq(value)

        report = m.submodules.report = ReportLine([
            f"ihcube n={selftest.n} rounds=", ("rounds", 16),
            " sent=", ("sent", 32), " bcast=", ("broadcasts", 32),
            " dlvd=", ("delivered", 32), " err=", ("errors", SelfTestErrors.COUNT),
            " pass=", ("passed", 1), "\r\n",
        ])
        uart = m.submodules.uart = UARTTransmitter(max(1, round(clk_hz / BAUD)))
        wiring.connect(m, report.data, uart.data)
        m.d.comb += [
            report.start.eq(tick),
            report.rounds.eq(selftest.rounds),
            report.sent.eq(selftest.sent),
            report.broadcasts.eq(selftest.broadcasts),
            report.delivered.eq(selftest.delivered),
            report.errors.eq(selftest.errors),
            report.passed.eq(selftest.passed),
        ]
        tx = platform.request("uart", 0, dir="-").tx
        tx_buffer = m.submodules.uart_tx = io.Buffer("o", tx)
        m.d.comb += tx_buffer.o.eq(uart.tx)
        return m
