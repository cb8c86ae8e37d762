"""Flits and payload bits a node moves per microsecond at saturation: the placed Fmax of the
router of node 0 times the fast model's saturation throughput.

:func:`figure` takes each router of node 0 that ``ihcube synth-table`` builds alone
(:func:`~.build.table_jobs`: the wormhole router at each flit width and virtual channel
count, the packet router at each depth, alone and with register stages) and the packet
router of any other payload width with a results file, and reads:

- its Fmax from its results file (:func:`~.build.synth_name`), if it was placed: the router
  alone, which places faster than the whole fabric (docs/fpga.md, "FPGA figures");
- the saturation throughput at ``size`` nodes (1024), uniform traffic, msb, from ``make
  saturation``'s results file of the same mode and options
  (:func:`ihcube.sim.sweep.saturation_results_name`): ``throughput``, what the fabric accepts
  at the highest generation rate at which it is not saturated, in messages per node per
  cycle. The flit width changes no cycle of the wormhole model, so one file serves every
  flit width (the model is run at a width that can address ``size`` nodes).

Fmax in MHz is cycles per microsecond, so a throughput per node per cycle times Fmax is the
same per node per microsecond (:func:`per_microsecond`). A row whose synth result does not
record today's design digest (:func:`~.build.built_from_today`, what ``synth-table``
rebuilds), or whose saturation file was made by a model that behaves otherwise
(:func:`ihcube.sim.provenance.file_state`), is ``stale``; one with no placed result or no
saturation row is ``not measured`` and has no figure. ``ihcube throughput`` (``make
throughput``) prints :func:`markdown` and writes ``throughput_per_us.json`` and ``.md``.
"""

import json
import pathlib
import re

from ..modes import mode_of
from ..params import header_bits
from ..spec import OPTIONS
from . import build

__all__ = ["SIZE", "ROUTERS", "FMAX", "configurations", "per_microsecond", "placed_fmax",
           "saturation_row", "saturation_command", "label", "row", "figure", "markdown"]

#: The fabric size whose saturation throughput the figure takes (issue 37: 1024, uniform).
SIZE = 1024
#: The fabric whose router of node 0 gives the Fmax (the synth table's).
ROUTERS = 26
#: Which Fmax the figure uses, as the output says it.
FMAX = ("Fmax: the router of node 0 of {routers} alone, placed ({family} of the {board}, "
        "Yosys {opts}); a whole fabric places lower")

#: The states of a row: its figures from today's design and model; from results files that
#: today's design or model would make otherwise; none.
CURRENT, STALE, NOT_MEASURED = "current", "stale", "not measured"


def configurations(folder="results", family="ecp5", routers=ROUTERS):
    """The specs of the routers of node 0 the figure has a row for: :func:`~.build.table_jobs`'s
    routers of ``routers`` nodes, wormhole ones first, then the packet ones, then these again
    at each other payload width with a results file in ``folder``."""
    jobs = build.table_jobs((), router_sizes=(routers,), wormhole_fabric=False)
    routers_alone = [job["spec"] for job in jobs if job.get("router") == 0 and "spec" in job]
    packet = [spec for spec in routers_alone if spec.packet]
    specs = [spec for spec in routers_alone if not spec.packet] + packet
    widths = set()
    for path in pathlib.Path(folder).glob(f"synth_{family}_ihcube_n{routers}_w*_router0*.json"):
        found = re.match(rf"synth_{family}_ihcube_n{routers}_w([0-9]+)_", path.name)
        if found:  # not a wormhole router's file
            widths.add(int(found.group(1)))
    for width in sorted(widths - {spec.payload_width for spec in packet}):
        for spec in packet:
            other = spec.replace(payload_width=width)
            if (pathlib.Path(folder) / f"{_synth_tag(other, family)}.json").exists():
                specs.append(other)
    return specs


def _synth_args(spec, family):
    job = {"spec": spec, "router": 0}
    return {"synth_opts": build.synth_options(family), "router": 0,
            "placer": build.table_placer(family, job)}


def _synth_tag(spec, family):
    return build.synth_name(spec, family, **_synth_args(spec, family))[1]


