"""The ``ihcube`` command line: one thin front end per subcommand over the library.

``ihcube <command> [options]`` hands the options to ``ihcube.cli.<module>.main(argv)``, the
module :data:`COMMANDS` names, imported only then: ``ihcube --help`` imports no command
module (it reads each summary, the first line of the module's docstring, from the source).
A wrong parameter is one line on standard error, ``ihcube <command>: error: ...``, and exit
status 2; Ctrl-C is the one line ``ihcube: interrupted`` and exit status 130, ``SIGTERM``
(``kill``, a batch system's time limit) the one line ``ihcube: terminated`` and exit status
143; never a traceback.

Both signals stop the command the same way, by an exception in the main thread: ``finally``
blocks run (the atomic write of :mod:`ihcube.generate` removes its temporary file), a child
simulator waited for by :func:`subprocess.run` is killed (``vvp`` ignores ``SIGTERM``; Python
kills it with ``SIGKILL`` when the wait is interrupted), and a Dask cluster stops its workers.
"""

import ast
import importlib
import importlib.util
import os
import signal
import sys
import threading

from .. import version
from ..extras import MissingExtra
from .usage import summary

__all__ = ["COMMANDS", "main"]

#: Every subcommand, in the order ``ihcube --help`` lists them, and its module in this package.
COMMANDS = {
    "verilog": "verilog",
    "ports": "ports",
    "lint": "lint",
    "cocotb": "cocotb",
    "deadlock": "deadlock",
    "stress": "stress",
    "formal": "formal",
    "sweep": "sweep",
    "saturation": "saturation",
    "collectives": "collectives",
    "analyze": "analyze",
    "reconfigure": "reconfigure",
    "reconfigure-experiment": "reconfigure_experiment",
    "results": "results",
    "synth": "synth",
    "bitstream": "bitstream",
    "synth-table": "synth_table",
    "throughput": "throughput",
    "bench": "bench",
    "bench-model": "bench_model",
    "bench-wormhole": "bench_wormhole",
}

#: The exit status of a command stopped by Ctrl-C (128 + SIGINT), as a shell reports it.
INTERRUPTED = 128 + signal.SIGINT
#: The exit status of a command stopped by SIGTERM (128 + SIGTERM).
TERMINATED = 128 + signal.SIGTERM


class Terminated(KeyboardInterrupt):
    """``SIGTERM`` arrived: a :class:`KeyboardInterrupt`, so that whatever cleans up after
    Ctrl-C (the cluster, :func:`subprocess.run`'s child, a temporary file) cleans up after it
    too."""


def module_name(command):
    """The full name of ``command``'s module, ``ihcube.cli.<module>``."""
    return f"{__name__}.{COMMANDS[command]}"


def _summary(command):
    """The first line of ``command``'s module docstring, read without importing it."""
    spec = importlib.util.find_spec(module_name(command))
    source = spec.loader.get_source(spec.name) if spec is not None else None
    if source is None:
        return f"(missing: no module {module_name(command)})"
    return summary(ast.get_docstring(ast.parse(source)))


def _help():
    width = max(map(len, COMMANDS))
    lines = [_usage(), "",
             "Incomplete-hypercube router generator and its tools. "
             "`ihcube COMMAND --help` describes a command.", "",
             "options:",
             f"  {'-h, --help':<{width}}  show this help and exit",
             f"  {'--version':<{width}}  print the version and exit", "",
             "commands:"]
    lines += [f"  {command:<{width}}  {_summary(command)}" for command in COMMANDS]
    return "\n".join(lines)


def _usage():
    return "usage: ihcube [-h] [--version] COMMAND [ARGS ...]"




def _dispatch(argv):
    if not argv:
        print(_help(), file=sys.stderr)
        return 2
    first, rest = argv[0], argv[1:]
    if first in ("-h", "--help"):
        print(_help())
        return 0
    if first == "--version":
        print(f"ihcube {version()}")
        return 0
    if first not in COMMANDS:
        what = "option" if first.startswith("-") else "command"
        print(f"ihcube: error: unknown {what} {first!r}; the commands are "
              f"{', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    return importlib.import_module(module_name(first)).main(rest)


def _interrupt(parent):
    """A SIGINT handler: Ctrl-C stops ``parent`` with ``KeyboardInterrupt``; in a forked
    worker, which inherits the handler and gets the signal too, it does nothing: the parent
    stops the workers and says so once."""
    def handler(signum, frame):
        if os.getpid() == parent:
            raise KeyboardInterrupt
    return handler


#: Set once the command stops for a signal: the repeated :class:`Terminated` of
#: :func:`_terminate` then holds its fire.
_stopping = False
#: How often a SIGTERM is raised again until the command stops, in seconds.
TERMINATE_AGAIN = 0.05


def _terminate(parent):
    """A SIGTERM handler: it stops ``parent`` with :class:`Terminated`; a forked worker that
    inherited it ends as ``SIGTERM`` ends a process by default (its parent stops it so).

    An exception raised while a C library runs a Python callback (Numba writing its cache,
    through ctypes) is printed and dropped there, so the parent raises it again every
    :data:`TERMINATE_AGAIN` seconds (``SIGALRM``) until :func:`main` has it."""
    def handler(signum, frame):
        if os.getpid() == parent:
            if _stopping:
                return
            if signum == signal.SIGTERM:
                signal.signal(signal.SIGALRM, handler)
                signal.setitimer(signal.ITIMER_REAL, TERMINATE_AGAIN, TERMINATE_AGAIN)
            raise Terminated
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)
    return handler


def _stop():
    """The command has stopped: no more repeated SIGTERM."""
    global _stopping
    _stopping = True
    signal.setitimer(signal.ITIMER_REAL, 0)


def main(argv=None):
    """Run ``ihcube`` with ``argv`` (default: the process's arguments); return the exit
    status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    main_thread = threading.current_thread() is threading.main_thread()
    global _stopping
    _stopping = False
    previous = ({signal.SIGINT: signal.signal(signal.SIGINT, _interrupt(os.getpid())),
                 signal.SIGTERM: signal.signal(signal.SIGTERM, _terminate(os.getpid())),
                 signal.SIGALRM: signal.getsignal(signal.SIGALRM)}
                if main_thread else {})
    try:
        return _dispatch(argv)
    except Terminated:
        _stop()
        print("ihcube: terminated", file=sys.stderr)
        return TERMINATED
    except KeyboardInterrupt:
        print("ihcube: interrupted", file=sys.stderr)
        return INTERRUPTED
    except MissingExtra as error:  # raised outside a command's own parsing
        print(f"ihcube: error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader went away (`ihcube formal --list | head -1`): stop quietly, as a Unix
        # tool does; point stdout at /dev/null so that Python's own flush at exit is quiet too.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    finally:
        if main_thread:
            _stop()
        for number, handler in previous.items():
            signal.signal(number, handler)


if __name__ == "__main__":
    sys.exit(main())
