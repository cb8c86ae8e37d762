"""The fabric's PE ports as AXI4-Stream (``--interface axis``; ``docs/axis.md``).

A fabric of the interface ``axis`` is the native fabric (the same routers, the same top
module, renamed ``<top>_fabric``) under a top module that only renames and slices its PE
ports: no logic. Node ``k``'s injection port is the AXI4-Stream slave ``s_axis_<k>`` and its
eject port the master ``m_axis_<k>`` (``s_axis_<k>_<p>``, ``m_axis_<k>_<p>`` with ``ports >
1``), with the fields of the native payloads (:func:`ihcube.rtl.message.inject_layout`,
:func:`~ihcube.rtl.message.message_layout`) on AXI4-Stream's signals by :data:`MAPPING`.
``refused__<k>`` and ``refused_count__<k>`` keep their native names. A wormhole fabric's
ports carry flits (:data:`WORMHOLE_MAPPING`): each transfer is one flit, ``TLAST`` on an
eject port marks a message's tail and ``TUSER`` its head.

Naming an interface loads nothing; :func:`axis_verilog` (called by
:func:`ihcube.generate.fabric_verilog`) loads Amaranth for the payload layouts.
"""

from . import topology

__all__ = ["NATIVE", "AXIS", "INTERFACES", "check_interface", "check_axis", "MAPPING",
           "WORMHOLE_MAPPING", "mapping", "axis_header",
           "stream_names", "axis_ports", "axis_verilog"]

#: The native PE ports: valid/ready streams with struct payloads (``docs/ports.md``).
NATIVE = "native"
#: AXI4-Stream PE ports.
AXIS = "axis"
#: The interfaces, the default first.
INTERFACES = (NATIVE, AXIS)

#: Where each field of a native payload goes, by port: the AXI4-Stream signal, and the bit
#: of that signal its least significant bit lands on. ``tuser`` carries ``kind`` in bit 0
#: (1: broadcast) and, on an eject port, ``travel`` above it (0 on an eject port, as the
#: native field). An eject port's ``tlast`` is 1: each message is one transfer.
MAPPING = {
    "inject": {"payload": ("tdata", 0), "dest": ("tdest", 0), "kind": ("tuser", 0)},
    "eject": {"payload": ("tdata", 0), "dest": ("tdest", 0), "src": ("tid", 0),
              "kind": ("tuser", 0), "travel": ("tuser", 1)},
}


#: The same for a wormhole fabric, whose PE ports carry flits (``docs/wormhole.md``): a slave's
#: ``TDATA`` is the flit the PE injects (the fabric counts a message's flits, so there is no
#: ``TLAST`` in), a master's the flit's payload, ``TUSER`` its head mark and ``TLAST`` its tail
#: mark. The header (``dest``, ``src``, ``kind``) stays in the head flit's ``TDATA``: putting
#: it on ``TDEST``/``TID`` for the whole message would take registers.
WORMHOLE_MAPPING = {
    "inject": {"flit": ("tdata", 0)},
    "eject": {"payload": ("tdata", 0), "head": ("tuser", 0), "tail": ("tlast", 0)},
}


def mapping(spec):
    """:data:`MAPPING` or :data:`WORMHOLE_MAPPING`, by ``spec``'s switching."""
    return MAPPING if spec.packet else WORMHOLE_MAPPING


def check_interface(interface):
    """Return ``interface`` if it is one of :data:`INTERFACES`, else raise ``ValueError``."""
    if interface not in INTERFACES:
        raise ValueError(f"Interface must be {' or '.join(INTERFACES)}, not {interface!r}")
    return interface


def check_axis(spec):
    """Raise ``ValueError`` if the AXI4-Stream interface cannot be given to ``spec`` (a
    :class:`~ihcube.spec.FabricSpec` whose interface is :data:`AXIS`): ``TDATA`` is whole
    bytes, so the payload width (the flit width with wormhole switching) is a multiple of 8."""
    if not spec.packet:
        if spec.switching.flit_width % 8:
            raise ValueError(f"Flit width must be a multiple of 8 with interface axis "
                             f"(AXI4-Stream TDATA is whole bytes), not "
                             f"{spec.switching.flit_width!r}")
        return
    if spec.payload_width % 8:
        raise ValueError(f"Payload width must be a multiple of 8 with interface axis "
                         f"(AXI4-Stream TDATA is whole bytes), not {spec.payload_width!r}")


def stream_names(n, ports=1):
    """Each PE port's stream prefix and its native group path, in port order:
    ``[("s_axis_0", "inject__0"), ...]`` for the slaves, then the masters
    (``m_axis_<k>``, ``eject__<k>``)."""
    n = topology.check_node_count(n)
    indices = [(k,) if ports == 1 else (k, p) for k in range(n) for p in range(ports)]
    return [(f"{axis}_{'_'.join(map(str, index))}", f"{group}__{'__'.join(map(str, index))}")
            for axis, group in (("s_axis", "inject"), ("m_axis", "eject"))
            for index in indices]


