"""Hand-edited captures with a field of the wrong type are refused by every
command with one ``mcptap: FILE:LINE: corrupt … record: …`` line and exit
status 2: never the generic "internal error", never a different answer from
the fast `check` path than from `show`. Before: an end record's
``s2c.bytes`` as text, ``pending`` as an object, a header ``target`` string, an
HTTP record's ``status``/``exchange`` as text or a message ``transport`` string
reached an AttributeError/ValueError deep in show, check or export; the fast
`check` accepted ``rev``/``transport`` of the wrong type that `show` refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcptap.protocol.fingerprint import rules_fingerprint
from scripted import c2s, handshake, record, req, res, s2c

ROOT = Path(__file__).resolve().parents[2]
HTTP = ROOT / "tests" / "data" / "false-finding-http401-empty.jsonl"


def _edit(src: list[dict], pick, change, fingerprint: bool) -> list[dict]:
    out = []
    for i, rec in enumerate(src):
        rec = json.loads(json.dumps(rec))
        if i == 0 and fingerprint:
            rec["rules"] = rules_fingerprint()        # the fast check path reads it as its own
        if pick(i, rec):
            change(rec)
        out.append(rec)
    return out


def _stdio(tmp_path: Path) -> list[dict]:
    cap = record(tmp_path / "src.jsonl", handshake("2025-11-25", {"tools": {}}) + [c2s(req(2, "tools/list")), s2c(res(2, {"tools": []}))])
    return [json.loads(x) for x in cap.read_bytes().splitlines()]



CASES = {
    # name: (source, record picker, change, expected line, what the error says)
    "end-bytes-text": ("stdio", lambda i, r: r["type"] == "end", lambda r: r["s2c"].__setitem__("bytes", "many"), "end", "s2c.bytes 'many' is not an integer"),
    "end-stream-list": ("stdio", lambda i, r: r["type"] == "end", lambda r: r.__setitem__("s2c", [1]), "end", "s2c is not an object"),
    "end-pending-object": ("stdio", lambda i, r: r["type"] == "end", lambda r: r.__setitem__("pending", {"a": 1}), "end", "pending is not a list of objects"),
    "end-severities-text": ("stdio", lambda i, r: r["type"] == "end", lambda r: r.__setitem__("severities", {"error": "x"}),
        "end", "severities is not an object of counts"),
    "header-target-text": ("stdio", lambda i, r: r["type"] == "header", lambda r: r.__setitem__("target", "server"), "header", "target is not an object"),
    "header-transport": ("stdio", lambda i, r: r["type"] == "header", lambda r: r.__setitem__("transport", "pigeon"),
        "header", "transport 'pigeon' is not stdio or http"),
    "message-rev-number": ("stdio", lambda i, r: r.get("seq") == 2, lambda r: r.__setitem__("rev", 5), "message", "rev is a int, not a string"),
    "message-findings-object": ("stdio", lambda i, r: r.get("seq") == 2, lambda r: r.__setitem__("findings", {"code": 5}), "message", "findings is not a list"),
    "http-status-text": ("http", lambda i, r: r["type"] == "http" and r.get("event") == "response", lambda r: r.__setitem__("status", "x"),
        "http", "status 'x' is not an integer"),
    "http-exchange-object": ("http", lambda i, r: r["type"] == "http", lambda r: r.__setitem__("exchange", {"a": 1}),
        "http", "exchange {'a': 1} is not an integer"),
    "http-headers-text": ("http", lambda i, r: r["type"] == "http", lambda r: r.__setitem__("headers", "x"), "http", "headers is not a list of"),
    "message-transport-text": ("http", lambda i, r: r["type"] == "message", lambda r: r.__setitem__("transport", "x"), "message", "transport is not an object"),
}
COMMANDS = [["check"], ["check", "--full"], ["show"], ["show", "--format", "json"], ["diff", "{other}"],
            ["export", "--format", "{export}", "-o", "{out}.export"], ["report", "-o", "{out}.html"], ["scrub", "-o", "{out}.jsonl"]]


@pytest.mark.parametrize("fingerprint", [True, False], ids=["current-rules", "other-rules"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_wrong_field_type_is_a_corrupt_record_error_in_every_command(tmp_path: Path, name: str, fingerprint: bool) -> None:
    kind, pick, change, typ, why = CASES[name]
    src = _stdio(tmp_path) if kind == "stdio" else [json.loads(x) for x in HTTP.read_bytes().splitlines()]
    recs = _edit(src, pick, change, fingerprint)
    bad_line = next(i for i, r in enumerate(_edit(src, pick, lambda r: r.__setitem__("__edited", 1), False)) if "__edited" in r) + 1
    cap = tmp_path / "cap.jsonl"
    cap.write_text("".join(json.dumps(r) + "\n" for r in recs))
    other = tmp_path / "other.jsonl"
    other.write_text("".join(json.dumps(r) + "\n" for r in src))
    want = f"cap.jsonl:{bad_line}: corrupt {typ}" + (" record" if typ != "header" else "")
    for cmd in COMMANDS:
        args = [a.replace("{other}", str(other)).replace("{export}", "har" if kind == "http" else "otlp-json")
                .replace("{out}", str(tmp_path / "out")) for a in cmd]
        proc = subprocess.run([sys.executable, "-m", "mcptap.cli.main", *args, str(cap)], capture_output=True, text=True,
                              cwd=ROOT, timeout=60, env={**os.environ, "MCPTAP_DEBUG": ""})
        assert proc.returncode == 2, (cmd, proc.stdout[-300:], proc.stderr)
        assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr, (cmd, proc.stderr)
        assert want in proc.stderr and why in proc.stderr, (cmd, proc.stderr)
