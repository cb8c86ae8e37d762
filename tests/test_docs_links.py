"""Every relative link in README.md and docs/*.md points to a file that exists, and every
``#anchor`` to a heading of that file, by GitHub's anchor rule (lower case, punctuation
dropped, spaces to ``-``, a repeated heading numbered ``-1``, ``-2``, ...)."""

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
# [text](target) and ![alt](target); the text may hold inline code but no brackets.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
INLINE_CODE = re.compile(r"`[^`]*`")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def prose_lines(text):
    """The lines of ``text`` outside fenced code blocks, with their line numbers."""
    inside = False
    for number, line in enumerate(text.split("\n"), 1):
        if FENCE.match(line):
            inside = not inside
            continue
        if not inside:
            yield number, line


def slug(heading):
    """GitHub's anchor for a heading's text: the rendered text (inline code and link
    targets dropped, their text kept), lower case, every character that is not a letter,
    digit, ``_``, ``-`` or space dropped, spaces turned into ``-``."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = text.replace("`", "").replace("*", "")
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(text):
    """The anchors of every heading of the Markdown ``text``."""
    seen = {}
    found = set()
    for _, line in prose_lines(text):
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def broken_links(text, document, read=lambda path: path.read_text()):
    """The broken relative links of the Markdown ``text`` of ``document`` (a path, which
    relative targets are resolved against), one line each: where, the target, what is
    wrong. ``read`` reads a linked Markdown file (for its headings)."""
    problems = []
    for number, line in prose_lines(text):
        for match in LINK.finditer(INLINE_CODE.sub("", line)):
            target = match.group(1)
            if SCHEME.match(target):
                continue
            path_part, _, anchor = target.partition("#")
            where = f"{document.name}:{number}: {target}"
            if path_part:
                linked = (document.parent / path_part).resolve()
                if not linked.exists():
                    problems.append(f"{where}: no file {path_part}")
                    continue
            else:
                linked = document
            if anchor:
                if linked.suffix != ".md":
                    problems.append(f"{where}: an anchor into a file that is not Markdown")
                    continue
                headings = anchors(text if linked == document else read(linked))
                if anchor not in headings:
                    problems.append(f"{where}: no heading with anchor #{anchor}")
    return problems


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: path.name)
def test_every_relative_link_resolves(document):
    assert broken_links(document.read_text(), document) == []


def test_the_documents_are_linked_from_the_readme():
    """Each docs page is reachable from the front page."""
    readme = (ROOT / "README.md").read_text()
    missing = [page.name for page in DOCUMENTS[1:] if f"(docs/{page.name}" not in readme]
    assert missing == []


def test_slug_follows_githubs_rule():
    assert slug("Generation time, memory and size (`make bench`)") == (
        "generation-time-memory-and-size-make-bench")
    assert slug("All-port nodes (`--ports`)") == "all-port-nodes---ports"
    assert slug("FPGA figures") == "fpga-figures"
    assert anchors("# A\n## A\n```\n# not a heading\n```\n") == {"a", "a-1"}


def test_broken_file_links_and_anchors_are_reported():
    """Negative control: a document with a link to a file that does not exist and one
    with an anchor that names no heading, given as text, are each reported; the same
    links made right are not."""
    document = ROOT / "docs" / "example.md"
    broken_file = "See [the router](router_notes.md) for more.\n"
    broken_anchor = "# Title\n\nSee [figures](fpga.md#fpga-figuress) and [here](#titel).\n"
    assert broken_links(broken_file, document) == [
        "example.md:1: router_notes.md: no file router_notes.md"]
    assert broken_links(broken_anchor, document) == [
        "example.md:3: fpga.md#fpga-figuress: no heading with anchor #fpga-figuress",
        "example.md:3: #titel: no heading with anchor #titel"]
    right = "# Title\n\nSee [figures](fpga.md#fpga-figures), [here](#title), [the code](`x`).\n"
    assert broken_links(right, document) == []
    # A link inside a code block or inline code is not a link.
    assert broken_links("```\n[x](nowhere.md)\n```\n`[y](nowhere.md)`\n", document) == []


#: The most lines a page of docs/ may have: a longer page is two topics (or a history).
MAX_PAGE_LINES = 600


def long_pages(pages):
    """The pages of ``pages`` (name -> text) longer than :data:`MAX_PAGE_LINES`, one line
    each: the name and its line count."""
    return [f"{name}: {text.count(chr(10)) + (not text.endswith(chr(10)))} lines"
            for name, text in pages.items()
            if text.count("\n") + (not text.endswith("\n")) > MAX_PAGE_LINES]


def test_no_page_is_longer_than_600_lines():
    assert long_pages({page.name: page.read_text() for page in DOCUMENTS}) == []


def test_a_long_page_is_reported():
    """Negative control: a page of 601 lines is reported, one of 600 is not."""
    assert long_pages({"long.md": "x\n" * 601, "fine.md": "x\n" * 600}) == [
        "long.md: 601 lines"]
    assert long_pages({"unterminated.md": "x\n" * 600 + "x"}) == ["unterminated.md: 601 lines"]
