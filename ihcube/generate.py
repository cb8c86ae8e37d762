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

from . import deadlock, topology
from .params import (PACKET, WORMHOLE_DEFAULTS, check_fabric_depth, check_fabric_payload_width,
                     check_no_stages, check_ports, check_stages, describe_stages, stages_suffix,
                     switching_parameters)
from .rtl import Router, WormholeRouter
from .rtl.fabric import fabric_signature, link_ends
from .rtl.router import router_signature
from .rtl.wormhole_fabric import wormhole_fabric_signature
from .rtl.wormhole_router import wormhole_router_signature

__all__ = ["fabric_name", "fabric_verilog", "router_modules", "top_verilog", "write_fabric",
           "OutputError"]


class OutputError(OSError):
    """The Verilog file cannot be written; the message is one line that says where and why."""


def check_fabric_parameters(n, payload_width=32, depth=1, order=topology.MSB_FIRST):
    """Return ``(n, payload_width, depth, order)`` checked against the limits of the
    generator (:mod:`ihcube.params`), as plain ``int``s; raise ``TypeError``/``ValueError``."""
    return (topology.check_fabric_node_count(n), check_fabric_payload_width(payload_width),
            check_fabric_depth(depth), topology.check_routing_order(order))


def _wormhole(n, payload_width, depth, ports, switching, flit_options, stages):
    """The checked :class:`~ihcube.params.Wormhole` of a wormhole fabric, or None for packet
    switching (which takes no flit-level option). Wormhole fabrics have one PE port per node,
    virtual-channel buffers (``vc_depth``) instead of the packet buffer ``depth``, and no
    register stages (``stages``, a dict of :func:`ihcube.params.check_stages`)."""
    wormhole = switching_parameters(n, payload_width, switching, **flit_options)
    if wormhole is not None:
        check_no_stages(stages)
        if depth != 1:
            raise ValueError(f"Buffer depth is a packet-switching option, not taken with "
                             f"wormhole switching (its buffers are vc_depth flits), not "
                             f"{depth!r}")
        if ports != 1:
            raise ValueError(f"Port count must be 1 with wormhole switching, not {ports!r}")
    return wormhole


def fabric_name(n, payload_width=32, depth=1, order=topology.MSB_FIRST, ports=1, *,
                switching=PACKET, link_stages=0, switch_stages=0, eject_stages=0,
                **flit_options):
    """The top module's name, which is also the file's: it says ``n`` and ``W``, and the
    depth, routing order, port count and register stages when they are not the defaults
    (``ihcube_n26_w32_s1`` for ``link_stages=1``, ``_s1_g1_e1`` with ``switch_stages=1`` and
    ``eject_stages=1`` too: :func:`ihcube.params.stages_suffix`). A wormhole fabric's
    says ``wormhole`` and its flit width, flits and virtual channels, and their depth when not
    the default (``ihcube_n26_wormhole_f32_l20_v3``); ``W`` is left out, since it does not
    change the hardware.

    It checks every parameter against the limits of the generator (:mod:`ihcube.params`),
    so whoever asks for the name first refuses a fabric too large to build.
    """
    n, payload_width, depth, order = check_fabric_parameters(n, payload_width, depth, order)
    ports = check_ports(n, ports)
    stages = check_stages(link_stages, switch_stages, eject_stages)
    wormhole = _wormhole(n, payload_width, depth, ports, switching, flit_options, stages)
    if wormhole is not None:
        name = (f"ihcube_n{n}_wormhole_f{wormhole.flit_width}_l{wormhole.flits}"
                f"_v{wormhole.vcs}")
        if wormhole.vc_depth != WORMHOLE_DEFAULTS["vc_depth"]:
            name += f"_q{wormhole.vc_depth}"
        return name + ("" if order == topology.MSB_FIRST else f"_{order}")
    name = f"ihcube_n{n}_w{payload_width}"
    if depth != 1:
        name += f"_d{depth}"
    if order != topology.MSB_FIRST:
        name += f"_{order}"
    if ports != 1:
        name += f"_p{ports}"
    return name + stages_suffix(stages)


