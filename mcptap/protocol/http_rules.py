"""HTTP-layer findings (``http.*``, and ``sse.*`` on how a stream ended) from per-exchange facts (pure).

Sources: spec basic/transports (2024-11-05 "HTTP with SSE"; 2025-03-26 …
2025-11-25 "Streamable HTTP"; 2026-07-28 transports/streamable-http), WHATWG
HTML §9.2 (server-sent events), RFC 9110/9112. Facts arrive as plain values
(status, header lists, the JSON-RPC kinds a POST carried, the session's
negotiated revision); the observer decides where the findings are stored.
Stateless functions here; cross-exchange memory lives in ``HttpRules``
(``http_memory.py``).
Findings on one SSE event's content (and the legacy ``endpoint`` event) are in
``sse_rules.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcptap.model import Finding, Severity
from mcptap.protocol import rules
from mcptap.protocol.codes import finding
from mcptap.protocol.excerpt import cut
from mcptap.protocol.http_fields import Headers, accepts, dropped_by_connection, header, media_type, shown
from mcptap.protocol.jsonrpc import show_id

INFO, WARN, ERROR = Severity.INFO, Severity.WARN, Severity.ERROR

#: Content codings the observer decodes for analysis (stdlib zlib).
DECODABLE = frozenset({"gzip", "x-gzip", "deflate", "identity"})
VERSION_HEADER_SINCE = "2025-06-18"
#: body kinds that make a POST JSON-RPC traffic (``Exchange.body_kinds``)
JSONRPC_KINDS = ("request", "notification", "response", "error")
#: how the relay words a client's invalid HTTP (relay/http/conn_ends.py): on the connection, on the exchange
INVALID_FROM_CLIENT = "invalid HTTP from client: "
INVALID_MID_EXCHANGE = "client sent invalid HTTP: "


def _at_least(rev: str | None, floor: str) -> bool:
    r = rules.normalize_revision(rev)
    return r is not None and rules.REVISIONS.index(r) >= rules.REVISIONS.index(floor)


@dataclass(slots=True)
class Exchange:
    """Facts of one HTTP exchange as far as known.

    ``body_kinds``: JSON-RPC kinds carried by a POST body ("request",
    "notification", "response", "error", "invalid", "non_json"); ``methods``:
    request/notification methods in it; ``meta_version``: the 2026-07-28
    ``_meta`` protocol version of its request; ``revision``: the session's
    negotiated revision when the request was sent; ``legacy``: part of the
    2024-11-05 HTTP+SSE transport (POST to an advertised endpoint); ``refused``:
    the ``how`` of the tap's own refusal (``records.events.TAP_REFUSALS``), "" for a
    request it forwarded: a refused one never reached the server, nothing judges it.
    ``clear``: ``record --record-secrets``: findings quote its header values in clear, as
    the capture's header fields hold them (else with token shapes as placeholders,
    ``http_fields.shown``); a capture judged again offline does not say, and quotes them scrubbed.
    """

    method: str
    target: str
    req_headers: Headers
    session: str | None = None
    legacy: bool = False
    body_kinds: tuple[str, ...] = ()
    methods: tuple[str, ...] = ()
    meta_version: str | None = None
    revision: str | None = None
    status: int | None = None
    resp_headers: Headers | None = None
    refused: str = ""
    clear: bool = False

    @property
    def has_request(self) -> bool:
        return "request" in self.body_kinds

    @property
    def is_ack(self) -> bool:
        """A Streamable HTTP POST of only notifications and/or responses."""
        return (self.method == "POST" and not self.legacy and bool(self.body_kinds)
                and all(k in ("notification", "response", "error") for k in self.body_kinds))

    @property
    def is_initialize(self) -> bool:
        return "initialize" in self.methods


# -- request head ---------------------------------------------------------------------

def request_findings(ex: Exchange) -> list[Finding]:
    """Findings on the request alone (Accept, media type, version header)."""
    out: list[Finding] = []
    h = ex.req_headers
    accept = header(h, "accept")
    if ex.method == "POST" and not ex.legacy and ex.body_kinds:
        if not (accepts(accept, "application/json") and accepts(accept, "text/event-stream")):
            out.append(finding("http.post_accept_incomplete",
                               f"POST Accept is {shown(accept, ex.clear)!r}: it MUST name application/json and text/event-stream"))
    if ex.method == "GET" and not accepts(accept, "text/event-stream"):
        out.append(finding("http.get_accept_missing_event_stream", f"GET Accept is {shown(accept, ex.clear)!r}: it MUST name text/event-stream"))
    ctype = header(h, "content-type")
    not_json = content_type_findings(ex, ctype)
    out.extend(not_json)
    if ctype is not None and media_type(ctype)[1] and not not_json:
        out.append(finding("http.content_type_params",
                           f"request Content-Type {shown(ctype, ex.clear)!r} has parameters or unusual case (valid; some servers reject it)"))
    out.extend(version_header_findings(ex))
    enc = (header(h, "content-encoding") or "").strip().lower()
    if ex.method == "POST" and enc and enc != "identity":
        out.append(finding("http.content_encoding", f"request body {shown(enc, ex.clear)}-encoded (forwarded as is; decoded for analysis unless "
                           "http.content_decoding_failed says it does not decode)") if enc in DECODABLE else
                   finding("http.undecodable_encoding",
                           f"request Content-Encoding {shown(enc, ex.clear)} cannot be decoded by mcptap: body stored raw, not analysed"))
    out.extend(dropped_findings(h, "client", "server"))
    return out


#: what a browser form (or fetch without a CORS preflight) may send cross-site (WHATWG Fetch "CORS-safelisted request-header")
FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data", "text/plain")


def content_type_findings(ex: Exchange, ctype: str | None) -> list[Finding]:
    """A Streamable HTTP POST judged as JSON-RPC whose Content-Type is not
    ``application/json`` (missing, a form type, ``application/json-rpc``, …):
    the body is a JSON-RPC message and SDK servers refuse anything else (400
    or 415). A form type is also what a web page can POST cross-site without a
    CORS preflight; the finding names the request's Origin when it has one."""
    if ex.method != "POST" or ex.legacy or not any(k in JSONRPC_KINDS for k in ex.body_kinds):
        return []
    mt = media_type(ctype)[0]
    if mt == "application/json":
        return []
    origin = header(ex.req_headers, "origin")
    sent = f"sent as {shown(ctype, ex.clear)!r}" if ctype is not None else "sent without Content-Type"
    why = ""
    if mt in FORM_TYPES:
        why = (f"; a form type a web page can POST cross-site without a CORS preflight (Origin {shown(origin, ex.clear)!r}: the server MUST validate it)"
               if origin is not None else "; a form type a web page could POST cross-site without a CORS preflight")
    return [finding("http.post_content_type_not_json", f"JSON-RPC POST {sent}: the body MUST be sent as application/json "
                    f"(SDK servers refuse it with 400 or 415){why}",
                    {"content_type": shown(ctype, ex.clear), **({"origin": shown(origin, ex.clear)} if origin is not None else {})})]


