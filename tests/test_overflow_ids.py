"""Ids compared and exported as the peer wrote them: an id ``1e400`` (beyond any double) is
null in the record's ``id`` and ``json``; ``export -f messages`` wrote ``"id": null`` and dropped
``raw``, so it read as a peer's null id, and ``show -f '~id 1e400'`` matched nothing while
``~id null`` matched it. A lone surrogate string id (``"\\ud800"``) could not be matched by any
spelling; now its JSON text as views show it (``'"\\ud800"'``) matches it."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from mcptap.cli.main import mcptap
from scripted import c2s, handshake, record, s2c


@pytest.fixture
def cap(tmp_path: Path) -> Path:
    return record(tmp_path / "ids.jsonl", handshake() + [
        c2s(b'{"jsonrpc":"2.0","id":1e400,"method":"ping"}\n'), s2c(b'{"jsonrpc":"2.0","id":1e400,"result":{}}\n'),
        c2s(b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}\n'), s2c(b'{"jsonrpc":"2.0","id":"\\ud800","result":{}}\n'),
        c2s(b'{"jsonrpc":"2.0","id":null,"method":"ping"}\n'), ("exit", 0)])


def _seqs(cap: Path, flt: str) -> list[int]:
    r = CliRunner().invoke(mcptap, ["show", str(cap), "--format", "json", "-f", flt], catch_exceptions=False)
    return [rec["seq"] for rec in map(orjson.loads, r.stdout.splitlines()) if rec.get("type") == "message"]


def test_filters_match_an_id_by_its_json_text(cap: Path) -> None:
    ping = _seqs(cap, "~m ping")
    assert len(ping) == 5
    assert _seqs(cap, "~id 1e400") == ping[:2]
    assert _seqs(cap, '~id "\\ud800"') == ping[2:4]
    assert _seqs(cap, "~id null") == ping[4:]


def test_export_messages_tells_1e400_from_null(cap: Path) -> None:
    r = CliRunner().invoke(mcptap, ["export", str(cap), "-f", "messages"], catch_exceptions=False)
    lines = [json.loads(x) for x in r.stdout.splitlines()]   # lone surrogates as escapes: strict orjson refuses
    big = [x for x in lines if x.get("method") == "ping" or x.get("pair") in {y["seq"] for y in lines if y.get("method") == "ping"}]
    huge, null = big[:2], big[-1]
    for x in huge:
        assert x["id"] is None and x["id_text"] == "1e400" and "1e400" in x["raw"], x
    assert "id_text" not in null and "raw" not in null and null["json"]["id"] is None
