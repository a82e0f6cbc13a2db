"""``diff`` of two captures scrubbed with different redaction keys: the same secret has a
different placeholder on each side, so placeholders are compared by kind (any one equals
any other), and the report says so (text and JSON): a secret that changed cannot be told.
With one key, placeholders are compared as they are (a changed secret is a change)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from replay.capgen import Ex, write_capture

MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]
SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
OTHER = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
K1, K2 = "ab" * 32, "cd" * 32


def _source(path: Path, secret: str, n: int = 1) -> Path:
    write_capture(str(path), [Ex("tools/call", {"name": "login", "arguments": {"token": secret}},
                                 {"content": [{"type": "text", "text": f"token {secret} ok"}], "isError": False}),
                              Ex("tools/call", {"name": "count"}, {"content": [{"type": "text", "text": str(n)}], "isError": False})])
    return path


def _scrub(src: Path, out: Path, key: str) -> Path:
    subprocess.run([*MCPTAP, "scrub", str(src), "-o", str(out)], check=True, capture_output=True, timeout=60,
                   env={**os.environ, "MCPTAP_REDACT_KEY": key})
    return out


def _diff(a: Path, b: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MCPTAP, "diff", str(a), str(b), "--no-color", *extra], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "MCPTAP_REDACT_KEY": K1})


def test_placeholders_of_two_keys_compare_by_kind(tmp_path: Path) -> None:
    src = _source(tmp_path / "src.jsonl", SECRET)
    a, b = _scrub(src, tmp_path / "a.jsonl", K1), _scrub(src, tmp_path / "b.jsonl", K2)
    assert SECRET not in a.read_text() and a.read_text() != b.read_text()
    done = _diff(a, b)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no differences" in done.stdout
    assert "scrubbed with different redaction keys" in done.stdout and "compared by kind" in done.stdout
    report = json.loads(_diff(a, b, "--format", "json").stdout)
    assert report["different"] is False and any("different redaction keys" in n for n in report["notes"])
    # what is not a secret still counts, and no secret is printed
    c = _scrub(_source(tmp_path / "src2.jsonl", OTHER, n=2), tmp_path / "c.jsonl", K2)
    done = _diff(a, c)
    assert done.returncode == 1 and "result.content[0].text" in done.stdout and "count" in done.stdout
    assert "tools/call login" not in done.stdout                  # a changed secret cannot be told apart
    assert SECRET not in done.stdout + done.stderr and OTHER not in done.stdout + done.stderr


def test_with_one_key_placeholders_compare_as_they_are(tmp_path: Path) -> None:
    a = _scrub(_source(tmp_path / "src.jsonl", SECRET), tmp_path / "a.jsonl", K1)
    b = _scrub(_source(tmp_path / "src2.jsonl", OTHER), tmp_path / "b.jsonl", K1)
    done = _diff(a, b)
    assert done.returncode == 1 and "tools/call login" in done.stdout       # the secret changed
    assert "different redaction keys" not in done.stdout
    assert _diff(a, a).returncode == 0


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_no_note_for_captures_in_clear(tmp_path: Path, fmt: str) -> None:
    src = _source(tmp_path / "src.jsonl", SECRET)
    done = _diff(src, src, "--format", fmt)
    assert done.returncode == 0 and "redaction keys" not in done.stdout
