"""A board's PLL: from the oscillator's clock to the clock the fabric reaches.

:func:`pll_settings` chooses the dividers of the family's PLL for a wanted output frequency
(pure Python, so tests and ``ihcube bitstream`` can say what clock a build gets before
running Yosys); :class:`Pll` instantiates that PLL on the board's clock pin.

The limits are the vendors' (Lattice FPGA-TN-02200 for the ECP5 ``EHXPLLL``, the iCE40
sysCLOCK PLL guide for ``SB_PLL40_PAD``), stated once below:

- ECP5, feedback from ``CLKOP``: ``f_out = f_in * CLKFB_DIV / CLKI_DIV`` and the VCO runs at
  ``f_out * CLKOP_DIV``, which must lie in 400 ... 800 MHz; the phase detector
  ``f_in / CLKI_DIV`` in 3.125 ... 400 MHz; ``f_out`` in 3.125 ... 400 MHz.
- iCE40, simple feedback: the VCO runs at ``f_in * (DIVF + 1) / (DIVR + 1)`` in
  533 ... 1066 MHz, ``f_out = VCO / 2**DIVQ`` in 16 ... 275 MHz; the phase detector
  ``f_in / (DIVR + 1)`` in 10 ... 133 MHz sets ``FILTER_RANGE``.
"""

from dataclasses import dataclass

from amaranth.hdl import Instance, Module
from amaranth.lib import io, wiring
from amaranth.lib.wiring import Out

__all__ = ["PllSettings", "pll_settings", "Pll", "FAMILIES"]

#: The PLL families: the iCE40 one is the UP5K's ``SB_PLL40_PAD``, on the clock's own pin.
FAMILIES = ("ecp5", "ice40")

_MHZ = 1e6
#: ECP5 EHXPLLL ranges, Hz, and divider ranges (inclusive).
_ECP5_VCO = (400 * _MHZ, 800 * _MHZ)
_ECP5_PFD = (3.125 * _MHZ, 400 * _MHZ)
_ECP5_OUT = (3.125 * _MHZ, 400 * _MHZ)
_ECP5_DIV = (1, 128)
#: iCE40 SB_PLL40 ranges, Hz, and divider ranges (inclusive).
_ICE40_VCO = (533 * _MHZ, 1066 * _MHZ)
_ICE40_PFD = (10 * _MHZ, 133 * _MHZ)
_ICE40_OUT = (16 * _MHZ, 275 * _MHZ)
_ICE40_DIVR = (0, 15)
_ICE40_DIVF = (0, 127)
_ICE40_DIVQ = (1, 6)
#: An output counts as not above the wanted frequency up to this rounding of floats.
_NOT_ABOVE = 1 + 1e-9
#: FILTER_RANGE by phase-detector frequency: the first whose upper end (MHz) is above it.
_ICE40_FILTER = ((17, 1), (26, 2), (44, 3), (66, 4), (101, 5))


@dataclass(frozen=True)
class PllSettings:
    """A PLL configuration: ``dividers`` are the primitive's parameters by name;
    ``clk_out_hz`` is the frequency they give: the highest not above the one asked for (a
    clock the design was timed for), of those the one whose VCO is nearest its range's
    middle."""
    family: str
    clk_in_hz: float
    clk_out_hz: float
    vco_hz: float
    dividers: tuple

    @property
    def clk_out_mhz(self):
        return self.clk_out_hz / _MHZ


def _inside(value, limits):
    return limits[0] <= value <= limits[1]


def _middle(limits):
    """Of equally close settings, the one whose VCO is nearest the middle of its range."""
    return (limits[0] + limits[1]) / 2


def _ecp5(clk_in, wanted):
    best = None
    for clki_div in range(_ECP5_DIV[0], _ECP5_DIV[1] + 1):
        if not _inside(clk_in / clki_div, _ECP5_PFD):
            continue
        for clkfb_div in range(_ECP5_DIV[0], _ECP5_DIV[1] + 1):
            out = clk_in * clkfb_div / clki_div
            if not _inside(out, _ECP5_OUT) or out > wanted * _NOT_ABOVE:
                continue
            for clkop_div in range(_ECP5_DIV[0], _ECP5_DIV[1] + 1):
                vco = out * clkop_div
                if _inside(vco, _ECP5_VCO):
                    key = (wanted - out, abs(vco - _middle(_ECP5_VCO)), clki_div,
                           clkfb_div, clkop_div)
                    if best is None or key < best[0]:
                        best = (key, out, vco, (("CLKI_DIV", clki_div), ("CLKFB_DIV", clkfb_div),
                                                ("CLKOP_DIV", clkop_div)))
    return best


def _ice40(clk_in, wanted):
    best = None
    for divr in range(_ICE40_DIVR[0], _ICE40_DIVR[1] + 1):
        pfd = clk_in / (divr + 1)
        if not _inside(pfd, _ICE40_PFD):
            continue
        for divf in range(_ICE40_DIVF[0], _ICE40_DIVF[1] + 1):
            vco = pfd * (divf + 1)
            if not _inside(vco, _ICE40_VCO):
                continue
            for divq in range(_ICE40_DIVQ[0], _ICE40_DIVQ[1] + 1):
                out = vco / 2 ** divq
                if _inside(out, _ICE40_OUT) and out <= wanted * _NOT_ABOVE:
                    key = (wanted - out, abs(vco - _middle(_ICE40_VCO)), divr, divf, divq)
                    if best is None or key < best[0]:
                        filter_range = next((code for top, code in _ICE40_FILTER
                                             if pfd < top * _MHZ), 6)
                        best = (key, out, vco, (("DIVR", divr), ("DIVF", divf), ("DIVQ", divq),
                                                ("FILTER_RANGE", filter_range)))
    return best


