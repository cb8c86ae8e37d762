"""Options that several ``ihcube`` commands share, parsed and checked once.

The fabric's options (one group, made from :data:`ihcube.spec.OPTIONS`, read into a
:class:`~ihcube.spec.FabricSpec`), comma-separated lists and
bounded numbers of the experiments, the output directory, where the commands that run many
tasks run them (``--jobs``, ``--scheduler``: a :class:`~ihcube.sim.cluster.Cluster`) and on
how many threads each task's model runs (``--threads``), the FPGA builds' Yosys options and
placer, and the benchmarks' command line. A mistake is a
:class:`~.usage.UsageError`.
"""

import argparse
import contextlib
import errno
import math
import os
import pathlib
import sys
import tempfile

from .. import topology
from ..params import (PACKET,
                      check_depth, check_model_threads)
from ..spec import OPTIONS
from .usage import UsageError, checked, command_parser, integer, parse_number, run

__all__ = ["AD_HOC", "add_fabric_options", "fabric_spec", "require", "stage_value",
           "deprecated", "add_old_spelling", "renamed",
           "add_threads_option", "thread_count",
           "ints", "floats", "choices", "number", "check_out", "out_dir", "out_file",
           "file_name", "add_out_option", "MAX_JOBS", "node_count",
           "collective_node_count", "analysis_node_count", "MAX_EXPERIMENT_NODES",
           "model_depth", "add_run_options", "run_options", "add_cluster_options",
           "cluster_options", "started", "add_build_options", "build_options", "run_benchmark",
           "add_pnr_minutes_option", "pnr_minutes", "one_build_at_a_time"]


#: Where the commands write by default. The reference results in ``results/`` are written
#: only by their make targets (``make sweep``, ``make bench``, ...), which pass ``--out
#: results``; an ad hoc run never replaces them unless asked to.
AD_HOC = "build/results"


def add_fabric_options(parser, nodes_required=True, leave_out=()):
    """Add the fabric's options to ``parser``, one for each row of
    :data:`ihcube.spec.OPTIONS` (``--nodes --width --depth --order --ports``, ``--switching``
    and the wormhole options, the register stages); :func:`fabric_spec` checks them all at
    once. Every command that builds a fabric takes this one group.

    The options named in ``leave_out`` (by keyword or flag: ``"nodes"``, ``"width"``, ...)
    are not listed in the help and have no default: the command takes them only to refuse
    them in one line if given (as ``ihcube sweep`` refuses ``--nodes``: give ``--sizes``)."""
    for option in OPTIONS:
        flags = (option.flag, *((option.short,) if option.short else ()))
        if (option.keyword in leave_out or option.dest in leave_out) and option.kind == "flag":
            parser.add_argument(*flags, action="store_true", default=None,
                                help=argparse.SUPPRESS)
        elif option.keyword in leave_out or option.dest in leave_out:
            parser.add_argument(*flags, default=None, metavar=option.metavar,
                                help=argparse.SUPPRESS)
        elif option.keyword == "nodes":
            parser.add_argument(*flags, required=nodes_required, metavar=option.metavar,
                                help=option.help)
        elif option.kind == "flag":
            parser.add_argument(*flags, action="store_true", help=option.help)
        else:
            parser.add_argument(*flags, default=option.default, metavar=option.metavar,
                                help=option.help)


def fabric_spec(args, hardware=True):
    """The checked :class:`~ihcube.spec.FabricSpec` of :func:`add_fabric_options`' options:
    each value read as its :attr:`~ihcube.spec.Option.kind` says, the whole spec checked once
    (:meth:`FabricSpec.of <ihcube.spec.FabricSpec.of>`), and with ``hardware`` within the
    generator's limits. A mistake is a :class:`~.usage.UsageError`, one line.

    ``--width`` is refused with wormhole switching: a wormhole fabric's hardware, file and
    module name depend on its flits (``--flits``, ``--flit-width``), not on a payload width
    (its messages carry the flits' bits beside the header); the spec takes the default."""
    from ..spec import FabricSpec
    width = next(option for option in OPTIONS if option.keyword == "payload_width")
    if (getattr(args, "switching", None) == "wormhole"
            and getattr(args, width.dest) not in (None, width.default)):
        raise UsageError(f"Payload width ({width.flag}) is not taken with wormhole switching: "
                         f"a message carries its flits' bits beside the header; give --flits "
                         f"and --flit-width, not {getattr(args, width.dest)!r}")
    values = {}
    for option in OPTIONS:
        text = getattr(args, option.dest)
        if text is None or option.kind in ("name", "flag"):
            values[option.keyword] = text
        elif option.kind == "stage":
            values[option.keyword] = stage_value(text, option.keyword)
        else:
            values[option.keyword] = integer(text, option.what, lambda value: value)
    spec = checked(lambda: FabricSpec.of(**values))
    return checked(spec.check_hardware) if hardware else spec


