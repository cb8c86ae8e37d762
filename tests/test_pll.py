"""The boards' PLLs (boards/pll.py): dividers within the vendors' limits that give the clock
they claim, the board top built on them, and the command line's checks."""

import pytest

from ihcube.boards import build
from ihcube.boards.pll import PllSettings, pll_settings
from ihcube.spec import FabricSpec

MHZ = 1e6


def ecp5_clock(clk_in, d):
    """Lattice FPGA-TN-02200, feedback from CLKOP: f_out, VCO and phase-detector frequency."""
    out = clk_in * d["CLKFB_DIV"] / d["CLKI_DIV"]
    return out, out * d["CLKOP_DIV"], clk_in / d["CLKI_DIV"]


def ice40_clock(clk_in, d):
    """iCE40 sysCLOCK PLL guide, simple feedback: f_out, VCO and phase-detector frequency."""
    vco = clk_in * (d["DIVF"] + 1) / (d["DIVR"] + 1)
    return vco / 2 ** d["DIVQ"], vco, clk_in / (d["DIVR"] + 1)


def within(value, low, high):
    return low * MHZ <= value <= high * MHZ


@pytest.mark.parametrize("wanted", [10, 25, 33.3, 40, 41.9, 62.5, 75, 99, 150, 200, 333])
def test_ecp5_dividers_are_legal_and_give_the_clock_they_claim(wanted):
    settings = pll_settings("ecp5", 25 * MHZ, wanted)
    d = dict(settings.dividers)
    out, vco, pfd = ecp5_clock(25 * MHZ, d)
    assert all(1 <= d[name] <= 128 for name in ("CLKI_DIV", "CLKFB_DIV", "CLKOP_DIV"))
    assert within(vco, 400, 800) and within(pfd, 3.125, 400) and within(out, 3.125, 400)
    assert out == pytest.approx(settings.clk_out_hz) and vco == pytest.approx(settings.vco_hz)
    assert out <= wanted * MHZ * (1 + 1e-9)
    assert out >= 0.95 * wanted * MHZ  # 25 MHz * a / b with b <= 8 lies within 5 %


@pytest.mark.parametrize("wanted", [17, 20, 24, 30, 36, 48, 60, 72, 96, 120, 275])
def test_ice40_dividers_are_legal_and_give_the_clock_they_claim(wanted):
    settings = pll_settings("ice40", 12 * MHZ, wanted)
    d = dict(settings.dividers)
    out, vco, pfd = ice40_clock(12 * MHZ, d)
    assert 0 <= d["DIVR"] <= 15 and 0 <= d["DIVF"] <= 127 and 1 <= d["DIVQ"] <= 6
    assert within(vco, 533, 1066) and within(pfd, 10, 133) and within(out, 16, 275)
    assert 1 <= d["FILTER_RANGE"] <= 6
    assert out == pytest.approx(settings.clk_out_hz) and vco == pytest.approx(settings.vco_hz)
    assert out <= wanted * MHZ * (1 + 1e-9)
    assert out >= 0.97 * wanted * MHZ


@pytest.mark.parametrize("family, clk_in, exact", [
    # Frequencies the PLL can make exactly from the board's clock: it must find them.
    ("ecp5", 25, [40, 50, 62.5, 75, 100, 125, 150, 187.5]),
    ("ice40", 12, [18, 24, 36, 48, 72, 96, 132]),
])
def test_exact_frequencies_are_found(family, clk_in, exact):
    for wanted in exact:
        assert pll_settings(family, clk_in * MHZ, wanted).clk_out_mhz == pytest.approx(wanted)


def test_never_above_the_clock_asked_for():
    """Negative control for the rounding: 41.9 MHz on the ECP5 is 41.67 (25 * 5 / 3), not the
    nearer-looking 42.1 of a setting above the request; 20 MHz on the iCE40 is 19.875."""
    assert pll_settings("ecp5", 25 * MHZ, 41.9).clk_out_mhz == pytest.approx(125 / 3)
    assert pll_settings("ice40", 12 * MHZ, 20).clk_out_mhz == pytest.approx(19.875)


