"""``docs/python.md``'s Amaranth example, a ring of counters around ``Fabric``: it runs as the
page writes it (``tests/test_readme.py`` runs it too), and its assertion catches a ring whose
PEs skip a node (negative control)."""

import pathlib
import re

import pytest

PAGE = pathlib.Path(__file__).resolve().parents[1] / "docs" / "python.md"
SKIPPING = "(self.node + 2) % self.spec.nodes"


def example():
    found = [block for block in re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.S)
             if "class Ring(" in block]
    assert len(found) == 1
    return found[0]


def run(code):
    namespace = {}
    exec(compile(code, str(PAGE), "exec"), namespace)
    return namespace


@pytest.mark.slow  # tests/test_readme.py runs the block in make check already
def test_the_ring_passes_the_token_round_and_writes_verilog():
    namespace = run(example())
    counts = namespace["counts"]
    assert len(counts) == 5 and min(counts) >= 3
    assert "module ring5(" in namespace["text"]


def test_a_ring_that_skips_a_node_is_caught():
    code = example()
    assert "(self.node + 1) % self.spec.nodes" in code
    with pytest.raises(AssertionError):
        run(code.replace("(self.node + 1) % self.spec.nodes", SKIPPING))
