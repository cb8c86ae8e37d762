"""List the ports of the generated fabric's top module.

``ihcube ports --nodes 26 [--width 32] [the other fabric options] [--json]`` prints each port
of the top module named by the options (``ihcube_n<N>_w<W>`` by default)
(direction, width, meaning; node ``k``'s ports once, as ``inject__<k>__valid``) and the
fields of the ``inject`` and ``eject`` payloads with their bit ranges; ``--json`` prints every
port of every node and the fields, for scripts. Nothing is generated: the ports come from
the same signature the generator writes. With ``--switching wormhole`` (and the flit options)
it lists the wormhole fabric's top module (``ihcube_n<N>_wormhole_f<F>_l<L>_v<V>``) and the
fields of its flits: the eject port's flit with its head and tail marks, the head flit's
header, and the second flit's ``src`` bits when the header is wider than a flit.
"""

import json
import sys

from .options import add_fabric_options, fabric_spec
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


def _fields(fields):
    return " ".join(f"{name}{_bits(lsb, size)}" for name, lsb, size in fields)


def _as_json(fields):
    return [dict(name=name, lsb=lsb, width=bits) for name, lsb, bits in fields]


def _table(listed, meanings, payloads):
    """The rows of node ``k``'s ports (node 0's, each once): name, direction, width and
    meaning, ``payloads[group]`` after the meaning of a payload port."""
    rows = []
    for name, direction, bits in listed:
        group, *index = name.split("__")
        field = [index.pop()] if index and index[-1].isalpha() else []
        # index: the node, and the PE port for inject and eject when there are several.
        if any(i != "0" for i in index):
            continue  # another node's or PE port's: as node 0's first
        key = "__".join([group, *(["k"] if index else []), *field])
        shown = "__".join([group, *["<k>", "<p>"][:len(index)], *field])
        meaning = meanings[key]
        if field == ["payload"]:
            meaning += ": " + payloads[group]
        rows.append((shown, direction, bits, meaning))
    wide = max(len(row[0]) for row in rows)
    for name, direction, bits, meaning in rows:
        print(f"  {name:<{wide}}  {direction:<3}  {bits:>5}  {meaning}")


def _wormhole(spec, as_json):
    """List the wormhole fabric ``spec``'s ports and flit fields."""
    from ..generate import WORMHOLE_PORT_MEANINGS, flit_fields, spec_ports
    n, top, wh = spec.nodes, spec.name, spec.wormhole
    listed = spec_ports(spec)
    fields = flit_fields(spec)
    if as_json:
        print(json.dumps({"top": top, "nodes": n, "switching": "wormhole", "flits": wh.flits,
                          "flit_width": wh.flit_width, "vcs": wh.vcs, "vc_depth": wh.vc_depth,
                          "port_list": [dict(name=name, direction=direction, width=bits)
                                        for name, direction, bits in listed],
                          "flit_fields": {part: _as_json(layout)
                                          for part, layout in fields.items()}}, indent=1))
        return
    print(f"{top}: {n} nodes, wormhole: {wh.flits} flits of {wh.flit_width} bits, {wh.vcs} "
          f"virtual channel{'s' if wh.vcs != 1 else ''} of {wh.vc_depth} flits; ports of node "
          f"k, k = 0 .. {n - 1}:")
    head = "head flit " + _fields(fields["head"])
    if fields["second"]:
        head += ", second flit " + _fields(fields["second"])
    _table(listed, WORMHOLE_PORT_MEANINGS,
           {"inject": head, "eject": _fields(fields["eject"]) + "; payload of a " + head})


def _ports(args):
    spec = fabric_spec(args)
    if not spec.packet:
        return _wormhole(spec, args.json)
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
    _table(listed, PORT_MEANINGS, {group: _fields(layout) for group, layout in fields.items()})


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
