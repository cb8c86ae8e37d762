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


@pytest.mark.slow
@pytest.mark.parametrize("code", SNIPPETS)
def test_snippet_runs_without_warnings(code):
    assert run_snippet(code) == []


def test_a_snippet_that_leaves_a_component_unused_is_caught():
    """Negative control: the README's old snippet built a fabric it never elaborated."""
    found = run_snippet("from ihcube.rtl import Fabric\nfabric = Fabric(3)\n")
    assert any("never used" in message for message in found), found


# ---- "Where things live" names every module --------------------------------------------------

def package_folders(root=ROOT):
    """Every folder of the import package, found on the file system: each top-level folder
    with an ``__init__.py`` and, inside it, each subfolder with one, as paths relative to
    ``root`` with ``/`` (``rtl``, ``verify/formal``, ...)."""
    found = []
    for top in sorted(root.iterdir()):
        if top.name.startswith(".") or not (top / "__init__.py").is_file():
            continue
        found += [init.parent.relative_to(root).as_posix()
                  for init in sorted(top.rglob("__init__.py"))]
    return found


def modules(root=ROOT):
    """Each package folder's modules (``.py`` files other than ``__init__.py``), by folder."""
    return {folder: sorted(path.name for path in (root / folder).glob("*.py")
                           if path.name != "__init__.py")
            for folder in package_folders(root)}


def section(text, title):
    """The Markdown ``text``'s section under the heading ``title``, up to the next heading
    of the same or a higher level ("" if there is no such heading)."""
    match = re.search(rf"^(#+) {re.escape(title)}\s*$", text, re.M)
    if match is None:
        return ""
    body = text[match.end():]
    end = re.search(rf"^#{{1,{len(match.group(1))}}} ", body, re.M)
    return body[:end.start()] if end else body


def unnamed_modules(text, folders):
    """The modules of ``folders`` (folder -> module file names) that the table of ``text``
    does not name in its folder's row: a row whose first cell is `` `folder/` `` must name
    each module of that folder as `` `name.py` ``. A folder without a row is reported as
    ``folder/``."""
    rows = {}
    for line in text.split("\n"):
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.lstrip().startswith("|") and cells and re.fullmatch(r"`[\w/]+/`", cells[0]):
            rows[cells[0].strip("`").rstrip("/")] = line
    missing = []
    for folder, names in folders.items():
        if folder not in rows:
            missing.append(f"{folder}/")
            continue
        missing += [f"{folder}/{name}" for name in names if f"`{name}`" not in rows[folder]]
    return missing


WHERE_THINGS_LIVE = section((ROOT / "README.md").read_text(), "Where things live")


def test_where_things_live_names_every_module():
    """README's "Where things live" names every module of every package folder, in its
    folder's row; the folders and modules are found on the file system."""
    found = modules()
    assert {"ihcube", "rtl", "sim", "verify", "verify/formal", "boards", "bench",
            "cli"} <= set(found)
    assert unnamed_modules(WHERE_THINGS_LIVE, found) == []


def test_a_module_left_out_of_where_things_live_is_reported():
    """Negative control: the real module lists with one module added, one left without a
    row, and one named only in another folder's row are each reported."""
    found = modules()
    extra = {**found, "rtl": [*found["rtl"], "crossbar.py"]}
    assert unnamed_modules(WHERE_THINGS_LIVE, extra) == ["rtl/crossbar.py"]
    assert unnamed_modules(WHERE_THINGS_LIVE, {**found, "verify/spice": ["deck.py"]}) == [
        "verify/spice/"]
    text = "| `sim/` | `sweep.py` |\n| `cli/` | `verilog.py` |\n"
    assert unnamed_modules(text, {"sim": ["sweep.py"], "cli": ["sweep.py", "verilog.py"]}) == [
        "cli/sweep.py"]