def deprecated(old, new):
    """Say, in one line on standard error, that the option ``old`` is the old spelling of
    ``new``: it still works, for one release."""
    print(f"ihcube: {old} is deprecated and will be removed in the next release: give {new}",
          file=sys.stderr)


def add_old_spelling(parser, flags, dest, **keywords):
    """Add ``flags``, the old spelling of an option, to ``parser``: kept out of the help, its
    value in ``dest`` (None if not given); :func:`renamed` reads it."""
    parser.add_argument(*flags, dest=dest, default=None, help=argparse.SUPPRESS, **keywords)


def renamed(args, old_dest, new_dest, old, new):
    """The value of the option ``new`` (``args.<new_dest>``, None if not given), or of its old
    spelling ``old`` (``args.<old_dest>``, :func:`add_old_spelling`), which says it is
    deprecated (:func:`deprecated`); both given is a :class:`~.usage.UsageError`."""
    value = getattr(args, old_dest)
    if value is None:
        return getattr(args, new_dest)
    if getattr(args, new_dest) is not None:
        raise UsageError(f"Give {new} alone: {old} is its old spelling")
    deprecated(old, new)
    return value


def require(spec, condition, message):
    """Raise a :class:`~.usage.UsageError` saying ``message`` unless ``condition``: how a
    command refuses, in one line, an option of the fabric group it cannot use."""
    if not condition:
        raise UsageError(message)
    return spec


def stage_value(text, key="link_stages"):
    """``text`` as a checked count of the register stage ``key`` (``"link_stages"``,
    ``"switch_stages"`` or ``"eject_stages"``: :meth:`ihcube.spec.Stages.check`)."""
    from ..spec import Stages
    try:
        value = parse_number(text, int)
    except ValueError:  # not a number: the check says what is allowed (0 is, unlike a count)
        value = text
    return checked(Stages.check, value, key)


def add_threads_option(parser):
    """Add ``--threads`` (the threads each task's packet model runs on, default 1) to
    ``parser``; :func:`thread_count` checks it."""
    parser.add_argument("--threads", default="1", metavar="T",
                        help="packet switching: threads each task's model runs on (default "
                             "1; a size of fewer than T nodes runs on one a node); the "
                             "results are the same bytes for any T; with --jobs J, J x T "
                             "cores (docs/scale.md)")


def thread_count(text, switching=PACKET):
    """``text`` (``--threads``: :func:`add_threads_option`, ``ihcube bench-model``) as a
    checked count of model threads (:func:`ihcube.params.check_model_threads`; with
    wormhole ``switching`` only 1)."""
    return integer(text, "Thread count",
                   lambda value: check_model_threads(value, switching))


def ints(text, what, check, at_least=1):
    """Comma-separated integers of at least ``at_least``, each validated by ``check``."""
    values = []
    for part in str(text).split(","):
        try:
            value = parse_number(part, int)
        except ValueError:
            raise UsageError(f"{what} must be comma-separated integers of at least {at_least}, "
                             f"not {text!r}") from None
        if value < at_least:
            raise UsageError(f"{what} must be comma-separated integers of at least {at_least}, "
                             f"not {text!r}")
        values.append(checked(check, value))
    return tuple(values)


def floats(text, what, low, high):
    """Comma-separated numbers from ``low`` to ``high``."""
    values = []
    for part in str(text).split(","):
        try:
            value = parse_number(part, float)
        except ValueError:
            value = None
        if value is None or not low <= value <= high:
            raise UsageError(f"{what} must be comma-separated numbers from {low:g} to {high:g}, "
                             f"not {text!r}")
        values.append(value)
    return tuple(values)


def choices(text, what, allowed):
    """Comma-separated names, each one of ``allowed``."""
    values = tuple(part.strip() for part in str(text).split(","))
    for value in values:
        if value not in allowed:
            raise UsageError(f"{what} must be comma-separated names from "
                             f"{', '.join(allowed)}, not {text!r}")
    return values


