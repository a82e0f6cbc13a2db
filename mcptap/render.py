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

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import orjson

from mcptap.filters import Filter, message_json, message_text, record_findings, tool_of

Style = Callable[[str, str], str]
_ARROW = {"c2s": "C → S", "s2c": "C ← S"}
_KIND = {"request": "req", "notification": "notif", "response": "resp", "error": "err", "batch": "batch",
         "invalid": "inval", "non_json": "text"}
_SEV_MARK = {"error": "✖", "warn": "!", "info": "i"}
_RANK = {"info": 0, "warn": 1, "error": 2}


def _plain(text: str, role: str) -> str:
    return text


def fmt_us(us: int | float | None) -> str:
    """A duration in µs as ``850µs``, ``35.0ms`` or ``2.40s``."""
    if us is None:
        return "?"
    if us < 1000:
        return f"{int(us)}µs"
    if us < 1_000_000:
        return f"{us / 1000:.1f}ms"
    return f"{us / 1e6:.2f}s"


def _short(s: str, n: int) -> str:
    s = s.replace("\r", "\\r").replace("\n", "\\n")
    return s if len(s) <= n else s[: n - 1] + "…"


def _idtext(v: Any) -> str:
    return repr(v) if isinstance(v, str) else orjson.dumps(v).decode()


# -- request context -----------------------------------------------------------------

class Tracker:
    """Links records to the request they belong to, for display and filters.

    ``feed(record) -> request info or None``: for a response its request
    (via ``pair``); for ``notifications/progress`` and
    ``notifications/cancelled`` the request named by their ``link``. Request
    info is a dict ``{"seq", "method", "tool", "id"}``. Only open requests are
    held (answered ones are dropped), so memory follows concurrency, not length.
    """

    __slots__ = ("_open",)

    def __init__(self) -> None:
        self._open: dict[int, dict[str, Any]] = {}

    def feed(self, rec: dict[str, Any]) -> dict[str, Any] | None:
        if rec.get("type") != "message":
            return None
        kind = rec.get("kind")
        if kind == "request":
            info = {"seq": rec["seq"], "method": rec.get("method"), "tool": tool_of(rec), "id": rec.get("id")}
            self._open[rec["seq"]] = info
            return info
        if kind in ("response", "error"):
            pair = rec.get("pair")
            return None if pair is None else self._open.pop(pair, None) or {"seq": pair, "method": None, "tool": None}
        link = rec.get("link")
        if link is not None:
            return self._open.get(link) or {"seq": link, "method": None, "tool": None}
        if kind == "batch":
            for m in rec.get("members", ()):
                if m.get("pair") is not None:
                    self._open.pop(m["pair"], None)
        return None


# -- latency histogram -----------------------------------------------------------------

def _bucket(us: int) -> int:
    # exact below 1 ms, 3 significant digits above: bounded size, <1 % error
    if us < 1000:
        return us
    e = 10 ** (len(str(us)) - 3)
    return us // e * e


