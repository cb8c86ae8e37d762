"""Write the Verilog of an n-node fabric.

``ihcube verilog --nodes 26 [--width 32] [--depth 1] [--order msb] [--ports 1]
[--link-stages 0] [--switch-stages 0] [--eject-stages 0] [--interface native] [--out gen]
[--fusesoc]`` (``make verilog N=26 [PORTS=2] [LINK_STAGES=1 SWITCH_STAGES=1
EJECT_STAGES=1] [INTERFACE=axis] [FUSESOC=1]``), or with
``--switching wormhole [--flits 20] [--flit-width 32] [--vcs 3] [--vc-depth 2]`` (``make
verilog N=26 SWITCHING=wormhole VCS=3 FLITS=20``), writes ``<out>/<name>.v``, named by
:func:`ihcube.generate.fabric_name`, with :func:`ihcube.generate.fabric_verilog`, and prints
one line; with ``--fusesoc`` also a FuseSoC core beside it (:func:`ihcube.fusesoc.write_core`),
and a second line. Amaranth loads only once the options are checked. A generation that takes
more than :data:`PROGRESS_AFTER` seconds (thousands of nodes) shows its progress, the modules
converted, on standard error; standard output has only those lines. The line says the
design digest the file's header records (:mod:`ihcube.digest`).

``ihcube verilog --check FILE`` writes nothing: it checks that the text of ``FILE`` below its
header gives the design digest the header records (status 0, one line; 1 if not: the file
was changed after it was written); with the fabric options too (``--nodes N ...``) it also
checks that this ihcube writes that design for them.
"""

import sys

from .options import add_fabric_options, check_out, fabric_spec
from .usage import UsageError, command_parser, run

__all__ = ["main"]

NAME = "verilog"
#: Seconds of generation before a progress line shows on standard error.
PROGRESS_AFTER = 5.0


def _parser():
    parser = command_parser(NAME, __doc__)
    add_fabric_options(parser, nodes_required=False)
    parser.add_argument("--out", "-o", default=None, metavar="DIR",
                        help="directory to write into (default gen)")
    parser.add_argument("--fusesoc", action="store_true",
                        help="also write a FuseSoC core, <name>.core, and its Verilator "
                             "waivers, <name>.vlt, beside the Verilog (docs/fusesoc.md)")
    parser.add_argument("--check", metavar="FILE",
                        help="write nothing; check that FILE's text gives the design digest "
                             "its header records, and with --nodes that this ihcube writes "
                             "that design for the fabric options")
    return parser


def _verilog(args):
    if args.check is not None:
        return _check(args)
    if args.nodes is None:
        raise UsageError("the following arguments are required: --nodes/-n")
    spec = fabric_spec(args)
    out = "gen" if args.out is None else args.out
    check_out(out)
    from ..generate import OutputError, write_fabric  # Amaranth loads only when needed
    try:
        # Checks the folder first, writes a temporary file and renames it: a failed write
        # leaves nothing half-written under the final name.
        path, size = write_fabric(out, spec, progress=progress())
    except (ValueError, OutputError) as error:  # e.g. a routing that can deadlock
        raise UsageError(str(error)) from None
    from ..digest import read_header, recorded_digest
    print(f"wrote {path} ({describe(spec)}, {size:,} bytes, design digest "
          f"{recorded_digest(read_header(path))})")
    if args.fusesoc:
        from ..fusesoc import core_name, write_core
        from .. import version
        try:
            core = write_core(out, spec)
        except OSError as error:
            raise UsageError(f"cannot write the FuseSoC core into {out!r}: "
                             f"{error.strerror}") from None
        print(f"wrote {core} (FuseSoC core {core_name(spec, version())}, with "
              f"{core.with_suffix('.vlt').name})")


def _check(args):
    """``--check FILE``: the file's design digest against its header's, and with ``--nodes``
    against the design this ihcube writes for the fabric options; the exit status."""
    from ..spec import OPTIONS
    if args.out is not None or args.fusesoc:
        raise UsageError("--check writes nothing: leave out --out and --fusesoc")
    spec = None
    if args.nodes is not None:
        spec = fabric_spec(args)
    else:
        given = [option.flag for option in OPTIONS
                 if getattr(args, option.dest) not in (None, False, option.default)]
        if given:
            raise UsageError(f"--check compares FILE with the fabric of the options only with "
                             f"--nodes: give --nodes, or leave out {', '.join(given)}")
    try:
        with open(args.check, "rb") as file:
            text = file.read().decode()
    except OSError as error:
        raise UsageError(f"cannot read {args.check!r}: {error.strerror}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{args.check!r} is not a Verilog file ihcube wrote: it is not "
                         f"UTF-8 text") from None
    from ..digest import check, design_digest, recorded_digest
    try:
        recorded = recorded_digest(text)
    except ValueError:
        recorded = None
    if recorded is None:
        raise UsageError(f"{args.check!r} has no design digest in a header: not a Verilog file "
                         f"written by ihcube 0.2.0 or later")
    try:
        digest = check(text)
    except ValueError as error:
        print(f"{args.check}: {error}")
        return 1
    line = f"{args.check}: design digest {digest}, as its header records"
    if spec is None:
        print(line)
        return 0
    from .. import version
    from ..generate import fabric_verilog
    try:
        written = design_digest(fabric_verilog(spec, progress=progress()))
    except ValueError as error:  # e.g. a routing that can deadlock
        raise UsageError(str(error)) from None
    if written != digest:
        print(f"{line}; but ihcube {version()} writes {spec.name} ({describe(spec)}) with "
              f"design digest {written}")
        return 1
    print(f"{line}, and as ihcube {version()} writes {spec.name} ({describe(spec)})")
    return 0


def progress():
    """A ``progress(done, total)`` for :func:`ihcube.generate.fabric_verilog`: a progress
    line on standard error (:class:`ihcube.sim.cluster.Progress`) once the generation has
    taken :data:`PROGRESS_AFTER` seconds."""
    from ..sim.cluster import Progress
    bar = Progress(0, "modules converted", after=PROGRESS_AFTER)

    def step(done, total):
        bar.total = total
        bar.step(done - bar.done)
    return step


def describe(spec):
    """The fabric ``spec`` in a few words, as the commands print it: ``26 nodes, payload 32
    bits, depth 1, order msb`` (and the PE ports and stages when not the defaults), or its
    wormhole options."""
    if not spec.packet:
        wh = spec.wormhole
        return (f"{spec.nodes} nodes, wormhole: {wh.flits} flits of {wh.flit_width} bits, "
                f"{wh.vcs} virtual channel{'s' if wh.vcs != 1 else ''} of {wh.vc_depth} "
                f"flits, order {spec.order}"
                + ("" if spec.interface == "native" else f", {spec.interface} interface"))
    more = "" if spec.ports == 1 else f", {spec.ports} PE ports"
    if spec.stages:
        more += f", {spec.stages.label}"
    if spec.interface != "native":
        more += f", {spec.interface} interface"
    return (f"{spec.nodes} nodes, payload {spec.payload_width} bits, depth {spec.depth}, "
            f"order {spec.order}{more}")


def main(argv=None):
    """Run ``ihcube verilog`` with ``argv`` (default: the process's); return the exit status."""
    return run(NAME, _parser(), _verilog, argv)


if __name__ == "__main__":
    sys.exit(main())
