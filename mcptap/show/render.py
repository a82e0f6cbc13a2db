"""``mcptap show`` output: timeline, summary, JSON lines, Mermaid (level 3).

Pure consumers of (re-annotated) capture records: every function returns or
yields strings and never prints; colour is an injected ``style(text, role)``
callable (roles: ``error warn info c2s s2c dim bold ok``) so this module needs
no terminal library. All of it streams: memory is bounded by the requests
still open, the number of distinct methods/tools and a fixed-size latency
histogram per method, never by the length of the capture.

Timeline line (text)::

    seq  time      dir  kind   what                              pair          phase       findings
      5  0.120s  C → S  req    tools/call echo id=3                            operating
      7  0.155s  C ← S  resp   tools/call echo id=3              ↩ #5 35.0ms   operating   ! jsonrpc.x
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from mcptap.capture.dumps import dumps
from mcptap.capture.fields import data_size, message_json, record_findings
from mcptap.escape import escape_os, shown
from mcptap.filters.members import member_views
from mcptap.filters.operators import Filter
from mcptap.model import KIND_SHOWN, PHASE_SHOWN, SEVERITY_RANK
from mcptap.records.refusals import refused_how, tap_answer
from mcptap.show.lone import LoneNames
from mcptap.show.sessions import Sessions
from mcptap.show.summary import Summary
from mcptap.show.tracker import Tracker
from mcptap.show.values import Style, bytes_repr, fmt_us, id_text, is_tool_error, lossy, method_of, plain, record_id, shorten, tool_name

_ARROW = {"c2s": "C → S", "s2c": "C ← S"}
_SEV_MARK = {"error": "✖", "warn": "!", "info": "i"}


def refusal_mark(rec: dict[str, Any]) -> str | None:
    """``"⊘ tap 403"`` for a record of a request the tap refused itself (it never
    reached the server: ``records.refusals``), the refusal's ``how`` escaped when
    this mcptap has no status for it; None for any other record."""
    how = refused_how(rec)
    if how is None:
        return None
    status = tap_answer(how)["status"]
    return f"⊘ tap {status}" if status is not None else "⊘ tap " + shorten(how, 16)


# -- timeline ------------------------------------------------------------------------------

def _what(rec: dict[str, Any], req: dict[str, Any] | None) -> str:
    return shown(_what_raw(rec, req))


def _what_raw(rec: dict[str, Any], req: dict[str, Any] | None) -> str:
    kind = rec.get("kind")
    method = method_of(rec)
    if kind == "request":
        tool = tool_name(rec)
        return f"{method}{' ' + tool if tool else ''} id={id_text(record_id(rec))}"
    if kind == "notification":
        v = message_json(rec)
        params = v.get("params") if isinstance(v, dict) else None
        params = params if isinstance(params, dict) else {}
        extra = f" → #{req['seq']}" if req is not None else ""
        if method == "notifications/progress":
            total = params.get("total")
            extra = f" {params.get('progress')}{'/' + str(total) if total is not None else ''}" + extra
        elif method == "notifications/cancelled":
            reason = params.get("reason")
            extra = f" id={id_text(params.get('requestId'))}" + extra + (f" ({reason})" if isinstance(reason, str) else "")
        elif method == "notifications/message":
            extra = f" {params.get('level', '')} {shorten(_text_of(params.get('data', '')), 40)}"
        return f"{method}{extra}"
    if kind in ("response", "error"):
        head = ""
        if req is not None and req.get("method"):
            head = f"{req.get('method')}{' ' + req['tool'] if req.get('tool') else ''} "
        text = f"{head}id={id_text(record_id(rec))}" if "id" in rec else head + "(no id)"
        if kind == "error":
            v = message_json(rec)
            err = v.get("error") if isinstance(v, dict) else None
            if isinstance(err, dict):
                text += f" error {err.get('code')} {shorten(str(err.get('message', '')), 40)}"
        elif req is not None and req.get("tool") and is_tool_error(rec, True):
            text += " isError"
        return text
    if kind == "batch":
        members = rec.get("members") or []
        if not members:
            return "empty batch []"
        # a member's method as the peer sent it (a lone surrogate exact, escaped by shorten), as a plain message's
        exact = {v["member"]: method_of(v) for v in member_views(rec)} if any("\ufffd" in str(m.get("method")) for m in members[:4]) else {}
        return f"batch of {len(members)}: " + ", ".join(exact.get(m.get("index")) or m.get("method") or m.get("kind", "?")
                                                        for m in members[:4]) + (" …" if len(members) > 4 else "")
    return shorten(bytes_repr(rec), 60)       # a byte that is not UTF-8 as \xff, not U+FFFD


def _text_of(v: Any) -> str:
    """``str(v)`` of a peer's value; its JSON when it nests beyond what repr() can walk."""
    try:
        return str(v)
    except RecursionError:
        return dumps(v).decode()