def dropped_findings(h: Headers | None, sender: str, receiver: str) -> list[Finding]:
    """A field MCP relies on that the sender's Connection header names, so
    that every proxy, this tap too, removes it (RFC 9110 §7.6.1): the capture
    holds it, the receiver never got it."""
    return [finding("http.connection_drops_field", f"the {sender}'s Connection header names {name}: proxies remove the fields it names "
                                                   f"(this tap did), so the {receiver} never received it")
            for name in dropped_by_connection(h)]


def version_header_findings(ex: Exchange) -> list[Finding]:
    """MCP-Protocol-Version checks (2025-06-18+: every request after initialize;
    2026-07-28: every POST, equal to the request's ``_meta`` version)."""
    if ex.legacy or ex.is_initialize or ex.method not in ("POST", "GET", "DELETE"):
        return []
    got = header(ex.req_headers, "mcp-protocol-version")
    if ex.meta_version is not None and rules.is_modern(ex.meta_version):
        if got is None:
            return [finding("http.protocol_version_header_missing", f"2026-07-28 POST without MCP-Protocol-Version (_meta says {ex.meta_version})")]
        if got != ex.meta_version:
            return [finding("http.protocol_version_header_mismatch",
                            f"MCP-Protocol-Version {shown(got, ex.clear)!r} differs from _meta protocolVersion {ex.meta_version!r}")]
        return []
    rev = ex.revision
    if rev is None or rules.is_modern(rev) or not _at_least(rev, VERSION_HEADER_SINCE):
        return []
    if got is None:
        return [finding("http.protocol_version_header_missing", f"{ex.method} without MCP-Protocol-Version on a {rev} session (MUST after initialize)")]
    if got != rev:
        return [finding("http.protocol_version_header_mismatch", f"MCP-Protocol-Version {shown(got, ex.clear)!r} but the session negotiated {rev}")]
    return []


