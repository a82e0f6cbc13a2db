"""``check`` quotes a method with a lone surrogate (``"tools/x\\ud800"`` as a JSON escape) as the peer
sent it in every format, never as the U+FFFD analysis reads it as: text and JUnit escaped
(``tools/x\\ud800``, escape.py) and so in every format's finding messages (JSON stays strict JSON);
a place's method in the same escape form in JSON and SARIF's properties (strict JSON: no lone
surrogate escape). A peer's real U+FFFD stays U+FFFD."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import orjson
from click.testing import CliRunner

from mcptap.cli.main import mcptap
from scripted import c2s, handshake, record
from test_lone_surrogate_views import _cap, _line

UNKNOWN = "tools/x\ud800 is not a method of any MCP revision (vendor or extension method?)"
UNANSWERED = 'request #5 tools/x\ud800 id="p\\udfff" from the client was never answered'
PENDING = "server exited with status 0 while 1 request(s) were pending (#5 tools/x\ud800)"


def check(cap: Path, *args: str) -> str:
    res = CliRunner().invoke(mcptap, ["check", str(cap), "--fail-on", "never", *args], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return res.output


def _escaped(text: str) -> str:
    return text.replace("\ud800", "\\ud800")


def test_text_quotes_the_exact_method_escaped(tmp_path: Path) -> None:
    out = check(_cap(tmp_path))
    assert "\ufffd" not in out, out
    for m in (UNKNOWN, UNANSWERED, PENDING):
        assert _escaped(m) in out


def test_json_gives_messages_and_the_method_escaped_strict(tmp_path: Path) -> None:
    out = check(_cap(tmp_path), "--format", "json")
    assert "\ufffd" not in out
    orjson.loads(out)       # strict JSON: no lone surrogate escape
    places = [p for c in json.loads(out)["captures"] for g in c["codes"] for p in g["first"]]
    assert {p["message"] for p in places} >= {_escaped(m) for m in (UNKNOWN, UNANSWERED, PENDING)}
    assert {p.get("method") for p in places if "tools/x" in p["message"]} - {None} == {"tools/x\\ud800"}     # escape form


def test_sarif_escapes_rendered_texts_and_properties_strict(tmp_path: Path) -> None:
    out = check(_cap(tmp_path), "--format", "sarif")
    assert "\ufffd" not in out
    orjson.loads(out)       # strict JSON: SARIF uploads refuse a lone surrogate
    results = json.loads(out)["runs"][0]["results"]
    texts = {r["message"]["text"] for r in results}
    assert {_escaped(m) for m in (UNKNOWN, UNANSWERED, PENDING)} <= texts
    unknown = next(r for r in results if r["ruleId"] == "capability.unknown_method")
    assert unknown["properties"]["method"] == "tools/x\\ud800"
    assert unknown["locations"][0]["logicalLocations"][0]["fullyQualifiedName"] == "tools/x\\ud800#5"


def test_junit_is_valid_xml_with_the_exact_method_escaped(tmp_path: Path) -> None:
    out = check(_cap(tmp_path), "--format", "junit")
    assert "\ufffd" not in out
    text = "".join(ET.fromstring(out.split("\n", 1)[1]).itertext())
    for m in (UNKNOWN, UNANSWERED, PENDING):
        assert _escaped(m) in text


def _real_fffd(tmp_path: Path) -> Path:
    msgs: list[Any] = [c2s(_line({"jsonrpc": "2.0", "id": 5, "method": "tools/x\ufffd"})), ("exit", 0)]
    return record(tmp_path / "fffd.jsonl", handshake() + msgs)


def test_a_peers_own_replacement_character_stays(tmp_path: Path) -> None:
    cap = _real_fffd(tmp_path)
    assert "tools/x\ufffd is not a method" in check(cap)
    places = [p for c in json.loads(check(cap, "--format", "json"))["captures"] for g in c["codes"] for p in g["first"]]
    assert "tools/x\ufffd is not a method of any MCP revision (vendor or extension method?)" in {p["message"] for p in places}


def test_a_file_names_byte_and_a_peers_lone_surrogate_look_different(tmp_path: Path) -> None:
    """U+DC80 is a file name's byte 0x80 (surrogateescape) or a peer's JSON ``"\\udc80"``:
    the name shows the byte (``\\x80``), the peer's text the code point, as ``id_text``."""
    cap = record(tmp_path / "c.jsonl", handshake() + [c2s(_line({"jsonrpc": "2.0", "id": 5, "method": "x\udc80"})), ("exit", 0)])
    odd = tmp_path / os.fsdecode(b"n\x80.jsonl")
    cap.rename(odd)
    out = check(odd)
    assert "n\\x80.jsonl: " in out and "x\\udc80 is not a method" in out
    assert "\\udc80.jsonl" not in out and "x\\x80 " not in out
    text = CliRunner().invoke(mcptap, ["show", str(odd), "--no-color"], catch_exceptions=False).output
    assert "n\\x80.jsonl" in text.splitlines()[0] and "x\\udc80" in text and "x\\x80" not in text
