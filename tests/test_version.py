"""The version moves with the design (CHANGELOG.md): the generated Verilog of a fixed set of
configurations must have the design digests recorded, in ``design_digests.json``, for the
newest version recorded there, and that version must not be above the installed one, each
with its CHANGELOG.md entry. A change to the generated design therefore fails here until the
version moves, its entry is written and the new digests are recorded (``make
design-digests``, which runs this file: it refuses to record other digests under a version
that has some).

The digests are those of the exact tool versions of ``constraints.txt`` (another Amaranth may
write other text for the same circuit).
"""

import json
import pathlib
import re
import sys

import pytest

from tiers import slow_unless

ROOT = pathlib.Path(__file__).resolve().parent.parent
DIGESTS = pathlib.Path(__file__).resolve().parent / "design_digests.json"
#: The configurations whose digests are recorded, as ``FabricSpec.of`` keywords: each switching
#: mode, interface and option that changes the Verilog, at sizes that generate in a second.
CONFIGURATIONS = [
    {"nodes": 5},
    {"nodes": 13},
    {"nodes": 5, "depth": 2, "order": "lsb"},
    {"nodes": 5, "ports": 4},
    {"nodes": 5, "link_stages": 1, "switch_stages": 1, "eject_stages": 1},
    {"nodes": 5, "interface": "axis"},
    {"nodes": 6, "reconfigurable": True},
    {"nodes": 5, "switching": "wormhole", "vcs": 1, "flits": 4, "flit_width": 16},
]


def version_key(text):
    """``"0.10.1"`` as ``(0, 10, 1)``, for ordering."""
    if not re.fullmatch(r"\d+\.\d+\.\d+", text):
        raise ValueError(f"Version must be MAJOR.MINOR.PATCH, not {text!r}")
    return tuple(int(part) for part in text.split("."))


def current_digests(configurations=CONFIGURATIONS):
    """``{file name: design digest}`` of today's Verilog of ``configurations``."""
    from ihcube.digest import design_digest
    from ihcube.generate import fabric_verilog
    from ihcube.spec import FabricSpec
    digests = {}
    for keywords in configurations:
        spec = FabricSpec.of(**keywords)
        digests[spec.name] = design_digest(fabric_verilog(spec))
    return digests


def changelog_versions(text):
    """The versions of CHANGELOG.md's entries (``## 0.2.0`` headings), in its order."""
    return re.findall(r"^## (\S+)$", text, re.MULTILINE)


def problems(current, recorded, version, changelog):
    """What is wrong with the ``recorded`` digests (``{version: {name: digest}}``) given the
    ``current`` ones, the installed ``version`` and the text of CHANGELOG.md: one sentence
    each, none when the version has moved with the design."""
    found = []
    entries = changelog_versions(changelog)
    if not entries or entries[0] != version:
        found.append(f"CHANGELOG.md's newest entry must be the version, {version}, not "
                     f"{entries[0] if entries else 'none'}")
    found += [f"version {old} is recorded but has no CHANGELOG.md entry"
              for old in recorded if old not in entries]
    if not recorded:
        return found + ["no digests are recorded: make design-digests"]
    newest = max(recorded, key=version_key)
    if version_key(newest) > version_key(version):
        found.append(f"digests are recorded for {newest}, above the version {version}")
    changed = sorted(name for name in current if recorded[newest].get(name) != current[name])
    if changed:
        found.append(f"the generated design of {', '.join(changed)} is not the one recorded "
                     f"for {newest}: move the version in pyproject.toml (now {version}), say "
                     f"what changed in CHANGELOG.md, and record the digests: make "
                     f"design-digests")
    return found


def record(current, recorded, version):
    """``recorded`` with the ``current`` digests, under ``version``; ``ValueError`` if that
    would change the digests recorded for a version (move the version first). A configuration
    new to the list is added to the newest version's digests if the others are unchanged."""
    newest = max(recorded, key=version_key) if recorded else None
    if newest is not None and all(recorded[newest].get(name, digest) == digest
                                  for name, digest in current.items()):
        return {**recorded, newest: {**recorded[newest], **current}}
    if version in recorded:
        raise ValueError(f"Version {version} has other digests recorded: move the version in "
                         f"pyproject.toml and add its CHANGELOG.md entry first")
    return {**recorded, version: current}


def load():
    return json.loads(DIGESTS.read_text())["versions"]


@pytest.mark.parametrize("keywords", slow_unless(CONFIGURATIONS,
                                                  lambda keywords: keywords == {"nodes": 5}),
                         ids=lambda keywords: "-".join(f"{key}={value}"
                                                       for key, value in keywords.items()))
def test_the_version_moves_with_the_design(keywords):
    """Each configuration's Verilog has the digest recorded for the newest version (the
    5-node fabric in ``make check``, the others in ``make test``)."""
    from ihcube import version
    assert problems(current_digests([keywords]), load(), version(),
                    (ROOT / "CHANGELOG.md").read_text()) == []