# -- response head ----------------------------------------------------------------------

def response_findings(ex: Exchange) -> list[Finding]:
    """Findings on the response head (status, Content-Type, encodings)."""
    out: list[Finding] = []
    st = ex.status or 0
    rh = ex.resp_headers or []
    sid = ex.session
    ctype = header(rh, "content-type")
    mt, unusual = media_type(ctype)
    if ex.is_ack and 200 <= st < 300 and st != 202:
        out.append(finding("http.ack_status_not_202", f"{st} for a POST of {'/'.join(sorted(set(ex.body_kinds)))}s only: the server MUST answer 202 Accepted"))
    if ex.method == "POST" and not ex.legacy and ex.has_request and 200 <= st < 300 and st != 202 \
            and mt not in ("application/json", "text/event-stream"):
        out.append(finding("http.unexpected_content_type",
                           f"request answered {st} with Content-Type {shown(ctype, ex.clear)!r}: MUST be application/json or text/event-stream"))
    if ctype is not None and unusual and mt in ("application/json", "text/event-stream"):
        out.append(finding("http.content_type_params", f"response Content-Type {shown(ctype, ex.clear)!r} has parameters or unusual case"))
    if ex.legacy and ex.method == "POST" and st >= 400:
        out.append(finding("http.legacy_post_not_found", f"POST to the legacy endpoint {ex.target} answered {st}"))
    if st == 403 and header(ex.req_headers, "origin") is not None:
        out.append(finding("http.origin_rejected", f"403 for Origin {shown(header(ex.req_headers, 'origin'), ex.clear)!r}"))
    if st in (406, 415):
        req_ctype, req_accept = header(ex.req_headers, "content-type"), header(ex.req_headers, "accept")
        # a request Content-Type counts only as application/json with parameters: a 415 for a form type is right
        bad = [v for v in (req_ctype if media_type(req_ctype)[0] == "application/json" else None, req_accept)
               if v and media_type(v.split(",")[0])[1]]
        if bad or (st == 406 and accepts(header(ex.req_headers, "accept"), "application/json")
                   and accepts(header(ex.req_headers, "accept"), "text/event-stream")):
            named = ", ".join(repr(shown(b, ex.clear)) for b in bad) or "Accept names both types"
            out.append(finding("http.media_type_rejected", f"{st} although the request's media types are valid ({named})"))
    if ex.is_initialize and st == 400 and header(ex.req_headers, "mcp-protocol-version") is not None:
        out.append(finding("http.protocol_version_rejected_at_initialize",
                           "initialize refused with 400 while it carried MCP-Protocol-Version "
                           f"{shown(header(ex.req_headers, 'mcp-protocol-version'), ex.clear)!r}"))
    if ex.method == "GET" and accepts(header(ex.req_headers, "accept"), "text/event-stream") and st != 405 \
            and (st in (406, 501) or (st == 404 and sid is None)):
        out.append(finding("http.get_stream_refused_not_405", f"GET stream refused with {st}: a server without a GET stream answers 405"))
    enc = (header(rh, "content-encoding") or "").strip().lower()
    if enc and enc != "identity":
        if mt == "text/event-stream":
            out.append(finding("sse.compressed_stream",
                               f"Content-Encoding {shown(enc, ex.clear)} on an event stream: intermediaries and clients may buffer or fail to decode"))
        if enc in DECODABLE:
            out.append(finding("http.content_encoding", f"{shown(enc, ex.clear)}-encoded body (forwarded as is; decoded for analysis "
                               "unless http.content_decoding_failed says it does not decode)"))
        else:
            out.append(finding("http.undecodable_encoding",
                               f"Content-Encoding {shown(enc, ex.clear)} cannot be decoded by mcptap: body stored raw, not analysed"))
    out.extend(framing_findings(rh, ex.clear))
    out.extend(dropped_findings(rh, "server", "client"))
    return out


