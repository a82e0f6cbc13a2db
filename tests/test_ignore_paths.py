"""``--ignore PATH`` syntax (compare/mask.py, docs/replay-diff.md): a path that is no path
(``bad[path``, ``a..b``, ``a[x]``) was taken apart as far as it went and then ignored the
wrong field or nothing, silently; now diff, replay and serve refuse it as a usage error that
names it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcptap.compare.mask import Masker, parse_ignore

ROOT = Path(__file__).resolve().parents[1]
CAPTURE = str(ROOT / "captures" / "clean-2025-06-18.jsonl")


@pytest.mark.parametrize(("text", "method", "segments"), [
    ("result.structuredContent.now", None, ("result", "structuredContent", "now")),
    ("tools/call:result.content[*].text", "tools/call", ("result", "content", "[*]", "text")),
    ("[0].x", None, ("[0]", "x")),
    ("result.items[03][1]", None, ("result", "items", "[3]", "[1]")),
    ("a.**.b", None, ("a", "**", "b")),
    (" params.arguments.text ", None, ("params", "arguments", "text")),
])
def test_good_paths(text: str, method: str | None, segments: tuple[str, ...]) -> None:
    p = parse_ignore(text)
    assert (p.method, p.segments) == (method, segments)


@pytest.mark.parametrize(("text", "why"), [
    ("bad[path", "'[' without ']'"),
    ("a]b", "']' without '['"),
    ("a[[0]]", "'[' inside [...]"),
    ("a..b", "empty key"), ("a.", "empty key"), (".a", "empty key"),
    ("a.[0]", "a[0], not a.[0]"),
    ("a[0]b", "needs a '.'"),
    ("a[x]", "[x] is no list index"), ("result.tools[name=echo]", "[name=echo] is no list index"), ("a[]", "[] is no list index"),
    (":result", "nothing before ':'"), ("tools/call:", "the path is empty"), ("", "the path is empty"), ("  ", "the path is empty"),
])
def test_bad_paths_are_named(text: str, why: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_ignore(text)
    assert f"bad ignore path {text!r}" in str(info.value) and why in str(info.value)


def test_a_leading_zero_index_masks_that_item() -> None:
    assert Masker(["result.a[01]"]).mask({"a": [1, 2, 3]}) == {"a": [1, "<masked>", 3]}


@pytest.mark.parametrize("argv", [
    ("diff", CAPTURE, CAPTURE, "--ignore", "result.ok", "--ignore", "bad[path"),
    ("replay", CAPTURE, "--ignore", "bad[path", "--", sys.executable, "-c", "pass"),
    ("serve", CAPTURE, "--listen", "127.0.0.1:0", "--ignore", "bad[path"),
])
def test_cli_refuses_a_bad_path(tmp_path: Path, argv: tuple[str, ...]) -> None:
    proc = subprocess.run([sys.executable, "-m", "mcptap.cli.main", *argv], cwd=tmp_path, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60, env={**os.environ, "MCPTAP_DIR": str(tmp_path)})
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    assert proc.stderr.startswith(f"mcptap: {argv[0]}: Invalid value for '--ignore': bad ignore path 'bad[path': '[' without ']'")
    assert len(proc.stderr.splitlines()) == 1 and list(tmp_path.iterdir()) == []
