"""ihcube: a cycle-accurate router for incomplete hypercube interconnects.

The import package ``ihcube`` is the project's top-level folders, one role each
(pyproject.toml maps them; so ``rtl/router.py``, package ``ihcube.rtl``, reads ``from .. import
topology``):

=================  ================  ==========================================================
folder             package           what lives there
=================  ================  ==========================================================
``ihcube/``        ``ihcube``        the rules of the network in plain Python
                                     (:mod:`.topology`: links, routes, broadcast travel,
                                     onward links; :mod:`.deadlock`: channel dependency
                                     graphs), parameter checks (:mod:`.params`), optional
                                     installs (:mod:`.extras`), the Verilog generator
                                     (:mod:`.generate`) and its design digest
                                     (:mod:`.digest`)
``rtl/``           ``ihcube.rtl``    the Amaranth components: message, buffer, arbiter, route
                                     select, router, fabric
``sim/``           ``ihcube.sim``    the cycle-exact fast model, traffic patterns, sweeps,
                                     collectives, plots
``verify/``        ``ihcube.verify`` the checks: simulator harness and scoreboard, stress,
                                     formal properties and jobs, faulty parts for negative
                                     controls, lint, the cocotb runner and testbench
``boards/``        ``ihcube.boards`` FPGA builds: self-test tops, synthesis shell, the build
``bench/``         ``ihcube.bench``  benchmarks that print figures and write ``results/``
``cli/``           ``ihcube.cli``    the ``ihcube`` command: one thin module per subcommand
=================  ================  ==========================================================

A topology rule goes in :mod:`ihcube.topology` and nowhere else: the RTL, the model and the
tests import it.
"""

__all__ = ["version"]


def version():
    """This installation's version, from its package metadata (pyproject.toml's)."""
    from importlib import metadata
    return metadata.version("ihcube")