def number(text, what, kind, low, high=None):
    """One ``kind`` (``int`` or ``float``) from ``low`` to ``high`` (no upper bound if None)."""
    try:
        value = parse_number(text, kind)
    except ValueError:
        value = None
    if (value is None or not math.isfinite(value) or not low <= value
            or (high is not None and not value <= high)):
        allowed = f"from {low:g} to {high:g}" if high is not None else f"at least {low:g}"
        raise UsageError(f"{what} must be a number {allowed}, not {text!r}")
    return value


def _existing_ancestor(path):
    """The nearest of ``path`` and its parents that exists (the current directory for a
    relative path with none)."""
    for candidate in (path, *path.parents):
        if os.path.lexists(candidate):
            return candidate
    return pathlib.Path(".")


def _writable(folder):
    """Whether a file can be made in ``folder``: tried, not asked (``os.access`` says yes to
    root everywhere, even in ``/proc`` and ``/sys``)."""
    try:
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError as error:
        return error.strerror or str(error)


def check_out(text, what="--out", file=False):
    """Check, before any work, that ``text`` can be written, and return it as a path; nothing
    is created. A directory (``file`` False) must be an existing directory that can be written,
    or one that can be made: its nearest existing parent a directory that can be written. A
    file (``file`` True) must not be a directory, and its directory must be one that can be
    written or made. A mistake is a :class:`~.usage.UsageError`, one line: the output location
    of every command is checked here, once, so that no run is lost to it at its end."""
    if not isinstance(text, str) or not text.strip() or "\0" in text:
        raise UsageError(f"{what} must name a {'file' if file else 'directory'}, not {text!r}")
    path = pathlib.Path(text)
    if file:
        if text.endswith(os.sep) or path.is_dir():
            raise UsageError(f"cannot write {text!r}: {os.strerror(errno.EISDIR)}")
        folder = path.parent
    else:
        folder = path
    found = _existing_ancestor(folder)
    if not found.is_dir():  # as mkdir would say it, after the work
        why = errno.EEXIST if found == folder else errno.ENOTDIR
        raise UsageError(f"cannot create output directory {str(folder)!r}: {os.strerror(why)}")
    why = _writable(found)
    if why is not True:
        raise UsageError(f"cannot write into {str(found)!r}: {why}")
    return path


def out_dir(text, what="--out"):
    """The output directory ``text``, checked (:func:`check_out`) and created if missing."""
    out = check_out(text, what)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UsageError(f"cannot create output directory {str(out)!r}: {error.strerror}") \
            from None
    return out


def out_file(text, what="--out"):
    """The output file ``text``, checked (:func:`check_out`), its directory created if
    missing."""
    out = check_out(text, what, file=True)
    out_dir(str(out.parent), what)
    return out


def file_name(text, what="--name"):
    """``text`` as the name (or prefix) of a file in the output directory: not empty, no
    directory in it."""
    if (not isinstance(text, str) or not text.strip() or text in (".", "..") or "\0" in text
            or "/" in text or os.sep in text):
        raise UsageError(f"{what} must be a file name without a directory, not {text!r}")
    return text


#: The most nodes ``ihcube sweep`` and ``saturation`` take. Their traffic patterns draw
#: by distance class, ``O(n)`` memory (:mod:`ihcube.sim.by_distance`); what bounds them is
#: a saturated point's source queues, 40 bytes a queued message (``docs/scale.md``,
#: "The experiments at 65,536 nodes").
MAX_EXPERIMENT_NODES = 1 << 16
#: The most nodes ``ihcube collectives`` takes: a total exchange is ``n * (n - 1)``
#: messages (8,192 nodes took 12.9 GB; ``docs/scale.md``).
MAX_COLLECTIVE_NODES = 1 << 13
#: The most nodes ``ihcube analyze --sizes`` takes (it reads ``n x n`` probability tables).
MAX_ANALYSIS_NODES = 1 << 16


def node_count(n, most=MAX_EXPERIMENT_NODES, what="the experiments"):
    """A node count ``what`` takes: traffic needs two nodes, and at most ``most``."""
    topology.check_node_count(n)
    if n < 2:
        raise ValueError(f"Node count must be at least 2 for traffic, not {n!r}")
    if n > most:
        raise ValueError(f"Node count must be at most {most} for {what}, not {n!r}")
    return n


def collective_node_count(n):
    """:func:`node_count` of ``ihcube collectives``."""
    return node_count(n, MAX_COLLECTIVE_NODES, "the collectives")


