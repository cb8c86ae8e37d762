"""Which code made a results file, so that a stale one shows.

A results file of the experiments records, beside its figures, the *behaviour digests* of the
parts of the code its figures come from (:func:`stamp`): each digest is a hash of what that
part computes today on a few small fixed cases (:data:`PARTS`), run through the same
functions the experiments call. A change that alters any figure (a model that times a hop
otherwise, a traffic source that draws other messages, an analysis that counts a link
otherwise) moves the digest of its part; a change that alters none (a refactor, a speed-up)
leaves it, and the files stay current. :func:`status` compares each results file's digests
with today's (``ihcube results``, ``make results``) and names the command that makes a stale
file again, which the file records too.

The parts:

- ``model``: the fast models, their traffic sources and the sweep's measurement (packet
  switching with and without register stages, three patterns; wormhole switching);
- ``analysis``: the exact link-load analysis (:mod:`ihcube.sim.analysis`);
- ``collectives``: the collective operations on the model (:mod:`ihcube.sim.collectives`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import shlex
from pathlib import Path

__all__ = ["PARTS", "TRACKED", "digest", "file_state", "stamp", "status"]


def _model_cases():
    """The packet model's cases."""
    from ..spec import FabricSpec
    from . import sweep
    settings = _settings()
    packet = [FabricSpec.of(13, depth=1), FabricSpec.of(11, depth=3, order="lsb"),
              FabricSpec.of(13, depth=2, link_stages=1),
              FabricSpec.of(13, depth=2, link_stages=1, switch_stages=1, eject_stages=1)]
    rows = [sweep.measure(sweep.Point(spec, pattern, rate), settings)
            for spec in packet for pattern in ("uniform", "sphere", "decreasing")
            for rate in (0.05, 0.4)]
    rows += [sweep.zero_load(spec, cycles=400) for spec in (packet[0], packet[3])]
    return rows


def _wormhole_cases():
    """The wormhole model's cases: its own part, so that a change of wormhole timing leaves
    the packet results current."""
    from ..spec import FabricSpec
    from . import sweep
    wormhole = FabricSpec.of(11, switching="wormhole", flits=4, vcs=2, vc_depth=2)
    rows = [sweep.measure(sweep.Point(wormhole, "uniform", rate), _settings())
            for rate in (0.02, 0.2)]
    rows.append(sweep.zero_load(wormhole, cycles=400))
    return rows


def _settings():
    """The sweep settings of the model cases: short windows, two of them."""
    from . import sweep
    return sweep.Settings(warmup=100, window=100, min_windows=2, max_windows=2)


def _analysis_cases():
    from . import analysis
    rows = [analysis.analyze(n, pattern, order, reading)
            for n in (5, 13, 26) for pattern in ("uniform", "sphere", "decreasing")
            for order in ("msb", "lsb") for reading in ("literal", "exclusive")]
    rows.append(analysis.scan(40))
    return rows


def _collectives_cases():
    from . import collectives
    return [collectives.run_all((n, depth, ports)) for n in (6, 8) for depth in (1, 2)
            for ports in (1, 2)]


#: Each part's cases: a function whose results (made text by ``repr``) the digest hashes.
PARTS = {"model": _model_cases, "wormhole": _wormhole_cases, "analysis": _analysis_cases,
         "collectives": _collectives_cases}

#: The results files of the experiments (glob patterns in ``results/``) and the parts their
#: figures come from. Benchmarks (speeds, which no digest can vouch for) and the FPGA builds
#: (which record their design digest: ``ihcube synth-table``) are not here.
TRACKED = {
    # The first pattern a file matches names its parts: the wormhole files before the rest.
    "saturation_wormhole*.json": ("wormhole",),
    "sweep_wormhole*.json": ("wormhole",),
    "stress_campaign_wormhole*.json": ("wormhole",),
    "saturation*.json": ("model",),
    "sweep_*.json": ("model",),
    "stress_campaign*.json": ("model",),
    "collectives.json": ("model", "collectives"),
    "analysis.json": ("model", "analysis"),  # beside the measured saturation throughputs
    "analysis_scan.json": ("analysis",),
    "reconfiguration.json": ("model", "analysis"),
}


def _text(value):
    """A stable text of a case's result: floats to 12 significant digits, so that the last
    bit of a sum does not count as a change in behaviour."""
    if isinstance(value, float):
        return format(value, ".12g")
    if isinstance(value, dict):
        return "{" + ",".join(f"{key!r}:{_text(item)}" for key, item in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_text(item) for item in value) + "]"
    if hasattr(value, "_asdict"):
        return _text(value._asdict())
    if hasattr(value, "__dataclass_fields__"):
        return _text({name: getattr(value, name) for name in value.__dataclass_fields__})
    if hasattr(value, "tolist"):
        return _text(value.tolist())
    return repr(value)


@functools.cache
def digest(part):
    """The behaviour digest of ``part`` (a key of :data:`PARTS`): 16 hex digits."""
    if part not in PARTS:
        raise ValueError(f"Part must be one of {', '.join(PARTS)}, not {part!r}")
    text = _text(PARTS[part]())
    return hashlib.sha256(text.encode()).hexdigest()[:16]


#: Options that say where and on how many workers an experiment runs, which change no byte
#: of its results (``docs/commands.md``): a recorded command leaves them out.
RUN_OPTIONS = ("--jobs", "--threads", "--scheduler")


def _without_run_options(command):
    words, kept = shlex.split(command), []
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word in RUN_OPTIONS:
            skip = True
        elif not word.startswith(tuple(option + "=" for option in RUN_OPTIONS)):
            kept.append(word)
    return shlex.join(kept)


def stamp(command):
    """What a results file records of the code that made it: ``{"behaviour": {part: digest}
    for every part, "command": command}`` (the command line that makes it again, the
    commands' ``args.command_line``, without :data:`RUN_OPTIONS`). :func:`status` compares
    the parts :data:`TRACKED` names for the file."""
    return {"behaviour": {part: digest(part) for part in PARTS},
            "command": _without_run_options(command)}


def _tracked_parts(name):
    from fnmatch import fnmatch
    for pattern, parts in TRACKED.items():
        if fnmatch(name, pattern):
            return parts
    return None


def status(folder="results"):
    """Each tracked results file of ``folder``: ``(name, state, command)``, ``state``
    ``current``, ``stale`` (a recorded digest is not today's) or ``unstamped`` (the file
    records none), ``command`` the one it records (None if it records none)."""
    rows = []
    for path in sorted(Path(folder).glob("*.json")):
        parts = _tracked_parts(path.name)
        if parts is not None:
            rows.append((path.name, *file_state(path, parts)))
    return rows


def file_state(path, parts=None):
    """``(state, command)`` of the results file ``path`` as :func:`status` gives them, its
    digests compared for ``parts`` (default: those :data:`TRACKED` names for it)."""
    parts = _tracked_parts(Path(path).name) if parts is None else parts
    if parts is None:
        raise ValueError(f"Results file must be one of {', '.join(TRACKED)}, not "
                         f"{Path(path).name!r}")
    try:
        recorded = json.loads(Path(path).read_text()).get("provenance") or {}
    except (ValueError, AttributeError):
        recorded = {}
    behaviour = recorded.get("behaviour") or {}
    if not behaviour:
        state = "unstamped"
    elif all(behaviour.get(part) == digest(part) for part in parts):
        state = "current"
    else:
        state = "stale"
    return state, recorded.get("command")