def fabric_verilog(n, payload_width=32, depth=1, order=topology.MSB_FIRST, router=None,
                   ports=1, *, switching=PACKET, link_stages=0, switch_stages=0,
                   eject_stages=0, **flit_options):
    """Return the Verilog text of an ``n``-node fabric, deterministic for the same arguments.

    Routers of the same :func:`ihcube.topology.router_class` (the same links, and the same
    onward links from each) differ only in their own address, so each class is emitted once
    as a strapped :class:`~ihcube.rtl.Router` and instantiated for every node of it
    (:func:`router_modules`). This keeps the output and the generation time close to linear
    in ``n``.
    Only the fabric's module carries ``(* top = 1 *)``, so that a tool reading the file
    without being told its top (Yosys ``hierarchy``, Icarus without ``-s``) elaborates the
    fabric. ``router`` builds a router as :class:`~ihcube.rtl.Fabric` does; the tests pass
    broken variants. ``ports`` is the PE ports per node (``docs/ports.md``).
    ``link_stages=1`` gives every router a relay on each outgoing link
    (:class:`~ihcube.rtl.Router`'s ``link_stages``; ``docs/fpga.md``, "Link stages"): a cycle
    more per hop for a shorter clock period; ``switch_stages=1`` registers every router's
    grant (a cycle more per router) and ``eject_stages=1`` puts a relay on each eject port (a
    cycle more per delivery): ``docs/fpga.md``, "Every output staged". With 0 (the defaults)
    the text is as before the options existed.

    ``switching="wormhole"`` writes a fabric of :class:`~ihcube.rtl.WormholeRouter` s instead,
    with the flit-level options ``flits``, ``flit_width``, ``vcs`` and ``vc_depth``
    (:func:`ihcube.params.wormhole_parameters`; ``docs/wormhole.md``), after the deadlock
    check over (link, virtual channel) pairs.
    """
    n, payload_width, depth, order = check_fabric_parameters(n, payload_width, depth, order)
    stages = check_stages(link_stages, switch_stages, eject_stages)
    top = fabric_name(n, payload_width, depth, order, ports, switching=switching,
                      **stages, **flit_options)
    wormhole = _wormhole(n, payload_width, depth, ports, switching, flit_options, stages)
    if wormhole is not None:
        return _wormhole_verilog(top, n, payload_width, order, wormhole,
                                 WormholeRouter if router is None else router)
    router = Router if router is None else router
    # Passed only when set, so that a router that predates an option still builds.
    extra = {} if ports == 1 else {"ports": ports}
    extra.update(stages)
    deadlock.check_deadlock_free(n, order)  # before the slow part, and before any component
    modules = router_modules(top, n, order)
    texts = []
    for node in range(n):
        module = modules[node]
        if module in modules[:node]:
            continue
        text = verilog.convert(router(n, node, payload_width, depth, order, strap=True,
                                      **extra),
                               name=module, emit_src=False)
        texts.append(_not_top(text, module))
    texts.append(top_verilog(top, n, payload_width, modules, ports))
    return header(n, payload_width, depth, order, ports, **stages) + "".join(texts)


def router_modules(top, n, order=topology.MSB_FIRST):
    """The name of the router module of each node of the packet fabric ``top``, by node: one
    per :func:`ihcube.topology.router_class`. ``<top>_router_x<mask>`` (the node's
    link-existence vector in hex) when its link set is one class, as every link set is when
    ``n`` is a power of two; ``<top>_router_x<mask>_c<i>`` otherwise, ``i`` counting the
    link set's classes in node order."""
    classes = {}   # class -> its index within its link set
    per_mask = {}  # link set -> how many classes it has
    of_node = []
    for node in range(n):
        key = topology.router_class(n, node, order)
        if key not in classes:
            classes[key] = per_mask.get(key[0], 0)
            per_mask[key[0]] = classes[key] + 1
        of_node.append(key)
    return [f"{top}_router_x{key[0]:x}" + (f"_c{classes[key]}" if per_mask[key[0]] > 1
                                           else "")
            for key in of_node]


def _wormhole_verilog(top, n, payload_width, order, wormhole, router):
    """The Verilog text of a wormhole fabric: one strapped router module per link set, and
    the top module of :func:`top_verilog` with the wormhole signatures."""
    deadlock.check_wormhole_deadlock_free(n, wormhole.vcs, order)
    module_of_mask, texts = {}, []
    for node in range(n):
        mask = topology.exists_mask(n, node)
        if mask in module_of_mask:
            continue
        module = module_of_mask[mask] = f"{top}_router_x{mask:x}"
        text = verilog.convert(router(n, node, wormhole, order, strap=True), name=module,
                               emit_src=False)
        texts.append(_not_top(text, module))
    modules = [module_of_mask[topology.exists_mask(n, node)] for node in range(n)]
    texts.append(top_verilog(top, n, payload_width, modules, signatures=(
        wormhole_fabric_signature(n, wormhole),
        lambda node: wormhole_router_signature(n, node, wormhole))))
    from . import version
    head = (f"/* {top}: an incomplete-hypercube wormhole fabric of {n} nodes, written by "
            f"ihcube {version()}.\n"
            f" * Parameters: nodes {n}, wormhole switching, {wormhole.flits} flits of "
            f"{wormhole.flit_width} bits per message (payload {payload_width} bits), "
            f"{wormhole.vcs} unicast virtual channels of {wormhole.vc_depth} flits and one "
            f"broadcast channel of {wormhole.flits} flits per link, routing order {order}.\n"
            f" * Top module: {top}, the only one marked top. Flits and ports: docs/wormhole.md."
            f"\n */\n")
    return head + "".join(texts)