def analysis_node_count(n):
    """:func:`node_count` of ``ihcube analyze``."""
    return node_count(n, MAX_ANALYSIS_NODES, "the exact analysis")


def model_depth(depth):
    """A buffer depth the experiments' model takes (at most 64)."""
    check_depth(depth)
    if depth > 64:
        raise ValueError(f"Buffer depth must be at most 64 for the experiments, not {depth!r}")
    return depth


def add_run_options(parser):
    """Add the experiments' ``--jobs`` and ``--scheduler`` (:func:`add_cluster_options`),
    ``--threads`` (:func:`add_threads_option`) and ``--out`` (directory, default
    :data:`AD_HOC`) to ``parser``; :func:`run_options` checks ``--jobs``, ``--scheduler``
    and ``--out``, :func:`thread_count` ``--threads``."""
    add_cluster_options(parser)
    add_threads_option(parser)
    add_out_option(parser)


def add_cluster_options(parser):
    """Add ``--jobs`` (local worker processes, default 2) and ``--scheduler`` (a running Dask
    scheduler's address) to ``parser``; :func:`cluster_options` checks them."""
    parser.add_argument("--jobs", "-j", default="2", metavar="J",
                        help=f"local worker processes, 1 to {MAX_JOBS} (default 2; 1 runs in "
                             f"this process, as any number does without Dask)")
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS",
                        help="run on the Dask cluster of this scheduler (tcp://host:8786) "
                             "instead of local workers")


def add_out_option(parser):
    """Add ``--out DIR`` (default :data:`AD_HOC`; the make targets pass ``results``)."""
    parser.add_argument("--out", "-o", default=AD_HOC, metavar="DIR",
                        help=f"directory to write into (default {AD_HOC}; the make targets "
                             f"write the reference results into results)")


def run_options(args):
    """The checked ``(cluster, out)`` of :func:`add_run_options`' options: a
    :class:`~ihcube.sim.cluster.Cluster`, not started yet (:func:`started`), and the output
    directory, created."""
    return cluster_options(args), out_dir(args.out)


#: The most local worker processes ``--jobs`` takes: the machine's cores (two on a machine of
#: one). More only wait for each other, and each holds a model and its semaphores.
MAX_JOBS = max(2, os.cpu_count() or 1)


def cluster_options(args, what="Jobs"):
    """The :class:`~ihcube.sim.cluster.Cluster` of :func:`add_cluster_options`' options, not
    started yet; ``what`` names ``--jobs`` in an error. Without Dask (``pip install ihcube``
    alone) local jobs run in this process, one after another, and one line on standard error
    says so; a ``--scheduler`` needs Dask (:class:`~ihcube.extras.MissingExtra`)."""
    from ..sim.cluster import Cluster
    jobs = number(args.jobs, what, int, 1, MAX_JOBS)
    scheduler = args.scheduler
    if scheduler is not None and not scheduler.strip():
        raise UsageError(f"Scheduler must be an address such as tcp://host:8786, not "
                         f"{scheduler!r}")
    if scheduler is None and jobs > 1 and not _have_dask():
        print(f"ihcube: Dask is not installed (pip install 'ihcube[cluster]'): running the "
              f"tasks in this process instead of {jobs} worker processes", file=sys.stderr)
        jobs = 1
    return Cluster(jobs, scheduler)


def _have_dask():
    import importlib.util
    return importlib.util.find_spec("distributed") is not None


@contextlib.contextmanager
def started(cluster):
    """``with started(cluster):`` runs the ``with`` block in the started ``cluster`` (and
    stops it after); a cluster that cannot start is a :class:`~.usage.UsageError`, one
    line."""
    from ..sim.cluster import ClusterError
    try:
        cluster.__enter__()
    except ClusterError as error:
        raise UsageError(str(error)) from None
    try:
        yield cluster
    finally:
        cluster.__exit__(None, None, None)


def add_build_options(parser, placer_default):
    """Add the FPGA builds' ``--synth-opts`` and ``--placer`` to ``parser``;
    ``placer_default`` says, for the help, which placer runs when none is asked for."""
    from ..boards.build import PLACERS
    parser.add_argument("--synth-opts", default=None,
                        help="options for Yosys's synth_<family> (default: -nowidelut on ECP5, "
                             "none on iCE40; 'none' for none)")
    parser.add_argument("--placer", default=None,
                        help=f"nextpnr's placer: {', '.join(PLACERS)} (default: {placer_default})")
    add_out_option(parser)


