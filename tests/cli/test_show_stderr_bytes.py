"""``show`` counts a stderr record's stored bytes: a non-UTF-8 read (``data_b64``) was counted
after decoding with U+FFFD, 3 bytes each (1000 bytes of 0xff shown as 3001 B, summary
``stderr 3,001``, JSON ``"stderr": 3001``) while the end record and the report said 1001."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]


def test_show_counts_stored_stderr_bytes(tmp_path: Path) -> None:
    cap = tmp_path / "ff.jsonl"
    env = {**os.environ, "MCPTAP_DIR": str(tmp_path / "captures"), "NO_COLOR": "1"}
    server = [sys.executable, "-c", "import os; os.write(2, b'\\xff' * 1000 + b'\\n')"]
    subprocess.run([*MCPTAP, "record", "-q", "-o", str(cap), "--", *server], check=True, env=env, stdin=subprocess.DEVNULL,
                   capture_output=True, timeout=120)
    assert any(json.loads(line).get("data_b64") for line in cap.read_text().splitlines())
    text = subprocess.run([*MCPTAP, "show", str(cap)], capture_output=True, text=True, env=env, timeout=120).stdout
    assert "(1001 B)" in text and "stderr 1,001" in text, text
    out = subprocess.run([*MCPTAP, "show", "--format", "json", str(cap)], capture_output=True, text=True, env=env, timeout=120).stdout
    summary = json.loads(out.splitlines()[-1])
    assert summary["type"] == "summary" and summary["bytes"]["stderr"] == 1001


def test_show_escapes_bytes_that_are_not_utf8(tmp_path: Path) -> None:
    # a non-JSON stdout line's and stderr's 0xff read U+FFFD in the timeline and mermaid, while every
    # control byte beside them was escaped (\x1b): now \xff too; a peer's literal backslash text stays apart
    cap = tmp_path / "ff.jsonl"
    env = {**os.environ, "MCPTAP_DIR": str(tmp_path / "captures"), "NO_COLOR": "1"}
    server = [sys.executable, "-c", "import os; os.write(1, b'not json \\xff\\xfe x\\nlit \\\\udcff \\xfe\\n'); "
                                    "os.write(2, b'\\x1b[5m\\xffblink\\n')"]
    subprocess.run([*MCPTAP, "record", "-q", "-o", str(cap), "--", *server], check=True, env=env, stdin=subprocess.DEVNULL,
                   capture_output=True, timeout=120)
    for fmt in ("text", "mermaid"):
        out = subprocess.run([*MCPTAP, "show", "--format", fmt, str(cap)], capture_output=True, text=True, env=env, timeout=120).stdout
        assert "\ufffd" not in out, out
        assert "'not json \\xff\\xfe x'" in out and "'lit \\\\udcff \\xfe'" in out, out
        if fmt == "text":
            assert "'\\x1b[5m\\xffblink'" in out, out