def per_microsecond(fmax_mhz, messages_per_cycle, flits=None, payload_bits=None):
    """Fmax (MHz: cycles per microsecond) times a throughput in messages per node per cycle:
    ``messages_per_us``, and ``flits_per_us`` for messages of ``flits`` flits and
    ``payload_bits_per_us`` for ``payload_bits`` a message (None where not given)."""
    messages = fmax_mhz * messages_per_cycle
    return {"messages_per_us": messages,
            "flits_per_us": None if flits is None else messages * flits,
            "payload_bits_per_us": None if payload_bits is None else messages * payload_bits}


def placed_fmax(figures):
    """The Fmax (MHz) of a build's results ``figures`` if it was placed and routed to the end,
    else None."""
    if not figures.get("fits") or figures.get("fmax_mhz") is None or figures.get("stopped") \
            or figures.get("placed") is False or not build.tools_finished(figures):
        return None
    return figures["fmax_mhz"]


def saturation_row(spec, folder="results", size=SIZE):
    """``(row, path)``: the row of ``spec``'s saturation results file in ``folder`` at
    ``size`` nodes, uniform traffic, msb and the spec's buffer depth (None if the file has
    none), and the file's path (None if there is no such file). The flit width is not
    compared: it changes no cycle."""
    from ..sim.sweep import saturation_results_name
    path = pathlib.Path(folder) / saturation_results_name(spec)
    if not path.exists():
        return None, None
    data = json.loads(path.read_text())
    recorded = data.get("wormhole") or {}
    if spec.wormhole is not None and any(recorded.get(key) != getattr(spec.wormhole, key)
                                         for key in ("flits", "vcs", "vc_depth")):
        return None, path
    depth = mode_of(spec).buffer_depth(spec)
    for found in data.get("saturation", []):
        if found["n"] == size and found.get("pattern", "uniform") == "uniform" \
                and found.get("order", "msb") == "msb" and found["depth"] == depth:
            return found, path
    return None, path


def saturation_command(spec, size=SIZE):
    """The command that measures ``spec``'s saturation at ``size`` nodes into ``results``:
    its mode's options but the flit width (which changes no cycle), and the depth, which
    ``saturation`` measures for each of ``--depths``."""
    flags = {option.keyword: option.flag for option in OPTIONS}
    keywords = {key: value for key, value in spec.keywords().items()
                if key not in ("nodes", "payload_width", "depth", "flit_width")}
    words = ["ihcube saturation"] + [f"{flags[key]} {value}" for key, value in keywords.items()]
    if spec.packet:
        words.append(f"--depths {spec.depth}")
    return " ".join(words + [f"--sizes {size}", "--out results"])


def label(spec):
    """What a row is: ``wormhole F8 V1 L20 Q2``, ``packet W32 depth 1, 1 link stage``."""
    if spec.wormhole is not None:
        wh = spec.wormhole
        return f"wormhole F{wh.flit_width} V{wh.vcs} L{wh.flits} Q{wh.vc_depth}"
    stages = f", {spec.stages.label}" if spec.stages else ""
    return f"packet W{spec.payload_width} depth {spec.depth}{stages}"


