"""HTTP capture → HAR 1.2 (HTTP Archive; spec: "HAR 1.2 Spec",
www.softwareishard.com/blog/har-12-spec/, the format of browser devtools,
mitmproxy and Charles).

One entry per HTTP exchange the tap relayed (every POST, GET stream and
DELETE), in request order:

* request: as the server received it, as a proxy's HAR shows it (export/har_sent.py;
  a request the tap refused itself as the client sent it): method, URL (the one the tap
  requested: upstream origin + request target with the upstream URL's query merged in,
  an OAuth exchange fronted under ``/.mcptap/o/<n>`` at the origin it
  fronted there, export/har_urls.py; a target with no path, ``PRI *``, gives the
  origin with an empty path), HTTP version,
  headers as sent upstream (hop-by-hop fields dropped, the upstream's Host, the
  tap's Authorization from the URL's user info as a placeholder; credentials stay keyed ``«redacted:hmac:…»`` placeholders,
  ``«redacted:sha256:…»`` in captures of older mcptaps, unless recorded with
  ``--record-secrets``), ``cookies`` parsed from the recorded ``Cookie`` headers
  (so redacted exactly as they are: ``sid=«redacted:hmac:…»`` gives name ``sid``
  and the placeholder), query string, ``postData`` with the exact body text (a
  POST's JSON-RPC message, or a ``request_body``; an OAuth form the tap changed
  as it sent it on);
* response: status, reason, headers, ``cookies`` from the recorded
  ``Set-Cookie`` headers, ``bodySize`` (bytes relayed, else ``Content-Length``,
  else -1), ``content.text`` — the JSON body (an OAuth ``response_body``), or the
  SSE body rebuilt from the recorded events (exact bytes where the capture kept
  them, ``sse.raw``; else in the SDK layout ``id``/``event``/``data``/``retry``
  lines, LF ends: ``content.comment`` says so), or a body mcptap could not
  decode as relayed (still encoded: ``encoding: base64``, the comment names the
  coding and why);
* timings (ms) from the exchange's own records, whoever wrote the capture:
  ``send`` request head → request body read, ``wait`` → response head (the
  response's ``latency_us``, else its record's time), ``receive`` → exchange end
  (the end record's ``duration_us``, else the exchange's last record: ``serve
  --listen`` writes no end records); ``blocked``, ``dns``, ``connect``, ``ssl``
  are -1 (not measured by a reverse proxy);
* ``_mcp`` (custom field, HAR allows ``_``-prefixed ones): exchange and
  connection numbers, ``clientUrl`` (as the client asked the tap), ``clientHeaders``
  (as the client sent them, where they differ), ``target``
  (one with no path), ``auth`` kind and ``rewrites`` of an OAuth exchange, session, how the exchange ended, the JSON-RPC messages it
  carried (seq, direction, kind, id, method, pair, latency, findings) and the
  HTTP findings. An exchange a recording gap cut (its ``end`` record's
  ``gap: true``, an ``sse`` record's ``sse.cut: "gap"``) says so: its entry and
  content comments name the hole (the body is incomplete, answers may be
  missing) and ``_mcp.findings`` carries the ``capture.gap`` finding of each
  gap record seen while it was open.

A stdio capture has no HTTP exchanges: ``har_of`` raises ExportError.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from mcptap import __version__
from mcptap.capture.format import decode_bytes
from mcptap.errors import ExportError
from mcptap.export.har_cookies import _cookies, _set_cookies
from mcptap.export.har_exchanges import Exchange, _t, exchanges_of
from mcptap.export.har_sent import merged_target, sent_headers, upstream_parts
from mcptap.export.har_urls import Fronts
from mcptap.export.spans import epoch_us, iso_us
from mcptap.records.events import TAP_REFUSALS


def _ms(us: float) -> float:
    return round(max(0.0, us) / 1000, 3)


def _header(headers: list[list[str]], name: str) -> str | None:
    low = name.lower()
    for h in headers:
        if len(h) == 2 and str(h[0]).lower() == low:
            return str(h[1])
    return None


#: the status of each answer the tap gives itself is ``TAP_REFUSALS[how]``; its ``sent_502``
#: says the tap answered (named for the first of them), so any other ``how`` with it is a 502


def har_of(header: dict[str, Any], records: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The HAR 1.2 document (a dict) of an HTTP capture's records (after its
    header). Raises ExportError for a stdio capture."""
    if header.get("transport") != "http":
        raise ExportError(f"HAR needs an HTTP capture; this one is {header.get('transport', 'stdio')} "
                          "(formats that fit: otlp-json, messages)")
    try:
        epoch = epoch_us(str(header.get("started") or ""))
    except ValueError:
        epoch = 0
    target = header.get("target") or {}
    url = str(target.get("url") or target.get("upstream") or "")
    origin = ""
    try:
        u = urlsplit(url)
        # no user info: the tap sends it as an Authorization field (a request URL has none)
        origin = f"{u.scheme}://{u.netloc.rpartition('@')[2]}" if u.scheme and u.netloc else ""
    except ValueError:
        pass
    upstream = upstream_parts(url)
    order = exchanges_of(records)
    fronts = Fronts(origin)
    for ex in order:
        for rw in ex.rewrites:
            fronts.learn(rw)
    return {"log": {"version": "1.2", "creator": {"name": "mcptap", "version": __version__},
                    "entries": [_entry(ex, epoch, fronts, upstream) for ex in order]}}


