"""Run the cocotb regression on the emitted Verilog of one fabric, in Icarus Verilog.

:func:`build` generates the fabric with :func:`ihcube.generate.fabric_verilog` into a build
folder and compiles it with ``iverilog``; :func:`run` runs the testbench
``verify/cocotb_tb/fabric_tb.py`` on it through :mod:`cocotb_tools.runner` and reads cocotb's
JUnit report; :func:`regression` does both in ``<out>/<top>`` (``<top>`` is
:func:`~ihcube.generate.fabric_name`), the way ``ihcube cocotb`` (:mod:`ihcube.cli.cocotb`,
``make cocotb``) runs it. ``tests/test_cocotb.py`` runs the same regression from pytest with
:func:`build` and :func:`run`.
"""

from __future__ import annotations

import contextlib
import os
import sys
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path

from .. import topology
from ..extras import require
from ..params import check_at_most, check_depth, check_payload_width
from ..spec import FabricSpec, Packet, Stages

#: The register stages' fields of :class:`Settings`.
_STAGE_KEYWORDS = [keyword for keyword, _, _ in Stages.FIELDS.values()]

__all__ = ["TESTS", "RECONFIGURABLE_ONLY", "Settings", "Outcome", "applicable", "build", "run",
           "regression", "read_results"]

#: The tests of ``verify/cocotb_tb/fabric_tb.py``, in the order they run.
TESTS = ("route_selection", "all_pairs_unicast", "broadcast_from_every_source", "random_stress",
         "bad_destination_refused", "zero_load_latency", "fault", "reconfiguration")

#: The tests that take a reconfigurable fabric; on a fixed one they are left out, and skipped
#: (reported ``skipped``, not ``passed``) if asked for by name.
RECONFIGURABLE_ONLY = ("fault", "reconfiguration")

TESTBENCH = "cocotb_tb.fabric_tb"
#: Where the testbench package lives: this folder (``verify/``), shipped with the package.
TESTBENCH_PATH = Path(__file__).resolve().parent
TIMESCALE = ("1ns", "1ps")
#: The runner compiles with ``-g2012``. Under it Icarus initialises a ``reg x = 0``
#: declaration without an event, so the ``always @*`` blocks of Yosys's Verilog backend, which
#: wait for exactly that event to compute their first value, stay X until an input changes.
#: Verilog-2005 semantics (the later ``-g`` wins) make the initialisation an event.
BUILD_ARGS = ["-g2005"]
#: A Verilog-2005 module that dumps the waveform, for ``waves=True``.
DUMP_MODULE = "ihcube_cocotb_dump"
#: cocotb applies pytest's assertion rewriting to every module imported after it starts,
#: Amaranth, NumPy and Numba included (seconds per simulator start); only the testbench's
#: assertions need it.
REWRITE = {"COCOTB_REWRITE_ASSERTION_FILES": "*_tb.py"}
_ENV_PREFIX = "IHCUBE_COCOTB_"
_TRUE = ("1", "yes", "y", "on", "true", "enable")


#: The most requests of the random stress test: Icarus simulates some thousands of cycles a
#: second, and a request takes some cycles (:func:`default_stress` gives 16 a node).
MAX_STRESS = 1_000_000
#: The largest seed: Python's random takes any, the testbench's environment a 64-bit one.
MAX_SEED = (1 << 63) - 1


def applicable(settings):
    """The tests of :data:`TESTS` that apply to the fabric of ``settings``: every one but
    :data:`RECONFIGURABLE_ONLY`, which take a reconfigurable fabric, and those too then."""
    return tuple(test for test in TESTS
                 if test not in RECONFIGURABLE_ONLY or settings.reconfigurable)


def default_stress(n):
    """Requests in the random stress test: 16 per node, offered in about 32 cycles (more than
    a PE can inject at depth 1), one in ten a broadcast of ``n - 1`` deliveries."""
    return 16 * n


@contextlib.contextmanager
def _waves(waves):
    """Yield whether to record a waveform: ``waves``, or cocotb's ``WAVES`` variable. The
    variable is hidden from the runner meanwhile: it would add its own dump module, which is
    SystemVerilog and does not compile under :data:`BUILD_ARGS`."""
    saved = os.environ.pop("WAVES", None)
    try:
        yield bool(waves) or (saved or "").strip().lower() in _TRUE
    finally:
        if saved is not None:
            os.environ["WAVES"] = saved