@pytest.mark.parametrize("family, wanted, message", [
    ("ecp5", 500, "Clock for the ecp5 PLL must be from 3.125 to 400 MHz, not 500"),
    ("ecp5", 0, "Clock for the ecp5 PLL must be from 3.125 to 400 MHz, not 0"),
    ("ice40", 300.5, "Clock for the ice40 PLL must be from 16 to 275 MHz, not 300.5"),
    ("ice40", True, "Clock for the ice40 PLL must be from 16 to 275 MHz, not True"),
    ("ice40", 16, "No ice40 PLL setting takes 12 MHz to 16 MHz"),
    ("gowin", 50, "PLL family must be one of ecp5, ice40, not 'gowin'"),
])
def test_impossible_clocks_are_one_line(family, wanted, message):
    with pytest.raises(ValueError) as error:
        pll_settings(family, 12 * MHZ, wanted)
    assert str(error.value) == message


@pytest.mark.parametrize("board, mhz, primitive, constraint", [
    ("ulx3s-85f", 40, "EHXPLLL", 'FREQUENCY PORT "clk25_0__io" 25000000.0 HZ;'),
    ("icebreaker", 20, "SB_PLL40_PAD", "set_frequency clk12_0__io 12.0"),
])
def test_board_top_runs_on_the_pll(board, mhz, primitive, constraint):
    """The board top with the PLL settings of ``check_clock`` instantiates the family's PLL with
    the dividers of
    :func:`pll_settings` on the board clock's pin, which keeps its constraint (nextpnr derives
    the PLL output's from it and the dividers); without, it has no PLL."""
    from ihcube.boards.top import BoardTop
    settings = build.check_clock(board, mhz)
    assert isinstance(settings, PllSettings)
    top = BoardTop(3, pll=settings)
    plan = build.board_platform(board).build(top, name="top", do_build=False)
    rtlil = plan.files["top.il"]
    rtlil = rtlil.decode() if isinstance(rtlil, bytes) else rtlil
    assert f"cell \\{primitive} " in rtlil
    for name, value in top.pll.dividers:
        assert f"parameter \\{name} {value}\n" in rtlil, name
    constraints = plan.files.get("top.lpf") or plan.files.get("top.pcf")
    constraints = constraints.decode() if isinstance(constraints, bytes) else constraints
    assert constraint in constraints

    plain = BoardTop(3)
    plan = build.board_platform(board).build(plain, name="top", do_build=False)
    rtlil = plan.files["top.il"]
    rtlil = rtlil.decode() if isinstance(rtlil, bytes) else rtlil
    assert plain.pll is None and primitive not in rtlil


def test_bitstream_name_and_figures_carry_the_clock(monkeypatch, tmp_path):
    built = []

    def fake_build(family, top, name, build_dir, platform, synth_opts="",
                   placer=None):
        built.append((name, top.pll))
        return {"fits": False}
    monkeypatch.setattr(build, "_build", fake_build)
    figures = build.bitstream("icebreaker", FabricSpec(4), out=tmp_path, clock_mhz=20)
    assert built == [("ihcube_selftest_n4_20mhz", build.check_clock("icebreaker", 20))]
    assert figures["pll"]["clock_mhz"] == pytest.approx(19.875)
    assert figures["pll"]["DIVQ"] == dict(build.check_clock("icebreaker", 20).dividers)["DIVQ"]


@pytest.mark.parametrize("clock, message", [
    ("abc", "Clock must be a number of MHz, not 'abc'"),
    ("nan", "Clock must be a number of MHz, not 'nan'"),
    ("500", "Clock for the ice40 PLL must be from 16 to 275 MHz, not 500.0"),
])
def test_command_line_clock_errors_are_one_line(capsys, clock, message):
    from ihcube.cli import main
    assert main(["bitstream", "--board", "icebreaker", "--nodes", "4",
                 "--clock-mhz", clock]) == 2
    captured = capsys.readouterr()
    assert captured.err == f"ihcube bitstream: error: {message}\n"
    assert captured.out == ""
