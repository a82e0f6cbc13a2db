"""Hand-edited captures with a field of the wrong type (or null) are refused by every
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

import orjson
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



def _become(r: dict, new: dict) -> None:
    """Replace record ``r`` by ``new`` at the same place (seq, t_us)."""
    seq, t = r["seq"], r["t_us"]
    r.clear()
    r.update({"type": new["type"], "seq": seq, "t_us": t, **{k: v for k, v in new.items() if k != "type"}})


CASES = {
    # name: (source, record picker, change, expected line, what the error says)
    "end-bytes-text": ("stdio", lambda i, r: r["type"] == "end", lambda r: r["s2c"].__setitem__("bytes", "many"), "end", "s2c.bytes 'many' is not an integer"),
    "end-stream-list": ("stdio", lambda i, r: r["type"] == "end", lambda r: r.__setitem__("s2c", [1]), "end", "s2c is not an object"),
    "end-pending-object": ("stdio", lambda i, r: r["type"] == "end", lambda r: r.__setitem__("pending", {"a": 1}), "end", "pending is not a list of objects"),
    "end-severities-text": ("stdio", lambda i, r: r["type"] == "end", lambda r: r.__setitem__("severities", {"error": "x"}),
        "end", "severities is not an object of counts"),
    "header-target-text": ("stdio", lambda i, r: r["type"] == "header", lambda r: r.__setitem__("target", "server"), "header", "target is not an object"),
    # a start time that does not parse put export's spans at 1970 and dropped messages' times; check passed it
    "header-started-garbage": ("stdio", lambda i, r: r["type"] == "header", lambda r: r.__setitem__("started", "garbage"), "header",
        "started 'garbage' is not an ISO 8601 time"),
    "header-transport": ("stdio", lambda i, r: r["type"] == "header", lambda r: r.__setitem__("transport", "pigeon"),
        "header", "transport 'pigeon' is not stdio or http"),
    "message-rev-number": ("stdio", lambda i, r: r.get("seq") == 2, lambda r: r.__setitem__("rev", 5), "message", "rev is an integer, not a string"),
    "message-findings-object": ("stdio", lambda i, r: r.get("seq") == 2, lambda r: r.__setitem__("findings", {"code": 5}), "message", "findings is not a list"),
    "http-status-text": ("http", lambda i, r: r["type"] == "http" and r.get("event") == "response", lambda r: r.__setitem__("status", "x"),
        "http", "status 'x' is not an integer"),
    "http-exchange-object": ("http", lambda i, r: r["type"] == "http", lambda r: r.__setitem__("exchange", {"a": 1}),
        "http", "exchange {'a': 1} is not an integer"),
    "http-headers-text": ("http", lambda i, r: r["type"] == "http", lambda r: r.__setitem__("headers", "x"), "http", "headers is not a list of"),
    "message-transport-text": ("http", lambda i, r: r["type"] == "message", lambda r: r.__setitem__("transport", "x"), "message", "transport is not an object"),
    # a key present with null, or a record the re-annotator takes as it says: an internal error (TypeError,
    # AttributeError) in show, check, export or report before
    "message-findings-null": ("stdio", lambda i, r: r.get("seq") == 2, lambda r: r.__setitem__("findings", None), "message", "findings is not a list"),
    "message-eol-null": ("stdio", lambda i, r: r.get("seq") == 2, lambda r: r.__setitem__("eol", None), "message", "eol None is not an ASCII string"),
    "message-link-list": ("stdio", lambda i, r: r.get("seq") == 2, lambda r: r.__setitem__("link", [1]), "message", "link [1] is not an integer"),
    "http-t_us-null": ("http", lambda i, r: r["type"] == "http", lambda r: r.__setitem__("t_us", None), "http", "t_us None is not an integer"),
    "eof-session-list": ("stdio", lambda i, r: r.get("seq") == 2, lambda r: _become(r, {"type": "eof", "dir": "c2s", "session": ["s"]}),
        "eof", "session is a list, not a string"),
    "context-unknown-key": ("stdio", lambda i, r: r.get("seq") == 2, lambda r: _become(r, {"type": "context", "state": {"bogus": 1}}),
        "context", "state has an unknown key 'bogus'"),
    "context-phase": ("stdio", lambda i, r: r.get("seq") == 2, lambda r: _become(r, {"type": "context", "state": {"phase": "dancing"}}),
        "context", "state.phase 'dancing' is not a phase"),
    # a type no capture has: show, check and diff passed it silently (found by a breaker helper)
    "unknown-type": ("stdio", lambda i, r: r.get("seq") == 2, lambda r: r.__setitem__("type", "bogus"),
        "bogus", "type 'bogus' is not a capture record type"),
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


# Hand-edited values that the reader accepts but orjson cannot write again: a message's ``json``
# nesting 255-1022 levels (orjson reads 1024, writes 254), an integer beyond 64 bits (read
# exactly by the reader, refused by orjson.dumps), a t_us beyond the year 9999. Every command
# used to end in "internal error: TypeError: Recursion limit reached" / "Integer exceeds 64-bit
# range" (reannotate._replay_message, reuse_annotations._tally), a RecursionError in scrub's
# writer, or "ValueError: year … is out of range" in export. Now the record is read as it says
# (its bytes are the exact JSON of its ``json``), the rest of the capture with it, and `check`
# says the bytes were edited.
SHIPPED = ROOT / "captures" / "clean-2025-06-18.jsonl"
BIG = 2**64 + 1


def _nested(n: int) -> object:
    v: object = "x"
    for _ in range(n):
        v = [v]
    return v


def _deep(n: int):
    return lambda r: r["json"]["result"].__setitem__("deep", _nested(n))


def _big_id(r: dict) -> None:
    r["id"] = r["json"]["id"] = BIG                 # a float id read by orjson: the reader re-reads the line exactly


def _far_time(r: dict) -> None:
    r["t_us"] = 2**62


def _big_http(r: dict) -> None:
    r["t_us"] = -(2**62)                            # the request's http record and its message
    if "json" in r:
        r["id"] = r["json"]["id"] = BIG
        r["json"]["params"]["deep"] = _nested(600)


UNENCODABLE = {
    # name: (source, record picker, change)
    "deep-255": ("stdio", lambda r: r.get("seq") == 5, _deep(255)),
    "deep-1000": ("stdio", lambda r: r.get("seq") == 5, _deep(1000)),
    "big-id": ("stdio", lambda r: r.get("seq") in (4, 5), _big_id),
    "far-time": ("stdio", lambda r: r.get("seq") in (4, 5), _far_time),
    "http-big-deep-far": ("http", lambda r: r.get("seq") in (1, 2), _big_http),
}
READERS = [["check"], ["check", "--full"], ["check", "--format", "sarif"], ["show"], ["show", "--full"], ["show", "--format", "json"],
           ["show", "--format", "mermaid"], ["diff", "{other}"], ["export", "-f", "otlp-json", "-o", "{out}.otlp"],
           ["export", "-f", "messages", "-o", "{out}.messages"], ["export", "-f", "har", "-o", "{out}.har"],
           ["report", "-o", "{out}.html"], ["report", "--no-scrub", "-o", "{out}.2.html"], ["scrub", "-o", "{out}.jsonl"],
           ["scrub", "--dry-run"]]


def _write(path: Path, recs: list[dict]) -> Path:
    from mcptap.capture.dumps import dumps

    path.write_bytes(b"".join(dumps(r, newline=True) for r in recs))
    return path


@pytest.mark.parametrize("fingerprint", [True, False], ids=["current-rules", "other-rules"])
@pytest.mark.parametrize("name", sorted(UNENCODABLE))
def test_json_orjson_cannot_write_is_read_by_every_command(tmp_path: Path, name: str, fingerprint: bool) -> None:
    from click.testing import CliRunner

    from mcptap.cli.main import mcptap

    kind, pick, change = UNENCODABLE[name]
    src = [json.loads(x) for x in (SHIPPED if kind == "stdio" else HTTP).read_bytes().splitlines()]
    cap = _write(tmp_path / "cap.jsonl", _edit(src, lambda i, r: pick(r), change, fingerprint))
    other = _write(tmp_path / "other.jsonl", src)
    for cmd in READERS:
        if cmd[:3] == ["export", "-f", "har"] and kind != "http":
            continue
        args = [a.replace("{other}", str(other)).replace("{out}", str(tmp_path / "out")) for a in cmd]
        r = CliRunner().invoke(mcptap, [*args, str(cap)], catch_exceptions=False)    # an exception fails the test
        if cmd[:3] == ["export", "-f", "otlp-json"] and name in ("far-time", "http-big-deep-far"):
            # a time OTLP cannot carry (fixed64 ns since 1970): refused on one line, no file
            assert r.exit_code == 2 and "outside what OTLP can carry" in r.output, r.output
            assert not (tmp_path / "out.otlp").exists()
            continue
        assert r.exit_code in (0, 1), (cmd, r.output)
    r = CliRunner().invoke(mcptap, ["check", str(cap)], catch_exceptions=False)
    if kind == "stdio" and name != "far-time":          # (times are not part of the digests; this HTTP end record has none)
        assert "capture.digest_mismatch" in r.stdout and "the relayed bytes were edited" in r.stdout, r.stdout
    load = orjson.loads if name.startswith("deep") else json.loads      # (the stdlib: big integers exact; orjson: any depth)
    messages = [load(x) for x in (tmp_path / "out.messages").read_bytes().splitlines()]
    assert len(messages) == sum(x["type"] == "message" for x in src)      # the rest of the capture is there too
    edited = [m for m in messages if pick(m)]
    if name.startswith("deep"):
        from mcptap.compare.depth import depth

        assert depth(edited[0]["json"]["result"]["deep"]) == int(name.split("-")[1])
    elif name == "big-id":
        assert [m["id"] for m in edited] == [BIG, BIG] and all(m["json"]["id"] == BIG for m in edited)
        assert str(BIG) in CliRunner().invoke(mcptap, ["show", "--full", str(cap)]).stdout
    else:                           # no time for a t_us beyond the year 9999; the other records keep theirs
        assert all("time" not in m for m in edited) and all("time" in m for m in messages if not pick(m))
    if kind == "http":
        entries = orjson.loads((tmp_path / "out.har").read_bytes())["log"]["entries"]
        assert entries[0]["startedDateTime"] == "2026-12-01T00:00:00.000000Z" and "beyond the years 1-9999" in entries[0]["comment"]
