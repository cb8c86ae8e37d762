"""Verilog generation for a fabric: one module per router link set, and the fabric on top."""

from amaranth.back import verilog

from . import deadlock, topology
from .params import check_depth, check_payload_width
from .rtl import Fabric, Router

__all__ = ["fabric_name", "fabric_verilog"]


def fabric_name(n, payload_width=32, depth=1, order=topology.MSB_FIRST):
    """The top module's name, which is also the file's: it says ``n`` and ``W``, and the
    depth and routing order when they are not the defaults."""
    topology.check_node_count(n)
    check_payload_width(payload_width)
    check_depth(depth)
    topology.check_routing_order(order)
    name = f"ihcube_n{n}_w{payload_width}"
    if depth != 1:
        name += f"_d{depth}"
    if order != topology.MSB_FIRST:
        name += f"_{order}"
    return name


def fabric_verilog(n, payload_width=32, depth=1, order=topology.MSB_FIRST, router=Router):
    """Return the Verilog text of an ``n``-node fabric, deterministic for the same arguments.

    Routers whose nodes have the same links differ only in their own address, so each link
    set is emitted once as a strapped :class:`~ihcube.rtl.Router` and instantiated for every
    node that has it. This keeps the output and the generation time close to linear in ``n``.
    ``router`` builds a router as :class:`~ihcube.rtl.Fabric` does; the tests pass broken
    variants.
    """
    top = fabric_name(n, payload_width, depth, order)
    deadlock.check_deadlock_free(n, order)  # before the slow part, and before any component
    module_of_mask = {}
    texts = []
    for node in range(n):
        mask = topology.exists_mask(n, node)
        if mask in module_of_mask:
            continue
        module = module_of_mask[mask] = f"{top}_router_x{mask:x}"
        texts.append(verilog.convert(router(n, node, payload_width, depth, order, strap=True),
                                     name=module, emit_src=False))
    modules = {node: module_of_mask[topology.exists_mask(n, node)] for node in range(n)}
    fabric = Fabric(n, payload_width, depth, order, router_modules=modules)
    texts.append(verilog.convert(fabric, name=top, emit_src=False))
    return "".join(texts)