def _content(ex: Exchange, headers: list[list[str]]) -> dict[str, Any]:
    mime = _header(headers, "content-type") or ""
    body: bytes | None = None
    comment = ""
    if ex.events:
        body = "".join(text for _, _, text in sorted(ex.events, key=lambda e: (e[0], e[1]))).encode("utf-8")
        if ex.rebuilt:
            comment = "SSE body rebuilt from the recorded events (SDK layout) where the capture kept no raw event bytes"
    elif ex.resp_body is not None:
        body = ex.resp_body
    content: dict[str, Any] = {"size": len(body) if body is not None else 0, "mimeType": mime}
    if body is not None:
        try:
            content["text"] = body.decode("utf-8")
        except UnicodeDecodeError:
            content["text"] = base64.b64encode(body).decode("ascii")
            content["encoding"] = "base64"
    end = ex.end or {}
    kept = ex.raw or {}
    raw = decode_bytes(kept, "body")
    if ex.resp_truncated is not None:
        comment = f"the capture kept the first {len(body or b'')} of {ex.resp_truncated} bytes of this body"
    if raw is not None and body is None and not kept.get("offset") and not kept.get("dropped"):
        # the client's bytes, still encoded: base64, so no reader takes them for the decoded text HAR means
        content.update(size=len(raw), text=base64.b64encode(raw).decode("ascii"), encoding="base64")
        comment = f"the body as relayed, still {kept.get('content_encoding') or 'encoded'}: mcptap could not decode it ({kept.get('undecoded')})"
    elif raw is not None:
        comment = "; ".join(c for c in (comment, f"{len(raw)} bytes of the body, from byte {kept.get('offset', 0)} as relayed, could not be "
                                        f"decoded ({kept.get('undecoded')}): they are in the capture's response_body record, not here") if c)
    elif isinstance(kept.get("body_removed"), int):
        comment = (f"the body ({kept['body_removed']} bytes as relayed, still {kept.get('content_encoding') or 'encoded'}) was left out "
                   "when the capture was scrubbed: mcptap could not decode it to scan it for secrets")
    elif body is None and isinstance(end.get("response_bytes"), int) and end["response_bytes"] > 0:
        comment = f"the body ({end['response_bytes']} bytes relayed) is not a JSON-RPC message and is not kept in the capture"
    if ex.gap:
        comment = "; ".join(c for c in (comment, _GAP) if c)
    if comment:
        content["comment"] = comment
    return content