def _other(rec: dict[str, Any]) -> str:
    return shown(_other_raw(rec))


def _other_raw(rec: dict[str, Any]) -> str:
    typ = rec.get("type")
    if typ == "stderr":
        return f"stderr   {shorten(bytes_repr(rec, chr(10)), 70)} ({data_size(rec)} B)"
    if typ == "eof":
        if rec.get("dir") not in ("c2s", "s2c"):
            return f"eof {rec.get('dir')}"
        return "eof      " + ("client closed the server's stdin" if rec.get("dir") == "c2s" else "server closed its stdout")
    if typ == "process":
        ev = rec.get("event", "?")
        bits = [f"{k}={rec[k]}" for k in ("code", "signal", "pid") if rec.get(k) is not None]
        return f"process  {ev} {' '.join(bits)}".rstrip()
    if typ == "context":
        state = rec.get("state") or {}
        return "context  assumed " + " ".join(f"{k}={v}" for k, v in state.items() if not isinstance(v, dict))
    if typ == "gap":
        return f"gap      {rec.get('reason', '')}"
    if typ == "http" and rec.get("auth"):
        return _auth_raw(rec)
    skip = {"type", "seq", "t_us", "findings", "refused"}
    bits = [f"{k}={v}" for k, v in rec.items() if k not in skip and isinstance(v, (str, int, float))][:6]
    mark = refusal_mark(rec)
    if mark is not None:        # the tap answered it itself: said first, the fields may not all fit
        bits.insert(0, f"{mark}: refused, never forwarded;")
    return f"{typ:<8} {' '.join(bits)}"


#: what each OAuth exchange kind is (relay/http/auth.py route kinds)
_AUTH_KIND = {"prm": "resource metadata", "as_meta": "auth server metadata", "as": "authorization server", "mcp": "MCP endpoint"}


def _auth_raw(rec: dict[str, Any]) -> str:
    """The OAuth flow through the tap, marked ``auth`` in the timeline."""
    ev, kind = rec.get("event"), _AUTH_KIND.get(str(rec.get("auth")), str(rec.get("auth")))
    if ev == "request":
        return f"auth  ▸ {kind}: {rec.get('method', '')} {shorten(str(rec.get('target', '')), 70)}"
    if ev == "response":
        return f"auth  ◂ {kind}: {rec.get('status', '')} {rec.get('reason', '')}"
    if ev == "auth_rewrite":
        return f"auth  ✎ {rec.get('what', '')} pointed at the tap" if rec.get("what") not in ("target", "form") \
            else f"auth  ✎ resource mapped back to the upstream ({rec.get('what')})"
    if ev in ("request_body", "response_body"):
        return f"auth    {ev.replace('_', ' ')} {shorten(str(rec.get('body', rec.get('body_b64', ''))), 60)}"
    if ev == "end":
        return f"auth    end {rec.get('how', '')}"
    return f"auth    {ev}"


def _findings_lines(fs: list[dict[str, Any]], st: Style, names: LoneNames | None = None) -> Iterator[str]:
    for f in fs:
        s = f.get("severity", "info")
        text = f"{'':>17}{_SEV_MARK.get(s, '?')} {s:<5} {f.get('code')}: {f.get('message', '')}"
        yield st(shown(names.text(text) if names is not None else text), s if s != "info" else "dim")


def _codes(fs: list[dict[str, Any]], st: Style) -> str:
    return " ".join(st(shown(f"{_SEV_MARK.get(f.get('severity') or '', '?')} {f.get('code')}"), f.get("severity", "info")) for f in fs)


COLUMNS = f"{'seq':>6} {'time':>9}  {'dir':<5}  {'kind':<5}  {'what':<44} {'pair':<15} {'phase':<12} findings"


