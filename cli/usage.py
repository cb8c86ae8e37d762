"""Command-line parsing shared by every ``ihcube`` command: a mistake is one line.

Each command catches :class:`UsageError`, prints ``ihcube <command>: error: <message>`` on
standard error with :func:`report` and exits with status 2; never a traceback.
"""

import argparse
import re
import shlex
import sys

from ..extras import MissingExtra

__all__ = ["UsageError", "Parser", "parse_number", "integer", "checked", "summary",
           "command_parser", "report", "run"]


class UsageError(Exception):
    """A command-line mistake, reported as one line."""


class Parser(argparse.ArgumentParser):
    """An ``argparse`` parser whose errors are :class:`UsageError` (argparse would print the
    usage and exit)."""

    def error(self, message):
        raise UsageError(message)

    def parse_args(self, args=None, namespace=None):
        """The parsed options, and ``command_line``: the command as given (``prog`` and the
        options), which results files record (:mod:`ihcube.sim.provenance`)."""
        parsed = super().parse_args(args, namespace)
        words = sys.argv[1:] if args is None else list(args)
        parsed.command_line = shlex.join([*self.prog.split(), *words])
        return parsed


_INTEGER = re.compile(r"\s*[+-]?[0-9]+\s*")
_FLOAT = re.compile(r"\s*[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?\s*")


def parse_number(text, kind=int):
    """``text`` as an ``int`` or ``float`` written in plain ASCII decimal (``12``, ``0.5``,
    ``1e-3``); raise ``ValueError`` for anything else, including what Python's own ``int`` and
    ``float`` also take (``1_000``, other scripts' digits, ``nan``, ``inf``)."""
    pattern = _INTEGER if kind is int else _FLOAT
    if not isinstance(text, str) or not pattern.fullmatch(text):
        raise ValueError(f"not a decimal number: {text!r}")
    return kind(text)


def integer(text, what, check):
    """Parse ``text`` as a decimal integer and validate it with ``check``; a mistake is a
    :class:`UsageError` naming ``what``."""
    try:
        value = parse_number(text, int)
    except ValueError:
        raise UsageError(f"{what} must be a positive integer, not {text!r}") from None
    return checked(check, value)


def checked(check, *args):
    """Return ``check(*args)``, one of the library's validators (``topology.check_*``,
    ``params.check_*``); the ``TypeError`` or ``ValueError`` it raises becomes a
    :class:`UsageError` with the same message."""
    try:
        return check(*args)
    except (TypeError, ValueError) as error:
        raise UsageError(str(error)) from None


def summary(doc):
    """The one-line summary of a command: the first line of its module's docstring ``doc``
    (``ihcube --help`` lists it, ``ihcube <command> --help`` starts with it)."""
    lines = (doc or "").strip().splitlines()
    return lines[0].strip() if lines else ""


def command_parser(name, doc):
    """The :class:`Parser` of ``ihcube <name>``, described by the summary of ``doc``."""
    return Parser(prog=f"ihcube {name}", description=summary(doc))


def report(name, error):
    """Print ``error`` as the one line ``ihcube <name>: error: ...`` on standard error and
    return the exit status of a usage error, 2."""
    print(f"ihcube {name}: error: {error}", file=sys.stderr)
    return 2


def run(name, parser, body, argv):
    """Run ``ihcube <name>``: parse ``argv`` with ``parser`` and return the exit status of
    ``body(args)`` (0 if it returns None); a :class:`UsageError` on the way is the one line of
    :func:`report` and status 2."""
    try:
        status = body(parser.parse_args(argv))
    except (UsageError, MissingExtra) as error:
        return report(name, error)
    sys.stdout.flush()
    return 0 if status is None else status
