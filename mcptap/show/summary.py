"""Summary statistics over capture records (level 3).

Used by ``mcptap show`` (mcptap/show/render.py): :class:`Summary` counts
messages per direction, method and tool with latency percentiles
(show/latency.py's :class:`Latencies`, a bounded histogram), findings, bytes
and pending requests, with each response's request from show/tracker.py's
:class:`Tracker`. Memory is bounded by distinct methods/tools, never by the
length of the capture.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from mcptap.capture.fields import data_size, record_findings
from mcptap.escape import shown
from mcptap.model import severity_counts
from mcptap.records.refusals import refused_how
from mcptap.show.latency import Latencies
from mcptap.show.values import Style, fmt_us, id_text, is_tool_error, lossy, method_of, plain, shorten, tool_name


def _same(v: Any) -> Any:
    return v


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
            self.stderr_bytes += data_size(rec)

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
            self.stderr_bytes += data_size(rec)
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
            yield st(_row("method", "c2s", "s2c", "resp", "err", ("p50", "p90", "p99", "max")), "dim")
            for name, s in j["methods"].items():
                yield _row(shorten(name, 34), s["c2s"], s["s2c"], s["responses"], s["errors"], _times(s["latency"]))
        if j["tools"]:
            yield st(_row("tool", "calls", "", "", "err", ("p50", "p90", "p99", "max")), "dim")
            for name, s in j["tools"].items():
                yield _row(shorten(name, 34), s["calls"], "", "", s["errors"], _times(s["latency"]))
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


def _row(name: str, first: Any, second: Any, resp: Any, err: Any, times: tuple[str, ...]) -> str:
    """One line of the method or tool table (its header too), in its columns."""
    return f"  {name:<34} {first:>6} {second:>6} {resp:>5} {err:>5} " + " ".join(f"{t:>8}" for t in times)


def _times(lat: dict[str, Any]) -> tuple[str, ...]:
    """A latency's p50, p90, p99 and max as the table shows them ('-': none)."""
    return tuple(fmt_us(lat[k]) if lat[k] is not None else "-" for k in ("p50_us", "p90_us", "p99_us", "max_us"))
