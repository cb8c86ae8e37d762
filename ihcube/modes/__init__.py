"""The seam between switching modes: what each mode gives the shared machinery.

One module per mode, each with one :class:`Mode` object: :mod:`.packet` (whole messages,
Katseff's Algorithm 3) and :mod:`.wormhole` (flits and virtual channels, SPEC section 8).
The generator, the lint, the stress runs, the experiments, the FPGA builds and the commands
ask :func:`mode_of` for the spec's mode once, and then call what it provides, instead of
branching on the mode themselves. The hardware and the fast models of the two modes really
differ and stay in their own modules (``rtl/``, ``sim/``); a mode here only names them.

A new switching mode is a module here with a :class:`Mode`, its line in :data:`MODES`, and
its switching value in :mod:`ihcube.spec`.
"""

import importlib

from ..params import PACKET, WORMHOLE

__all__ = ["Mode", "MODES", "mode_of"]


class Mode:
    """What a switching mode provides. Every member is looked up when asked for, so that
    naming a mode loads neither Amaranth nor Numba.

    Members
    -------
    name : str
        ``"packet"`` or ``"wormhole"`` (:attr:`ihcube.spec.FabricSpec.mode`).
    description : str
        The mode in a few words, for the lines the commands print.
    """

    name = None
    description = None

    # --- The hardware ------------------------------------------------------------------

    def router(self, spec, node, *, strap=False):
        """The router component of ``node`` in the fabric ``spec``."""
        raise NotImplementedError

    def fabric(self, spec, **options):
        """The fabric component of ``spec`` (``options``: ``router``, ``routing``,
        ``router_modules``, as the component takes them)."""
        raise NotImplementedError

    def build_component(self, spec, node=None, *, strapped=False):
        """What an FPGA build of ``spec`` measures (:func:`ihcube.boards.build.synth`): the
        fabric, or with ``node`` that node's router alone, with ``strapped`` as the fabric
        builds it (:meth:`strapped_router`)."""
        if node is None:
            return self.fabric(spec)
        return self.strapped_router(spec, node) if strapped else self.router(spec, node)

    def strapped_router(self, spec, node):
        """The router of ``node`` as the fabric builds it (its class's module, the address
        tied to ``node``), alone: what one router of the fabric costs."""
        raise ValueError(f"A strapped router is built alone with packet switching only, not "
                         f"with {self.description}")

    def figures(self, spec):
        """What a build's results file records of ``spec`` beside its node count: the
        payload width and this mode's options."""
        raise NotImplementedError

    def router_signature(self, spec, node):
        """The signature of the strapped router of ``node``, as the generated top module
        instantiates it."""
        raise NotImplementedError

    def fabric_signature(self, spec):
        """The signature of the fabric, the generated top module's ports but ``clk`` and
        ``rst``."""
        raise NotImplementedError

    def check_deadlock(self, spec):
        """Raise ``ValueError`` naming a cycle if the channel dependency graph of ``spec``'s
        routing is cyclic (:mod:`ihcube.deadlock`)."""
        raise NotImplementedError

    def router_modules(self, spec, top=None):
        """The name of the router module of each node in the generated Verilog, by node: one
        module per set of nodes whose strapped routers are the same, named after ``top``
        (the spec's name if None)."""
        raise NotImplementedError

    def header(self, spec, version):
        """The comment at the head of the generated file of ``spec``."""
        raise NotImplementedError

    #: Verilator's waiver files for this mode's Verilog (:mod:`ihcube.verify.lint`).
    lint_waivers = ()

    # --- The fast model and the checks ---------------------------------------------------

    def model(self, spec, threads=1):
        """The fast model of ``spec`` (cycle-exact with the RTL) on ``threads`` threads."""
        raise NotImplementedError

    @property
    def stress(self):
        """The stress engine of this mode, which :class:`ihcube.verify.stress.StressConfig`
        runs on: a module with ``run_model(config, threads=, progress=)`` and
        ``run_rtl(config, fabric=, routing=, progress=)`` (each returning a
        :class:`~ihcube.verify.stress.StressResult`), ``find_stall`` and ``stall_report`` (of
        the result's records), ``check_config``, ``heading`` and ``COUNT_NAMES`` (the
        summary's lines) and ``campaign_columns`` (the campaign table's)."""
        raise NotImplementedError

    @property
    def faults(self):
        """This mode's broken parts by name (:mod:`ihcube.verify.faults`)."""
        raise NotImplementedError

    # --- The experiments (:mod:`ihcube.sim.sweep`) ---------------------------------------

    #: What a link's traffic density counts: ``"messages"`` or ``"flits"``.
    unit = None

    def traffic(self, spec, pattern, rate, seed, threads=1):
        """A source of ``pattern``'s random traffic (a :class:`~ihcube.sim.traffic.Pattern`)
        at ``rate`` messages per node per cycle, drawn from ``seed``, into a fresh fast model
        of ``spec`` on ``threads`` threads; its ``run(cycles, record_links)`` measures."""
        raise NotImplementedError

    def flits(self, spec):
        """Flits per message: the cycles a message holds a link."""
        raise NotImplementedError

    def injection_limit(self, spec):
        """The most messages per cycle a PE can inject."""
        raise NotImplementedError

    def buffer_depth(self, spec):
        """The buffer depth the experiments' records and seeds give."""
        raise NotImplementedError

    def buffers(self, spec):
        """The buffers of ``spec`` in a few words, for the title of a picture."""
        raise NotImplementedError

    def record(self, spec):
        """What a zero-load or saturation record says of the mode's own options, after its
        measurements."""
        raise NotImplementedError

    def results_suffix(self, spec):
        """What the mode's options add to the name of a saturation results file (``""``:
        ``saturation.json``)."""
        raise NotImplementedError

    def __repr__(self):
        return f"<ihcube.modes {self.name}>"


#: Each mode's module, by name.
MODES = {PACKET: ".packet", WORMHOLE: ".wormhole"}


def mode_of(spec_or_name):
    """The :class:`Mode` of a :class:`~ihcube.spec.FabricSpec` (or of a mode's name)."""
    name = getattr(spec_or_name, "mode", spec_or_name)
    if name not in MODES:
        raise ValueError(f"Switching must be one of {', '.join(map(repr, MODES))}, not "
                         f"{name!r}")
    return importlib.import_module(MODES[name], __name__).MODE
