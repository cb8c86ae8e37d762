"""Write the Verilog of an n-node fabric.

``ihcube verilog --nodes 26 [--width 32] [--depth 1] [--order msb] [--ports 1]
[--link-stages 0] [--switch-stages 0] [--eject-stages 0] [--interface native] [--out gen]
[--fusesoc]`` (``make verilog N=26 [PORTS=2] [LINK_STAGES=1 SWITCH_STAGES=1
EJECT_STAGES=1] [INTERFACE=axis] [FUSESOC=1]``), or with
``--switching wormhole [--flits 20] [--flit-width 32] [--vcs 3] [--vc-depth 2]`` (``make
verilog N=26 SWITCHING=wormhole VCS=3 FLITS=20``), writes ``<out>/<name>.v``, named by
:func:`ihcube.generate.fabric_name`, with :func:`ihcube.generate.fabric_verilog`, and prints
one line; with ``--fusesoc`` also a FuseSoC core beside it (:func:`ihcube.fusesoc.write_core`),
and a second line. Amaranth loads only once the options are checked.
"""

import sys

from .options import add_fabric_options, check_out, fabric_spec
from .usage import UsageError, command_parser, run

__all__ = ["main"]

NAME = "verilog"


def _parser():
    parser = command_parser(NAME, __doc__)
    add_fabric_options(parser)
    parser.add_argument("--out", "-o", default="gen", metavar="DIR",
                        help="directory to write into (default gen)")
    parser.add_argument("--fusesoc", action="store_true",
                        help="also write a FuseSoC core, <name>.core, and its Verilator "
                             "waivers, <name>.vlt, beside the Verilog (docs/fusesoc.md)")
    return parser


def _verilog(args):
    spec = fabric_spec(args)
    check_out(args.out)
    from ..generate import OutputError, write_fabric  # Amaranth loads only when needed
    try:
        # Checks the folder first, writes a temporary file and renames it: a failed write
        # leaves nothing half-written under the final name.
        path, size = write_fabric(args.out, spec)
    except (ValueError, OutputError) as error:  # e.g. a routing that can deadlock
        raise UsageError(str(error)) from None
    print(f"wrote {path} ({describe(spec)}, {size:,} bytes)")
    if args.fusesoc:
        from ..fusesoc import core_name, write_core
        from .. import version
        try:
            core = write_core(args.out, spec)
        except OSError as error:
            raise UsageError(f"cannot write the FuseSoC core into {args.out!r}: "
                             f"{error.strerror}") from None
        print(f"wrote {core} (FuseSoC core {core_name(spec, version())}, with "
              f"{core.with_suffix('.vlt').name})")


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
