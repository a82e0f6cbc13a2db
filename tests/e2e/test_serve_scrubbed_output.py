"""``mcptap serve -o`` of a scrubbed capture (cli/serve_scrub.py): the mock's own capture
once held the live client's secrets in clear, beside a capture that says it holds none
(``--extend``'s merged session was scrubbed, its ``-o`` twin was not). It is now scrubbed
with the capture's passes and this user's key, over stdio and HTTP; without that key serve
refuses before writing anything, unless ``--unscrubbed-output``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_serve_extend import ECHO_NEW, INIT, MCPTAP, SECRET, SERVER, _check, _line, synthesized

pytestmark = pytest.mark.e2e
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


@pytest.fixture
def scrubbed(tmp_path: Path) -> Path:
    src = tmp_path / "src.jsonl"
    synthesized(src)
    cap = tmp_path / "cap.jsonl"
    subprocess.run([*MCPTAP, "scrub", str(src), "-o", str(cap)], check=True, capture_output=True, timeout=60)
    return cap


def _serve(capture: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*MCPTAP, "serve", str(capture), *extra], input=b"".join(_line(m) for m in (INIT, INITIALIZED, ECHO_NEW)),
                          capture_output=True, timeout=60, env={**os.environ, **(env or {})})


def listening_mock(args: list[str], err: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``mcptap serve ARGS --listen 127.0.0.1:0`` started, and the URL it says it serves on;
    its stderr goes to ``err``, a file, not a pipe: the mock says things no one reads meanwhile."""
    with err.open("wb") as fd:
        p = subprocess.Popen([*MCPTAP, "serve", *args, "--listen", "127.0.0.1:0"], stderr=fd, env=os.environ.copy())
    while " on http" not in (line := err.read_text().partition("\n")[0]):
        assert p.poll() is None, err.read_text()
        time.sleep(0.05)
    return p, line.rsplit(" on ", 1)[1].strip()


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_bytes().splitlines()]


def _scrubbed_like(out: Path, capture: Path) -> None:
    data = out.read_bytes()
    assert SECRET.encode() not in data and b"redacted" in data
    assert _records(out)[0]["scrubbed"] == _records(capture)[0]["scrubbed"]
    calls = [r for r in _records(out) if r["type"] == "message" and r.get("method") == "tools/call"]
    assert calls and all(SECRET not in json.dumps(r) for r in calls)
    assert "digest_mismatch" not in _check(out)


def test_stdio_o_is_scrubbed_as_the_capture_was(scrubbed: Path, tmp_path: Path) -> None:
    out = tmp_path / "mock.jsonl"
    done = _serve(scrubbed, "-q", "-o", str(out))
    assert done.returncode == 0, done.stderr
    _scrubbed_like(out, scrubbed)


def test_without_the_key_serve_o_refuses_unless_asked(scrubbed: Path, tmp_path: Path) -> None:
    out = tmp_path / "mock.jsonl"
    other = {"MCPTAP_REDACT_KEY": "ab" * 32}
    refused = _serve(scrubbed, "-o", str(out), env=other)
    assert refused.returncode == 2 and refused.stdout == b"" and not out.exists()
    assert b"another redaction key" in refused.stderr and b"--unscrubbed-output" in refused.stderr
    done = _serve(scrubbed, "-q", "-o", str(out), "--unscrubbed-output", env=other)
    assert done.returncode == 0, done.stderr
    assert b"another redaction key" in done.stderr and SECRET.encode() in out.read_bytes()   # asked for in clear
    assert _serve(scrubbed, "-q", env=other).returncode == 0       # no -o: nothing to refuse


def test_extend_o_twin_is_scrubbed_and_equals_the_merged_session(scrubbed: Path, tmp_path: Path) -> None:
    out = tmp_path / "mock.jsonl"
    done = _serve(scrubbed, "-q", "-o", str(out), "--extend", "--", *SERVER)
    assert done.returncode == 0, done.stderr
    assert SECRET.encode() in done.stdout                           # the real server answered the client
    _scrubbed_like(out, scrubbed)
    merged = scrubbed.read_bytes()
    assert SECRET.encode() not in merged
    # scrubbing is idempotent: the merge of the scrubbed twin holds the same placeholders
    # (the forwarded call and its answer; the twin also holds the recorded notifications the mock replayed)
    twin = [r["json"] for r in _records(out) if r["type"] == "message" and r.get("json", {}).get("id") == 3]
    episode = [r["json"] for r in _records(scrubbed) if r["type"] == "message" and r.get("session") == "episode-2"
               and r.get("json", {}).get("id") == 3]
    assert twin == episode and len(twin) == 2 and "«redacted:hmac:" in json.dumps(twin, ensure_ascii=False)


def test_http_o_is_scrubbed_as_the_capture_was(scrubbed: Path, tmp_path: Path) -> None:
    out = tmp_path / "mock.jsonl"
    p, url = listening_mock([str(scrubbed), "-q", "-o", str(out)], tmp_path / "err.txt")
    try:
        for m in (INIT, INITIALIZED, ECHO_NEW):
            req = urllib.request.Request(url, data=_line(m), method="POST", headers={
                "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": "2025-11-25"})
            try:
                urllib.request.urlopen(req, timeout=30).read()
            except urllib.error.HTTPError:
                pass                            # the new call has no recorded answer: still recorded
    finally:
        p.send_signal(signal.SIGTERM)       # (SIGINT may be ignored where a shell started the tests in the background)
        p.wait(timeout=60)
    assert p.returncode == 0
    _scrubbed_like(out, scrubbed)