@dataclass(frozen=True)
class Settings:
    """What the testbench needs to know: the fabric's parameters and the test lengths.

    :mod:`ihcube.verify.cocotb_runner` hands them to the simulator in environment variables
    (:meth:`to_env`); the testbench reads them back with :meth:`from_env`.
    """
    nodes: int
    width: int = 32
    depth: int = 1
    order: str = topology.MSB_FIRST
    stress: int | None = None  # None: default_stress(nodes)
    seed: int = 1
    link_stages: int = 0  # the Router's: a relay on each outgoing link, a cycle more per hop
    switch_stages: int = 0  # the Router's: its grant registered, a cycle more per router
    eject_stages: int = 0  # the Router's: a relay on each eject port, a cycle more to the PE
    reconfigurable: bool = False  # the configuration loaded at run time (the last test)

    def __post_init__(self):
        topology.check_node_count(self.nodes)
        check_payload_width(self.width)
        check_depth(self.depth)
        topology.check_routing_order(self.order)
        Stages(self.link_stages, self.switch_stages, self.eject_stages)  # checked
        if self.stress is None:
            object.__setattr__(self, "stress", default_stress(self.nodes))
        check_at_most(self.stress, MAX_STRESS, "Stress request count")
        check_at_most(self.seed, MAX_SEED, "Seed")

    @classmethod
    def of(cls, spec, stress=None, seed=1):
        """The settings of the packet fabric ``spec`` (a :class:`~ihcube.spec.FabricSpec`
        with one PE port: the testbench drives one a node)."""
        if not spec.packet or spec.ports != 1:
            raise ValueError(f"The cocotb regression tests a packet fabric with one PE port, "
                             f"not {spec.name}")
        return cls(spec.nodes, spec.payload_width, spec.depth, spec.order, stress, seed,
                   spec.stages.link, spec.stages.switch, spec.stages.eject,
                   spec.reconfigurable)

    @property
    def spec(self):
        """The fabric, a :class:`~ihcube.spec.FabricSpec`."""
        return FabricSpec(self.nodes, self.width, self.order,
                          Packet(self.depth, 1, Stages(self.link_stages, self.switch_stages,
                                                       self.eject_stages)),
                          reconfigurable=bool(self.reconfigurable))

    @property
    def top(self):
        """The Verilog top module's name."""
        return self.spec.name

    @property
    def stages(self):
        """The register stages, a :class:`~ihcube.spec.Stages`."""
        return self.spec.stages

    def to_env(self):
        return {_ENV_PREFIX + name.upper(): str(int(getattr(self, name))
                                                if name == "reconfigurable"
                                                else getattr(self, name))
                for name in ("nodes", "width", "depth", "order", "stress", "seed",
                             *_STAGE_KEYWORDS, "reconfigurable")}

    @classmethod
    def from_env(cls, environ=os.environ):
        def get(name):
            return environ[_ENV_PREFIX + name.upper()]
        return cls(nodes=int(get("nodes")), width=int(get("width")), depth=int(get("depth")),
                   order=get("order"), stress=int(get("stress")), seed=int(get("seed")),
                   **{key: int(get(key)) for key in _STAGE_KEYWORDS},
                   reconfigurable=get("reconfigurable") == "1")


@dataclass(frozen=True)
class Outcome:
    """How one cocotb test ended: ``status`` is ``passed``, ``failed``, ``skipped`` or
    ``missing`` (the simulation ended before it reported)."""
    name: str
    status: str
    message: str = ""

    @property
    def passed(self):
        return self.status == "passed"