def header(n, payload_width=32, depth=1, order=topology.MSB_FIRST, ports=1, **stages):
    """The comment at the head of the generated file: what made it, from which parameters,
    and where its ports are described (the same for the same parameters and version; with
    ``ports=1`` and no ``stages`` the same as before those parameters existed). ``stages``
    are the keywords of :func:`ihcube.params.check_stages`."""
    from . import version
    stages = check_stages(**stages)
    top = fabric_name(n, payload_width, depth, order, ports, **stages)
    more, option = ("", "") if ports == 1 else (f", PE ports {ports}", f" --ports {ports}")
    if stages:
        more += f", {describe_stages(stages)}"
    return (f"/* {top}: an incomplete-hypercube fabric of {n} nodes, written by ihcube "
            f"{version()}.\n"
            f" * Parameters: nodes {n}, payload width {payload_width} bits, buffer depth "
            f"{depth}, routing order {order}{more}.\n"
            f" * Top module: {top}, the only one marked top. Its ports: `ihcube ports "
            f"--nodes {n} --width {payload_width}{option}`.\n"
            f" */\n")


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
}


def fabric_ports(n, payload_width=32, ports=1):
    """The top module's ports, as ``(name, direction, width)`` with ``direction`` ``"in"`` or
    ``"out"``, in the order of the module's port list (``clk``, ``rst``, then every node's);
    with ``ports`` PE ports per node, ``inject`` and ``eject`` have one more index, the port."""
    n = topology.check_fabric_node_count(n)
    payload_width = check_fabric_payload_width(payload_width)
    pe_ports = check_ports(n, ports)
    ports = [("clk", In, 1), ("rst", In, 1),
             *_ports(fabric_signature(n, payload_width, pe_ports))]
    return [(name, "in" if flow == In else "out", width) for name, flow, width in ports]


def payload_fields(n, payload_width=32):
    """The fields of the ``inject`` and ``eject`` payloads, least significant first, as
    ``{"inject": [(field, lsb, width), ...], "eject": [...]}``."""
    from .rtl.message import inject_layout, message_layout
    return {port: [(name, field.offset, Shape.cast(field.shape).width)
                   for name, field in layout]
            for port, layout in (("inject", inject_layout(n, payload_width)),
                                 ("eject", message_layout(n, payload_width)))}


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


def top_verilog(top, n, payload_width, modules, ports=1, *, signatures=None):
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
            if flow == Out and name.startswith("links_"):
                lines.append(f"  wire {_net(width, f'router{node}__{name}')};")
    for node in range(n):
        ends = link_ends(n, node)
        connections = [("clk", "clk"), ("rst", "rst")]
        for name, flow, _width in router_ports[modules[node]]:
            group, _, rest = name.partition("__")
            if name == "address":
                value = f"{address}'h{node:x}"
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


def write_fabric(folder, n, payload_width=32, depth=1, order=topology.MSB_FIRST, ports=1, *,
                 switching=PACKET, link_stages=0, switch_stages=0, eject_stages=0,
                 **flit_options):
    """Write the Verilog of an ``n``-node fabric with ``ports`` PE ports per node to
    ``folder/<fabric_name>.v``, safely.

    ``switching``, the register stages and the flit-level options are those of
    :func:`fabric_verilog`. The
    parameters are checked first, then the folder is made if need be and a temporary
    file is opened in it, so that a folder that cannot be written is reported before the
    generation, not after it. The text is written to that temporary file, flushed to disk,
    and renamed to its final name: a file of that name is never left half written (a full
    disk, an interruption), and an older one stays as it was.

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
    stages = {"link_stages": link_stages, "switch_stages": switch_stages,
              "eject_stages": eject_stages}
    name = fabric_name(n, payload_width, depth, order, ports, switching=switching, **stages,
                       **flit_options)
    path = pathlib.Path(folder) / f"{name}.v"
    with _staged(path) as stage:
        text = fabric_verilog(n, payload_width, depth, order, ports=ports, switching=switching,
                              **stages, **flit_options).encode()
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
