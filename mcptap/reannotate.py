"""Re-annotation of an existing capture with today's rules (pure, level 1).

``reannotate(header, records, shapes=True, light=False, reuse=True)`` streams
a capture's records (after its header) and yields them re-annotated, then a
fresh ``end`` record. Two paths:

* full: every message is fed again, as a frame, through a fresh Recorder
  (writer None) and its Annotator — old captures are judged by current rules;
* reuse: a capture whose header ``rules`` fingerprint equals the running
  rules (protocol/fingerprint.py) keeps its recorded annotations, which are
  what the rules would compute, and only gains schema shape checks (never run
  by the live tap). ``reuse=False`` forces the full path (hand-edited files).

Used by ``check``, ``show`` and the tests. Raises CaptureReadError for a
record that cannot be read.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from mcptap.capture.format import decode_bytes
from mcptap.capture.reader import CaptureStream, has_chunks
from mcptap.model import UNPARSED, Finding, Kind, Severity
from mcptap.protocol.annotate import Annotator
from mcptap.protocol.codes import finding
from mcptap.protocol.fingerprint import rules_fingerprint
from mcptap.protocol.framing import parse_json
from mcptap.recorder import _DIRS, Recorder


def reannotate(header: dict[str, Any], records: Iterable[dict[str, Any]], shapes: bool = True,
               light: bool = False, reuse: bool = True) -> Iterator[dict[str, Any]]:
    """Re-annotate a capture's records (after its header) with the current
    rules, streaming: yields each re-annotated record, then a fresh ``end``
    record (the original end's exit code and extra fields are kept).
    ``shapes``: include schema shape checks (protocol/shapes.py).
    ``light``: message records carry annotations only (seq, t_us, dir, kind,
    method, id, pair, latency, session, findings), for consumers that do not
    need the bytes (check). ``reuse``: a capture written under the current
    rules fingerprint keeps its recorded annotations (they are what the rules
    compute; see protocol/fingerprint.py) and only gains shape checks; False
    re-annotates everything (a hand-edited capture)."""
    fp = header.get("rules")
    if reuse and fp and fp == rules_fingerprint():
        yield from _reuse_annotations(header, records, shapes, light)
        return
    state = {"t": 0}
    transport = header.get("transport", "stdio")
    rec = Recorder(None, transport, clock=lambda: state["t"], annotator=Annotator(transport, shapes=shapes))
    rec.light = light
    old_end: dict[str, Any] | None = None
    for r in records:
        if isinstance(r.get("t_us"), int):
            state["t"] = r["t_us"]
        if r.get("type") == "end":
            old_end = r
            continue
        yield from rec.replay(r)
    if old_end is not None and not rec.chunks:
        rec.seq = old_end.get("seq", rec.seq + 1) - 1
    keep = {k: v for k, v in (old_end or {}).items() if k in ("exit_code", "signal", "capture_error", "dropped_records")}
    end = rec.close(incomplete=old_end is None, **keep)
    if old_end is None:
        end["incomplete"] = True
    yield end


def _reuse_annotations(header: dict[str, Any], records: Iterable[dict[str, Any]], shapes: bool,
                       light: bool) -> Iterator[dict[str, Any]]:
    """Re-annotation of a capture written under the current rules: its
    recorded annotations are what the rules would compute again, so they are
    kept; schema shape checks (never run live) are added. A capture without an
    end record falls back to full re-annotation for its tail judgement."""
    from mcptap.protocol import shapes as shape_rules

    methods: dict[int, str | None] = {}        # open requests: seq -> method
    opened: dict[int, dict[str, Any]] = {}     # open requests: seq -> {seq, dir, id, method}
    last_seq, last_t = 0, 0
    severities = {"error": 0, "warn": 0, "info": 0}
    codes: dict[str, int] = {}
    end: dict[str, Any] | None = None

    def count(fs: Iterable[dict[str, Any]]) -> None:
        for f in fs:
            sev = f.get("severity", "info")
            severities[sev] = severities.get(sev, 0) + 1
            codes[f["code"]] = codes.get(f["code"], 0) + 1

    for r in records:
        typ = r.get("type")
        if typ == "end":
            end = r
            continue
        if typ == "message":
            kind = r.get("kind")
            if kind == "request":
                methods[r["seq"]] = r.get("method")
                opened[r["seq"]] = {"seq": r["seq"], "dir": r["dir"], "id": r.get("id"), "method": r.get("method"),
                                    **({"session": r["session"]} if "session" in r else {})}
            answered = methods.pop(r["pair"], None) if kind in ("response", "error") and "pair" in r else None
            if kind in ("response", "error") and "pair" in r:
                opened.pop(r["pair"], None)
            if shapes:
                extra: list[Finding] = []
                value = r.get("json", UNPARSED)
                if value is UNPARSED and ("raw" in r or "raw_b64" in r):
                    value = parse_json(decode_bytes(r, "raw") or b"")[0]
                if isinstance(value, dict):
                    d = _DIRS[r["dir"]]
                    if kind in ("request", "notification") and isinstance(r.get("method"), str):
                        extra = shape_rules.check(d, Kind(kind), r["method"], value.get("params"), r.get("rev"))
                    elif kind == "response" and answered is not None:
                        extra = shape_rules.check(d, Kind.RESPONSE, answered, value.get("result"), r.get("rev"))
                if extra:
                    r = dict(r)
                    r["findings"] = list(r.get("findings", ())) + [f.to_json() for f in extra]
            if light:
                r = {k: v for k, v in r.items() if k in _LIGHT_KEYS}
        fs = r.get("findings")
        if fs:
            count(fs)
        if isinstance(r.get("seq"), int):
            last_seq, last_t = r["seq"], r.get("t_us", last_t)
        yield r
    if end is None:
        # cut short: what is still open has no answer in the capture (info, as the full path says)
        fs = [finding("jsonrpc.unanswered_request", f"request #{seq} {p['method']} id={p['id']!r} has no answer in the capture, which was cut short",
                      p, severity=Severity.INFO).to_json() for seq, p in opened.items()]
        count(fs)
        yield {"type": "end", "seq": last_seq + 1, "t_us": last_t, "severities": severities, "codes": dict(sorted(codes.items())),
               "pending": list(opened.values()), "unanswered": fs, "incomplete": True}
        return
    out = dict(end)
    for f in end.get("unanswered", ()):
        count([f])
    out["severities"] = severities
    out["codes"] = dict(sorted(codes.items()))
    yield out


_LIGHT_KEYS = frozenset({"type", "seq", "t_us", "dir", "kind", "method", "id", "pair", "latency_us", "session", "findings"})


def framed(stream: CaptureStream) -> Iterator[dict[str, Any]]:
    """The records of an open capture for consumers that read message records
    directly (diff, replay): as stored, or, when the capture holds stdio
    ``chunk`` records (bytes the live recorder stored unframed), re-framed and
    re-annotated so those bytes become message records too (seqs renumbered,
    a fresh end record)."""
    if has_chunks(stream.path):
        return reannotate(stream.header, stream, shapes=False, reuse=False)
    return iter(stream)