def build(settings, build_dir, *, waves=False, verilog=None):
    """Generate the fabric of ``settings`` into ``build_dir`` and compile it with Icarus.

    ``verilog`` replaces the generated text (the tests pass a broken fabric's). With
    ``waves``, the simulation writes ``build_dir/<top>.fst`` (when :func:`run` is also given
    ``waves``). The design is always recompiled, so that a build is what it says.
    """
    get_runner = require("cocotb_tools.runner", "verify", "The cocotb regression").get_runner
    from ..generate import fabric_verilog

    build_dir = Path(build_dir).resolve()
    build_dir.mkdir(parents=True, exist_ok=True)
    if verilog is None:
        verilog = fabric_verilog(settings.spec)
    source = build_dir / f"{settings.top}.v"
    source.write_text(verilog)
    sources, build_args = [source], list(BUILD_ARGS)
    with _waves(waves) as waves:
        if waves:
            # The runner's own dump module is SystemVerilog, which -g2005 does not take.
            dump = build_dir / f"{DUMP_MODULE}.v"
            dump.write_text(f"module {DUMP_MODULE};\n"
                            f"  initial begin\n"
                            f"    $dumpfile(\"{build_dir / (settings.top + '.fst')}\");\n"
                            f"    $dumpvars(0, {settings.top});\n"
                            f"  end\n"
                            f"endmodule\n")
            sources.append(dump)
            build_args += ["-s", DUMP_MODULE]
        get_runner("icarus").build(sources=sources, hdl_toplevel=settings.top,
                                   build_dir=build_dir, build_args=build_args,
                                   timescale=TIMESCALE, always=True,
                                   log_file=build_dir / "build.log")
    return build_dir


def run(settings, build_dir, *, tests=None, results_xml=None, test_dir=None, waves=False):
    """Run ``tests`` (by default all of :data:`TESTS` that apply: ``reconfiguration`` on a
    reconfigurable fabric only) on the design :func:`build` compiled into ``build_dir``;
    return an :class:`Outcome` per test, in order.

    ``results_xml`` (default ``build_dir/results.xml``) receives cocotb's JUnit report and
    ``test_dir`` (default ``build_dir``) is where the simulator runs. The runner does not
    raise when a test fails (under pytest it exits instead); the report says what happened.
    """
    get_runner = require("cocotb_tools.runner", "verify", "The cocotb regression").get_runner

    build_dir = Path(build_dir).resolve()
    tests = list(applicable(settings) if tests is None else tests)
    results_xml = Path(results_xml or build_dir / "results.xml").resolve()
    test_dir = Path(test_dir or build_dir).resolve()
    # The runner passes its own sys.path to the simulator's Python as PYTHONPATH.
    sys.path.insert(0, str(TESTBENCH_PATH))
    try:
        with _waves(waves) as waves:
            get_runner("icarus").test(
                test_module=TESTBENCH, hdl_toplevel=settings.top, hdl_toplevel_lang="verilog",
                build_dir=build_dir, test_dir=test_dir, testcase=tests,
                results_xml=str(results_xml), extra_env={**settings.to_env(), **REWRITE},
                waves=waves)
    except SystemExit:
        pass  # a failed test or a crashed simulator; read_results tells which
    finally:
        sys.path.remove(str(TESTBENCH_PATH))
    return read_results(results_xml, tests)


def read_results(results_xml, tests):
    """The :class:`Outcome` of each of ``tests`` according to a cocotb JUnit report; a test
    the report does not mention is ``missing``."""
    found = {}
    if Path(results_xml).is_file():
        for case in ElementTree.parse(results_xml).getroot().iter("testcase"):
            status, message = "passed", ""
            for child in case:
                if child.tag in ("failure", "error"):
                    status = "failed"
                    message = "\n".join(part for part in (child.get("message"), child.text)
                                        if part)
                elif child.tag == "skipped" and status == "passed":
                    status, message = "skipped", child.get("message") or ""
            found[case.get("name")] = Outcome(case.get("name"), status, message)
    missing = f"no result in {results_xml}: the simulation ended before this test reported"
    return [found.get(name, Outcome(name, "missing", missing)) for name in tests]


def regression(settings, out="build/cocotb", *, tests=None, waves=False):
    """Build the fabric of ``settings`` in ``out/<top>`` and run ``tests`` (those of
    :func:`applicable` by default) on it.

    Returns
    -------
    build_dir : Path
        ``out/<top>``, which holds ``results.xml``.
    waveform : Path or None
        ``build_dir/<top>.fst`` if a waveform was asked for, by ``waves`` or cocotb's ``WAVES``
        variable.
    outcomes : list of :class:`Outcome`
        One per test, in order.

    Raises
    ------
    ValueError
        If the generator refuses the fabric (a routing that can deadlock).
    """
    build_dir = Path(out) / settings.top
    with _waves(waves) as waves:
        build(settings, build_dir, waves=waves)
        outcomes = run(settings, build_dir, tests=tests, waves=waves)
    return build_dir, (build_dir / f"{settings.top}.fst" if waves else None), outcomes