def timeline_line(rec: dict[str, Any], req: dict[str, Any] | None, style: Style = plain) -> str:
    """One timeline line for one record (no findings detail)."""
    st = style
    t = rec.get("t_us")
    seq = rec.get("seq")      # None in a hand-edited record ("seq": null): the reader lets it through
    head = f"{'' if seq is None else seq:>6} {(t or 0) / 1e6:>8.3f}s"
    fs = record_findings(rec)
    if rec.get("type") != "message":
        return f"{head}  {st(_other(rec), 'dim')}" + (f"  {_codes(fs, st)}" if fs else "")
    d = rec.get("dir", "")
    pair = f"↩ #{rec['pair']} {fmt_us(rec.get('latency_us'))}" if rec.get("pair") is not None else ""
    what = shorten(_what(rec, req), 44)
    kind = shown(str(KIND_SHOWN.get(rec.get("kind", ""), rec.get("kind", ""))))
    phase = shown(str(rec.get("phase") or ""))
    mark = refusal_mark(rec)
    if mark is not None:        # never reached the server: the tap's answer where a reply would be, no phase
        pair, phase = mark, "refused"
    line = f"{head}  {st(_ARROW.get(d) or shown(str(d)), d)}  {kind:<5}  {what:<44} {pair:<15} {PHASE_SHOWN.get(phase, phase):<12}"
    return (line + " " + _codes(fs, st)) if fs else line.rstrip()


def _header_lines(header: dict[str, Any], path: str | None, st: Style) -> Iterator[str]:
    target = header.get("target") or {}
    where = " ".join(target["argv"]) if isinstance(target.get("argv"), list) else target.get("url", "")
    # a file name and the target's argv: OS text (escape_os: a byte that is not UTF-8 as \\xff)
    yield st(escape_os(f"{path or 'capture'}"), "bold") + escape_os(f"  {header.get('transport', '?')}  started {header.get('started', '?')}  {where}".rstrip())


def timeline(records: Iterable[dict[str, Any]], header: dict[str, Any], flt: Filter | None = None, style: Style | None = None,
             details: bool = True, summary: bool = True, path: str | None = None) -> Iterator[str]:
    """The text timeline: a header line, one line per record that passes
    ``flt`` (with an indented line per finding when ``details``), then the
    summary of the shown records (bytes and pending requests from the end
    record). Yields lines without newline."""
    st = style or plain
    tracker = Tracker()
    names = LoneNames()         # finding texts quote a lone surrogate's name exactly, as the timeline does
    summ = Summary(header.get("transport", "stdio"))
    yield from _header_lines(header, path, st)
    yield st(COLUMNS, "dim")
    for rec in records:
        req = tracker.feed(rec)
        names.feed(rec, tracker.members)
        if rec.get("type") == "end":
            summ.feed(rec, req)
            for f in rec.get("capture") or ():
                yield st(shown(names.text(f"{'':>17}{_SEV_MARK.get(f.get('severity'), '?')} {f.get('severity'):<5} {f.get('code')}: {f.get('message')}")),
                         f.get("severity", "info"))
            if details:
                yield from _findings_lines(rec.get("unanswered") or [], st, names)
            continue
        if flt is not None and not flt(rec, req, tracker.members):
            summ.skip(rec)
            continue
        summ.feed(rec, req, tracker.members)
        yield timeline_line(rec, req, st)
        if details:
            fs = record_findings(rec)
            if fs:
                yield from _findings_lines(fs, st, names)
    if summary:
        yield ""
        yield from summ.lines(st)


# -- JSON lines -----------------------------------------------------------------------