def framing_findings(rh: Headers, clear: bool = False) -> list[Finding]:
    """A response head with both Content-Length and Transfer-Encoding (RFC 9112
    §6.1: a sender MUST NOT; the recipient reads the body by Transfer-Encoding,
    as h11 and so the tap did, and a proxy removes Content-Length); ``clear``: as ``Exchange.clear``."""
    cl, te = header(rh, "content-length"), header(rh, "transfer-encoding")
    if cl is None or te is None:
        return []
    return [finding("http.content_length_with_transfer_encoding",
                    f"the server sent Content-Length {shown(cl.strip(), clear)!r} with Transfer-Encoding {shown(te.strip(), clear)!r}: the body was read by "
                    "Transfer-Encoding (response_bytes), and the tap forwarded the head without Content-Length (the capture "
                    "keeps both, as received); a peer that trusts Content-Length instead reads another body")]


def ack_findings(ex: Exchange, body: bytes, body_len: int) -> list[Finding]:
    """Findings on a finished notification/response acknowledgement; ``body``: its first
    bytes as the capture keeps them (credentials as placeholders unless recorded in clear)."""
    st = ex.status or 0
    if not ex.is_ack or not (200 <= st < 300):
        return []
    ctype = header(ex.resp_headers, "content-type")
    if body_len:
        # never cut inside a placeholder: the body is the scrubbed one the end record's ack_body holds
        preview = cut(body[:400].decode("utf-8", "replace"), 40)
        return [finding("http.ack_body_not_empty",
                        f"{body_len}-byte body {preview!r} on the acknowledgement of a POST without requests (strict clients parse it and fail)",
                        severity=WARN)]
    if ctype is not None and st == 202:
        return [finding("http.ack_content_type_unexpected", f"Content-Type {shown(ctype, ex.clear)!r} on a body-less 202")]
    return []


def legacy_body_findings(ex: Exchange, body: bytes) -> list[Finding]:
    """A legacy HTTP+SSE POST answered with a JSON-RPC message in its body (``body``: its first bytes, as
    the end record's ``ack_body`` keeps them): a Streamable HTTP habit no 2024-11-05 client reads."""
    head = body.lstrip()[:1]
    if not (ex.legacy and ex.method == "POST" and head in (b"{", b"[") and b'"jsonrpc"' in body):
        return []
    preview = cut(body[:400].decode("utf-8", "replace"), 60)
    return [finding("http.legacy_post_body_message", f"the POST's {ex.status} response carries a JSON-RPC message {preview!r}: "
                                                     "2024-11-05 servers send messages on the SSE stream only, so the client never reads it")]


def request_cut_findings(ex: Exchange, how: str, request_bytes: int | None, cut: bool = False) -> list[Finding]:
    """A client that went away (``how`` client_closed) after fewer request
    body bytes than its Content-Length declared, or (``cut``) inside a chunked
    body: the tap had already forwarded them to the upstream (RFC 9112 §6.3,
    §7.1). The capture keeps them in a ``request_body`` http record."""
    if how != "client_closed" or request_bytes is None:
        return []
    cl = header(ex.req_headers, "content-length")
    if (cl is None or not cl.isdigit()) and cut:
        return [finding("http.request_body_incomplete", f"client went away inside its chunked request body after {request_bytes} bytes "
                                                        "(forwarded to the upstream as they came; no last chunk)",
                        {"request_bytes": request_bytes})]
    if cl is None or not cl.isdigit() or request_bytes >= int(cl):
        return []
    return [finding("http.request_body_incomplete",
                    f"client went away after {request_bytes} of {cl} request body bytes (forwarded to the upstream as they came)",
                    {"request_bytes": request_bytes, "content_length": int(cl)})]