def row(spec, synth, saturation, size=SIZE):
    """The figure's row of ``spec`` from its synth results (``synth``: ``(figures, state,
    file)``, figures None if there is no results file) and its saturation (``(row, state,
    file)``, row None if there is none): Fmax, throughput per node per cycle and per
    microsecond, the payload bits of a message (``W``, the spec's payload width) and the
    room a wormhole message has for them (``L F`` less the header of the router's fabric),
    and the row's ``state`` with ``why`` when it is not current."""
    figures, synth_state, synth_file = synth
    found, saturation_state, saturation_file = saturation
    wh = spec.wormhole
    out = {"configuration": label(spec), "switching": spec.mode,
           "payload_width": spec.payload_width, "nodes": spec.nodes, "router": 0,
           "saturation_nodes": size, "synth_file": synth_file,
           "saturation_file": saturation_file}
    if wh is not None:
        out.update(flit_width=wh.flit_width, flits=wh.flits, vcs=wh.vcs, vc_depth=wh.vc_depth,
                   room_bits=wh.flits * wh.flit_width - header_bits(spec.nodes))
    else:
        out.update(depth=spec.depth, **spec.stages.keywords())
    fmax = None if figures is None else placed_fmax(figures)
    why = []
    if figures is None:
        why.append("no router-0 synth result (make synth-table)")
    elif fmax is None:
        why.append("router 0 not placed (make synth-table)")
    elif synth_state != CURRENT:
        why.append("synth result not of today's design (make synth-table)")
    if found is None and saturation_file is not None:
        # Its own command again with one size would write over the file's other rows.
        why.append(f"no saturation at {size} nodes in {saturation_file} (its command again, "
                   f"{size} among its --sizes: make results lists it)")
    elif found is None:
        why.append(f"no saturation at {size} nodes ({saturation_command(spec, size)})")
    elif saturation_state != CURRENT:
        why.append(f"saturation file {saturation_state} (make results)")
    out["fmax_mhz"] = fmax
    if fmax is None or found is None:
        out.update(state=NOT_MEASURED, why="; ".join(why))
        return out
    messages = found["throughput"]
    flits = None if wh is None else wh.flits
    out.update(messages_per_cycle=messages,
               flits_per_cycle=None if flits is None else messages * flits,
               backlogged_messages_per_cycle=found["backlogged"],
               **per_microsecond(fmax, messages, flits, spec.payload_width))
    out["room_bits_per_us"] = None if wh is None else out["messages_per_us"] * out["room_bits"]
    out["state"] = CURRENT if not why else STALE
    if why:
        out["why"] = "; ".join(why)
    return out


def figure(folder="results", family="ecp5", size=SIZE, routers=ROUTERS):
    """Every row (:func:`row`) of :func:`configurations`, from the results files in
    ``folder``."""
    from ..sim import provenance
    rows = []
    for spec in configurations(folder, family, routers):
        tag = _synth_tag(spec, family)
        path = pathlib.Path(folder) / f"{tag}.json"
        figures = json.loads(path.read_text()) if path.exists() else None
        state = None
        if figures is not None and placed_fmax(figures) is not None:
            state = CURRENT if build.built_from_today(figures, spec, family,
                                                      **_synth_args(spec, family)) else STALE
        found, saturation_path = saturation_row(spec, folder, size)
        saturation_state = None
        if found is not None:
            saturation_state = provenance.file_state(saturation_path)[0]
        rows.append(row(spec, (figures, state, path.name if figures else None),
                        (found, saturation_state,
                         saturation_path.name if saturation_path else None), size))
    return rows


def _number(value, digits=1):
    return "-" if value is None else f"{value:,.{digits}f}"


def markdown(rows, family="ecp5", size=SIZE, routers=ROUTERS):
    """The figure as a Markdown table, with a line saying which Fmax and which throughput it
    takes."""
    opts = build.synth_options(family)
    lines = [FMAX.format(routers=routers, family=family.upper(),
                         board=build.FAMILIES[family]["board"].upper(),
                         opts=opts or "defaults") + ".",
             f"Throughput: the fast model's saturation at n = {size}, uniform traffic, msb "
             f"(per node per cycle; a wormhole message is L flits). Payload: W bits a "
             f"message; room: L F - H bits a wormhole message holds beside its header "
             f"(H = {header_bits(routers)} at {routers} nodes).",
             "",
             "| router 0 | Fmax (MHz) | messages (flits) per node per cycle | flits per "
             "node per µs | messages per node per µs | payload bits per node per µs | "
             "room bits per node per µs | state |",
             "|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        if r["state"] == NOT_MEASURED:
            cells = [r["configuration"],
                     _number(r["fmax_mhz"]) if r["fmax_mhz"] is not None else "not measured"]
            cells += ["-"] * 5 + [f"not measured: {r['why']}"]
        else:
            per_cycle = f"{r['messages_per_cycle']:.4f}"
            if r.get("flits_per_cycle") is not None:
                per_cycle += f" ({r['flits_per_cycle']:.3f})"
            cells = [r["configuration"], _number(r["fmax_mhz"]), per_cycle,
                     _number(r["flits_per_us"]), _number(r["messages_per_us"], 2),
                     _number(r["payload_bits_per_us"], 0), _number(r["room_bits_per_us"], 0),
                     r["state"] + (f": {r['why']}" if r.get("why") else "")]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
