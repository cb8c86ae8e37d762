"""The Python snippets of README.md and docs/*.md run as they are, with warnings as errors
(a snippet that builds components it never elaborates makes Amaranth warn)."""

import pathlib
import re
import warnings

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def snippets():
    for document in DOCUMENTS:
        text = document.read_text()
        for match in re.finditer(r"```python\n(.*?)```", text, re.S):
            line = text[:match.start()].count("\n") + 1
            yield pytest.param(match.group(1), id=f"{document.name}:{line}")


SNIPPETS = list(snippets())


def run_snippet(code):
    """Run ``code``; return the warnings it gave, including the ones Amaranth gives at
    garbage collection for components built and never used."""
    import gc

    from amaranth.hdl import Fragment, Module
    # Amaranth stays silent about unused components until something has been elaborated in
    # the process (a crash would otherwise bury its traceback in warnings): elaborate an
    # empty module first, so the check does not depend on which tests ran before it.
    Fragment.get(Module(), None)
    # Garbage left by tests run before this one in the same process is not the snippet's.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gc.collect()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        namespace = {}
        exec(compile(code, "<snippet>", "exec"), namespace)
        namespace.clear()
        gc.collect()
    return [str(warning.message) for warning in caught]


def test_readme_has_snippets():
    assert len(SNIPPETS) >= 1


@pytest.mark.parametrize("code", SNIPPETS)
def test_snippet_runs_without_warnings(code):
    assert run_snippet(code) == []


def test_a_snippet_that_leaves_a_component_unused_is_caught():
    """Negative control: the README's old snippet built a fabric it never elaborated."""
    found = run_snippet("from ihcube.rtl import Fabric\nfabric = Fabric(3)\n")
    assert any("never used" in message for message in found), found