@contextlib.contextmanager
def one_build_at_a_time():
    """Around an FPGA build: another build already running in its folder
    (:class:`~ihcube.boards.build.BuildBusy`) is one line, not a traceback."""
    from ..boards.build import BuildBusy
    try:
        yield
    except BuildBusy as error:
        raise UsageError(str(error)) from None


def add_pnr_minutes_option(parser):
    """Add ``--pnr-minutes`` (a time limit for place and route) to ``parser``."""
    parser.add_argument("--pnr-minutes", default=None, metavar="MIN",
                        help="stop nextpnr after MIN minutes and record the build as stopped "
                             "(default: no limit)")


def pnr_minutes(args):
    """The checked ``--pnr-minutes`` of :func:`add_pnr_minutes_option` (None: no limit)."""
    from ..boards.build import check_pnr_minutes
    if args.pnr_minutes is None:
        return None
    try:
        return check_pnr_minutes(parse_number(args.pnr_minutes, float))
    except ValueError:
        raise UsageError(f"Place-and-route time limit must be a positive number of minutes, "
                         f"not {args.pnr_minutes!r}") from None


def build_options(args):
    """The ``(synth_opts, placer, out)`` of :func:`add_build_options`' options, the placer
    checked and the output directory created."""
    from ..boards.build import check_placer
    return args.synth_opts, checked(check_placer, args.placer), out_dir(args.out)


def run_benchmark(name, doc, benchmark, argv, options=None, check_nodes=None):
    """Run ``ihcube <name>``, the command of ``benchmark`` (a module of :mod:`ihcube.bench`):
    its ``benchmark(sizes, out)`` over ``--sizes N,...`` (default its ``SIZES``) into the JSON
    file named as its ``OUT`` in the directory ``--out`` (default :data:`AD_HOC`); return the
    exit status. The old spellings ``--nodes N ...`` and ``--out FILE.json`` still work, each
    with a one-line notice (:func:`deprecated`).

    ``check_nodes`` checks each size (default :func:`ihcube.topology.check_node_count`), so
    that a size the benchmark cannot run is one line, not a traceback after the others ran.
    ``options``, if given, adds the command's own arguments to the parser and returns a
    function of the parsed arguments (and whether the sizes are the default ones) that gives
    ``benchmark``'s further keyword arguments (checking them: a :class:`UsageError` is the
    command's one-line error). The output file is checked (:func:`out_file`) after every
    option and before the work."""
    parser = command_parser(name, doc)
    sizes_text = ",".join(map(str, benchmark.SIZES))
    parser.add_argument("--sizes", default=None, metavar="N,...",
                        help=f"fabric sizes (default {sizes_text})")
    add_old_spelling(parser, ["--nodes"], "old_nodes", nargs="+")
    file = pathlib.PurePath(benchmark.OUT).name
    parser.add_argument("--out", "-o", default=AD_HOC, metavar="DIR",
                        help=f"directory to write {file} into (default {AD_HOC}; make writes "
                             f"{benchmark.OUT})")
    further = options(parser) if options is not None else (lambda args, default: {})
    check = check_nodes or topology.check_node_count

    def body(args):
        given = renamed(args, "old_nodes", "sizes", "--nodes N ...", "--sizes N,...")
        if given is None:
            sizes = list(benchmark.SIZES)
        elif isinstance(given, list):  # the old spelling's separate numbers
            sizes = [integer(text, "Node count", check) for text in given]
        else:
            sizes = list(ints(given, "Sizes", check))
        keywords = further(args, given is None)
        benchmark.benchmark(sizes, _benchmark_file(args.out, file), **keywords)
    return run(name, parser, body, argv)


def _benchmark_file(text, file):
    """The JSON file a benchmark writes for ``--out text``: ``file`` in the directory
    ``text``, or, the old spelling, the file ``text`` itself if it ends in ``.json`` and is
    not a directory (with a notice)."""
    if isinstance(text, str) and text.endswith(".json") and not os.path.isdir(text):
        path = out_file(text)  # a location that cannot be written is the one line
        deprecated("--out FILE.json", "--out DIR")
        return path
    return out_dir(text) / file


def provenance_of(args):
    """What a results file records of the code that made it: the command line of ``args``
    and the behaviour digests (:func:`ihcube.sim.provenance.stamp`; loaded only when a file
    is written)."""
    from ..sim import provenance
    return provenance.stamp(args.command_line)