def pll_settings(family, clk_in_hz, clk_out_mhz):
    """The PLL of ``family`` that takes ``clk_in_hz`` to the highest frequency not above
    ``clk_out_mhz`` MHz (:class:`PllSettings`).

    Raise ``ValueError`` (one line, with the family's output range) if the wanted frequency
    is not a positive number within it.
    """
    if family not in FAMILIES:
        raise ValueError(f"PLL family must be one of {', '.join(FAMILIES)}, not {family!r}")
    limits = _ECP5_OUT if family == "ecp5" else _ICE40_OUT
    low, high = limits[0] / _MHZ, limits[1] / _MHZ
    if (isinstance(clk_out_mhz, bool) or not isinstance(clk_out_mhz, (int, float))
            or not low <= clk_out_mhz <= high):
        raise ValueError(f"Clock for the {family} PLL must be from {low:g} to {high:g} MHz, "
                         f"not {clk_out_mhz!r}")
    search = _ecp5 if family == "ecp5" else _ice40
    found = search(float(clk_in_hz), clk_out_mhz * _MHZ)
    if found is None:
        raise ValueError(f"No {family} PLL setting takes {clk_in_hz / _MHZ:g} MHz to "
                         f"{clk_out_mhz:g} MHz")
    _, out, vco, dividers = found
    return PllSettings(family, float(clk_in_hz), out, vco, dividers)


class Pll(wiring.Component):
    """The PLL of :func:`pll_settings` on a board's clock pin.

    ``pin`` is the clock resource as ``platform.request(name, dir="-")`` gives it: on ECP5 an
    input buffer feeds ``CLKI``; on iCE40 ``SB_PLL40_PAD`` takes the pad itself (the UP5K's
    PLL input is a pin, not a net). ``clk_out`` is the output clock on a global network,
    ``locked`` its lock flag (asynchronous).
    """
    clk_out: Out(1)
    locked: Out(1)

    def __init__(self, settings, pin):
        if not isinstance(settings, PllSettings):
            raise TypeError(f"PLL settings must come from pll_settings(), not {settings!r}")
        self.settings = settings
        self._pin = pin
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        dividers = dict(self.settings.dividers)
        in_mhz = f"{self.settings.clk_in_hz / _MHZ:g}"
        out_mhz = f"{self.settings.clk_out_mhz:.6g}"
        if self.settings.family == "ecp5":
            clock_in = m.submodules.clk_in = io.Buffer("i", self._pin)
            m.submodules.pll = Instance(
                "EHXPLLL",
                a_FREQUENCY_PIN_CLKI=in_mhz, a_FREQUENCY_PIN_CLKOP=out_mhz,
                # Loop-filter settings that Lattice's tools and ecppll write for EHXPLLL.
                a_ICP_CURRENT="12", a_LPF_RESISTOR="8", a_MFG_ENABLE_FILTEROPAMP="1",
                a_MFG_GMCREF_SEL="2",
                p_PLLRST_ENA="DISABLED", p_INTFB_WAKE="DISABLED", p_STDBY_ENABLE="DISABLED",
                p_DPHASE_SOURCE="DISABLED", p_OUTDIVIDER_MUXA="DIVA",
                p_CLKOP_ENABLE="ENABLED", p_FEEDBK_PATH="CLKOP",
                p_CLKI_DIV=dividers["CLKI_DIV"], p_CLKFB_DIV=dividers["CLKFB_DIV"],
                p_CLKOP_DIV=dividers["CLKOP_DIV"],
                p_CLKOP_CPHASE=dividers["CLKOP_DIV"] - 1, p_CLKOP_FPHASE=0,
                i_CLKI=clock_in.i, i_CLKFB=self.clk_out, o_CLKOP=self.clk_out,
                i_RST=0, i_STDBY=0, i_PHASESEL0=0, i_PHASESEL1=0, i_PHASEDIR=1,
                i_PHASESTEP=1, i_PHASELOADREG=1, i_PLLWAKESYNC=0, i_ENCLKOP=0,
                o_LOCK=self.locked)
        else:
            m.submodules.pll = Instance(
                "SB_PLL40_PAD",
                ("io", "PACKAGEPIN", self._pin.io),
                p_FEEDBACK_PATH="SIMPLE", p_PLLOUT_SELECT="GENCLK",
                p_DIVR=dividers["DIVR"], p_DIVF=dividers["DIVF"], p_DIVQ=dividers["DIVQ"],
                p_FILTER_RANGE=dividers["FILTER_RANGE"],
                i_RESETB=1, i_BYPASS=0,
                o_PLLOUTGLOBAL=self.clk_out, o_LOCK=self.locked)
        return m
