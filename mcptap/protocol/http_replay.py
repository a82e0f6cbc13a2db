"""Re-judging a capture's HTTP layer from its recorded ``http`` records (pure).

``mcptap check --full`` feeds an old capture through a fresh Recorder; for an
HTTP capture this class rebuilds each exchange's facts from the records —
request line and headers, the JSON-RPC kinds of the POST body (from its
message record), response status and headers, how it ended — and asks
``HttpJudge`` for the findings the live tap would raise today. Record shapes:
docs/capture-format.md (``http`` records: ``request``, ``response``, ``sse``,
``end``, ``conn_close``).

What is judged again: request heads (Accept, media types, version header,
session ids, retries and resumption), response heads (status, content type,
session bookkeeping), POST bodies mcptap could not decode (``request_body``
records with ``undecoded``), exchange ends (lost and broken responses, acknowledgement
bodies, HTTP-level rejections, redirects naming the Location the tap gave the
client from the exchange's ``auth_rewrite`` record), idle connection closes, and the SSE facts of
every data event (``sse.*`` on a message record: CR LF lines, several data
lines, retry, comments, split across chunks, unterminated at EOF, data that is
not JSON-RPC), from the event's bytes as recorded (``transport.sse.raw``, or
the canonical event rebuilt from its payload, id, type and retry when the tap
did not need to keep them) and its recorded chunk count. What is kept as
recorded: the findings of ``sse`` records (priming events, comments, stray
blocks), whose bytes the capture does not hold, and the legacy ``endpoint``
findings, which depend on the tap's own address.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from mcptap.model import Direction, Finding
from mcptap.protocol.codes import transport_made
from mcptap.protocol.http_fields import header, media_type
from mcptap.protocol.http_judge import End, HttpJudge, body_facts
from mcptap.protocol.http_rules import Exchange
from mcptap.protocol.jsonparse import parse_json
from mcptap.protocol.pairing import BoundedMap
from mcptap.protocol.sse import SSEEvent, parse_all
from mcptap.protocol.sse_rules import data_findings, sse_findings

#: code families HttpJudge decides on ``http`` records; others are kept
JUDGED = ("http.", "sse.", "lifecycle.", "cancel.")


@dataclass(slots=True)
class _Ex:
    facts: Exchange
    req_session: Any
    reused: bool = False
    response_started: bool = False
    sse: bool = False
    ids: list[str] = field(default_factory=list)
    cr_seen: bool = False       # sse.crlf is raised once per stream, as the live observer does
    location_sent: str | None = None    # the Location the tap gave the client (an auth_rewrite record, what "location")
    plain: bool = False         # a POST off the MCP endpoint recorded as HTTP (request_body ``plain``): no MCP rule judges it


def _headers(h: Any) -> list[tuple[bytes, bytes]]:
    out = []
    for pair in h if isinstance(h, list) else ():
        if isinstance(pair, list) and len(pair) == 2 and all(isinstance(x, str) for x in pair):
            out.append((pair[0].encode("latin-1", "replace"), pair[1].encode("latin-1", "replace")))
    return out


class HttpReplay:
    """Replays ``http`` records and POST messages into an ``HttpJudge``."""

    def __init__(self, annotator: Any) -> None:
        self.annotator = annotator
        self.judge = HttpJudge(annotator)
        #: open exchanges, as the live observer keeps them (removed at their end record); the bound only
        #: guards against a damaged capture whose exchanges never end: a long-lived stream stays while
        #: thousands of POSTs come and go, so its end is judged as live
        self._ex = BoundedMap(1 << 16)
        self._legacy: set[Any] = set()
        self._legacy_paths: set[str] = set()     # the paths of the legacy endpoints (relay/http/sessions.py)

    def _revision(self, session: Any) -> str | None:
        st = self.annotator.sessions().get(session)
        return st.revision if st is not None else None

    def record(self, rec: dict[str, Any]) -> dict[str, Any]:
        """An ``http`` record re-judged: its findings replaced by today's
        (``sse`` and informational records keep theirs; OAuth exchanges, tagged
        ``auth``, are not MCP traffic and keep what relay/http/observe_auth.py found)."""
        ev = rec.get("event")
        if ev == "auth_rewrite" and rec.get("what") == "location" and isinstance(rec.get("rewritten"), str):
            x = self._ex.get(rec.get("exchange"))
            if x is not None:
                x.location_sent = rec["rewritten"]      # what the client was given: http.redirected names it as live
        if rec.get("auth"):
            return rec
        raw_id = rec.get("exchange")
        exid = raw_id if isinstance(raw_id, int) else -1
        fs: list[Finding] | None = None
        if ev == "request" and isinstance(raw_id, int):
            method, target = str(rec.get("method", "")), str(rec.get("target", ""))
            session = rec.get("session")
            legacy = method == "POST" and (session is not None and session in self._legacy
                                           or target.partition("?")[0] in self._legacy_paths)
            refused = rec.get("refused")
            facts = Exchange(method, target, _headers(rec.get("headers")), session=session, legacy=legacy,
                             refused=refused if isinstance(refused, str) else "")
            self._ex.add(exid, _Ex(facts, session, reused=bool(rec.get("reused_connection"))))
            fs = []
            if method != "POST":
                facts.revision = self._revision(session)
                fs = self.judge.request(exid, facts)
        elif ev == "response" and not rec.get("informational"):
            x = self._ex.get(exid)
            if x is not None:
                f = x.facts
                f.status = rec.get("status") if isinstance(rec.get("status"), int) else None
                f.resp_headers = _headers(rec.get("headers"))
                sid = header(f.resp_headers, "mcp-session-id")
                if f.session is None and sid is not None and f.is_initialize and not f.legacy:
                    f.session = sid
                x.response_started = True
                x.sse = media_type(header(f.resp_headers, "content-type"))[0] == "text/event-stream"
                fs, _ = self.judge.response(exid, f, x.req_session)
                if x.plain:
                    fs = []     # not an MCP exchange, as live (relay/http/observe.py)
        elif ev == "sse":
            sse = rec.get("sse")
            info: dict[str, Any] = sse if isinstance(sse, dict) else {}
            x = self._ex.get(exid)
            if "endpoint" in rec and rec.get("session") is not None:
                self._legacy.add(rec["session"])
                ep = rec["endpoint"] if isinstance(rec["endpoint"], dict) else {}
                where = ep.get("resolved") or ep.get("data")
                if isinstance(where, str):
                    self._legacy_paths.add(urlsplit(where).path)
                if x is not None:       # the stream is the legacy session's, as the live observer binds it
                    x.facts.session, x.facts.legacy = rec["session"], True
            if x is not None and isinstance(info.get("id"), str):
                x.ids.append(info["id"])
            if x is not None and any(isinstance(d, dict) and d.get("code") == "sse.crlf" for d in rec.get("findings", ())):
                x.cr_seen = True
            if "endpoint" not in rec and isinstance(sse, dict):
                fs = _block_findings(info, rec.get("findings", ()))
        elif ev == "end":
            x = self._ex.d.pop(exid, None)
            if x is not None:
                ack = rec.get("ack_body")
                nbytes = rec.get("response_bytes")
                e = End(str(rec.get("how", "")), str(rec.get("detail", "") or ""), x.response_started, x.reused, bool(rec.get("sent_502")),
                        x.sse, x.ids, nbytes if isinstance(nbytes, int) else 0, ack.encode("utf-8") if isinstance(ack, str) else b"",
                        rec["request_bytes"] if type(rec.get("request_bytes")) is int else None, rec.get("request_cut") is True,
                        x.location_sent, rec.get("response_cut") is True, rec.get("gap") is True,
                        rec["undecoded"] if isinstance(rec.get("undecoded"), str) else None)
                fs = self.judge.end(exid, x.facts, e)
        elif ev == "request_body" and rec.get("plain") is True:
            x = self._ex.get(exid)
            if x is not None:
                x.plain = True
        elif ev == "request_body" and isinstance(rec.get("undecoded"), str):
            x = self._ex.get(exid)
            if x is not None and x.facts.method == "POST":     # a POST body mcptap could not decode: judged as live
                x.facts.revision = self._revision(x.facts.session)
                fs = self.judge.request_undecoded(exid, x.facts, rec["undecoded"])
        elif ev == "conn_close":
            fs = self.judge.conn_closed(str(rec.get("side", "")), bool(rec.get("idle")), rec.get("detail"))
        if fs is None:
            return rec
        out = {k: v for k, v in rec.items() if k != "findings"}
        # findings of other observers (auth.*: relay/http/observe_auth.py) are kept as recorded
        others = [d for d in rec.get("findings", ()) if not d.get("code", "").startswith(JUDGED)]
        if fs or others:
            out["findings"] = others + [f.to_json() for f in fs]
        return out

    def message(self, rec: dict[str, Any], direction: Direction, value: Any, raw: bytes = b"") -> list[Finding] | None:
        """The transport findings of a message record (``raw``: its payload
        bytes): for a POST body (c2s) the request findings judged again; for
        an SSE data event (s2c) its ``sse.*`` facts derived again from the
        event's bytes (other recorded transport findings kept); None: keep
        what was recorded."""
        tr = rec.get("transport")
        if not isinstance(tr, dict):
            return None
        x = self._ex.get(tr.get("exchange"))
        if direction is Direction.S2C:
            sse = tr.get("sse")
            if not isinstance(sse, dict):
                return None
            if x is not None and isinstance(sse.get("id"), str):
                x.ids.append(sse["id"])
            fs = _event_findings(sse, raw, x)
            if fs is None:
                return None
            others = [Finding.from_json(d) for d in rec.get("findings", ()) if transport_made(d["code"]) and not d["code"].startswith("sse.")]
            return others + fs
        if x is None or x.facts.method != "POST":
            return None
        f = x.facts
        f.body_kinds, f.methods, f.meta_version = body_facts(value)
        f.revision = self._revision(f.session)
        kept = [Finding.from_json(d) for d in rec.get("findings", ()) if transport_made(d["code"]) and d["code"].startswith("sse.")]
        return kept + self.judge.request(tr["exchange"], f)


def _event_bytes(info: dict[str, Any], payload: bytes) -> bytes:
    """The data event's bytes: as recorded when the tap kept them (they
    differed from the canonical form), else the canonical event, which is
    what the stream carried (protocol/sse.py ``canonical_event``)."""
    raw = info.get("raw")
    if isinstance(raw, str):
        return raw.encode("utf-8")
    lines = []
    if isinstance(info.get("id"), str):
        lines.append(f"id: {info['id']}")
    if isinstance(info.get("event"), str) and info["event"] != "message":
        lines.append(f"event: {info['event']}")
    lines.extend(f"data: {d}" for d in payload.decode("utf-8", "replace").split("\n"))
    if isinstance(info.get("retry"), int):
        lines.append(f"retry: {info['retry']}")
    return ("\n".join(lines) + "\n\n").encode("utf-8")


def _event_findings(info: dict[str, Any], payload: bytes, x: _Ex | None) -> list[Finding] | None:
    """The ``sse.*`` findings of a recorded data event, derived again; None
    when its bytes do not parse back into one data event (then the recorded
    findings stand)."""
    events = [e for e in parse_all(_event_bytes(info, payload)) if e.data_lines]
    if len(events) != 1:
        return None
    chunks = info.get("chunks")
    ev = dataclasses.replace(events[0], chunks=chunks if isinstance(chunks, int) and chunks > 1 else 1)
    fs = sse_findings(ev)
    if ev.cr:
        if x is not None and x.cr_seen:
            fs = [f for f in fs if f.code != "sse.crlf"]
        if x is not None:
            x.cr_seen = True
    return fs + data_findings(parse_json(payload)[0], ev.data[:40])


#: facts of an ``sse`` record (an event without a payload) only its bytes could tell
_BYTES_ONLY = ("sse.crlf", "sse.unterminated_event_at_eof", "sse.event_id_ignored", "sse.retry_ignored", "sse.client_closed_mid_event", "sse.event_too_large")


def _block_findings(info: dict[str, Any], recorded: Any) -> list[Finding]:
    """The ``sse.*`` findings of an ``sse`` record (priming event, comments,
    stray block): priming, retry, comments and chunking derived again from
    what the record holds; CR LF and unterminated kept as recorded."""
    retry, chunks, comments = info.get("retry"), info.get("chunks"), info.get("comments")
    ev = SSEEvent(type=str(info.get("event", "message")), data="", data_lines=0,
                  id=info["id"] if isinstance(info.get("id"), str) else None, last_event_id="",
                  retry=retry if isinstance(retry, int) and not isinstance(retry, bool) else None,
                  comments=tuple(c for c in comments if isinstance(c, str)) if isinstance(comments, list) else (),
                  unknown_fields=(), raw=b"", start=0, end=0, chunks=chunks if isinstance(chunks, int) and chunks > 1 else 1)
    kept = [Finding.from_json(d) for d in recorded if isinstance(d, dict) and d.get("code") in _BYTES_ONLY]
    return sse_findings(ev) + kept
