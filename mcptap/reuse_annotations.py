"""Re-annotation of a capture written under the current rules (pure, level 1):
the reuse path of ``reannotate.reannotate``. Its recorded annotations are what
the rules compute (protocol/fingerprint.py), so they are kept and only the
schema shape checks the live tap never runs are added; the end record's
counts are taken again. check/scan.py is its fast form (the same report).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from mcptap.batch_shapes import BatchShapes
from mcptap.capture.dumps import dumps as _exact_dumps
from mcptap.capture.format import decode_bytes
from mcptap.errors import CaptureReadError
from mcptap.model import UNPARSED, Direction, Finding, Kind, Severity, severity_counts
from mcptap.protocol.codes import finding
from mcptap.protocol.gap_pending import counted_findings
from mcptap.protocol.jsonparse import parse_json
from mcptap.protocol.jsonrpc import id_key, show_id
from mcptap.recording import Stream
from mcptap.records import End

_DIRS = {"c2s": Direction.C2S, "s2c": Direction.S2C}


def reuse_annotations(header: dict[str, Any], records: Iterable[dict[str, Any]], shapes: bool,
                       light: bool) -> Iterator[dict[str, Any]]:
    """Re-annotation of a capture written under the current rules: its
    recorded annotations are what the rules would compute again, so they are
    kept; schema shape checks (never run live) are added. A capture without an
    end record gets one as full re-annotation builds it: open requests judged
    unanswered (info), and the byte counts and digests of what the capture
    holds, so the answer does not depend on which rules wrote it."""
    from mcptap.protocol import shapes as shape_rules

    # read when the end record is missing, and on HTTP (the recorded end counts wire bytes)
    streams = {"c2s": Stream(), "s2c": Stream()}
    stderr_stream = Stream()

    methods: dict[int, str | None] = {}        # open requests: seq -> method
    opened: dict[Any, dict[str, Any]] = {}     # open requests: seq (a batch member's: (seq, id key)) -> {seq, dir, id, method}
    augmented: dict[int, Any] = {}             # open task-augmented requests: seq -> params
    last_seq, last_t = 0, 0
    severities = severity_counts()
    codes: dict[str, int] = {}
    end: dict[str, Any] | None = None

    # batch members (check --full's annotator checks each like a message): their requests and shapes
    batches = BatchShapes(shape_rules.check if shapes else lambda *a: [])

    def take(seq: int) -> tuple[Any, Any] | None:
        """A plain request answered by a batch member: (method, params), no longer open."""
        if seq not in methods:
            return None
        opened.pop(seq, None)
        return methods.pop(seq), augmented.pop(seq, None)

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
        if typ == "chunk" and header.get("transport", "stdio") == "stdio":
            # bytes stored unframed (live analysis behind): only re-framing from the start reads them
            raise CaptureReadError(f"chunk record seq {r.get('seq')}: the capture holds bytes stored unframed while live "
                                   "analysis was behind, which its recorded annotations lack: only re-annotating it from its start "
                                   "(mcptap check --full) reads them")
        if typ == "message":
            _tally(streams.get(str(r.get("dir"))), r, light)
            kind = r.get("kind")
            if kind == "request":
                methods[r["seq"]] = r.get("method")
                params = r.get("json", {}).get("params") if isinstance(r.get("json"), dict) else None
                if isinstance(params, dict) and "task" in params:
                    augmented[r["seq"]] = params
                opened[r["seq"]] = {"seq": r["seq"], "dir": r["dir"], "id": r.get("id"), "method": r.get("method"),
                                    **({"session": r["session"]} if "session" in r else {})}
            answered = methods.pop(r["pair"], None) if kind in ("response", "error") and "pair" in r else None
            task_params = None
            if kind in ("response", "error") and "pair" in r:
                opened.pop(r["pair"], None)
                task_params = augmented.pop(r["pair"], None)
                opened.pop((r["pair"], id_key(r.get("id"))), None)      # (a batch member's)
                if answered is None and (member := batches.answer(r["pair"], r.get("id"))) is not None:
                    answered = member[0] if isinstance(member[0], str) else None     # a batch member's request
                    task_params = member[1] if isinstance(member[1], dict) and "task" in member[1] else None
            if kind == "batch":
                _open_members(r, opened)
            if shapes or kind == "batch":
                extra: list[Finding] = []
                value = r.get("json", UNPARSED)
                if value is UNPARSED and ("raw" in r or "raw_b64" in r):
                    value = parse_json(decode_bytes(r, "raw") or b"")[0]
                if kind == "batch":
                    extra = batches.batch(r, value, take)
                elif isinstance(value, dict):
                    d = _DIRS[r["dir"]]
                    if kind in ("request", "notification") and isinstance(r.get("method"), str):
                        extra = shape_rules.check(d, Kind(kind), r["method"], value.get("params"), r.get("rev"))
                    elif kind == "response" and answered is not None:
                        extra = shape_rules.check(d, Kind.RESPONSE, answered, value.get("result"), r.get("rev"), task_params)
                if extra:
                    r = dict(r)
                    r["findings"] = list(r.get("findings", ())) + [f.to_json() for f in extra]
            if light:
                r = {k: v for k, v in r.items() if k in _LIGHT_KEYS}
        elif typ == "stderr":
            _tally(stderr_stream, r, light, key="data")
        count(counted_findings(r))             # (a gap record: its capture.gap, as the recorder counts it)
        if isinstance(r.get("seq"), int):
            last_seq, last_t = r["seq"], r.get("t_us", last_t)
        yield r
    if end is None:
        # cut short: what is still open has no answer in the capture (info, as the full path says)
        fs = [finding("jsonrpc.unanswered_request",
                      f"request #{p['seq']} {p['method']} id={show_id(p['id'])} has no answer in the capture, which was cut short",
                      p, severity=Severity.INFO).to_json() for p in opened.values()]
        count(fs)
        stdio = header.get("transport", "stdio") == "stdio"
        yield End(last_seq + 1, last_t, severities, codes, list(opened.values()),
                  c2s=streams["c2s"].json(), s2c=streams["s2c"].json(),
                  stderr=stderr_stream.json() if stdio else None,
                  unanswered=fs or None, extra={"incomplete": True}).to_json()
        return
    out = dict(end)
    if header.get("transport", "stdio") != "stdio":
        # the live HTTP tap's end record counts every byte it forwarded (heads, bodies, chunked and
        # SSE framing), which no re-annotation can count again from the capture; full re-annotation
        # counts the messages' bytes, and so does this: the figure does not depend on the path
        out["c2s"], out["s2c"] = streams["c2s"].json(), streams["s2c"].json()
    for f in end.get("unanswered", ()):
        count([f])
    out["severities"] = severities
    out["codes"] = dict(sorted(codes.items()))
    yield out


def _open_members(r: dict[str, Any], opened: dict[Any, dict[str, Any]]) -> None:
    """A batch record's member requests are open (key: seq and id), its member
    answers close theirs: a capture cut short reports the rest unanswered, as
    re-annotation does."""
    for m in r.get("members") or ():
        if not isinstance(m, dict):
            continue
        if m.get("kind") == "request" and isinstance(r.get("seq"), int):
            opened[(r["seq"], id_key(m.get("id")))] = {"seq": r["seq"], "dir": r.get("dir"), "id": m.get("id"), "method": m.get("method"),
                                                       **({"session": r["session"]} if "session" in r else {})}
        elif m.get("kind") in ("response", "error") and isinstance(m.get("pair"), int):
            opened.pop((m["pair"], id_key(m.get("id"))), None)


def _tally(stream: Stream | None, r: dict[str, Any], light: bool, key: str = "raw") -> None:
    """Count one message (``raw``) or stderr (``data``) record's bytes into
    ``stream`` the way ``Reannotator`` does (digest skipped when ``light``)."""
    if stream is None:
        return
    data = decode_bytes(r, key)
    if data is None and key == "raw" and "json" in r:
        data = _exact_dumps(r["json"]) + str(r.get("eol", "\n")).encode("ascii", "replace")
    if data is None:
        return
    stream.bytes += len(data)
    if not light:
        stream.sha.update(data)
    stream.messages += 1


_LIGHT_KEYS = frozenset({"type", "seq", "t_us", "dir", "kind", "method", "id", "pair", "latency_us", "session", "findings"})
