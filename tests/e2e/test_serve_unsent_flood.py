"""``serve --listen``: a recorded server message that belongs to no open client request and
finds no GET stream is said on stderr, so a client waiting for it is not left to wonder. A
recorded flood of log notifications was a line each (1,000 identical lines from a capture
with 1,000 logs; a stderr pipe nobody read stopped the mock). Now the first of each method in
a session is said, and the rest once at the end, counted; the -o capture keeps a note each."""

from __future__ import annotations

import json
import re
import signal
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.e2e.test_serve_extend import INIT, _line, synthesized
from tests.e2e.test_serve_scrubbed_output import listening_mock

pytestmark = pytest.mark.e2e


def _post(url: str, message: dict) -> None:
    req = urllib.request.Request(url, data=_line(message), method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"})
    try:
        urllib.request.urlopen(req, timeout=30).read()
    except urllib.error.HTTPError:
        pass


def test_a_flood_of_unsent_notifications_is_said_once_and_counted(tmp_path: Path) -> None:
    cap, out, err = tmp_path / "cap.jsonl", tmp_path / "mock.jsonl", tmp_path / "err.txt"
    synthesized(cap)                # its server wrote 1,000 notifications/message after initialized
    p, url = listening_mock([str(cap), "-q", "-o", str(out)], err)
    try:
        _post(url, INIT)
        _post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _post(url, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=60)
    assert p.returncode == 0
    said = err.read_text()
    assert said.count("notification notifications/message has no open client request") == 1, said[:2000]
    notes = [r for r in map(json.loads, out.read_bytes().splitlines()) if r["type"] == "note" and r.get("unsent") == "notifications/message"]
    m = re.search(r"(\d+) more notification\(s\) did not reach the client.*notifications/message ×(\d+)", said)
    assert m is not None and int(m[1]) == int(m[2]) == len(notes) - 1 and len(notes) > 100, said
    assert len(said.splitlines()) <= 3
