"""Validation of parameters, with messages a user understands.

Node-level rules (node count, node number, routing order) live in ``ihcube.topology``; this
module holds the shared check they and the hardware parameters use, and the largest fabric
the hardware generator builds (:data:`MAX_FABRIC_NODES`, :data:`MAX_FABRIC_PAYLOAD_WIDTH`,
:data:`MAX_FABRIC_DEPTH`). The fast model takes larger values (``ihcube.sim.model``).
"""

import operator

__all__ = ["check_positive_integer", "check_at_most", "check_payload_width", "check_depth",
           "MAX_FABRIC_NODES", "MAX_FABRIC_PAYLOAD_WIDTH", "MAX_FABRIC_DEPTH",
           "check_fabric_payload_width", "check_fabric_depth", "max_ports", "check_ports"]

# The generator's limits, measured on 2 cores (``ihcube verilog``, one process; the most
# link sets, so the most router modules, are at n = 4095): W = 64 takes 16 s and 0.3 GB,
# W = 1024 takes 82 s and 0.45 GB, depth 16 at W = 64 takes 28 s (depth 64: 202 s, the time
# growing faster than the depth), and the corner, W = 1024 and depth 16, 5.4 min and 0.6 GB.

#: Most nodes of a fabric in hardware (Router, Fabric, the Verilog generator). The channel
#: dependency graphs are checked acyclic up to here (``make deadlock``).
MAX_FABRIC_NODES = 4096
#: Widest payload in hardware, in bits. A router module's input ports must stay under the
#: 65,536 bits that Amaranth gives one cell (13 links' worth of messages of about 5,000 bits
#: at 4,096 nodes), and the time to write the routers grows with the width.
MAX_FABRIC_PAYLOAD_WIDTH = 1024
#: Most messages per input buffer in hardware. The buffers are flip-flops: a router holds
#: ``(links + 1) * depth`` messages, so its size and the time to write it grow with depth.
MAX_FABRIC_DEPTH = 16


def check_positive_integer(value, what):
    """Return ``value`` as an ``int`` if it is an integer >= 1, else raise
    ``TypeError``/``ValueError``. Any integer type is taken (NumPy's ``int64`` too: whatever
    ``operator.index`` takes); ``bool`` and non-integers (``3.0``, ``"3"``) are not."""
    if isinstance(value, bool):
        raise TypeError(f"{what} must be a positive integer, not {value!r}")
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be a positive integer, not {value!r}") from None
    if value < 1:
        raise ValueError(f"{what} must be a positive integer, not {value!r}")
    return value


def check_at_most(value, most, what):
    """Return ``value`` if it is an integer from 1 to ``most``, else raise
    ``TypeError``/``ValueError``."""
    value = check_positive_integer(value, what)
    if value > most:
        raise ValueError(f"{what} must be an integer from 1 to {most}, not {value!r}")
    return value


def check_payload_width(width):
    """Return ``width`` if it is a valid payload width in bits, else raise."""
    return check_positive_integer(width, "Payload width")


def check_depth(depth):
    """Return ``depth`` if it is a valid buffer depth in messages, else raise."""
    return check_positive_integer(depth, "Buffer depth")


def check_fabric_payload_width(width):
    """Return ``width`` if it is a payload width the hardware takes, at most
    :data:`MAX_FABRIC_PAYLOAD_WIDTH`, else raise."""
    return check_at_most(width, MAX_FABRIC_PAYLOAD_WIDTH, "Payload width")


def check_fabric_depth(depth):
    """Return ``depth`` if it is a buffer depth the hardware takes, at most
    :data:`MAX_FABRIC_DEPTH`, else raise."""
    return check_at_most(depth, MAX_FABRIC_DEPTH, "Buffer depth")


def max_ports(n):
    """The most PE ports (injection and eject) a node of an ``n``-node fabric may have:
    ``D + 1``, one per link of a node of full degree plus one."""
    from .topology import dimensions  # topology imports this module
    return dimensions(n) + 1


def check_ports(n, ports):
    """Return ``ports`` if it is a port count for every node of an ``n``-node fabric, 1 to
    :func:`max_ports`, else raise ``TypeError``/``ValueError``.

    The count is the fabric's, the same at every node (a node with fewer links has ports its
    links never feed, which its own injections use), so that the Verilog top module has the
    same ports for every node."""
    ports = check_positive_integer(ports, "Port count")
    most = max_ports(n)
    if ports > most:
        raise ValueError(f"Port count must be an integer from 1 to {most} (D + 1) for {n} "
                         f"nodes, not {ports!r}")
    return ports
