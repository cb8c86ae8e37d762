"""Validation of parameters, with messages a user understands.

Node-level rules (node count, node number, routing order) live in ``ihcube.topology``; this
module holds the shared check they and the hardware parameters use.
"""

__all__ = ["check_positive_integer", "check_payload_width", "check_depth"]


def check_positive_integer(value, what):
    """Return ``value`` if it is an integer >= 1, else raise ``TypeError``/``ValueError``."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{what} must be a positive integer, not {value!r}")
    if value < 1:
        raise ValueError(f"{what} must be a positive integer, not {value!r}")
    return value


def check_payload_width(width):
    """Return ``width`` if it is a valid payload width in bits, else raise."""
    return check_positive_integer(width, "Payload width")


def check_depth(depth):
    """Return ``depth`` if it is a valid buffer depth in messages, else raise."""
    return check_positive_integer(depth, "Buffer depth")
