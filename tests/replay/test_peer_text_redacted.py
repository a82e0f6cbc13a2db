"""What replay quotes of the live server in its own words (an HTTP error body's start,
an exception quoting the bytes it could not read, a failed handshake's error message)
goes through the redaction the rest of replay uses, with control characters escaped:
the quote reached the terminal, the JSON report and the new capture with the token in
clear. Raw servers here: no SDK server puts a secret in an error body on demand."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcptap.redact.argv import placeholder
from replay.capgen import Tape
from replay.raw_http import replay_raw, response
from replay.test_plan import handshake
from scripted import c2s, record, req, res, s2c
from scripted import handshake as scripted_handshake

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "ghp_" + "a1B2c3D4e5" * 3 + "x9Y8z7"          # a GitHub token's shape: a built-in rule
ESC = "\x1b[2K\x1b[1A"                                  # erase the line, cursor up


def _capture(tmp_path: Path) -> str:
    path = str(tmp_path / "c.jsonl")
    t = Tape(path)
    handshake(t)
    t.close()
    return path


def _clean(text: str) -> None:
    assert TOKEN not in text and "\x1b" not in text, text
    assert placeholder(TOKEN) in text and "\\x1b[2K" in text, text


@pytest.mark.parametrize("answer", [
    # (the controls raw, as a careless server writes them: JSON would escape them)
    response(401, "application/json", f'{{"error":"invalid_token","error_description":"token {TOKEN} revoked{ESC}"}}'.encode()),
    response(500, "text/plain", f"Traceback (most recent call last):\n  headers: Authorization: Bearer {TOKEN}{ESC}\n".encode()),
    # h11 quotes the status line it cannot read: "illegal status line: bytearray(b'…')"
    f"HTTP/1.1 2x0 {TOKEN} {ESC}\r\n\r\n".encode(),
])
async def test_a_quoted_http_answer_is_redacted_and_escaped(tmp_path: Path, answer: bytes) -> None:
    plan, result = await replay_raw(tmp_path, _capture(tmp_path), lambda method, body: answer)
    init = next(s for s in plan.steps if s.method == "initialize")
    message = result.live[init.index].response["error"]["message"]
    _clean(message)
    if not answer.startswith(b"HTTP/1.1 2x0"):
        return      # a body the new capture holds as ``record`` does (in clear, for a capture in clear)
    new = (tmp_path / "new.jsonl").read_text()
    assert TOKEN not in new and "illegal status line" in new, "the record's detail holds the token"


SERVER = """
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if "id" in m and "method" in m:
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32000,
              "message": "refused for " + sys.argv[2] + " and " + sys.argv[3] + " \\x1b[2K\\x1b[1A"}}), flush=True)
"""


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_failed_handshakes_note_is_redacted_as_the_answers_are(tmp_path: Path, fmt: str) -> None:
    """The note of the steps a failed initialize left unsent quotes its error: the token
    (a built-in rule) and the server's own --api-key (a secret of the command line, as in the
    answers) are placeholders in it, on the terminal and in the JSON report."""
    (tmp_path / "srv.py").write_text(SERVER)
    key = "MyApiKeyValue99"
    cap = record(tmp_path / "cap.jsonl", scripted_handshake() + [c2s(req(2, "tools/list")), s2c(res(2, {"tools": []})), ("exit", 0)])
    p = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "replay", str(cap), "--timeout", "30", "--format", fmt,
                        "-o", str(tmp_path / "new.jsonl"), "--", sys.executable, "srv.py", "--api-key", key, TOKEN],
                       capture_output=True, text=True, cwd=tmp_path, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 1, p.stderr
    assert "not sent: initialize failed" in p.stdout, p.stdout
    for out in (p.stdout, p.stderr):
        assert key not in out and TOKEN not in out and "\x1b" not in out, out
    note = p.stdout if fmt == "text" else next(e["note"] for e in json.loads(p.stdout)["exchanges"] if "not sent" in (e.get("note") or ""))
    assert placeholder(TOKEN) in note and placeholder(key) in note, note
