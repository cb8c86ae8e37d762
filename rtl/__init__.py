"""Amaranth components of the incomplete-hypercube router (imported as ``ihcube.rtl``)."""

from .message import Kind, message_layout, inject_layout
from .buffer import LinkBuffer
from .input_buffer import InputBuffer
from .arbiter import RoundRobinArbiter
from .route import RouteSelect
from .router import Router
from .configuration import Configuration, configuration_layout
from .fabric import Fabric
from .flit import flit_layout, header_layout, routing_layout
from .flit_buffer import FlitBuffer
from .broadcast_buffer import BroadcastBuffer
from .vc_allocator import VcAllocator
from .wormhole_router import WormholeRouter
from .wormhole_fabric import WormholeFabric

__all__ = [
    "Kind", "message_layout", "inject_layout",
    "LinkBuffer", "InputBuffer", "RoundRobinArbiter", "RouteSelect", "Router", "Fabric",
    "Configuration", "configuration_layout",
    "flit_layout", "header_layout", "routing_layout", "FlitBuffer", "BroadcastBuffer",
    "VcAllocator", "WormholeRouter", "WormholeFabric",
]
