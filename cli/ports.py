"""List the ports of the generated fabric's top module.

``ihcube ports --nodes 26 [--width 32] [the other fabric options] [--json]`` prints each port
of the top module named by the options (``ihcube_n<N>_w<W>`` by default)
(direction, width, meaning; node ``k``'s ports once, as ``inject__<k>__valid``) and the
fields of the ``inject`` and ``eject`` payloads with their bit ranges; ``--json`` prints every
port of every node and the fields, for scripts. Nothing is generated: the ports come from
the same signature the generator writes.
"""

import json
import sys

from .options import add_fabric_options, fabric_spec, require
from .usage import command_parser, run

__all__ = ["main"]

NAME = "ports"


def _parser():
    parser = command_parser(NAME, __doc__)
    add_fabric_options(parser)
    parser.add_argument("--json", action="store_true", help="every port, as JSON")
    return parser


def _bits(lsb, width):
    return f"[{lsb}]" if width == 1 else f"[{lsb + width - 1}:{lsb}]"


def _ports(args):
    spec = fabric_spec(args)
    require(spec, spec.packet, "ihcube ports lists a packet fabric's ports, not a wormhole "
                               "fabric's (their flits and ports: docs/wormhole.md)")
    n, width, pe_ports, top = spec.nodes, spec.payload_width, spec.ports, spec.name
    if spec.interface != "native":
        return _axis_ports(spec, args.json)
    from ..generate import PORT_MEANINGS, fabric_ports, payload_fields
    listed = fabric_ports(n, width, pe_ports, spec.reconfigurable)
    fields = payload_fields(n, width, spec.reconfigurable)
    if args.json:
        print(json.dumps({"top": top, "nodes": n, "payload_width": width, "ports": pe_ports,
                          "port_list": [dict(name=name, direction=direction, width=bits)
                                        for name, direction, bits in listed],
                          "fields": {port: [dict(name=name, lsb=lsb, width=bits)
                                            for name, lsb, bits in layout]
                                     for port, layout in fields.items()}}, indent=1))
        return
    each = "" if pe_ports == 1 else f", PE port p = 0 .. {pe_ports - 1}"
    print(f"{top}: {n} nodes, payload {width} bits; ports of node k, k = 0 .. {n - 1}{each}:")
    rows = []
    for name, direction, bits in listed:
        group, *index = name.split("__")
        field = [index.pop()] if index and index[-1].isalpha() else []
        # index: the node, and the PE port for inject and eject when there are several.
        if any(i != "0" for i in index):
            continue  # another node's or PE port's: as node 0's first
        key = "__".join([group, *(["k"] if index else []), *field])
        shown = "__".join([group, *["<k>", "<p>"][:len(index)], *field])
        meaning = PORT_MEANINGS[key]
        if field == ["payload"]:
            meaning += ": " + " ".join(f"{name}{_bits(lsb, size)}"
                                       for name, lsb, size in fields[group])
        rows.append((shown, direction, bits, meaning))
    wide = max(len(row[0]) for row in rows)
    for name, direction, bits, meaning in rows:
        print(f"  {name:<{wide}}  {direction:<3}  {bits:>5}  {meaning}")


def _axis_ports(spec, as_json):
    """Print the AXI4-Stream top's ports (:func:`ihcube.axis.axis_ports`) and where each
    payload field is (:data:`ihcube.axis.MAPPING`)."""
    from ..axis import MAPPING, axis_ports
    listed = axis_ports(spec)
    if as_json:
        print(json.dumps({"top": spec.name, "nodes": spec.nodes,
                          "payload_width": spec.payload_width, "ports": spec.ports,
                          "interface": spec.interface,
                          "port_list": [dict(name=name, direction=direction, width=bits)
                                        for name, direction, bits in listed],
                          "mapping": {port: {field: dict(signal=signal, lsb=lsb)
                                             for field, (signal, lsb) in fields.items()}
                                      for port, fields in MAPPING.items()}}, indent=1))
        return
    print(f"{spec.name}: {spec.nodes} nodes, payload {spec.payload_width} bits, AXI4-Stream "
          f"(docs/axis.md); node 0's ports, the others' alike:")
    first = "_0_0_" if spec.ports != 1 else "_0_"
    for name, direction, bits in listed:
        if name in ("clk", "rst") or first in name or name.endswith("__0"):
            print(f"  {name:<24}  {direction:<3}  {bits:>5}")
    from ..generate import payload_fields
    widths = {port: {name: size for name, _, size in layout}
              for port, layout in payload_fields(spec.nodes, spec.payload_width).items()}
    for port, fields in MAPPING.items():
        print(f"  {port}: " + ", ".join(f"{field} on {signal}{_bits(lsb, widths[port][field])}"
                                        for field, (signal, lsb) in fields.items()))


def main(argv=None):
    """Run ``ihcube ports`` with ``argv`` (default: the process's); return the exit status."""
    return run(NAME, _parser(), _ports, argv)


if __name__ == "__main__":
    sys.exit(main())
