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


def main(argv=None):
    """Run ``ihcube ports`` with ``argv`` (default: the process's); return the exit status."""
    return run(NAME, _parser(), _ports, argv)


if __name__ == "__main__":
    sys.exit(main())