def end_findings(ex: Exchange, how: str, detail: str, *, response_started: bool, reused: bool, sent_502: bool, sse: bool,
                 event_ids: list[str], response_bytes: int, pending: list[tuple[int, Any, bool]]) -> list[Finding]:
    """How an exchange ended (``how`` as in relay ``ResponseEnded``): lost or
    broken responses. ``pending``: (seq, id, modern) of the requests this
    exchange carried that are still unanswered; ``event_ids``: SSE ids seen."""
    if how == "host_rejected":
        return [finding("http.host_rejected", detail)]
    if how == "request_rejected":
        return [finding("http.request_rejected", detail)]
    if how == "client_timeout":
        return [finding("http.client_timeout", detail)]
    if how in ("upstream_failed", "bad_response"):
        return [finding("http.upstream_failed", detail + (" (the client got 502)" if sent_502 else ""))]
    if how in ("tap_stopped", "gap"):       # gap: its end was not recorded (the gap record is the finding)
        return []
    if how == "client_closed" and detail.startswith(INVALID_MID_EXCHANGE):
        return [finding("http.client_invalid_http", f"the client sent bytes that are not HTTP/1.1 mid-exchange ({detail[len(INVALID_MID_EXCHANGE):]}): the tap "
                                                    "answered 400 if it could and closed the connection; the upstream got what came before")]
    ids = ", ".join(show_id(i) for _, i, _ in pending)
    if how == "upstream_closed":
        if not response_started:
            if reused:
                return [finding("http.request_lost_on_closed_connection",
                                "the upstream closed its kept-alive connection as the request arrived: the request was lost "
                                "(the client's connection was closed the same way)")]
            return [finding("sse.connection_closed_mid_stream", "upstream closed the connection before responding"
                            + (f"; request(s) {ids} pending" if pending else ""))]
        cl = header(ex.resp_headers, "content-length")
        if cl is not None and cl.isdigit() and response_bytes < int(cl):
            return [finding("http.body_shorter_than_content_length", f"body ended after {response_bytes} of {cl} bytes")]
        if sse and event_ids:
            return [finding("sse.connection_closed_mid_stream",
                            f"upstream closed the connection mid-stream after event id {event_ids[-1]!r} (resumable with Last-Event-ID, 2025-11-25 polling)"
                            + (f"; request(s) {ids} still pending" if pending else ""), severity=INFO)]
        if sse:
            return [finding("sse.connection_closed_mid_stream", "upstream closed the connection mid-stream (no event id: not resumable)"
                            + (f"; request(s) {ids} lost" if pending else ""))]
        return [finding("http.response_body_cut", "upstream closed the connection before the end of the response body"
                        + (f"; request(s) {ids} lost" if pending else ""))]
    if sse and ex.method == "POST" and not ex.legacy and pending:
        if how == "client_closed" and any(m for _, _, m in pending):
            return []      # 2026-07-28: closing the response stream is the cancellation
        who = "the client closed it" if how == "client_closed" else "the server ended it"
        if how != "client_closed" and event_ids:
            # 2025-11-25 polling: after an event with an id (the priming event) the server may end
            # the response; the client resumes with Last-Event-ID and the answer comes there
            return [finding("sse.stream_closed_without_response",
                            f"response stream ended ({who}) before the response to request(s) {ids}, after event id "
                            f"{event_ids[-1]!r}: resumable with Last-Event-ID (2025-11-25 polling)",
                            {"pending": [s for s, _, _ in pending]}, severity=INFO)]
        return [finding("sse.stream_closed_without_response", f"response stream ended ({who}) without the response to request(s) {ids}",
                        {"pending": [s for s, _, _ in pending]})]
    return []