#: the comment of an exchange a recording gap cut
_GAP = "incomplete: a recording gap cut this exchange (bytes relayed but not recorded): its body lacks them and answers may be missing"


def _pairs(headers: Any) -> list[dict[str, str]]:
    return [{"name": str(h[0]), "value": str(h[1])} for h in headers or () if isinstance(h, (list, tuple)) and len(h) == 2]


def _body_size(end: dict[str, Any], headers: list[list[str]]) -> int:
    """The response body's size in bytes: as relayed (the end record), else as announced
    (``Content-Length``), else -1 (unknown, as HAR 1.2 has it)."""
    if isinstance(end.get("response_bytes"), int):
        return int(end["response_bytes"])
    length = (_header(headers, "content-length") or "").strip()
    return int(length) if length.isascii() and length.isdigit() else -1


def _rewrite(ex: Exchange, what: str) -> str | None:
    for rw in ex.rewrites:
        if rw.get("what") == what and isinstance(rw.get("rewritten"), str):
            return str(rw["rewritten"])
    return None


def _entry(ex: Exchange, epoch: int, fronts: Fronts, upstream: tuple[str, bool] = ("", False)) -> dict[str, Any]:
    """One HAR entry; ``upstream``: (query, has user info) of the capture's upstream URL."""
    req = ex.request
    target = str(req.get("target") or "/")
    t0 = int(req.get("t_us") or 0)
    client_headers = req.get("headers") or []
    host = _header(client_headers, "host")
    tap = f"http://{host}" if host else ""       # the tap as the client named it
    end = ex.end or {}
    refused = str(end.get("how")) in TAP_REFUSALS
    sent = _rewrite(ex, "target")
    mcp_upstream = not req.get("auth") and sent is None
    if refused:
        # never forwarded: no server received it, the entry is the client's request to the tap
        url, known = (tap + target if tap and target.startswith("/") else fronts.url(target, None, tap or fronts.upstream)[0]), True
        req_headers = [list(h) for h in client_headers if isinstance(h, (list, tuple))]
    else:
        url, known = fronts.url(merged_target(target, upstream[0]) if mcp_upstream else target, sent, tap or fronts.upstream)
        basic = upstream[1] and mcp_upstream and not target.startswith("/.well-known/")
        req_headers = sent_headers(client_headers, url, bool(req.get("host_rewritten")) or not host, basic)
    query = urlsplit(url).query if "?" in url else ""
    request: dict[str, Any] = {
        "method": str(req.get("method") or ""), "url": url, "httpVersion": f"HTTP/{req.get('version') or '1.1'}",
        "cookies": _cookies(req_headers), "headers": _pairs(req_headers),
        "queryString": [{"name": k, "value": v} for k, v in parse_qsl(query, keep_blank_values=True)],
        "headersSize": -1, "bodySize": -1,
    }
    if refused:
        request["comment"] = "never forwarded: the tap refused it itself; as the client sent it to the tap"
    if isinstance(end.get("request_bytes"), int):
        request["bodySize"] = end["request_bytes"]
    elif ex.body is not None:
        request["bodySize"] = len(ex.body)
    form = _rewrite(ex, "form")        # an OAuth form the tap changed (``resource`` mapped back): as sent
    if ex.body is not None or request["method"] == "POST":
        body = form.encode("utf-8") if form is not None else ex.body or b""
        post: dict[str, Any] = {"mimeType": _header(req_headers, "content-type") or ""}
        try:
            post["text"] = body.decode("utf-8")
        except UnicodeDecodeError:
            post["text"] = base64.b64encode(body).decode("ascii")
            post["comment"] = "body is not UTF-8: text is base64"
        if ex.req_raw is not None:
            post["comment"] = "; ".join(c for c in (post.get("comment"), f"the body as relayed, still {ex.req_raw.get('content_encoding')}: "
                                                    f"mcptap could not decode it ({ex.req_raw.get('undecoded')})") if c)
        request["postData"] = post
    resp = ex.response
    resp_headers = (resp or {}).get("headers") or []
    response: dict[str, Any] = {
        "status": int((resp or {}).get("status") or 0), "statusText": str((resp or {}).get("reason") or ""),
        "httpVersion": f"HTTP/{req.get('version') or '1.1'}" if resp else "", "cookies": _set_cookies(resp_headers),
        "headers": _pairs(resp_headers), "content": _content(ex, resp_headers), "redirectURL": _header(resp_headers, "location") or "",
        "headersSize": -1, "bodySize": _body_size(end, resp_headers),
    }
    tap_answer = TAP_REFUSALS.get(str(end.get("how"))) or ((502, "Bad Gateway") if end.get("sent_502") else None)
    if resp is None and tap_answer is not None:
        response["status"], response["statusText"] = tap_answer
        response["httpVersion"] = request["httpVersion"]
        response["comment"] = f"answered by mcptap itself ({end.get('how')}{': ' + str(end['detail']) if end.get('detail') else ''})"
    elif resp is None:
        response["comment"] = "no response head was relayed" + (f" ({end['how']})" if end.get("how") else "")
    # the exchange's own records only: the capture's last record (a mock that stayed up a second after
    # its client) made every answer of a capture without end records take that long
    duration: int = end["duration_us"] if isinstance(end.get("duration_us"), int) else max(0, ex.last_t - t0)
    latency: int = duration
    if resp and isinstance(resp.get("latency_us"), int):
        latency = resp["latency_us"]
    elif resp:
        latency = min(max(0, _t(resp) - t0), duration)
    send = min(max(0, (ex.body_t or t0) - t0), latency)
    timings = {"blocked": -1, "dns": -1, "connect": -1, "ssl": -1,
               "send": _ms(send), "wait": _ms(latency - send), "receive": _ms(duration - latency)}
    started = iso_us(epoch + t0)
    entry: dict[str, Any] = {
        "startedDateTime": started or iso_us(epoch) or "1970-01-01T00:00:00.000000Z", "time": round(timings["send"] + timings["wait"] + timings["receive"], 3),
        "request": request, "response": response, "cache": {}, "timings": timings, "connection": str(req.get("conn", "")),
    }
    if started is None:     # a hand-edited t_us: HAR needs a date all the same
        entry["comment"] = f"recorded time t_us {t0} is beyond the years 1-9999: startedDateTime is the capture's start"
    if ex.gap:
        entry["comment"] = "; ".join(c for c in (entry.get("comment"), _GAP) if c)
    mcp: dict[str, Any] = {"exchange": req.get("exchange"), "conn": req.get("conn")}
    if tap and url != tap + target:
        mcp["clientUrl"] = tap + target if target.startswith("/") else tap     # as the client asked the tap for it
    if req_headers != [list(h) for h in client_headers if isinstance(h, (list, tuple))]:
        mcp["clientHeaders"] = _pairs(client_headers)       # as the client sent them to the tap
    if not target.startswith("/") and "://" not in target:
        mcp["target"] = target          # asterisk- or authority-form: the URL has no path (RFC 9110 §7.1)
    if req.get("auth"):
        mcp["auth"] = req["auth"]
    if not known and tap_answer is None:        # a prefix the tap fronted nothing under: its own 404 says so
        entry["comment"] = "; ".join(c for c in (entry.get("comment"), "the URL is the tap's: the capture does not show "
                                                 "which origin it fronted under this prefix") if c)
    if ex.rewrites:
        mcp["rewrites"] = [{k: rw[k] for k in ("what", "original", "rewritten") if k in rw} for rw in ex.rewrites]
    session = req.get("session") or (resp or {}).get("session") or end.get("session")
    if session is not None:
        mcp["session"] = session
    if end.get("how"):
        mcp["how"] = end["how"]
    mcp["messages"] = ex.messages
    findings = ex.findings + (ex.gaps if ex.gap else [])
    if findings:
        mcp["findings"] = findings
    entry["_mcp"] = mcp
    return entry
