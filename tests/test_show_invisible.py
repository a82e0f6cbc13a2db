"""Text ``show`` never prints a peer's invisible or reordering characters raw:
not only C0/C1 controls but every character of the Unicode categories Cc,
Cf (bidi and zero-width format characters, BOM, tag characters), Cs, Co
(private use) and Cn (unassigned, and the noncharacters U+FFFE/U+FFFF),
plus the line/paragraph separators. The only such characters in its output
are the ones it emits itself: the newline between lines and, with colour
on, its own ANSI SGR sequences."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import orjson
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcptap.cli.show import command as show_command
from mcptap.escape import escape_controls
from scripted import c2s, err, handshake, note, record, req, res, s2c

BAD = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
SGR = re.compile("\x1b\\[[0-9;]*m")
#: characters a peer may hide things with, beyond C0/C1: noncharacters, bidi and zero-width
#: format characters, BOM, soft hyphen, tag characters, private use, unassigned, separators
SPECIAL = ["\ufffe", "\uffff", "\U0001fffe", "\u200b", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u061c", "\u202e", "\u2067",
           "\U000e0001", "\U000e0041", "\ue000", "\U000f0000", "\u0378", "\U0003fffd", "\u2028", "\u2029", "\x1b", "\x9b", "\r"]
# no lone surrogates: UTF-8 cannot carry one (an escaped one is read as U+FFFD: tests/protocol/test_lone_surrogate.py)
PEER = st.lists(st.one_of(st.sampled_from(SPECIAL), st.characters(exclude_categories=("Cs",))), min_size=1, max_size=12).map("".join)


def _bad_chars(text: str) -> list[str]:
    return [c for c in text if unicodedata.category(c) in BAD]


def _capture(path: Path, s: str) -> Path:
    tool = f"tool{s}"
    steps = [
        *handshake(),
        c2s(req(2, "tools/list")),
        s2c(res(2, {"tools": [{"name": tool, "description": s, "inputSchema": {"type": "object"}}]})),
        c2s(req(3, "tools/call", {"name": tool, "arguments": {"x": s}})),
        s2c(err(3, -32000, f"boom{s}")),
        c2s(req(f"id{s}", f"m{s}")),
        s2c(note("notifications/message", {"level": "info", "data": s})),
        s2c(orjson.dumps({"jsonrpc": "2.0", "method": f"notifications/{s}"}) + b"\n"),
        s2c(f"not json {s}\n".encode()),
        ("err", f"stderr {s}\n".encode()),
        c2s(req(5, "tools/call", {"name": tool})),
        ("eof", "c2s"),
        ("exit", 3),
    ]
    return record(path, steps)


def _lines(path: Path, *args: str) -> list[str]:
    res = CliRunner().invoke(show_command, [str(path), *args], catch_exceptions=False, color=True)
    assert res.exit_code == 0, res.output
    return res.output.split("\n")


def test_noncharacters_and_format_characters_are_escaped() -> None:
    assert escape_controls("a\ufffeb\uffff") == "a\\ufffeb\\uffff"
    assert escape_controls("x\u200by\ufeffz\U000e0001") == "x\\u200by\\ufeffz\\U000e0001"
    assert escape_controls("\ue000\U000f0000\u0378") == "\\ue000\\U000f0000\\u0378"
    kept = "é 😀 日本 \u00a0 \u0301"               # letters, emoji, a no-break space, a combining accent
    assert escape_controls(kept) is kept


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(PEER)
def test_show_prints_no_invisible_character_of_a_peer(tmp_path: Path, s: str) -> None:
    path = _capture(tmp_path / "c.jsonl", s)
    for args in ((), ("--oneline",), ("--color",), ("--format", "mermaid")):
        for line in _lines(path, *args):
            own = SGR.sub("", line) if "--color" in args else line
            assert not _bad_chars(own), (args, [f"U+{ord(c):04X}" for c in _bad_chars(own)], line)