class Latencies:
    """Latency distribution in bounded memory (exact below 1 ms, else to 3
    significant digits). ``add(us)``; ``percentile(p)`` (0-100) in µs."""

    __slots__ = ("counts", "n", "max")

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}
        self.n = 0
        self.max = 0

    def add(self, us: int) -> None:
        b = _bucket(us)
        self.counts[b] = self.counts.get(b, 0) + 1
        self.n += 1
        if us > self.max:
            self.max = us

    def percentile(self, p: float) -> int | None:
        if not self.n:
            return None
        rank = max(1, -(-self.n * p // 100))   # nearest-rank method
        seen = 0
        for b in sorted(self.counts):
            seen += self.counts[b]
            if seen >= rank:
                return min(b, self.max)
        return self.max

    def to_json(self) -> dict[str, Any]:
        return {"count": self.n, "p50_us": self.percentile(50), "p90_us": self.percentile(90),
                "p99_us": self.percentile(99), "max_us": self.max if self.n else None}


# -- summary ------------------------------------------------------------------------------

class _Stat:
    __slots__ = ("c2s", "s2c", "errors", "lat")

    def __init__(self) -> None:
        self.c2s = 0
        self.s2c = 0
        self.errors = 0
        self.lat = Latencies()


class Summary:
    """Counts over the records fed: messages per direction and kind, per
    method (requests + notifications; responses count towards their request's
    latency and errors), per tool (``tools/call``), findings by severity and
    code; from the end record: bytes per direction and pending requests."""

    def __init__(self) -> None:
        self.messages = {"c2s": 0, "s2c": 0}
        self.kinds: dict[str, int] = {}
        self.methods: dict[str, _Stat] = {}
        self.tools: dict[str, _Stat] = {}
        self.severities = {"error": 0, "warn": 0, "info": 0}
        self.codes: dict[str, int] = {}
        self.first_us: int | None = None
        self.last_us = 0
        self.end: dict[str, Any] | None = None
        self.stderr_bytes = 0

    def feed(self, rec: dict[str, Any], req: dict[str, Any] | None) -> None:
        typ = rec.get("type")
        t = rec.get("t_us")
        if isinstance(t, int):
            if self.first_us is None:
                self.first_us = t
            if t > self.last_us:
                self.last_us = t
        for f in record_findings(rec) + (rec.get("capture") or [] if typ == "end" else []):
            s = f.get("severity")
            if s in self.severities:
                self.severities[s] += 1
            c = f.get("code", "?")
            self.codes[c] = self.codes.get(c, 0) + 1
        if typ == "end":
            self.end = rec
            return
        if typ == "stderr":
            self.stderr_bytes += len(message_text(rec).encode("utf-8", "replace"))
            return
        if typ != "message":
            return
        d = rec.get("dir", "c2s")
        self.messages[d] = self.messages.get(d, 0) + 1
        kind = rec.get("kind", "?")
        self.kinds[kind] = self.kinds.get(kind, 0) + 1
        method = rec.get("method")
        if method is not None and kind in ("request", "notification"):
            st = self.methods.get(method)
            if st is None:
                st = self.methods[method] = _Stat()
            if d == "c2s":
                st.c2s += 1
            else:
                st.s2c += 1
            tool = tool_of(rec)
            if tool is not None:
                ts = self.tools.get(tool)
                if ts is None:
                    ts = self.tools[tool] = _Stat()
                ts.c2s += 1
        elif kind in ("response", "error") and req is not None:
            lat = rec.get("latency_us")
            for table, key in ((self.methods, req.get("method")), (self.tools, req.get("tool"))):
                if key is None:
                    continue
                st = table.get(key)
                if st is None:
                    st = table[key] = _Stat()
                if isinstance(lat, int):
                    st.lat.add(lat)
                if kind == "error" or _is_tool_error(rec, table is self.tools):
                    st.errors += 1

    def to_json(self) -> dict[str, Any]:
        end = self.end or {}
        out: dict[str, Any] = {
            "type": "summary",
            "messages": dict(self.messages), "kinds": dict(sorted(self.kinds.items())),
            "duration_us": self.last_us - (self.first_us or 0),
            "methods": {m: {"c2s": s.c2s, "s2c": s.s2c, "errors": s.errors, "latency": s.lat.to_json()} for m, s in sorted(self.methods.items())},
            "tools": {m: {"calls": s.c2s, "errors": s.errors, "latency": s.lat.to_json()} for m, s in sorted(self.tools.items())},
            "findings": dict(self.severities), "codes": dict(sorted(self.codes.items())),
            "bytes": {d: (end.get(d) or {}).get("bytes") for d in ("c2s", "s2c")},
            "pending": end.get("pending", []),
            "complete": bool(self.end) and not any(f.get("code") == "capture.incomplete" for f in end.get("capture", ())),
        }
        if isinstance(end.get("stderr"), dict):
            out["bytes"]["stderr"] = end["stderr"].get("bytes")
        if "exit_code" in end:
            out["exit_code"] = end["exit_code"]
        return out

    def lines(self, style: Style = _plain) -> Iterator[str]:
        j = self.to_json()
        st = style
        m = j["messages"]
        yield st("Summary", "bold")
        yield (f"  {m.get('c2s', 0) + m.get('s2c', 0)} messages (c2s {m.get('c2s', 0)}, s2c {m.get('s2c', 0)}) over {fmt_us(j['duration_us'])}"
               + (f"; exit status {j['exit_code']}" if "exit_code" in j else ""))
        b = j["bytes"]
        yield "  bytes: " + ", ".join(f"{k} {v:,}" for k, v in b.items() if v is not None) if any(v is not None for v in b.values()) else "  bytes: unknown (no end record)"
        if j["methods"]:
            yield st(f"  {'method':<34} {'c2s':>6} {'s2c':>6} {'err':>5} {'p50':>8} {'p90':>8} {'p99':>8} {'max':>8}", "dim")
            for name, s in j["methods"].items():
                lat = s["latency"]
                yield (f"  {_short(name, 34):<34} {s['c2s']:>6} {s['s2c']:>6} {s['errors']:>5} "
                       + " ".join(f"{fmt_us(lat[k]) if lat[k] is not None else '-':>8}" for k in ("p50_us", "p90_us", "p99_us", "max_us")))
        if j["tools"]:
            yield st(f"  {'tool':<34} {'calls':>6} {'':>6} {'err':>5} {'p50':>8} {'p90':>8} {'p99':>8} {'max':>8}", "dim")
            for name, s in j["tools"].items():
                lat = s["latency"]
                yield (f"  {_short(name, 34):<34} {s['calls']:>6} {'':>6} {s['errors']:>5} "
                       + " ".join(f"{fmt_us(lat[k]) if lat[k] is not None else '-':>8}" for k in ("p50_us", "p90_us", "p99_us", "max_us")))
        if j["pending"]:
            yield st(f"  pending at end: {len(j['pending'])}", "warn")
            for p in j["pending"][:20]:
                yield f"    #{p.get('seq')} {p.get('method')} id={_idtext(p.get('id'))} from the {'client' if p.get('dir') == 'c2s' else 'server'}"
        f = j["findings"]
        yield ("  findings: " + ", ".join(st(f"{f[s]} {s}", s) if f[s] else f"0 {s}" for s in ("error", "warn", "info")))
        if not j["complete"]:
            yield st("  capture incomplete: no end record (mcptap killed, or still recording)", "warn")


def _is_tool_error(rec: dict[str, Any], is_tool: bool) -> bool:
    if not is_tool or rec.get("kind") != "response":
        return False
    v = message_json(rec)
    res = v.get("result") if isinstance(v, dict) else None
    return isinstance(res, dict) and res.get("isError") is True


# -- timeline ------------------------------------------------------------------------------

def _what(rec: dict[str, Any], req: dict[str, Any] | None) -> str:
    kind = rec.get("kind")
    method = rec.get("method")
    if kind == "request":
        tool = tool_of(rec)
        return f"{method}{' ' + tool if tool else ''} id={_idtext(rec.get('id'))}"
    if kind == "notification":
        v = message_json(rec)
        params = v.get("params") if isinstance(v, dict) else None
        params = params if isinstance(params, dict) else {}
        extra = ""
        if method == "notifications/progress":
            total = params.get("total")
            extra = f" {params.get('progress')}{'/' + str(total) if total is not None else ''}"
        elif method == "notifications/cancelled":
            reason = params.get("reason")
            extra = f" id={_idtext(params.get('requestId'))}" + (f" ({reason})" if isinstance(reason, str) else "")
        elif method == "notifications/message":
            extra = f" {params.get('level', '')} {_short(str(params.get('data', '')), 40)}"
        if req is not None:
            extra += f" → #{req['seq']}"
        return f"{method}{extra}"
    if kind in ("response", "error"):
        head = ""
        if req is not None and req.get("method"):
            head = f"{req.get('method')}{' ' + req['tool'] if req.get('tool') else ''} "
        text = f"{head}id={_idtext(rec.get('id'))}" if "id" in rec else head + "(no id)"
        if kind == "error":
            v = message_json(rec)
            err = v.get("error") if isinstance(v, dict) else None
            if isinstance(err, dict):
                text += f" error {err.get('code')} {_short(str(err.get('message', '')), 40)}"
        elif req is not None and req.get("tool") and _is_tool_error(rec, True):
            text += " isError"
        return text
    if kind == "batch":
        members = rec.get("members") or []
        return f"batch of {len(members)}: " + ", ".join(m.get("method") or m.get("kind", "?") for m in members[:4]) + (" …" if len(members) > 4 else "")
    return repr(_short(message_text(rec).rstrip("\r\n"), 60))


def _other(rec: dict[str, Any]) -> str:
    typ = rec.get("type")
    if typ == "stderr":
        text = message_text(rec)
        return f"stderr   {_short(text.rstrip(chr(10)), 70)!r} ({len(text.encode('utf-8', 'replace'))} B)"
    if typ == "eof":
        return "eof      " + ("client closed the server's stdin" if rec.get("dir") == "c2s" else "server closed its stdout") if rec.get("dir") in ("c2s", "s2c") else f"eof {rec.get('dir')}"
    if typ == "process":
        ev = rec.get("event", "?")
        bits = [f"{k}={rec[k]}" for k in ("code", "signal", "pid") if rec.get(k) is not None]
        return f"process  {ev} {' '.join(bits)}".rstrip()
    if typ == "context":
        state = rec.get("state") or {}
        return "context  assumed " + " ".join(f"{k}={v}" for k, v in state.items() if not isinstance(v, dict))
    if typ == "gap":
        return f"gap      {rec.get('reason', '')}"
    skip = {"type", "seq", "t_us", "findings"}
    bits = [f"{k}={v}" for k, v in rec.items() if k not in skip and isinstance(v, (str, int, float))][:6]
    return f"{typ:<8} {' '.join(bits)}"


def _findings_lines(fs: list[dict[str, Any]], st: Style) -> Iterator[str]:
    for f in fs:
        s = f.get("severity", "info")
        yield st(f"{'':>17}{_SEV_MARK.get(s, '?')} {s:<5} {f.get('code')}: {f.get('message', '')}", s if s != "info" else "dim")


def _codes(fs: list[dict[str, Any]], st: Style) -> str:
    return " ".join(st(f"{_SEV_MARK.get(f.get('severity'), '?')} {f.get('code')}", f.get("severity", "info")) for f in fs)


COLUMNS = f"{'seq':>6} {'time':>9}  {'dir':<5}  {'kind':<5}  {'what':<44} {'pair':<15} {'phase':<12} findings"


def timeline_line(rec: dict[str, Any], req: dict[str, Any] | None, style: Style = _plain) -> str:
    """One timeline line for one record (no findings detail)."""
    st = style
    t = rec.get("t_us")
    head = f"{rec.get('seq', ''):>6} {(t or 0) / 1e6:>8.3f}s"
    fs = record_findings(rec)
    if rec.get("type") != "message":
        return f"{head}  {st(_other(rec), 'dim')}" + (f"  {_codes(fs, st)}" if fs else "")
    d = rec.get("dir", "")
    pair = f"↩ #{rec['pair']} {fmt_us(rec.get('latency_us'))}" if rec.get("pair") is not None else ""
    what = _short(_what(rec, req), 44)
    kind = _KIND.get(rec.get("kind", ""), rec.get("kind", ""))
    line = f"{head}  {st(_ARROW.get(d, d), d)}  {kind:<5}  {what:<44} {pair:<15} {rec.get('phase') or '':<12}"
    return (line + " " + _codes(fs, st)) if fs else line.rstrip()


def _header_lines(header: dict[str, Any], path: str | None, st: Style) -> Iterator[str]:
    target = header.get("target") or {}
    where = " ".join(target["argv"]) if isinstance(target.get("argv"), list) else target.get("url", "")
    yield st(f"{path or 'capture'}", "bold") + f"  {header.get('transport', '?')}  started {header.get('started', '?')}  {where}".rstrip()


def timeline(records: Iterable[dict[str, Any]], header: dict[str, Any], flt: Filter | None = None, style: Style | None = None,
             details: bool = True, summary: bool = True, path: str | None = None) -> Iterator[str]:
    """The text timeline: a header line, one line per record that passes
    ``flt`` (with an indented line per finding when ``details``), then the
    summary of the shown records (bytes and pending requests from the end
    record). Yields lines without newline."""
    st = style or _plain
    tracker = Tracker()
    summ = Summary()
    yield from _header_lines(header, path, st)
    yield st(COLUMNS, "dim")
    for rec in records:
        req = tracker.feed(rec)
        if rec.get("type") == "end":
            summ.feed(rec, req)
            for f in rec.get("capture") or ():
                yield st(f"{'':>17}{_SEV_MARK.get(f.get('severity'), '?')} {f.get('severity'):<5} {f.get('code')}: {f.get('message')}", f.get("severity", "info"))
            if details:
                yield from _findings_lines(rec.get("unanswered") or [], st)
            continue
        if flt is not None and not flt(rec, req):
            continue
        summ.feed(rec, req)
        yield timeline_line(rec, req, st)
        if details:
            fs = record_findings(rec)
            if fs:
                yield from _findings_lines(fs, st)
    if summary:
        yield ""
        yield from summ.lines(st)


# -- JSON lines -----------------------------------------------------------------------

def json_lines(records: Iterable[dict[str, Any]], header: dict[str, Any], flt: Filter | None = None) -> Iterator[str]:
    """JSON Lines: the header, every re-annotated record that passes ``flt``
    (responses, progress and cancellations gain ``request``: ``{seq, method,
    tool}`` of the request they belong to), the end record, then a
    ``{"type": "summary", …}`` object. One JSON object per string."""
    dumps = orjson.dumps
    tracker = Tracker()
    summ = Summary()
    yield dumps(header).decode()
    for rec in records:
        req = tracker.feed(rec)
        if rec.get("type") != "end" and flt is not None and not flt(rec, req):
            continue
        summ.feed(rec, req)
        if req is not None and rec.get("kind") != "request":
            rec = dict(rec, request={"seq": req["seq"], "method": req.get("method"), "tool": req.get("tool")})
        yield dumps(rec).decode()
    yield dumps(summ.to_json()).decode()


# -- Mermaid --------------------------------------------------------------------------------

def _mm(text: str) -> str:
    # Mermaid entity codes: '#' starts one, ';' ends a statement, '<' '>' read as HTML
    return (text.replace("#", "#35;").replace(";", "#59;").replace("<", "#60;").replace(">", "#62;")
            .replace("\r", " ").replace("\n", " "))


def mermaid(records: Iterable[dict[str, Any]], header: dict[str, Any], flt: Filter | None = None,
            notes: str = "warn") -> Iterator[str]:
    """A Mermaid ``sequenceDiagram``: one arrow per message (``->>`` request,
    ``-)`` notification, ``-->>`` result, ``--x`` error, ``--)`` non-JSON
    output), notes for findings at or above ``notes`` (error|warn|info|never),
    eof and process exit."""
    rank = _RANK.get(notes, 99)
    tracker = Tracker()
    yield "sequenceDiagram"
    yield "    participant C as Client"
    yield "    participant S as Server"
    for rec in records:
        req = tracker.feed(rec)
        typ = rec.get("type")
        if typ == "end":
            fs = (rec.get("unanswered") or []) + (rec.get("capture") or [])
        elif flt is not None and not flt(rec, req):
            continue
        else:
            fs = record_findings(rec)
        seq = rec.get("seq")
        if typ == "message":
            d = rec.get("dir")
            a, b = ("C", "S") if d == "c2s" else ("S", "C")
            kind = rec.get("kind")
            arrow = {"request": "->>", "notification": "-)", "response": "-->>", "error": "--x", "batch": "->>"}.get(kind, "--)")
            label = _what(rec, req)
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
            if _RANK.get(f.get("severity"), 0) >= rank:
                yield f"    Note over C,S: {_mm(_SEV_MARK.get(f.get('severity'), '?') + ' ' + str(f.get('code')))}"
