"""Terminal escapes (issue 9 item 4; reproducer ../shared/repro/terminal-escapes.sh).

Peer-controlled text (method and tool names, error messages, stderr, ids,
findings quoting them) must never reach a human-readable output raw: one pure
function, mcptap.escape.escape_controls, is used by every renderer (show,
check, diff, replay reports, error lines quoting peer text).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcptap.escape import CONTROLS, escape_controls, escape_os
from mcptap.protocol.jsonrpc import show_id
from tests.scripted import c2s, err, handshake, note, record, req, res, s2c

MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]
REPRO = "terminal-escapes.sh"

#: what a hostile peer puts in its strings: cursor up, erase line, CR, C1 CSI, bidi override, BEL, NUL
EVIL = "\x1b[1A\x1b[2K\r\x9b2J\u202e\x07\x00\u2028"
# every control the output may legitimately hold: the newline between lines (colour is off)
RAW_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def test_escapes_named_and_numbered() -> None:
    assert escape_controls("a\x1b[2K\rb\tc\n") == "a\\x1b[2K\\rb\\tc\\n"
    assert escape_controls("\x9b\x7f\x00") == "\\x9b\\x7f\\x00"
    assert escape_controls("abc\u202eevil") == "abc\\u202eevil"
    plain = "tools/call — é 😀 ✖"
    assert escape_controls(plain) is plain


def test_lone_surrogates_are_escaped() -> None:
    """A lone surrogate in peer text is shown by its code point, as JSON and
    ``id_text`` write it; in a file name (``escape_os``) U+DC80-U+DCFF is the
    byte that is not UTF-8 (surrogateescape): no terminal encoding can write
    either (UTF-8 refuses them, Python's stderr printed ``\\udcff``)."""
    name = os.fsdecode(b"n\xff\xfe\x1b[31m.jsonl")
    assert escape_os(name) == "n\\xff\\xfe\\x1b[31m.jsonl"
    assert escape_os(name).encode("utf-8") == b"n\\xff\\xfe\\x1b[31m.jsonl"
    assert escape_controls("a\ud800b\udfff\udc80") == "a\\ud800b\\udfff\\udc80"
    assert escape_os("a\ud800b\udfff") == "a\\ud800b\\udfff"


def test_a_raw_byte_and_a_lone_surrogate_never_look_alike() -> None:
    """One rule: in peer text ``\\x`` is a character below U+0100 and ``\\u`` any
    other, a lone surrogate too (as ``id_text``); in OS text ``\\x`` is one byte of
    the name and ``\\u`` a character. So a peer's JSON ``"\\udc80"``, a file name's
    byte 0x80, a file name's U+0080 and a peer's U+0080 are four texts."""
    peer_lone = escape_controls("\udc80")
    assert peer_lone == show_id("\udc80").strip('"') == "\\udc80"
    raw_byte = escape_os(os.fsdecode(b"\x80"))
    name_c1 = escape_os(os.fsdecode("\x80".encode()))
    peer_c1 = escape_controls("\x80")
    assert (raw_byte, name_c1, peer_c1) == ("\\x80", "\\u0080", "\\x80")
    assert len({peer_lone, raw_byte, name_c1}) == 3 and peer_lone != peer_c1


@given(st.binary(max_size=12), st.binary(max_size=12))
def test_escape_os_tells_file_names_apart(a: bytes, b: bytes) -> None:
    """Two file names (bytes) that differ are shown differently (a backslash is
    shown as itself: a name that spells an escape out is the known exception)."""
    if a != b and b"\\" not in a + b:
        assert escape_os(os.fsdecode(a)) != escape_os(os.fsdecode(b))


@given(st.text())
def test_escape_os_is_safe_and_stable(text: str) -> None:
    out = escape_os(text)
    assert CONTROLS.search(out) is None and escape_os(out) == out


@given(st.text())
def test_escaped_text_has_no_controls_and_is_stable(text: str) -> None:
    out = escape_controls(text)
    assert CONTROLS.search(out) is None
    out.encode("utf-8")             # (strict: no lone surrogate left)
    assert escape_controls(out) == out
    if CONTROLS.search(text) is None:
        assert out == text


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    tool = f"rm_rf{EVIL}safe_tool"
    steps = [
        *handshake(),
        c2s(req(2, "tools/list")),
        s2c(res(2, {"tools": [{"name": tool, "description": EVIL, "inputSchema": {"type": "object"}}]})),
        c2s(req(3, "tools/call", {"name": tool, "arguments": {"x": EVIL}})),
        s2c(err(3, -32000, f"boom{EVIL}")),
        c2s(req(f"id{EVIL}", f"x{EVIL}ok")),
        s2c(note("notifications/message", {"level": "info", "data": EVIL})),
        s2c(f"not json {EVIL}\n".encode()),
        ("err", f"stderr {EVIL}\n".encode()),
        c2s(req(5, "tools/call", {"name": tool})),
        ("eof", "c2s"),
        ("exit", 3),
    ]
    return record(tmp_path / f"evil{EVIL[:4]}.jsonl".replace("\x1b", "E").replace("\r", "R"), steps)


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, NO_COLOR="1")
    return subprocess.run([*MCPTAP, *args], capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.parametrize("args", [("show",), ("show", "--format", "mermaid"), ("show", "--oneline"), ("check",),
                                  ("check", "--places", "20")])
def test_show_and_check_never_print_peer_controls(hostile: Path, args: tuple[str, ...]) -> None:
    p = _run(*args, str(hostile))
    assert p.returncode in (0, 1), p.stderr
    assert "rm_rf" in p.stdout or "x\\x1b" in p.stdout
    assert RAW_CONTROL.search(p.stdout) is None, p.stdout
    assert RAW_CONTROL.search(p.stderr) is None
    assert "\\x1b[1A" in p.stdout


def test_diff_never_prints_peer_controls(hostile: Path, tmp_path: Path) -> None:
    other = record(tmp_path / "other.jsonl", [*handshake(), c2s(req(2, "tools/list")), s2c(res(2, {"tools": []}))])
    p = _run("diff", str(hostile), str(other))
    assert p.returncode == 1, p.stderr
    assert "rm_rf\\x1b[1A" in p.stdout
    assert RAW_CONTROL.search(p.stdout) is None, p.stdout


def test_replay_report_lines_escape_peer_text() -> None:
    from mcptap.cli.replay import _line
    from mcptap.compare.verdict import CHANGED
    from mcptap.replay.compare import ExchangeResult

    fields = {f: None for f in ExchangeResult.__dataclass_fields__}
    fields.update(seq=3, label=f"tools/call rm_rf{EVIL}", status=CHANGED, note=f"server said {EVIL}")
    line = _line(ExchangeResult(**fields))
    assert RAW_CONTROL.search(line) is None and "rm_rf\\x1b[1A" in line


def test_error_lines_quoting_peer_text_are_escaped(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"type":"header","format":"mcptap-capture","version":1}\n{"type":"message\x1b[2K","seq":1}\nxx\x1b[2K\n{}\n')
    for path in (bad, tmp_path / f"gone{EVIL[:-2]}.jsonl"):
        for cmd in ("check", "show"):
            p = _run(cmd, str(path))
            assert p.returncode == 2
            assert "mcptap:" in p.stderr and RAW_CONTROL.search(p.stderr) is None, p.stderr
            assert RAW_CONTROL.search(p.stdout) is None, p.stdout


def test_the_table_is_the_unicode_categories() -> None:
    """``escape``'s table holds exactly the code points of Cc, Cf, Cs, Co, Cn,
    Zl and Zp of its Unicode version; under a newer Python's Unicode every
    character of those categories is still escaped (a newly assigned format
    character was unassigned before)."""
    import unicodedata

    from mcptap import escape

    bad = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
    everything = "".join(map(chr, range(0x110000)))
    want = {i for i, c in enumerate(everything) if unicodedata.category(c) in bad}
    for tok in escape.INVISIBLE.split():
        a, _, b = tok.partition("-")
        want |= set(range(int(a, 16), int(b or a, 16) + 1))
    got = {m.start() for m in escape.CONTROLS.finditer(everything)}
    fast = {i for i in (m.start() for m in escape._FAST.finditer(everything)) if escape.is_control(everything[i])}
    assert got == fast
    if unicodedata.unidata_version == escape.UNICODE_VERSION:
        assert got == want, "regenerate the table: python scripts/escape_table.py"
    else:
        assert want <= got


def test_letters_that_draw_nothing_are_escaped() -> None:
    """A name of Hangul fillers or a braille blank looks empty, and variation
    selectors after a letter hide a message in a tool description: each is
    escaped; an emoji keeps its presentation selector, real letters stay."""
    from mcptap.escape import escape_controls, has_controls

    assert escape_controls("\u3164\u3164x") == "\\u3164\\u3164x"
    assert escape_controls("a\u2800b\uffa0\u115f\u1160\u034f") == "a\\u2800b\\uffa0\\u115f\\u1160\\u034f"
    hidden = "read_file" + "".join(chr(0xE0100 + b) for b in b"ignore previous") + "\ufe01"
    shown = escape_controls(hidden)
    assert shown.startswith("read_file\\U000e0169") and shown.endswith("\\ufe01") and has_controls(hidden)
    for kept in ("\u2764\ufe0f", "\u263a\ufe0e", "\ud55c\uad6d\uc5b4", "\u3131", "caf\u00e9"):
        assert escape_controls(kept) == kept and not has_controls(kept)


def test_escape_name_keeps_a_names_bytes_and_backslashes_apart() -> None:
    from mcptap.escape import escape_name

    byte, literal, both = "n\udcff.jsonl", "n\\xff.jsonl", "a\\\\xff\udcfe\x1b"
    assert escape_name("plain/c.jsonl") == "plain/c.jsonl" and escape_name("C:\\a\\b") == "C:\\a\\b"
    assert escape_name(byte) == "n\\xff.jsonl" and escape_name(literal) == "n\\\\xff.jsonl"
    assert escape_name(both) == "a\\\\\\\\xff\\xfe\\x1b"
    for name in (byte, literal, both):
        escape_name(name).encode("utf-8")       # strict: no lone surrogate left


def test_unrepr_bytes_gives_the_escaped_bytes_without_the_repr() -> None:
    from mcptap.escape import unrepr_bytes

    assert unrepr_bytes("illegal request line: bytearray(b'POST /mcp\\x1b]0;T\\x07 HTTP/1.1')") == \
        "illegal request line: POST /mcp\\x1b]0;T\\x07 HTTP/1.1"
    assert unrepr_bytes("illegal status line: b'HTTP/1.1 2\\xff\\xc3\\xa9'") == "illegal status line: HTTP/1.1 2\\xffé"
    assert unrepr_bytes("x: bytearray(b\"it's\")") == "x: it's"
    text = "bad Content-Length"
    assert unrepr_bytes(text) is text
    assert unrepr_bytes("a b'unclosed") == "a b'unclosed"


def test_escape_name_tells_every_name_from_every_other() -> None:
    # a backslash before a character escape_os escapes was not doubled: "\\" + LF and the literal
    # name "\\n", "\\" + byte 0xff and the literal "\\xff" showed alike (found by a breaker helper)
    from itertools import product

    from mcptap.escape import escape_name

    alphabet = ["\\", "x", "f", "n", "u", "0", "\n", "\t", "\x1b", "\udcff", "\u009b", "a"]
    seen: dict[str, str] = {}
    for size in range(1, 5):
        for chars in product(alphabet, repeat=size):
            name = "".join(chars)
            shown = escape_name(name)
            assert seen.setdefault(shown, name) == name, (name, seen[shown], shown)
            shown.encode("utf-8")
