"""A peer that dies while writing a message leaves the start of a JSON object
with no newline at the end of its stream: a message cut short, reported by
``framing.unterminated_line`` (saying so), not also as stray non-MCP output
(``framing.non_jsonrpc_line``, "server MUST NOT write non-MCP output to
stdout"), which it was. Stray text left unterminated keeps both. As recorded
live and as `check` re-annotates it from the bytes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mcptap.capture.reader import read_capture
from mcptap.reannotate import reannotate
from scripted import c2s, handshake, record, req, res, s2c

INIT = res(1, {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}})


def _last_findings(path: Path, direction: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The findings of the last message in ``direction``: as recorded, as re-annotated."""
    cap = read_capture(str(path))
    live = [r for r in cap.records if r["type"] == "message" and r["dir"] == direction][-1]
    again = [r for r in reannotate(cap.header, cap.records) if r.get("type") == "message" and r["dir"] == direction][-1]
    return live.get("findings", []), again.get("findings", [])


@pytest.mark.parametrize("cut", [INIT[:30], INIT[:-3], b'[{"jsonrpc":"2.0","id":1,'])
def test_a_message_cut_by_the_servers_death_is_no_stray_output(tmp_path: Path, cut: bytes) -> None:
    path = record(tmp_path / "c.jsonl", [c2s(req(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                                                   "clientInfo": {"name": "t", "version": "1"}})),
                                         s2c(cut), ("eof", "s2c"), ("exit", 3)])
    for found in _last_findings(path, "s2c"):
        codes = [f["code"] for f in found]
        assert "framing.non_jsonrpc_line" not in codes, found
        assert codes.count("framing.unterminated_line") == 1, found
        text = next(f["message"] for f in found if f["code"] == "framing.unterminated_line")
        assert "middle of a JSON message" in text and f"{len(cut)} bytes" in text


def test_a_request_cut_by_the_hosts_death_too(tmp_path: Path) -> None:
    path = record(tmp_path / "c.jsonl", handshake() + [c2s(req(2, "tools/list")[:20]), ("eof", "c2s")])
    for found in _last_findings(path, "c2s"):
        assert [f["code"] for f in found] == ["framing.unterminated_line"], found


@pytest.mark.parametrize("stray", [b"server stopping", b'{"a":1}}', b"[1, 2] and more"])
def test_stray_text_left_unterminated_is_still_stray_output(tmp_path: Path, stray: bytes) -> None:
    path = record(tmp_path / "c.jsonl", handshake() + [s2c(stray), ("eof", "s2c")])
    for found in _last_findings(path, "s2c"):
        codes = [f["code"] for f in found]
        assert "framing.non_jsonrpc_line" in codes and "framing.unterminated_line" in codes, found
        assert "after the last newline" in next(f["message"] for f in found if f["code"] == "framing.unterminated_line")
