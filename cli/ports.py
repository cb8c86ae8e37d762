"""List the ports of the generated fabric's top module.

``ihcube ports --nodes 26 [--width 32] [--json]`` prints each port of ``ihcube_n<N>_w<W>``
(direction, width, meaning; node ``k``'s ports once, as ``inject__<k>__valid``) and the
fields of the ``inject`` and ``eject`` payloads with their bit ranges; ``--json`` prints every
port of every node and the fields, for scripts. Nothing is generated: the ports come from
the same signature the generator writes.
"""

import json
import re
import sys

from .options import fabric_parameters
from .usage import command_parser, run

__all__ = ["main"]

NAME = "ports"


def _parser():
    parser = command_parser(NAME, __doc__)
    parser.add_argument("--nodes", "-n", required=True, metavar="N", help="number of nodes")
    parser.add_argument("--width", "-w", default="32", metavar="W",
                        help="payload width in bits (default 32)")
    parser.add_argument("--json", action="store_true", help="every port, as JSON")
    return parser


def _bits(lsb, width):
    return f"[{lsb}]" if width == 1 else f"[{lsb + width - 1}:{lsb}]"


def _ports(args):
    args.depth, args.order = "1", "msb"  # the ports depend on neither
    n, width, _, _ = fabric_parameters(args)
    from ..generate import PORT_MEANINGS, fabric_name, fabric_ports, payload_fields
    ports = fabric_ports(n, width)
    fields = payload_fields(n, width)
    if args.json:
        print(json.dumps({"top": fabric_name(n, width), "nodes": n, "payload_width": width,
                          "ports": [dict(name=name, direction=direction, width=bits)
                                    for name, direction, bits in ports],
                          "fields": {port: [dict(name=name, lsb=lsb, width=bits)
                                            for name, lsb, bits in layout]
                                     for port, layout in fields.items()}}, indent=1))
        return
    print(f"{fabric_name(n, width)}: {n} nodes, payload {width} bits; ports of node k, "
          f"k = 0 .. {n - 1}:")
    rows = []
    for name, direction, bits in ports:
        template = re.sub(r"__0(__|$)", r"__k\1", name)
        if template == name and name not in ("clk", "rst"):
            continue  # another node's port: the same as node 0's
        meaning = PORT_MEANINGS[template]
        if template.endswith("payload"):
            port = template.split("__")[0]
            meaning += ": " + " ".join(f"{field}{_bits(lsb, size)}"
                                       for field, lsb, size in fields[port])
        rows.append((template.replace("__k", "__<k>"), direction, bits, meaning))
    wide = max(len(row[0]) for row in rows)
    for name, direction, bits, meaning in rows:
        print(f"  {name:<{wide}}  {direction:<3}  {bits:>5}  {meaning}")


def main(argv=None):
    """Run ``ihcube ports`` with ``argv`` (default: the process's); return the exit status."""
    return run(NAME, _parser(), _ports, argv)


if __name__ == "__main__":
    sys.exit(main())