def _signals(spec):
    """The AXI4-Stream signals of a slave and of a master: ``{port: [(signal, direction,
    width)]}``, directions the top module's."""
    if not spec.packet:
        flit = spec.switching.flit_width
        return {"inject": [("tvalid", "in", 1), ("tready", "out", 1), ("tdata", "in", flit)],
                "eject": [("tvalid", "out", 1), ("tready", "in", 1), ("tdata", "out", flit),
                          ("tuser", "out", 1), ("tlast", "out", 1)]}
    a = topology.address_bits(spec.nodes)
    width = spec.payload_width
    return {"inject": [("tvalid", "in", 1), ("tready", "out", 1), ("tdata", "in", width),
                       ("tdest", "in", a), ("tuser", "in", 1)],
            "eject": [("tvalid", "out", 1), ("tready", "in", 1), ("tdata", "out", width),
                      ("tdest", "out", a), ("tid", "out", a), ("tuser", "out", 1 + a),
                      ("tlast", "out", 1)]}


def axis_ports(spec):
    """The ports of the AXI4-Stream top module of ``spec``, as ``(name, direction, width)``
    in the module's order: ``clk``, ``rst``, every slave, every master, then each node's
    ``refused__<k>`` and ``refused_count__<k>``."""
    from .rtl.fabric import REFUSED_COUNT_WIDTH
    signals = _signals(spec)
    ports = [("clk", "in", 1), ("rst", "in", 1)]
    for prefix, group in stream_names(spec.nodes, spec.ports):
        port = group.split("__")[0]
        ports += [(f"{prefix}_{signal}", direction, width)
                  for signal, direction, width in signals[port]]
    for k in range(spec.nodes):
        ports += [(f"refused__{k}", "out", 1), (f"refused_count__{k}", "out",
                                                 REFUSED_COUNT_WIDTH)]
    return ports


def native_fields(spec):
    """The fields of the native ``inject`` and ``eject`` payloads of ``spec``, least
    significant first: ``{"inject": [(field, lsb, width), ...], "eject": [...]}`` (a wormhole
    fabric's: the flit it injects; the flit's payload, head and tail marks)."""
    if spec.packet:
        from .generate import payload_fields
        return payload_fields(spec.nodes, spec.payload_width)
    flit = spec.switching.flit_width
    return {"inject": [("flit", 0, flit)],
            "eject": [("payload", 0, flit), ("head", flit, 1), ("tail", flit + 1, 1)]}


def _net(width, name):
    return f"{f'[{width - 1}:0] ' if width > 1 else ''}{name}"


def _bits(lsb, width):
    return f"[{lsb}]" if width == 1 else f"[{lsb + width - 1}:{lsb}]"


def axis_verilog(spec, fabric):
    """The Verilog text of the AXI4-Stream top module of ``spec`` (its name
    :attr:`~ihcube.spec.FabricSpec.name`), marked top, around one instance of the native
    top module named ``fabric``: wires and assignments only."""
    fields, places = native_fields(spec), mapping(spec)
    signals = _signals(spec)
    ports = axis_ports(spec)
    lines = ["", "/* The AXI4-Stream ports (docs/axis.md): written by ihcube.axis */", "",
             "(* top = 1 *)", f"module {spec.name}("]
    lines += [f"  {name}{',' if i < len(ports) - 1 else ''}" for i, (name, _, _) in
              enumerate(ports)]
    lines.append(");")
    lines += [f"  {'input' if direction == 'in' else 'output'} {_net(width, name)};"
              for name, direction, width in ports]
    body, connections = [], [("clk", "clk"), ("rst", "rst")]
    for prefix, group in stream_names(spec.nodes, spec.ports):
        port = group.split("__")[0]
        layout = fields[port]
        total = sum(width for _, _, width in layout)
        payload = f"{group}__payload"
        body.append(f"  wire {_net(total, payload)};")
        for name, lsb, width in layout:
            signal, at = places[port][name]
            axis = f"{prefix}_{signal}"
            if dict((s, w) for s, _, w in signals[port])[signal] > 1 or at:
                axis += _bits(at, width)
            if port == "inject":
                body.append(f"  assign {payload}{_bits(lsb, width)} = {axis};")
            else:
                body.append(f"  assign {axis} = {payload}{_bits(lsb, width)};")
        if port == "eject" and spec.packet:  # a message is one transfer
            body.append(f"  assign {prefix}_tlast = 1'b1;")
        connections += [(f"{group}__valid", f"{prefix}_tvalid"),
                        (f"{group}__ready", f"{prefix}_tready"), (f"{group}__payload", payload)]
    for k in range(spec.nodes):
        connections += [(f"refused__{k}", f"refused__{k}"),
                        (f"refused_count__{k}", f"refused_count__{k}")]
    lines += body
    lines.append(f"  {fabric} fabric (")
    lines += [f"    .{name}({value}){',' if i < len(connections) - 1 else ''}"
              for i, (name, value) in enumerate(connections)]
    lines += ["  );", "endmodule", ""]
    return "\n".join(lines)


def axis_header(spec, header):
    """``header``, the comment at the head of the generated file of ``spec``, with the
    interface said when it is not :data:`NATIVE` (the same text otherwise)."""
    if spec.interface == NATIVE:
        return header
    end, command = " */\n", "`.\n"
    if not header.endswith(end):
        raise AssertionError("The generated file's header does not end as expected")
    header = header[:-len(end)]
    if header.endswith(command):  # the `ihcube ports` command that lists the ports
        header = header[:-len(command)] + f" --interface {spec.interface}" + command
    return (header + f" * Interface: AXI4-Stream PE ports (docs/axis.md) around the native "
            f"fabric {spec.name}_fabric.\n" + end)
