"""From relay facts to capture records (pure; the recorder is passed in).

``HttpObserver.handle(items)`` takes the list ``HttpRelay`` returned (commands
and facts, after the transport executed the commands) and

* counts and digests forwarded bytes (``rec.forwarded``),
* writes ``http`` records: ``request``, ``response``, ``sse`` (events that carry
  no message: priming, comments, the legacy endpoint), ``end``, ``conn_close``,
* frames JSON-RPC payloads for the annotator (``rec.frame``): a POST body (c2s),
  an ``application/json`` response body or each SSE event's data (s2c), with
  ``transport = {exchange, conn, method, path, status, stream, sse}``,
* attaches ``http.*`` / ``sse.*`` findings from ``protocol/http_rules``.

Sessions: the key is the ``Mcp-Session-Id`` request header, or for the legacy
HTTP+SSE transport the endpoint's ``session_id``/``sessionId`` (else its
path), or None (stateless traffic: one logical client). An ``initialize`` POST
without a session header is framed when its response head arrives, under the
session id that response assigns, so the capture never needs a rename.

``rec`` needs: ``clock()``, ``forwarded(dir, bytes)``, ``frame(dir, raw,
session=, transport=, extra=, value=, t_us=)``, ``record(type, findings=,
**fields)`` and ``annotator`` (``sessions()``, ``pending()``) — the
``mcptap.recorder.Recorder`` API.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

from mcptap.model import Direction, Finding, Kind
from mcptap.protocol.codes import finding
from mcptap.protocol.framing import parse_json
from mcptap.protocol.http_rules import Exchange, HttpRules, ack_findings, end_findings, endpoint_findings, header, media_type, \
    request_findings, response_findings, sse_findings
from mcptap.protocol.jsonrpc import classify
from mcptap.protocol.rules import is_modern
from mcptap.protocol.sse import SSEEvent, SSEParser
from mcptap.redact import is_secret_name, placeholder, scrub_url
from mcptap.relay import http as r

C2S, S2C = Direction.C2S, Direction.S2C
META_VERSION = "io.modelcontextprotocol/protocolVersion"
SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "api-key"})
ACK_BODY_KEEP = 256


@dataclass(slots=True)
class _Ex:
    id: int
    conn: int
    method: str
    target: str
    host: str | None
    facts: Exchange
    t0: int
    body: bytearray = field(default_factory=bytearray)
    req_end_t: int = 0
    deferred: tuple[bytes, Any, list[Finding]] | None = None
    mode: str = "none"               # json | sse | other
    decoder: Any = None
    undecodable: bool = False
    parser: SSEParser | None = None
    resp_body: bytearray = field(default_factory=bytearray)
    resp_bytes: int = 0
    req_bytes: int = 0
    chunks: int = 0
    events: int = 0
    ids: list[str] = field(default_factory=list)
    rewrites: list[tuple[str, str]] = field(default_factory=list)
    response_started: bool = False
    cr_seen: bool = False

    @property
    def session(self) -> Any:
        return self.facts.session

    @property
    def stream(self) -> str:
        return "get" if self.method == "GET" else "post"


class HttpObserver:
    """Turns the facts of one ``HttpRelay`` into capture records.

    ``upstream``: the relay's Upstream; ``listen_authority``: the tap's
    ``host:port`` (for clients that send no Host); ``record_secrets``: store
    credentials in clear (default: stable placeholders, see ``mcptap/redact``).
    """

    def __init__(self, rec: Any, upstream: r.Upstream, listen_authority: str = "127.0.0.1",
                 record_secrets: bool = False) -> None:
        self.rec = rec
        self.upstream = upstream
        self.listen_authority = listen_authority
        self.record_secrets = record_secrets
        self.rules = HttpRules()
        self._ex: dict[int, _Ex] = {}
        self._legacy: dict[str, str] = {}      # endpoint "path?query" -> session key
        self._pending_rewrites: dict[int, list[tuple[str, str]]] = {}

    # -- dispatch ------------------------------------------------------------------------
    def handle(self, items: list[Any]) -> None:
        for it in items:
            if type(it) is r.EndpointRewritten:
                self._pending_rewrites.setdefault(it.exchange, []).append((it.original, it.rewritten))
        for it in items:
            t = type(it)
            if t is r.SendClient:
                self.rec.forwarded(S2C, it.data)
            elif t is r.SendUpstream:
                self.rec.forwarded(C2S, it.data)
            elif t is r.ResponseBody:
                self._response_body(it)
            elif t is r.RequestBody:
                e = self._ex.get(it.exchange)
                if e is not None:
                    e.body += it.data
                    e.req_bytes += len(it.data)
            elif t is r.RequestStarted:
                self._request_started(it)
            elif t is r.RequestEnded:
                self._request_ended(it)
            elif t is r.ResponseStarted:
                self._response_started(it)
            elif t is r.ResponseEnded:
                self._response_ended(it)
            elif t is r.ConnClosed:
                self._conn_closed(it)

    # -- helpers ---------------------------------------------------------------------------
    def headers_json(self, headers: list[tuple[bytes, bytes]]) -> list[list[str]]:
        """Headers for a record: str pairs, credentials redacted unless asked."""
        out = []
        for n, v in headers:
            name, value = n.decode("latin-1"), v.decode("latin-1")
            if not self.record_secrets and (name.lower() in SECRET_HEADERS or is_secret_name(name)):
                value = redact_header(name.lower(), value)
            out.append([name, value])
        return out

    def _target(self, target: str) -> str:
        return target if self.record_secrets else scrub_url(target)

    def _revision(self, session: Any) -> str | None:
        st = self.rec.annotator.sessions().get(session)
        return st.revision if st is not None else None

    def _transport(self, e: _Ex, **extra: Any) -> dict[str, Any]:
        d: dict[str, Any] = {"exchange": e.id, "conn": e.conn, "method": e.method, "path": self._target(e.target), "stream": e.stream}
        if e.facts.status is not None:
            d["status"] = e.facts.status
        d.update(extra)
        return d

    # -- requests --------------------------------------------------------------------------
    def _request_started(self, it: r.RequestStarted) -> None:
        h = it.headers
        sid = header(h, "mcp-session-id")
        legacy_key = self._legacy.get(it.target) if it.method == "POST" else None
        host = header(h, "host")
        facts = Exchange(it.method, it.target, h, session=legacy_key if legacy_key is not None else sid, legacy=legacy_key is not None)
        e = _Ex(it.exchange, it.conn, it.method, it.target, host, facts, self.rec.clock())
        self._ex[it.exchange] = e
        fs: list[Finding] = []
        if it.method != "POST":
            facts.revision = self._revision(facts.session)
            fs = request_findings(facts) + self.rules.on_request(e.id, facts)
        fields: dict[str, Any] = {"event": "request", "exchange": e.id, "conn": e.conn, "method": it.method,
                                  "target": self._target(it.target), "version": it.http_version, "headers": self.headers_json(h)}
        if facts.session is not None:
            fields["session"] = facts.session
        if it.reused:
            fields["reused_connection"] = True
        if it.host_rewritten:
            fields["host_rewritten"] = True
        self.rec.record("http", findings=fs, **fields)

    def _request_ended(self, it: r.RequestEnded) -> None:
        e = self._ex.get(it.exchange)
        if e is None:
            return
        e.req_end_t = self.rec.clock()
        if e.method != "POST" or not e.body:
            return
        body = bytes(e.body)
        e.body = bytearray()
        value, _ = parse_json(body)
        facts = e.facts
        kinds, methods, meta = [], [], None
        for item in (value if isinstance(value, list) else [value]):
            cls = classify(item)
            kinds.append(cls.kind.value)
            if cls.method:
                methods.append(cls.method)
            if cls.kind is Kind.REQUEST and meta is None and isinstance(item.get("params"), dict):
                m = item["params"].get("_meta")
                if isinstance(m, dict) and isinstance(m.get(META_VERSION), str):
                    meta = m[META_VERSION]
        facts.body_kinds, facts.methods, facts.meta_version = tuple(kinds), tuple(methods), meta
        facts.revision = self._revision(facts.session)
        fs = request_findings(facts) + self.rules.on_request(e.id, facts)
        if facts.is_initialize and facts.session is None and not facts.legacy:
            e.deferred = (body, value, fs)
            return
        self._frame_c2s(e, body, value, fs, e.req_end_t)

    def _frame_c2s(self, e: _Ex, body: bytes, value: Any, fs: list[Finding], t: int) -> None:
        self.rec.frame(C2S, body, session=e.session, transport=self._transport(e), extra=fs, value=value, t_us=t)

    def _release_deferred(self, e: _Ex, session: Any) -> None:
        if e.deferred is not None:
            body, value, fs = e.deferred
            e.deferred = None
            e.facts.session = session
            self._frame_c2s(e, body, value, fs, e.req_end_t)

    # -- responses --------------------------------------------------------------------------
    def _response_started(self, it: r.ResponseStarted) -> None:
        e = self._ex.get(it.exchange)
        if e is None:
            return
        fields: dict[str, Any] = {"event": "response", "exchange": e.id, "conn": e.conn, "status": it.status, "reason": it.reason,
                                  "headers": self.headers_json(it.headers), "latency_us": self.rec.clock() - e.t0}
        if it.informational:
            self.rec.record("http", informational=True, **fields)
            return
        facts = e.facts
        sid = header(it.headers, "mcp-session-id")
        self._release_deferred(e, sid if sid is not None else facts.session)
        facts.status, facts.resp_headers = it.status, it.headers
        e.response_started = True
        fs = response_findings(facts)
        self.rules.on_response(e.id, facts)
        mt, _ = media_type(header(it.headers, "content-type"))
        enc = (header(it.headers, "content-encoding") or "").strip().lower()
        if enc and enc != "identity":
            e.decoder = _decoder(enc)
            e.undecodable = e.decoder is None
        if mt == "text/event-stream":
            e.mode, e.parser = "sse", SSEParser()
        elif mt == "application/json" or mt.endswith("+json"):
            e.mode = "json"
        else:
            e.mode = "other"
        if facts.session is not None:
            fields["session"] = facts.session
        self.rec.record("http", findings=fs, **fields)

    def _response_body(self, it: r.ResponseBody) -> None:
        e = self._ex.get(it.exchange)
        if e is None:
            return
        e.resp_bytes += len(it.data)
        e.chunks += 1
        if e.undecodable:
            return
        data = it.data
        if e.decoder is not None:
            try:
                data = e.decoder.decompress(data)
            except zlib.error:
                e.undecodable = True
                return
        if e.mode == "sse" and e.parser is not None:
            for ev in e.parser.receive_data(data):
                self._sse_event(e, ev)
        elif e.mode == "json" and not e.facts.is_ack:
            e.resp_body += data
        elif len(e.resp_body) < ACK_BODY_KEEP:
            e.resp_body += data[:ACK_BODY_KEEP]

    def _sse_event(self, e: _Ex, ev: SSEEvent) -> None:
        e.events += 1
        if ev.id:
            e.ids.append(ev.id)
        fs = sse_findings(ev)
        if ev.cr:
            if e.cr_seen:      # once per stream: SDKs on sse-starlette end every line with CR LF
                fs = [f for f in fs if f.code != "sse.crlf"]
            e.cr_seen = True
        info: dict[str, Any] = {"event": ev.type, "offset": ev.start, "bytes": len(ev.raw)}
        if ev.id is not None:
            info["id"] = ev.id
        if ev.retry is not None:
            info["retry"] = ev.retry
        if ev.chunks > 1:
            info["chunks"] = ev.chunks
        if not ev.terminated:
            info["terminated"] = False
        if ev.type == "endpoint" and ev.data_lines:
            self._endpoint(e, ev, fs, info)
            return
        if ev.data_lines and ev.data != "":
            if ev.raw != _canonical(ev):
                info["raw"] = ev.raw.decode("utf-8", "replace")
            raw = ev.data.encode("utf-8")
            value, _ = parse_json(raw)
            if value is not None and classify(value).kind is Kind.INVALID:
                fs.append(finding("sse.data_not_jsonrpc", f"event data is JSON but not a JSON-RPC message ({ev.data[:40]!r}): strict clients fail on it"))
            self.rec.frame(S2C, raw, session=e.session, transport=self._transport(e, sse=info), extra=fs)
            return
        if ev.blank and not fs:
            return
        if ev.comments:
            info["comments"] = list(ev.comments)
        self._sse_record(e, info, fs)

    def _sse_record(self, e: _Ex, info: dict[str, Any], fs: list[Finding], **extra: Any) -> None:
        fields: dict[str, Any] = {"event": "sse", "exchange": e.id, "conn": e.conn, "sse": info}
        if e.session is not None:
            fields["session"] = e.session
        fields.update(extra)
        self.rec.record("http", findings=fs, **fields)

    def _endpoint(self, e: _Ex, ev: SSEEvent, fs: list[Finding], info: dict[str, Any]) -> None:
        rewritten = None
        pend = self._pending_rewrites.get(e.id)
        if pend:
            for i, (orig, new) in enumerate(pend):
                if orig == ev.data.strip() or orig == ev.data:
                    rewritten = new
                    del pend[i]
                    break
        tap_origin = f"http://{e.host or self.listen_authority}"
        efs, resolved = endpoint_findings(ev.data, tap_origin + e.target, tap_origin, self.upstream.origin, rewritten)
        u = urlsplit(resolved)
        if f"{u.scheme}://{u.netloc}".lower() == tap_origin.lower():
            key_target = u.path + (f"?{u.query}" if u.query else "")
            q = parse_qs(u.query)
            sid = (q.get("session_id") or q.get("sessionId") or [None])[0]
            key = sid or key_target
            self._legacy[key_target] = key
            e.facts.session = key
            e.facts.legacy = True
        endpoint = {"data": ev.data, "resolved": resolved}
        if rewritten is not None:
            endpoint["rewritten"] = rewritten
        self._sse_record(e, info, fs + efs, endpoint=endpoint)

    def _response_ended(self, it: r.ResponseEnded) -> None:
        e = self._ex.pop(it.exchange, None)
        if e is None:
            return
        self._pending_rewrites.pop(it.exchange, None)
        self._release_deferred(e, e.session)
        fs: list[Finding] = []
        if e.parser is not None and not e.undecodable:
            if e.decoder is not None:
                try:
                    tail = e.decoder.flush()
                    for ev in e.parser.receive_data(tail):
                        self._sse_event(e, ev)
                except zlib.error:
                    pass
            for ev in e.parser.receive_data(b""):
                self._sse_event(e, ev)
        facts = e.facts
        if e.mode == "json" and not facts.is_ack and not facts.legacy and e.resp_body and not e.undecodable:
            body = bytes(e.resp_body)
            self.rec.frame(S2C, body, session=e.session, transport=self._transport(e))
        if it.how == "complete":
            fs += ack_findings(facts, bytes(e.resp_body), e.resp_bytes) if facts.is_ack else []
        fs += self._end_findings(e, it)
        self.rules.on_end(e.id, facts)
        fields: dict[str, Any] = {"event": "end", "exchange": e.id, "conn": e.conn, "how": it.how,
                                  "request_bytes": e.req_bytes, "response_bytes": e.resp_bytes, "chunks": e.chunks,
                                  "duration_us": self.rec.clock() - e.t0}
        if e.events:
            fields["sse_events"] = e.events
        if it.detail:
            fields["detail"] = it.detail
        if it.sent_502:
            fields["sent_502"] = True
        if e.session is not None:
            fields["session"] = e.session
        self.rec.record("http", findings=fs, **fields)

    def _pending_of(self, e: _Ex) -> list[Any]:
        return [p for p in self.rec.annotator.pending() if p.exchange == e.id and p.direction is C2S]

    def _end_findings(self, e: _Ex, it: r.ResponseEnded) -> list[Finding]:
        pend = [] if it.how == "tap_stopped" else self._pending_of(e)
        if it.how == "upstream_closed" and it.response_started and e.mode == "sse":
            self.rules.stream_broken(e.id, e.session, e.ids, [p.id for p in pend])
        cancels: list[Finding] = []
        if it.how == "client_closed" and e.mode == "sse":
            cancels = [self.rec.annotator.transport_cancel(p, "the client closed its response stream (2026-07-28 HTTP cancellation)")
                       for p in pend if is_modern(p.revision)]
        return cancels + end_findings(e.facts, it.how, it.detail, response_started=it.response_started, reused=it.reused,
                            sent_502=it.sent_502, sse=e.mode == "sse", event_ids=e.ids, response_bytes=e.resp_bytes,
                            pending=[(p.seq, p.id, is_modern(p.revision)) for p in pend])

    def _conn_closed(self, it: r.ConnClosed) -> None:
        fs: list[Finding] = []
        if it.side == "upstream" and it.idle and not it.detail:
            fs.append(finding("http.conn_closed_idle", "upstream closed an idle kept-alive connection (the tap opens a new one for the next request)"))
        fields: dict[str, Any] = {"event": "conn_close", "conn": it.conn, "side": it.side, "idle": it.idle}
        if it.detail:
            fields["detail"] = it.detail
        self.rec.record("http", findings=fs, **fields)


def _decoder(enc: str) -> Any:
    if enc in ("gzip", "x-gzip"):
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    if enc == "deflate":
        return zlib.decompressobj()
    return None


def _canonical(ev: SSEEvent) -> bytes:
    """The event as the SDKs write it (id, event, data lines, retry; LF ends)."""
    lines = []
    if ev.id is not None:
        lines.append(f"id: {ev.id}")
    if ev.type != "message" or b"event:" in ev.raw[:64]:
        lines.append(f"event: {ev.type}")
    lines.extend(f"data: {d}" for d in ev.data.split("\n"))
    if ev.retry is not None:
        lines.append(f"retry: {ev.retry}")
    return ("\n".join(lines) + "\n\n").encode("utf-8")


def redact_header(name: str, value: str) -> str:
    """Stable placeholder for a credential header value; keeps the auth scheme
    and cookie names visible."""
    if name in ("cookie",):
        return "; ".join(_redact_pair(p.strip()) for p in value.split(";") if p.strip())
    if name == "set-cookie":
        first, sep, attrs = value.partition(";")
        return _redact_pair(first.strip()) + (sep + attrs if sep else "")
    scheme, sep, rest = value.partition(" ")
    if sep and rest and scheme.lower() in ("bearer", "basic", "token", "digest", "negotiate"):
        return f"{scheme} {placeholder(rest)}"
    return placeholder(value)


def _redact_pair(pair: str) -> str:
    k, eq, v = pair.partition("=")
    return f"{k}={placeholder(v)}" if eq else placeholder(pair)
