"""Make peer-controlled text safe to print on a terminal (level 0, pure).

A peer decides method names, tool names, error messages, stderr, ids and
session ids. Printed raw, an ``ESC [1A ESC [2K CR`` in a method name moves the
cursor up and erases the finding about it: a server could hide its own
misbehaviour from ``show`` and ``check``. Every human-readable renderer passes
peer text through :func:`escape_controls` before it reaches a line, and adds
its own colour codes only afterwards.

What is escaped: every C0 control (U+0000–U+001F, including TAB, CR and LF),
DEL and every C1 control (U+007F–U+009F: U+009B is a one-byte CSI on some
terminals), the Unicode line and paragraph separators and the bidirectional
formatting characters (U+061C, U+200E/F, U+202A–U+202E, U+2066–U+2069, the
"Trojan Source" reordering characters), and lone surrogates: a file name's
bytes that are not UTF-8 are held by Python as U+DC80–U+DCFF (PEP 383), which
no terminal encoding can write (UTF-8 refuses them: a UnicodeEncodeError, or
``\\udcff`` from the error handler of the day). They become Python-style
escapes: ``\\x1b``, ``\\r``, ``\\n``, ``\\t``, ``\\u202e``, and the undecodable
byte itself for a file name's ``\\xff``. Other text, including non-ASCII
letters and emoji, is left as it is.
"""

from __future__ import annotations

import re

_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}

#: Characters a terminal or a bidi-aware renderer acts on instead of printing.
CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _one(m: re.Match[str]) -> str:
    c = m.group()
    named = _NAMED.get(c)
    if named is not None:
        return named
    n = ord(c)
    if 0xDC80 <= n <= 0xDCFF:
        return f"\\x{n - 0xDC00:02x}"       # a file name's byte that is not UTF-8 (surrogateescape)
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}"


def escape_controls(text: str) -> str:
    """``text`` with every terminal control and bidi formatting character
    replaced by a visible escape (``"a\\x1b[2K"`` → ``"a\\\\x1b[2K"``).
    Pure, total (any ``str``), idempotent on its own output; text without such
    characters is returned unchanged (the same object)."""
    if CONTROLS.search(text) is None:
        return text
    return CONTROLS.sub(_one, text)


def has_controls(text: str) -> bool:
    """True when ``text`` holds a character :func:`escape_controls` escapes."""
    return CONTROLS.search(text) is not None


#: Characters XML 1.0 forbids that ``CONTROLS`` leaves alone: lone surrogates
#: (a str decoded with ``surrogateescape``) and the noncharacters U+FFFE/U+FFFF.
XML_INVALID = re.compile("[\ud800-\udfff\ufffe\uffff]")


def escape_xml(text: str) -> str:
    """``escape_controls(text)`` that is also valid XML 1.0 character data
    (JUnit reports): the characters XML cannot hold become ``\\uXXXX`` too.
    The XML serializer still escapes ``<``, ``&`` and quotes."""
    text = escape_controls(text)
    if XML_INVALID.search(text) is None:
        return text
    return XML_INVALID.sub(_one, text)


def text_path(path: str) -> str:
    """``path`` as text that UTF-8 JSON, HTML and terminals accept: the bytes
    of a file name that are not UTF-8 (held as lone surrogates by Python, PEP
    383) become U+FFFD (``"n\\udcff.jsonl"`` → ``"n\\ufffd.jsonl"``); other
    paths come back unchanged."""
    try:
        return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:      # a surrogate that no file name decoding makes
        return path.encode("utf-8", "replace").decode("utf-8")


#: Text output quotes a run of more than ``WORD`` characters without a space
#: (a peer's 50 KB method name, id or session id) as its first ``WORD``
#: characters, ``…`` and its full length: ``"aaaa…(50,000 chars)"``.
WORD = 120
#: and cuts a piece of text that is still longer than ``LINE`` characters
#: (many short words) after its last whole word that fits: ``"… …(60,000 chars in all)"``.
LINE = 1000
_RUNS = re.compile("[^ ]+| +")
_LONG_RUN = re.compile(f"[^ ]{{{WORD + 1}}}")


def _head(text: str, limit: int) -> str:
    """The escaped form of ``text``'s first characters, at most ``limit``
    characters long, never ending inside an escape."""
    out: list[str] = []
    n = 0
    for c in text:
        m = CONTROLS.match(c)
        piece = _one(m) if m is not None else c
        if n + len(piece) > limit:
            break
        out.append(piece)
        n += len(piece)
    return "".join(out)


def shown(text: str, word: int = WORD, line: int = LINE) -> str:
    """``escape_controls(text)`` made fit for a line of human-readable output
    (show, check, diff, replay, report, record's live lines): each run of
    more than ``word`` characters without a space becomes its first ``word``
    characters (escaped) + ``"…(N chars)"`` (N: the run's length, in
    characters); if the result is still longer than ``line`` characters, it
    ends after the last whole run that fits, with ``"…(N chars in all)"``.
    So the result is at most ``line + 30`` characters (``word`` ≤ ``line``)
    and holds no control character. Machine formats (JSON, SARIF, JUnit)
    keep the exact values and do not use it. Pure, total; a short text
    without controls is returned unchanged (the same object)."""
    if len(text) <= word and CONTROLS.search(text) is None:
        return text
    if (len(text) <= line and word == WORD and _LONG_RUN.search(text) is None
            and CONTROLS.search(text) is None):
        return text         # the common finding message: one scan in C each
    out: list[str] = []
    n = 0
    for m in _RUNS.finditer(text):
        run = m.group()
        if run[0] != " " and len(run) > word:
            piece = f"{_head(run, word)}…({len(run):,} chars)"
        else:
            piece = escape_controls(run)
        if n + len(piece) > line:
            out.append(f"…({len(text):,} chars in all)")
            break
        out.append(piece)
        n += len(piece)
    return "".join(out)
