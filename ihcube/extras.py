"""Optional parts of the installation: which ``pip install 'ihcube[...]'`` brings what.

``pip install ihcube`` is enough to generate Verilog and run the model. The other commands
need more, grouped as *extras* in pyproject.toml; a command whose extra is missing says in one
line which to install, instead of failing deep inside with a ``ModuleNotFoundError``.
"""

import importlib

__all__ = ["EXTRAS", "MissingExtra", "require"]

#: What each extra is for.
EXTRAS = {
    "plots": "the sweep figures (matplotlib)",
    "cluster": "the experiments' tasks on several processes or hosts (Dask distributed)",
    "verify": "lint, cocotb regressions, formal checks and netlist checks (cocotb, YoWASP "
              "Yosys and SymbiYosys, SMT solvers)",
    "fpga": "FPGA synthesis, place and route and bitstreams (amaranth-boards, YoWASP Yosys "
            "and nextpnr)",
    "dev": "everything above and the test suite (pytest)",
}


class MissingExtra(ImportError):
    """A command needs a package of an extra that is not installed."""


def require(module, extra, purpose):
    """Import and return ``module``; if it is missing, raise :class:`MissingExtra` naming the
    extra that brings it: ``"FPGA builds: amaranth_boards is not installed; pip install
    'ihcube[fpga]'"``, where ``purpose`` (``"FPGA builds"``) says what needs it."""
    if extra not in EXTRAS:
        raise ValueError(f"Extra must be one of {', '.join(EXTRAS)}, not {extra!r}")
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtra(f"{purpose}: {module.split('.')[0]} is not installed; "
                           f"pip install 'ihcube[{extra}]'") from None