def test_every_configuration_is_recorded():
    """The newest version's digests are of the configurations above, no more, no fewer."""
    from ihcube.spec import FabricSpec
    recorded = load()
    assert set(recorded[max(recorded, key=version_key)]) == {
        FabricSpec.of(**keywords).name for keywords in CONFIGURATIONS}


def test_the_version_is_semantic_and_in_one_place():
    """pyproject.toml's version is MAJOR.MINOR.PATCH and no module states one of its own."""
    from ihcube import version
    version_key(version())
    stated = [path.relative_to(ROOT) for folder in ("ihcube", "rtl", "sim", "verify", "boards",
                                                    "bench", "cli")
              for path in (ROOT / folder).rglob("*.py")
              if re.search(r"^__version__\s*=|^VERSION\s*=", path.read_text(), re.MULTILINE)]
    assert stated == []


# --- Negative controls ----------------------------------------------------------------------

CHANGELOG = "# Changes\n\n## 0.2.0\n\n- a change\n\n## 0.1.0\n\nThe first.\n"
RECORDED = {"0.1.0": {"a": "1111", "b": "2222"}, "0.2.0": {"a": "1111", "b": "3333"}}


def test_a_changed_design_without_a_new_version_is_caught():
    assert problems({"a": "1111", "b": "3333"}, RECORDED, "0.2.0", CHANGELOG) == []
    found = problems({"a": "1111", "b": "4444"}, RECORDED, "0.2.0", CHANGELOG)
    assert len(found) == 1 and found[0].startswith("the generated design of b is not the one "
                                                   "recorded for 0.2.0: move the version")
    with pytest.raises(ValueError, match="^Version 0.2.0 has other digests recorded"):
        record({"a": "1111", "b": "4444"}, RECORDED, "0.2.0")


def test_a_new_version_needs_its_changelog_entry_and_its_digests():
    changed = {"a": "1111", "b": "4444"}
    assert problems(changed, RECORDED, "0.2.1", CHANGELOG) == [
        "CHANGELOG.md's newest entry must be the version, 0.2.1, not 0.2.0",
        "the generated design of b is not the one recorded for 0.2.0: move the version in "
        "pyproject.toml (now 0.2.1), say what changed in CHANGELOG.md, and record the "
        "digests: make design-digests"]
    moved = record(changed, RECORDED, "0.2.1")
    assert moved["0.2.1"] == changed and moved["0.2.0"] == RECORDED["0.2.0"]
    assert problems(changed, moved, "0.2.1", "## 0.2.1\n" + CHANGELOG) == []


@pytest.mark.slow
def test_a_broken_router_fails_the_recorded_digests():
    """Negative control through the generator: the 5-node fabric built with a broken router
    (one that corrupts payloads, :mod:`ihcube.verify.faults`) is not the design recorded for
    the version."""
    from ihcube import version
    from ihcube.digest import design_digest
    from ihcube.generate import fabric_verilog
    from ihcube.spec import FabricSpec
    from ihcube.verify.faults import faulty_router
    spec = FabricSpec(5)
    router = faulty_router("corrupting-buffer")
    broken = {spec.name: design_digest(fabric_verilog(spec, router=router))}
    found = problems(broken, load(), version(), (ROOT / "CHANGELOG.md").read_text())
    assert len(found) == 1 and found[0].startswith("the generated design of ihcube_n5_w32 is "
                                                   "not the one recorded")


def test_a_version_with_the_same_design_needs_no_new_digests():
    """A release that leaves the Verilog alone (a new option, say) moves the version and the
    changelog only; a configuration added to the list joins the newest digests."""
    assert problems(RECORDED["0.2.0"], RECORDED, "0.3.0", "## 0.3.0\n" + CHANGELOG) == []
    grown = record({**RECORDED["0.2.0"], "c": "5555"}, RECORDED, "0.3.0")
    assert grown["0.2.0"] == {**RECORDED["0.2.0"], "c": "5555"} and "0.3.0" not in grown


def main():
    """Record today's digests (``make design-digests``)."""
    from ihcube import version
    data = json.loads(DIGESTS.read_text()) if DIGESTS.exists() else {}
    try:
        versions = record(current_digests(), data.get("versions", {}), version())
    except ValueError as error:
        print(f"design-digests: error: {error}", file=sys.stderr)
        return 2
    DIGESTS.write_text(json.dumps({
        "about": "Design digests (ihcube.digest) of tests/test_version.py's configurations, "
                 "by the version that first wrote them; make design-digests records them.",
        "versions": dict(sorted(versions.items(), key=lambda item: version_key(item[0])))},
        indent=1) + "\n")
    print(f"{DIGESTS.relative_to(ROOT)}: the digests of {len(CONFIGURATIONS)} configurations "
          f"for {max(versions, key=version_key)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
