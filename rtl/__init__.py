"""Amaranth components of the incomplete-hypercube router (imported as ``ihcube.rtl``)."""

from .message import Kind, message_layout, inject_layout
from .buffer import LinkBuffer
from .arbiter import RoundRobinArbiter
from .route import RouteSelect
from .router import Router
from .fabric import Fabric

__all__ = [
    "Kind", "message_layout", "inject_layout",
    "LinkBuffer", "RoundRobinArbiter", "RouteSelect", "Router", "Fabric",
]
