"""Request context and summary statistics over capture records (level 3).

Used by ``mcptap show`` (mcptap/show/render.py): :class:`Tracker` links each
response, progress and cancellation to its request; :class:`Summary` counts
messages per direction, method and tool with latency percentiles
(:class:`Latencies`, a bounded histogram), findings, bytes and pending
requests. Memory is bounded by open requests and distinct methods/tools,
never by the length of the capture.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from mcptap.capture.fields import message_json, message_text, record_findings, tool_of
from mcptap.escape import escape_controls, shown
from mcptap.filters.exact import exact_field, exact_tool
from mcptap.filters.members import member_views
from mcptap.model import severity_counts
from mcptap.protocol.excerpt import clip
from mcptap.protocol.jsonrpc import id_key, show_id
from mcptap.records.message import exact_id
from mcptap.records.refusals import refused_how

Style = Callable[[str, str], str]
_SURROGATE = re.compile("[\ud800-\udfff]")


def plain(text: str, role: str) -> str:
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


def shorten(s: str, n: int) -> str:
    """``s`` with its control characters escaped (mcptap.escape), cut to ``n`` characters."""
    s = escape_controls(s)
    return s if len(s) <= n else clip(s, n - 1) + "…"


def id_text(v: Any) -> str:
    """An id as JSON text, as finding messages show it (``jsonrpc.show_id``)."""
    return show_id(v)


def record_id(rec: dict[str, Any]) -> Any:
    """The id of a message record as the peer wrote it: a number beyond any
    double (``1e400``) is null in the record's ``id``, ±infinity in its raw
    text (``message_json``); a lone surrogate is U+FFFD there, exact in the
    raw text (``records.message.exact_id``)."""
    v = rec.get("id")
    if type(rec.get("exact")) is dict:          # a batch member's view (filters.members)
        return exact_field(rec, "id")
    if (v is None or type(v) is str and "\ufffd" in v) and "raw" in rec:
        m = message_json(rec)
        if isinstance(m, dict):
            return m.get("id") if v is None else exact_id(v, m)
    return v


def method_of(rec: dict[str, Any]) -> Any:
    """A message record's method as the peer wrote it: one with a lone surrogate
    (``tools/x\\ud800``) is U+FFFD in the record, exact in its raw bytes
    (``records.message.exact_payload``) or a batch member view's ``exact``
    (``filters.exact``); views escape it (``\\ud800``)."""
    return exact_field(rec, "method")


def lossy(v: Any) -> Any:
    """``v`` with each lone surrogate as U+FFFD (a record's form of a string, which strict JSON readers take)."""
    return _SURROGATE.sub("\ufffd", v) if type(v) is str and not v.isprintable() else v


def _same(v: Any) -> Any:
    return v


def tool_name(rec: dict[str, Any]) -> str | None:
    """``tool_of(rec)``, a lone surrogate in it exact (as ``method_of``)."""
    return exact_tool(rec, tool_of(rec))


# -- request context -----------------------------------------------------------------

class Tracker:
    """Links records to the request they belong to, for display and filters.

    ``feed(record) -> request info or None``: for a response its request
    (via ``pair``); for ``notifications/progress`` and
    ``notifications/cancelled`` the request named by their ``link``. Request
    info is a dict ``{"seq", "method", "tool", "id"}`` (and ``"member": True`` for a
    batch member's request). Only open requests are
    held (answered ones are dropped), so memory follows concurrency, not length.
    """

    __slots__ = ("_open", "members")

    def __init__(self) -> None:
        #: open requests: seq (a batch member's: (seq, id key)) -> info
        self._open: dict[Any, dict[str, Any]] = {}
        #: after ``feed`` of a batch record: its members as (``filters.members.member_views``
        #: record, request info as ``feed`` gives it) pairs, for filters and the summary; else None
        self.members: list[tuple[dict[str, Any], dict[str, Any] | None]] | None = None

    def feed(self, rec: dict[str, Any]) -> dict[str, Any] | None:
        self.members = None
        if rec.get("type") != "message":
            return None
        kind = rec.get("kind")
        if kind == "batch":
            self.members = [(v, self._member(v)) for v in member_views(rec)]
            return None
        return self._message(rec, kind)

    def _message(self, rec: dict[str, Any], kind: Any, key: Any = None) -> dict[str, Any] | None:
        if kind == "request":
            info = {"seq": rec["seq"], "method": method_of(rec), "tool": tool_name(rec), "id": rec.get("id")}
            if key is not None:
                info["member"] = True       # a batch member's: no record of its own holds its method (show/html.py)
            if refused_how(rec) is None:      # one the tap refused is answered by no one: not held open
                self._open[rec["seq"] if key is None else key] = info
            return info
        if kind in ("response", "error"):
            pair = rec.get("pair")
            if pair is None:
                return None
            return (self._open.pop(pair, None) or self._open.pop((pair, id_key(rec.get("id"))), None)   # a batch member's
                    or {"seq": pair, "method": None, "tool": None})
        link = rec.get("link")
        if link is not None:
            return self._open.get(link) or {"seq": link, "method": None, "tool": None}
        return None

    def _member(self, view: dict[str, Any]) -> dict[str, Any] | None:
        kind = view.get("kind")
        return self._message(view, kind, (view.get("seq"), id_key(view.get("id"))) if kind == "request" else None)


# -- latency histogram -----------------------------------------------------------------

def _bucket(us: int) -> int:
    # exact below 1 ms, 3 significant digits above: bounded size, <1 % error
    if us < 1000:
        return us
    e: int = 10 ** (len(str(us)) - 3)
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
        if rank >= self.n:
            return self.max                     # the top rank is the maximum, known exactly
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
    __slots__ = ("c2s", "s2c", "responses", "errors", "lat")

    def __init__(self) -> None:
        self.c2s = 0
        self.s2c = 0
        self.responses = 0
        self.errors = 0
        self.lat = Latencies()


class Summary:
    """Counts over the records fed: messages per direction and kind, per
    method (requests and notifications by the direction they were sent in;
    responses, result or error, under their request's method with its latency
    and errors), per tool (``tools/call``), findings by severity and code;
    from the end record: bytes per direction and pending requests.

    Fed only the records a filter shows, every shown message with a method
    (or a paired request) is counted in exactly one of c2s/s2c/resp, so a
    filtered summary reads like the unfiltered one over those records; one
    the tap refused itself (never forwarded) in ``refused`` by its ``how`` instead."""

    def __init__(self, transport: Any = "stdio") -> None:
        #: the header's transport: on HTTP the bytes are the messages' (not heads and framing), said in the text
        self.transport = transport
        self.messages = {"c2s": 0, "s2c": 0}
        self.kinds: dict[str, int] = {}
        self.methods: dict[str, _Stat] = {}
        self.tools: dict[str, _Stat] = {}
        self.severities = severity_counts()
        self.codes: dict[str, int] = {}
        self.last_us = 0
        self.end: dict[str, Any] | None = None
        self.stderr_bytes = 0
        self.shown = 0
        self.hidden = 0
        self.refused: dict[str, int] = {}     # how -> messages the tap refused itself (records.refusals)
        self.exact_methods: dict[Any, str] = {}     # request seq -> its method, where a lone surrogate made the record's lossy

    def skip(self, rec: dict[str, Any]) -> None:
        """A record the filter hid: only capture-wide byte counts use it."""
        self.hidden += 1
        if rec.get("type") == "stderr":
            self.stderr_bytes += len(message_text(rec).encode("utf-8", "replace"))

    def feed(self, rec: dict[str, Any], req: dict[str, Any] | None,
             members: list[tuple[dict[str, Any], dict[str, Any] | None]] | None = None) -> None:
        """Count one shown record (``req``: its request info, ``Tracker.feed``;
        ``members``: a batch's, ``Tracker.members``: each member counts in the
        method and tool tables as a message of its own)."""
        typ = rec.get("type")
        t = rec.get("t_us")
        if isinstance(t, int):
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
        self.shown += 1
        if typ == "stderr":
            self.stderr_bytes += len(message_text(rec).encode("utf-8", "replace"))
            return
        if typ != "message":
            return
        d = rec.get("dir", "c2s")
        self.messages[d] = self.messages.get(d, 0) + 1
        kind = rec.get("kind", "?")
        self.kinds[kind] = self.kinds.get(kind, 0) + 1
        method = method_of(rec)
        if method is not rec.get("method") and kind == "request":
            self.exact_methods[rec.get("seq")] = method       # the end record's pending entry has it lossy
        how = refused_how(rec)
        if how is not None:         # sent, never forwarded: no call of the server's methods or tools
            self.refused[how] = self.refused.get(how, 0) + 1
            return
        for view, q in members or ():
            self._tables(view, view.get("kind"), d, q)
        self._tables(rec, kind, d, req)

    def _tables(self, rec: dict[str, Any], kind: Any, d: Any, req: dict[str, Any] | None) -> None:
        """The method and tool tables' counts of one message (or batch member)."""
        method = method_of(rec)
        if method is not None and kind in ("request", "notification"):
            st = self.methods.get(method) or self.methods.setdefault(method, _Stat())
            if d == "c2s":
                st.c2s += 1
            else:
                st.s2c += 1
            tool = tool_name(rec)
            if tool is not None:
                ts = self.tools.get(tool) or self.tools.setdefault(tool, _Stat())
                ts.c2s += 1
        elif kind in ("response", "error") and req is not None:
            lat = rec.get("latency_us")
            for table, key in ((self.methods, req.get("method")), (self.tools, req.get("tool"))):
                if key is None:
                    continue
                st = table.get(key) or table.setdefault(key, _Stat())
                if table is self.methods:
                    st.responses += 1
                if isinstance(lat, int):
                    st.lat.add(lat)
                if kind == "error" or is_tool_error(rec, table is self.tools):
                    st.errors += 1

    def to_json(self, exact: bool = False) -> dict[str, Any]:
        """The summary object (``show --format json``'s last line). Method and tool names with
        a lone surrogate as U+FFFD, as the records have them (every line reads as strict JSON);
        ``exact``: as the peer wrote them (the text summary escapes them, ``\\ud800``)."""
        name: Callable[[Any], Any] = _same if exact else lossy
        end = self.end or {}
        out: dict[str, Any] = {
            "type": "summary",
            "messages": dict(self.messages), "kinds": dict(sorted(self.kinds.items())),
            "duration_us": max(self.last_us, end.get("t_us") or 0),
            "methods": {name(m): {"c2s": s.c2s, "s2c": s.s2c, "responses": s.responses, "errors": s.errors, "latency": s.lat.to_json()}
                        for m, s in sorted(self.methods.items())},
            "tools": {name(m): {"calls": s.c2s, "errors": s.errors, "latency": s.lat.to_json()} for m, s in sorted(self.tools.items())},
            "findings": dict(self.severities), "codes": dict(sorted(self.codes.items())),
            "bytes": {d: (end.get(d) or {}).get("bytes") for d in ("c2s", "s2c")},
            "pending": end.get("pending", []),
            "complete": bool(self.end) and not any(f.get("code") == "capture.incomplete" for f in end.get("capture", ())),
        }
        if isinstance(end.get("stderr"), dict) or self.stderr_bytes:
            out["bytes"]["stderr"] = max(self.stderr_bytes, (end.get("stderr") or {}).get("bytes") or 0)
        if "exit_code" in end:
            out["exit_code"] = end["exit_code"]
        if self.refused:
            out["refused"] = dict(sorted(self.refused.items()))
        if self.hidden:
            out["filtered"] = {"shown": self.shown, "hidden": self.hidden}
        return out

    def lines(self, style: Style = plain) -> Iterator[str]:
        j = self.to_json(exact=True)
        st = style
        m = j["messages"]
        yield st("Summary", "bold") + (f" of the {self.shown} records the filter shows ({self.hidden} hidden)" if self.hidden else "")
        total = m.get('c2s', 0) + m.get('s2c', 0)
        # every line a peer sent is a message record (the end record counts them so); one that is
        # not JSON at all (a blank line, a log line on stdout) is said to be one, not passed off as a message
        text = j["kinds"].get("non_json", 0)
        lines = f"; {text} not JSON: blank or text line{'' if text == 1 else 's'}" if text else ""
        yield (f"  {total} message{'' if total == 1 else 's'} (c2s {m.get('c2s', 0)}, s2c {m.get('s2c', 0)}{lines}) over {fmt_us(j['duration_us'])}"
               + (f"; exit status {j['exit_code']}" if "exit_code" in j else ""))
        if "refused" in j:
            n = sum(j["refused"].values())
            yield st(shown(f"  refused by the tap itself, never forwarded: {n} message{'' if n == 1 else 's'} ("
                           + ", ".join(f"{k} {v}" for k, v in j["refused"].items()) + "), not counted below"), "warn")
        b = j["bytes"]
        label = "  bytes: " if self.transport == "stdio" else "  message bytes: "
        if any(v is not None for v in b.values()):
            yield (label + ", ".join(f"{k} {v:,}" for k, v in b.items() if v is not None)
                   + ("" if self.transport == "stdio" else " (JSON bodies and SSE event data; HTTP heads and framing not counted)"))
        else:
            yield label + "unknown (no end record)"
        if j["methods"]:
            yield st(f"  {'method':<34} {'c2s':>6} {'s2c':>6} {'resp':>5} {'err':>5} {'p50':>8} {'p90':>8} {'p99':>8} {'max':>8}", "dim")
            for name, s in j["methods"].items():
                lat = s["latency"]
                yield (f"  {shorten(name, 34):<34} {s['c2s']:>6} {s['s2c']:>6} {s['responses']:>5} {s['errors']:>5} "
                       + " ".join(f"{fmt_us(lat[k]) if lat[k] is not None else '-':>8}" for k in ("p50_us", "p90_us", "p99_us", "max_us")))
        if j["tools"]:
            yield st(f"  {'tool':<34} {'calls':>6} {'':>6} {'':>5} {'err':>5} {'p50':>8} {'p90':>8} {'p99':>8} {'max':>8}", "dim")
            for name, s in j["tools"].items():
                lat = s["latency"]
                yield (f"  {shorten(name, 34):<34} {s['calls']:>6} {'':>6} {'':>5} {s['errors']:>5} "
                       + " ".join(f"{fmt_us(lat[k]) if lat[k] is not None else '-':>8}" for k in ("p50_us", "p90_us", "p99_us", "max_us")))
        if j["pending"]:
            yield st(f"  pending at end: {len(j['pending'])}", "warn")
            for p in j["pending"][:20]:
                method = self.exact_methods.get(p.get("seq"), p.get("method"))
                yield shown(f"    #{p.get('seq')} {method} id={p['id_text'] if isinstance(p.get('id_text'), str) else id_text(p.get('id'))} from the "
                                      f"{'client' if p.get('dir') == 'c2s' else 'server'}")
        f = j["findings"]
        yield ("  findings: " + ", ".join(st(f"{f[s]} {s}", s) if f[s] else f"0 {s}" for s in ("error", "warn", "info")))
        if not j["complete"]:
            yield st("  capture incomplete: no end record (mcptap killed, or still recording)", "warn")


def is_tool_error(rec: dict[str, Any], is_tool: bool) -> bool:
    if not is_tool or rec.get("kind") != "response":
        return False
    v = message_json(rec)
    res = v.get("result") if isinstance(v, dict) else None
    return isinstance(res, dict) and res.get("isError") is True
