"""Streaming per-exchange summaries of one capture, for ``diff`` (pure, level 3).

``summarize(path, masker) -> Side``: the capture is streamed once
(``CaptureStream``) into compact arrays, one entry per exchange in request
order: key hash (direction, method, tool/prompt/resource name and masked
params), outcome hash (masked result or error), status (``NO_ANSWER`` /
``RESULT`` / ``ERROR``), error code, record seqs and in-flight group (requests
of one direction sent before any of them was answered share a group: their
send order is the client's scheduling, not a difference); plus the server surface
(``diff_surface.Surface``), finding counts, notification methods and latencies
per label. Whole messages are not kept. Exchanges that were no exchange with the
server are marked in ``Side.dropped`` (not compared): a request the tap refused
itself, and one the HTTP layer answered without a JSON-RPC response (refused
401/403…, redirected) that the client then sent again with the same id
(``compare/resent.py``; replay does not send them either).

``fetch(side, wanted) -> {seq: JSON}`` is the second, selective pass that
re-reads only the records ``diff`` wants to show (from ``side.source``: the
capture again, or the spool standard input was copied to, since stdin can be
read only once); ``request_and_response(side,
idx, msgs)`` picks one exchange's request and response out of its result
(batch members included). Both raise CaptureReadError.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from mcptap.capture.fields import message_value
from mcptap.capture.reader import CaptureStream
from mcptap.compare.depth import bounded
from mcptap.compare.mask import Masker
from mcptap.compare.resent import Resends, answered_at_http
from mcptap.diff.notified import notified
from mcptap.diff.scrubbed import Records
from mcptap.diff.surface import SURFACE_METHODS, Surface
from mcptap.reannotate_views import annotated
from mcptap.records.end import says_ended
from mcptap.records.events import TAP_REFUSED

NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri", "resources/subscribe": "uri",
         "resources/unsubscribe": "uri"}
NO_ANSWER, RESULT, ERROR = 0, 1, 2


def _label(direction: str, method: str, params: Any) -> str:
    key = NAMED.get(method)
    if key and isinstance(params, dict) and isinstance(params.get(key), str):
        return f"{method} {params[key]}" if direction == "c2s" else f"s2c {method} {params[key]}"
    return method if direction == "c2s" else f"s2c {method}"


def _json(rec: dict[str, Any]) -> Any:
    return bounded(message_value(rec))


@dataclass
class Side:
    """Summary of one capture (see module docstring). Arrays are indexed by
    exchange number, in request order. ``path``: the capture as named (``-``
    for stdin); ``source``: the file to read it from again (``path`` unless
    stdin was spooled)."""

    path: str
    source: str = ""
    header: dict[str, Any] = field(default_factory=dict)
    labels: list[str] = field(default_factory=list)
    label_methods: list[str] = field(default_factory=list)
    label_ids: dict[str, int] = field(default_factory=dict)
    label: array[int] = field(default_factory=lambda: array("l"))
    key: array[int] = field(default_factory=lambda: array("q"))
    out: array[int] = field(default_factory=lambda: array("q"))
    status: array[int] = field(default_factory=lambda: array("b"))
    code: array[int] = field(default_factory=lambda: array("q"))
    req_seq: array[int] = field(default_factory=lambda: array("q"))
    resp_seq: array[int] = field(default_factory=lambda: array("q"))
    group: array[int] = field(default_factory=lambda: array("q"))
    batch_member: dict[int, int] = field(default_factory=dict)
    latency: dict[int, array[int]] = field(default_factory=dict)
    surface: Surface = field(default_factory=Surface)
    findings: Counter[tuple[Any, Any]] = field(default_factory=Counter)
    notifications: Counter[tuple[Any, Any]] = field(default_factory=Counter)
    messages: int = 0
    stray: int = 0
    truncated: bool = False
    complete: bool = True
    #: exchange index -> why it is not compared (it never reached the server, or was sent again)
    dropped: dict[int, str] = field(default_factory=dict)
    #: a capture in clear diffed against a scrubbed one: its records scrubbed as they are read (diff/scrubbed.py)
    scrub: Records | None = None

    def __len__(self) -> int:
        return len(self.key)


def summarize(path: str, masker: Masker, source: str | None = None, scrub: Records | None = None) -> Side:
    """Stream one capture into a Side. ``source``: the file to read for
    ``path`` (a spool of stdin), default ``path``; ``scrub``: its records
    scrubbed as they are read (``diff/scrubbed.py``). Raises CaptureReadError."""
    source = source or path
    stream = CaptureStream(source, path)
    side = Side(path, source, stream.header, scrub=scrub)
    pending: dict[Any, int] = {}
    surface_params: dict[int, Any] = {}
    fp = masker.fingerprint
    label_ids, labels = side.label_ids, side.labels
    a_label, a_key, a_out, a_status, a_code, a_req, a_resp = (side.label, side.key, side.out, side.status, side.code,
                                                              side.req_seq, side.resp_seq)
    findings, notes = side.findings, side.notifications
    # the open in-flight group of each direction: requests join it until one of its members is answered
    open_group: dict[str, int] = {}
    a_group = side.group
    resends = Resends()
    #: HTTP: exchange -> its c2s requests (exchange indices), until its end record
    on_exchange: dict[Any, list[int]] = {}

    def answered_here(seq: int) -> int | None:
        """A c2s request answered at HTTP level (by the tap or the server): no longer pending."""
        idx = pending.pop(seq, None)
        if idx is not None and open_group.get("c2s") == a_group[idx]:
            del open_group["c2s"]               # what the client sent next, it sent knowing the answer
        return idx

    def http_end(rec: dict[str, Any]) -> None:
        carried = on_exchange.pop(rec.get("exchange"), None)
        if rec.get("how") in TAP_REFUSED:
            for idx in carried or ():
                answered_here(a_req[idx])
                side.dropped[idx] = f"the tap refused it ({rec['how']}): it never reached the server"
        for how, seqs in answered_at_http(rec):
            for seq in seqs:
                held = answered_here(seq)
                if held is not None:
                    resends.held(held, req_ids.pop(held, None), side.label_methods[a_label[held]], req_sessions.pop(held, None), how)

    req_ids: dict[int, Any] = {}            # HTTP: request id and session of each pending c2s request
    req_sessions: dict[int, Any] = {}
    http = stream.header.get("transport") == "http"

    def add_request(seq: int, d: str, value: Any, member: int | None) -> None:
        method = value.get("method")
        params = value.get("params")
        lab = _label(d, method, params)
        lid = label_ids.get(lab)
        if lid is None:
            lid = label_ids[lab] = len(labels)
            labels.append(lab)
            side.label_methods.append(method if isinstance(method, str) else "?")
        idx = len(a_key)
        a_label.append(lid)
        a_key.append(hash((lab, fp(params, method, "params"))))
        a_out.append(0)
        a_status.append(NO_ANSWER)
        a_code.append(0)
        a_req.append(seq)
        a_resp.append(-1)
        g = open_group.get(d)
        if g is None:
            g = open_group[d] = idx          # a group is named by its first exchange
        a_group.append(g)
        if member is None:
            pending[seq] = idx
        else:
            pending[(seq, _hid(value.get("id")))] = idx
            side.batch_member[idx] = member
        if method in SURFACE_METHODS:
            surface_params[idx] = params

    def add_response(seq: int, pair: Any, value: Any, t_lat: Any) -> int | None:
        idx = pending.pop(pair, None)
        if idx is None:
            idx = pending.pop((pair, _hid(value.get("id"))), None)
        if idx is None:
            return None
        lid = a_label[idx]
        method = side.label_methods[lid]
        a_resp[idx] = seq
        if req_ids:
            req_ids.pop(idx, None)
            req_sessions.pop(idx, None)
        g = a_group[idx]
        for d, open_g in list(open_group.items()):
            if open_g == g:
                del open_group[d]           # answered: later requests were sent knowing it
        if "error" in value:
            err = value["error"]
            a_status[idx] = ERROR
            c = err.get("code") if isinstance(err, dict) else None
            a_code[idx] = c if isinstance(c, int) and -(1 << 62) < c < (1 << 62) else 0
            a_out[idx] = fp(err, method, "error")
        else:
            a_status[idx] = RESULT
            result = value.get("result")
            a_out[idx] = fp(result, method, "result")
            if method in SURFACE_METHODS:
                side.surface.feed(method, surface_params.pop(idx, None), result, masker)
        if isinstance(t_lat, int):
            lat = side.latency.get(lid)
            if lat is None:
                lat = side.latency[lid] = array("q")
            lat.append(t_lat)
        return lid

    def _http_request(rec: dict[str, Any], value: dict[str, Any], idx: int) -> None:
        ex = rec["transport"].get("exchange") if isinstance(rec.get("transport"), dict) else None
        if ex is not None:
            on_exchange.setdefault(ex, []).append(idx)
        rid, session = value.get("id"), rec.get("session")
        req_ids[idx], req_sessions[idx] = rid, session
        for first, how in resends.resent(rid, value.get("method"), session):
            # the client sent it again (re-authorised, followed the redirect): that one is the exchange
            side.dropped[first] = f"{how}; re-sent as #{rec['seq']}"

    for rec in _records(stream, scrub):
        typ = rec.get("type")
        fs = rec.get("findings")
        if typ == "http" and rec.get("event") == "end":
            http_end(rec)
        if typ != "message":
            if typ == "end":
                fs = rec.get("unanswered")
            if fs:
                for f in fs:
                    if f.get("severity") != "info":
                        findings[(f.get("code"), typ)] += 1
            continue
        side.messages += 1
        kind = rec.get("kind")
        d: str = rec["dir"]          # the reader checked seq and dir of every message
        seq: int = rec["seq"]
        subject = rec.get("method")
        if kind == "request":
            value = _json(rec)
            if isinstance(value, dict):
                add_request(seq, d, value, None)
                if d == "c2s" and rec.get("rev"):
                    side.surface.note_revision(rec["rev"])
                if d == "c2s" and http:
                    _http_request(rec, value, len(a_key) - 1)
        elif kind == "response" or kind == "error":
            value = _json(rec)
            if isinstance(value, dict) and rec.get("pair") is not None:
                lid = add_response(seq, rec["pair"], value, rec.get("latency_us"))
                if lid is not None:
                    subject = side.label_methods[lid]
        elif kind == "notification":
            notes.update(notified(rec))
        elif kind == "batch":
            value = _json(rec)
            members = rec.get("members") or []
            for m in members:
                i = m.get("index")
                item = value[i] if isinstance(value, list) and isinstance(i, int) and i < len(value) else None
                if not isinstance(item, dict):
                    continue
                mk = m.get("kind")
                if mk == "request":
                    add_request(seq, d, item, i)
                elif mk in ("response", "error") and m.get("pair") is not None:
                    add_response(seq, m["pair"], item, m.get("latency_us"))
            notes.update(notified(rec))
        else:
            side.stray += 1
        if fs:
            for f in fs:
                if f.get("severity") != "info":
                    findings[(f.get("code"), subject or kind)] += 1
    side.truncated = stream.truncated
    side.complete = says_ended(stream.end)      # (one marked incomplete: a transform's copy of a cut capture)
    return side


def _records(stream: CaptureStream, scrub: Records | None) -> Iterator[dict[str, Any]]:
    return annotated(stream) if scrub is None else scrub(annotated(stream))


def _hid(v: Any) -> Any:
    return v if isinstance(v, (int, str)) else repr(v)


def fetch(side: Side, wanted: set[int]) -> dict[int, Any]:
    """Second pass over ``side``'s capture: the parsed JSON of the message
    records whose seq is wanted."""
    out: dict[int, Any] = {}
    if not wanted:
        return out
    for rec in _records(CaptureStream(side.source or side.path, side.path), side.scrub):
        s = rec.get("seq")
        if s in wanted and rec.get("type") == "message":
            out[s] = _json(rec)
            if len(out) == len(wanted):
                break
    return out


def _member(value: Any, member: int | None, rid: Any = None) -> Any:
    if isinstance(value, list):
        if member is not None:
            return value[member] if member < len(value) else None
        for v in value:
            if isinstance(v, dict) and v.get("id") == rid:
                return v
        return None
    return value


def request_and_response(side: Side, idx: int, msgs: dict[int, Any]) -> tuple[Any, Any]:
    """(request, response) JSON-RPC objects of exchange ``idx`` of ``side`` out of
    ``fetch``'s ``msgs`` (batch members picked out; None when absent)."""
    req = _member(msgs.get(side.req_seq[idx]), side.batch_member.get(idx))
    rid = req.get("id") if isinstance(req, dict) else None
    rs = side.resp_seq[idx]
    resp = _member(msgs.get(rs), None, rid) if rs >= 0 else None
    return req, resp
