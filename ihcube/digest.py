"""The design digest of a generated Verilog file: which hardware it holds, whatever the version.

A file that :func:`ihcube.generate.fabric_verilog` writes starts with a comment, the header
(what wrote it, from which parameters), and its last line records the *design digest*: the
first :data:`DIGITS` hex digits of the SHA-256 of the text below the header, every byte after
the header's closing ``*/`` line (Amaranth's router modules and the generator's top module:
what Yosys, a simulator or Verilator reads). Two files with the same digest hold the same
text, so the same circuit, whatever the ihcube version in their headers; a file whose text no
longer gives the digest its header records was changed after it was written (:func:`check`).
Without Python: ``sed '1,/\\*\\//d' FILE | sha256sum | cut -c1-16``.
"""

import hashlib
import re

__all__ = ["DIGITS", "design_digest", "digest_line", "with_digest", "recorded_digest", "check",
           "read_header"]

#: Hex digits of the SHA-256 that the digest keeps (64 bits).
DIGITS = 16
#: How the header ends: the line that closes the comment.
_END = " */\n"
_LINE = re.compile(r"^ \* Design digest: ([0-9a-f]+) ", re.MULTILINE)


def _split(text):
    """``text``, a generated file's, as ``(header, body)``: the leading comment through its
    closing line, and every character after it. ``ValueError`` if it has no such comment."""
    if not text.startswith("/* ") or _END not in text:
        raise ValueError("The text does not start with the header comment ihcube writes "
                         "(/* ... */)")
    cut = text.index(_END) + len(_END)
    return text[:cut], text[cut:]


def _digest(body):
    return hashlib.sha256(body.encode()).hexdigest()[:DIGITS]


def design_digest(text):
    """The design digest of ``text``, a generated file's whole text: the first
    :data:`DIGITS` hex digits of the SHA-256 of its UTF-8 bytes below the header."""
    return _digest(_split(text)[1])


def digest_line(digest):
    """The header's line that records ``digest`` and says what it covers."""
    return (f" * Design digest: {digest} (the first {DIGITS} hex digits of the SHA-256 of "
            f"the text below this comment: the same digest, the same circuit, whatever the "
            f"version; `ihcube verilog --check FILE` checks it).\n")


def with_digest(header, body):
    """``header`` (a comment ending in `` */``) with the line that records the digest of
    ``body``, the text that follows it, before its closing line: the file's text is then
    ``with_digest(header, body) + body``."""
    if not header.endswith(_END) or _END in header[:-len(_END)]:
        raise AssertionError("The generated file's header does not end as expected")
    return header[:-len(_END)] + digest_line(_digest(body)) + _END


def recorded_digest(text):
    """The design digest that the header of ``text`` (a generated file's whole text, or its
    header alone) records, or None if it records none (a file written before ihcube 0.2.0);
    ``ValueError`` if ``text`` does not start with a header."""
    found = _LINE.search(_split(text)[0])
    return found.group(1) if found else None


def check(text):
    """Return the design digest of ``text``, a generated file's whole text, if its header
    records that digest; raise ``ValueError`` saying what differs otherwise (the text below
    the header was changed, or the header records no digest)."""
    recorded, body = recorded_digest(text), _split(text)[1]
    if recorded is None:
        raise ValueError("The header records no design digest: the file was not written by "
                         "ihcube 0.2.0 or later")
    actual = _digest(body)
    if actual != recorded:
        raise ValueError(f"The text below the header has design digest {actual}, but the "
                         f"header records {recorded}: it was changed after ihcube wrote it")
    return actual


def read_header(path):
    """The header of the generated file at ``path``, read without the rest of the file (which
    may be hundreds of megabytes); empty text if the file does not start with a comment."""
    lines = []
    with open(path, encoding="utf-8", errors="replace") as file:
        for line in file:
            if not lines and not line.startswith("/* "):
                return ""
            lines.append(line)
            if line == _END:
                break
    return "".join(lines)
