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
session bookkeeping), exchange ends (lost and broken responses, acknowledgement
bodies, HTTP-level rejections), idle connection closes. What is kept as
recorded: SSE event framing facts (``sse.*`` on events and messages), which
depend on the exact stream bytes and chunking, and the legacy ``endpoint``
findings, which depend on the tap's own address.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcptap.model import Direction, Finding
from mcptap.protocol.codes import transport_made
from mcptap.protocol.http_judge import End, HttpJudge, body_facts
from mcptap.protocol.http_rules import Exchange, header, media_type
from mcptap.protocol.pairing import BoundedMap

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
        self._ex = BoundedMap(4096)
        self._legacy: set[Any] = set()

    def _revision(self, session: Any) -> str | None:
        st = self.annotator.sessions().get(session)
        return st.revision if st is not None else None

    def record(self, rec: dict[str, Any]) -> dict[str, Any]:
        """An ``http`` record re-judged: its findings replaced by today's
        (``sse`` and informational records keep theirs; OAuth exchanges, tagged
        ``auth``, are not MCP traffic and keep what relay/http/observe_auth.py found)."""
        if rec.get("auth"):
            return rec
        ev = rec.get("event")
        raw_id = rec.get("exchange")
        exid = raw_id if isinstance(raw_id, int) else -1
        fs: list[Finding] | None = None
        if ev == "request" and isinstance(raw_id, int):
            method, target = str(rec.get("method", "")), str(rec.get("target", ""))
            session = rec.get("session")
            legacy = method == "POST" and session is not None and session in self._legacy
            facts = Exchange(method, target, _headers(rec.get("headers")), session=session, legacy=legacy)
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
        elif ev == "sse":
            sse = rec.get("sse")
            info: dict[str, Any] = sse if isinstance(sse, dict) else {}
            if "endpoint" in rec and rec.get("session") is not None:
                self._legacy.add(rec["session"])
            x = self._ex.get(exid)
            if x is not None and isinstance(info.get("id"), str):
                x.ids.append(info["id"])
        elif ev == "end":
            x = self._ex.get(exid)
            if x is not None:
                ack = rec.get("ack_body")
                nbytes = rec.get("response_bytes")
                e = End(str(rec.get("how", "")), str(rec.get("detail", "") or ""), x.response_started, x.reused, bool(rec.get("sent_502")),
                        x.sse, x.ids, nbytes if isinstance(nbytes, int) else 0, ack.encode("utf-8") if isinstance(ack, str) else b"")
                fs = self.judge.end(exid, x.facts, e)
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

    def message(self, rec: dict[str, Any], direction: Direction, value: Any) -> list[Finding] | None:
        """The transport findings of a message record: for a POST body (c2s)
        the request findings judged again; for s2c, None (keep the recorded
        SSE facts), after noting the event's id."""
        tr = rec.get("transport")
        if not isinstance(tr, dict):
            return None
        x = self._ex.get(tr.get("exchange"))
        if direction is Direction.S2C:
            sse = tr.get("sse")
            if x is not None and isinstance(sse, dict) and isinstance(sse.get("id"), str):
                x.ids.append(sse["id"])
            return None
        if x is None or x.facts.method != "POST":
            return None
        f = x.facts
        f.body_kinds, f.methods, f.meta_version = body_facts(value)
        f.revision = self._revision(f.session)
        kept = [Finding.from_json(d) for d in rec.get("findings", ()) if transport_made(d["code"]) and d["code"].startswith("sse.")]
        return kept + self.judge.request(tr["exchange"], f)
