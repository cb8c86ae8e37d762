"""Command-line parsing shared by every ``ihcube`` command: a mistake is one line.

Each command catches :class:`UsageError`, prints ``<prog>: error: <message>`` on standard
error and exits with status 2; never a traceback.
"""

import argparse

__all__ = ["UsageError", "Parser", "integer"]


class UsageError(Exception):
    """A command-line mistake, reported as one line."""


class Parser(argparse.ArgumentParser):
    """An ``argparse`` parser whose errors are :class:`UsageError` (argparse would print the
    usage and exit)."""

    def error(self, message):
        raise UsageError(message)


def integer(text, what, check):
    """Parse ``text`` as a decimal integer and validate it with ``check``; a mistake is a
    :class:`UsageError` naming ``what``."""
    try:
        value = int(text, 10)
    except ValueError:
        raise UsageError(f"{what} must be a positive integer, not {text!r}") from None
    try:
        return check(value)
    except (TypeError, ValueError) as error:
        raise UsageError(str(error)) from None