def json_lines(records: Iterable[dict[str, Any]], header: dict[str, Any], flt: Filter | None = None) -> Iterator[str]:
    """JSON Lines: the header, every re-annotated record that passes ``flt``
    (responses, progress and cancellations gain ``request``: ``{seq, method,
    tool}`` of the request they belong to; a record of a request the tap refused itself
    gains ``tap_answer``: ``{how, status, reason}``, what the client got, as the timeline's
    ``⊘ tap 403``), the end record, then a
    ``{"type": "summary", …}`` object whose ``sessions`` is the capture's
    session identities, as the report's session headers give them
    (``show/sessions.py``: ``[{session, label, client, server, revision, via}]``,
    always there, from every record whatever the filter). One JSON object per string."""
    tracker = Tracker()
    names = LoneNames()         # finding texts quote a lone surrogate's name exactly (a JSON escape), as the timeline does
    summ = Summary(header.get("transport", "stdio"))
    sessions = Sessions(header.get("transport"))
    yield dumps(header).decode()
    for rec in records:
        req = tracker.feed(rec)
        sessions.feed(rec)
        names.feed(rec, tracker.members)
        if rec.get("type") != "end" and flt is not None and not flt(rec, req, tracker.members):
            summ.skip(rec)
            continue
        summ.feed(rec, req, tracker.members)
        if req is not None and rec.get("kind") != "request":
            # as the request's record has them (a lone surrogate U+FFFD, its id_text exact): every line reads as strict JSON
            rec = dict(rec, request={"seq": req["seq"], "method": lossy(req.get("method")), "tool": lossy(req.get("tool"))})
        how = refused_how(rec)
        if how is not None:
            rec = dict(rec, tap_answer=tap_answer(how))
        rid = rec.get("id")
        if type(rid) is str and "\ufffd" in rid and "id_text" not in rec and record_id(rec) != rid:
            rec = dict(rec, id_text=id_text(record_id(rec)))     # written before id_text: as a record of today has it
        yield dumps(names.findings(rec)).decode()
    yield dumps(dict(summ.to_json(), sessions=sessions.result())).decode()


# -- Mermaid --------------------------------------------------------------------------------

_MM_ESCAPES = {ord("#"): "#35;", ord(";"): "#59;", ord("<"): "#60;", ord(">"): "#62;", ord("\r"): " ", ord("\n"): " "}


def _mm(text: str) -> str:
    # Mermaid entity codes: '#' starts one, ';' ends a statement, '<' '>' read as HTML
    return shown(text.translate(_MM_ESCAPES))


def mermaid(records: Iterable[dict[str, Any]], header: dict[str, Any], flt: Filter | None = None,
            notes: str = "warn") -> Iterator[str]:
    """A Mermaid ``sequenceDiagram``: one arrow per message (``->>`` request,
    ``-)`` notification, ``-->>`` result, ``--x`` error, ``--)`` non-JSON
    output), notes for findings at or above ``notes`` (error|warn|info|never),
    eof and process exit."""
    rank = SEVERITY_RANK.get(notes, 99)
    tracker = Tracker()
    yield "sequenceDiagram"
    yield "    participant C as Client"
    yield "    participant S as Server"
    for rec in records:
        req = tracker.feed(rec)
        typ = rec.get("type")
        if typ == "end":
            fs = (rec.get("unanswered") or []) + (rec.get("capture") or [])
        elif flt is not None and not flt(rec, req, tracker.members):
            continue
        else:
            fs = record_findings(rec)
        seq = rec.get("seq")
        if typ == "message":
            d = rec.get("dir")
            a, b = ("C", "S") if d == "c2s" else ("S", "C")
            kind = rec.get("kind")
            arrow = {"request": "->>", "notification": "-)", "response": "-->>", "error": "--x", "batch": "->>"}.get(kind or "", "--)")
            label = _what(rec, req)
            mark = refusal_mark(rec)
            if mark is not None:
                label += f" ({mark}: refused)"
            if kind in ("response", "error") and rec.get("latency_us") is not None:
                label += f" ({fmt_us(rec['latency_us'])})"
            yield f"    {a}{arrow}{b}: {_mm(f'{seq} {label}')}"
        elif typ == "eof":
            who = "C" if rec.get("dir") == "c2s" else "S"
            yield f"    Note over {who}: {_mm(f'{seq} eof')}"
        elif typ == "process" and rec.get("event") == "exit":
            how = f"signal {rec['signal']}" if rec.get("signal") is not None else f"status {rec.get('code')}"
            yield f"    Note over S: {_mm(f'{seq} exit {how}')}"
        for f in fs:
            if SEVERITY_RANK.get(f.get("severity") or "", 0) >= rank:
                yield f"    Note over C,S: {_mm(_SEV_MARK.get(f.get('severity'), '?') + ' ' + str(f.get('code')))}"


def render_timeline(cap: Any, flt: Filter | None = None, style: Style | None = None) -> str:
    """The timeline of an in-memory ``capture.Capture`` as one string,
    re-annotated with today's rules (used by ``mcptap demo``)."""
    from mcptap.check.reannotated import Reannotated

    ra = Reannotated(cap.header, cap.records, cap.path, lambda: cap.truncated)
    return "\n".join(timeline(ra, cap.header, flt, style, path=cap.path))
