"""Compare two answers to the same request (pure): volatile-field masking,
JSON-path differences, and the per-exchange verdict used by ``replay`` and ``diff``.

Verdicts (one per exchange):

* ``MATCH`` — same outcome once volatile fields are masked;
* ``CHANGED`` — both results (or both errors with the same code) differ; the
  JSON paths that differ are listed (``result.content[0].text``,
  ``result.tools[name=echo]``);
* ``ERROR-CHANGED`` — result became error, error became result, or the error
  code changed;
* ``MISSING`` — the original exchange has no counterpart (no answer, not sent);
* ``NEW`` — the new side has an exchange the original did not;
* ``SKIPPED`` — replay did not send it (side-effect policy).

Volatile fields (never compared): any ``_meta`` object (dropped), progress tokens,
session ids, cursors, task ids, request state, elicitation ids, and string
values shaped like timestamps (ISO 8601) or UUIDs. The keys of 2026-07-28
``inputRequests`` / ``inputResponses`` are the server's opaque names: only
the requests themselves are compared. ``--ignore PATH`` adds more:
a dotted path over the JSON-RPC message (``result.structuredContent.now``)
where ``*`` matches one segment, ``**`` any number, ``[*]`` any list index and
``[3]`` one; ``METHOD:`` in front limits it to one method
(``tools/call:result.content``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

MATCH, CHANGED, ERROR_CHANGED, MISSING, NEW, SKIPPED = "MATCH", "CHANGED", "ERROR-CHANGED", "MISSING", "NEW", "SKIPPED"
VERDICTS = (MATCH, CHANGED, ERROR_CHANGED, MISSING, NEW, SKIPPED)

#: Keys whose values a server (or client) mints afresh on every run.
VOLATILE_KEYS = frozenset({
    "_meta", "progressToken", "sessionId", "requestState", "nextCursor", "cursor", "taskId",
    "elicitationId", "subscriptionId", "timestamp", "createdAt", "lastUpdatedAt", "requestId",
})
MASKED = "<masked>"
#: Maps keyed by opaque server-chosen names (2026-07-28 input rounds): compared as a list of values.
OPAQUE_KEYED = frozenset({"inputRequests", "inputResponses"})
_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d)?$")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$")
#: Prefilter on serialized JSON: when it does not match, nothing needs masking.
_HINT = re.compile(rb'"(?:' + b"|".join(re.escape(k.encode()) for k in sorted(VOLATILE_KEYS | OPAQUE_KEYED)) + rb')"'
                   rb'|"\d{4}-\d\d-\d\d[T ]\d\d:\d\d|"[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}"')
_SORT = orjson.OPT_SORT_KEYS
MAX_PATHS = 25


def _volatile_value(v: str) -> bool:
    return len(v) >= 16 and (bool(_TIMESTAMP.match(v)) or bool(_UUID.match(v)))


# -- ignore patterns ------------------------------------------------------------

_SEG = re.compile(r"\[([^\]]*)\]|([^.\[\]]+)")


@dataclass(frozen=True, slots=True)
class Pattern:
    """One compiled ``--ignore`` path: ``method`` (or None for any) and its segments."""

    method: str | None
    segments: tuple[str, ...]
    text: str


def parse_ignore(text: str) -> Pattern:
    """Compile an ``--ignore`` path. Raises ValueError on an empty path."""
    method = None
    body = text.strip()
    if ":" in body.split(".")[0] and not body.startswith("["):
        method, body = body.split(":", 1)
    segs = []
    for m in _SEG.finditer(body):
        segs.append(f"[{m.group(1)}]" if m.group(1) is not None else m.group(2))
    if not segs:
        raise ValueError(f"empty ignore path {text!r}")
    return Pattern(method, tuple(segs), text)


def _seg_match(pat: str, seg: str) -> bool:
    if pat == seg:
        return True
    if pat == "*":
        return not seg.startswith("[")
    if pat == "[*]":
        return seg.startswith("[")
    return False


def _advance(states: frozenset[tuple[int, int]], pats: Sequence[Pattern], seg: str) -> tuple[frozenset[tuple[int, int]], bool]:
    """NFA step over one path segment. Returns (next states, a pattern ended here)."""
    out: set[tuple[int, int]] = set()
    hit = False
    todo = list(states)
    seen = set(todo)
    while todo:
        pi, k = todo.pop()
        segs = pats[pi].segments
        if k < len(segs) and segs[k] == "**":
            if (pi, k + 1) not in seen:       # ** matching zero segments
                seen.add((pi, k + 1))
                todo.append((pi, k + 1))
            out.add((pi, k))                  # ** eating this segment
            if k + 1 == len(segs):
                hit = True
            continue
        if k < len(segs) and _seg_match(segs[k], seg):
            if k + 1 == len(segs):
                hit = True
            else:
                out.add((pi, k + 1))
    return frozenset(out), hit


class Masker:
    """Masks volatile fields (and ``--ignore`` paths) out of JSON values.

    ``mask(value, method, root)``: a copy of ``value`` with volatile parts
    replaced by ``"<masked>"`` (``value`` itself when nothing was masked).
    ``root`` names ``value``'s place in the message (``"result"``, ``"params"``,
    ``"error"``) so ignore paths can start from the message envelope.
    ``fingerprint(value, method, root)``: a hash of the masked value (int),
    fast when nothing is volatile (one serialization and one regex scan).
    """

    def __init__(self, ignore: Iterable[str | Pattern] = ()) -> None:
        self.patterns = [p if isinstance(p, Pattern) else parse_ignore(p) for p in ignore]

    def _states(self, method: str | None, root: str) -> frozenset[tuple[int, int]]:
        live = frozenset((i, 0) for i, p in enumerate(self.patterns) if p.method is None or p.method == method)
        if not live:
            return live
        st, _ = _advance(live, self.patterns, root)
        return st

    def mask(self, value: Any, method: str | None = None, root: str = "result") -> Any:
        states = self._states(method, root) if self.patterns else frozenset()
        return self._mask(value, states)

    def _mask(self, value: Any, states: frozenset[tuple[int, int]]) -> Any:
        if isinstance(value, dict):
            out = None
            for k, v in value.items():
                nv = v
                if k == "_meta":          # metadata, not content: its presence is volatile too
                    if out is None:
                        out = dict(value)
                    del out[k]
                    continue
                if k in VOLATILE_KEYS:
                    nv = MASKED
                else:
                    sub = states
                    hit = False
                    if states:
                        sub, hit = _advance(states, self.patterns, k)
                    if hit:
                        nv = MASKED
                    elif k in OPAQUE_KEYED and isinstance(v, dict):
                        vals = [self._mask(x, sub) for x in v.values()]
                        nv = sorted(vals, key=lambda x: orjson.dumps(x, option=_SORT))
                    elif isinstance(v, (dict, list)):
                        nv = self._mask(v, sub)
                    elif isinstance(v, str) and _volatile_value(v):
                        nv = MASKED
                if nv is not v:
                    if out is None:
                        out = dict(value)
                    out[k] = nv
            return value if out is None else out
        if isinstance(value, list):
            outl = None
            for i, v in enumerate(value):
                sub = states
                hit = False
                if states:
                    sub, hit = _advance(states, self.patterns, f"[{i}]")
                nv = v
                if hit:
                    nv = MASKED
                elif isinstance(v, (dict, list)):
                    nv = self._mask(v, sub)
                elif isinstance(v, str) and _volatile_value(v):
                    nv = MASKED
                if nv is not v:
                    if outl is None:
                        outl = list(value)
                    outl[i] = nv
            return value if outl is None else outl
        if isinstance(value, str) and _volatile_value(value):
            return MASKED
        return value

    def fingerprint(self, value: Any, method: str | None = None, root: str = "result") -> int:
        if isinstance(value, dict) and "_meta" in value:
            value = {k: v for k, v in value.items() if k != "_meta"}
        if value == {}:
            value = None                  # absent params and empty params are the same request
        try:
            data = orjson.dumps(value, option=_SORT)
        except (TypeError, orjson.JSONEncodeError):
            return hash(repr(value))
        if not self.patterns and _HINT.search(data) is None:
            return hash(data)
        return hash(orjson.dumps(self.mask(value, method, root), option=_SORT))


# -- JSON path differences ----------------------------------------------------------

@dataclass(frozen=True, slots=True)
class PathChange:
    """One difference: ``path`` (``result.tools[name=echo]``), ``kind``
    (``added`` / ``removed`` / ``changed``) and the two values (None when absent)."""

    path: str
    kind: str
    a: Any = None
    b: Any = None

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"path": self.path, "kind": self.kind}
        if self.kind != "added":
            d["a"] = _preview(self.a)
        if self.kind != "removed":
            d["b"] = _preview(self.b)
        return d


def _preview(v: Any, limit: int = 200) -> Any:
    if isinstance(v, (dict, list)):
        text = orjson.dumps(v).decode()
        return v if len(text) <= limit else text[:limit] + "…"
    if isinstance(v, str) and len(v) > limit:
        return v[:limit] + "…"
    return v


_LIST_KEYS = ("name", "uri", "uriTemplate")


def _list_key(a: list[Any], b: list[Any]) -> str | None:
    """The key that identifies members of both lists (tools by name...), if any."""
    items = a + b
    if not items or not all(isinstance(x, dict) for x in items):
        return None
    for k in _LIST_KEYS:
        va = [x.get(k) for x in a]
        vb = [x.get(k) for x in b]
        if all(isinstance(v, str) for v in va + vb) and len(set(va)) == len(va) and len(set(vb)) == len(vb):
            return k
    return None


def json_diff(a: Any, b: Any, path: str = "", limit: int = MAX_PATHS) -> list[PathChange]:
    """Differences between two JSON values as path changes (at most ``limit``).
    Lists of objects with a unique ``name``/``uri``/``uriTemplate`` are
    compared by that key, other lists by index."""
    out: list[PathChange] = []
    _diff(a, b, path, out, limit)
    return out


def _diff(a: Any, b: Any, path: str, out: list[PathChange], limit: int) -> None:
    if len(out) >= limit or a == b and type(a) is type(b):
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for k in a:
            if len(out) >= limit:
                return
            p = f"{path}.{k}" if path else str(k)
            if k not in b:
                out.append(PathChange(p, "removed", a[k], None))
            else:
                _diff(a[k], b[k], p, out, limit)
        for k in b:
            if k not in a and len(out) < limit:
                out.append(PathChange(f"{path}.{k}" if path else str(k), "added", None, b[k]))
        return
    if isinstance(a, list) and isinstance(b, list):
        key = _list_key(a, b)
        if key is not None:
            da = {x[key]: x for x in a}
            db = {x[key]: x for x in b}
            for k, v in da.items():
                p = f"{path}[{key}={k}]"
                if k not in db:
                    if len(out) < limit:
                        out.append(PathChange(p, "removed", v, None))
                else:
                    _diff(v, db[k], p, out, limit)
            for k, v in db.items():
                if k not in da and len(out) < limit:
                    out.append(PathChange(f"{path}[{key}={k}]", "added", None, v))
            return
        for i in range(max(len(a), len(b))):
            if len(out) >= limit:
                return
            p = f"{path}[{i}]"
            if i >= len(b):
                out.append(PathChange(p, "removed", a[i], None))
            elif i >= len(a):
                out.append(PathChange(p, "added", None, b[i]))
            else:
                _diff(a[i], b[i], p, out, limit)
        return
    out.append(PathChange(path or "$", "changed", a, b))


# -- one exchange ---------------------------------------------------------------------

@dataclass(slots=True)
class Verdict:
    """The comparison of one exchange: ``status`` (one of VERDICTS), the
    differing ``paths``, and the error codes on each side (None: a result)."""

    status: str
    paths: list[PathChange] = field(default_factory=list)
    code_a: int | None = None
    code_b: int | None = None

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"status": self.status}
        if self.paths:
            d["paths"] = [p.to_json() for p in self.paths]
        if self.code_a is not None or self.code_b is not None:
            d["error_codes"] = [self.code_a, self.code_b]
        return d


def outcome(message: Any) -> tuple[str, Any]:
    """(``"result"`` | ``"error"`` | ``"none"``, value) of a response message."""
    if isinstance(message, dict):
        if "error" in message:
            return "error", message["error"]
        if "result" in message:
            return "result", message["result"]
    return "none", None


def _code(err: Any) -> Any:
    return err.get("code") if isinstance(err, dict) else err


def compare_responses(a: Any, b: Any, method: str | None = None, masker: Masker | None = None) -> Verdict:
    """Compare the original response message ``a`` with the new one ``b``
    (JSON-RPC response objects, or None when absent)."""
    masker = masker or Masker()
    if a is None and b is None:
        return Verdict(MATCH)
    if b is None:
        return Verdict(MISSING)
    if a is None:
        return Verdict(NEW)
    ka, va = outcome(a)
    kb, vb = outcome(b)
    ca = _code(va) if ka == "error" else None
    cb = _code(vb) if kb == "error" else None
    if ka != kb or (ka == "error" and ca != cb):
        where = "error.code" if ka == kb else "$"
        return Verdict(ERROR_CHANGED, [PathChange(where, "changed", {ka: va}, {kb: vb})], ca, cb)
    ma = masker.mask(va, method, ka)
    mb = masker.mask(vb, method, kb)
    if ma == mb:
        return Verdict(MATCH, code_a=ca, code_b=cb)
    return Verdict(CHANGED, json_diff(ma, mb, ka), ca, cb)


# -- a whole replay -------------------------------------------------------------------

@dataclass(slots=True)
class ExchangeResult:
    """One line of the replay report. ``step``: plan step index (None for a
    server request); ``seq``: the original record seq (None for NEW);
    latencies in µs; ``note``: why it was skipped / not answered;
    ``live_id``: the fresh JSON-RPC id the request was sent with."""

    label: str
    status: str
    step: int | None = None
    seq: int | None = None
    verdict: Verdict | None = None
    latency_a_us: int | None = None
    latency_b_us: int | None = None
    note: str | None = None
    live_id: Any = None

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"label": self.label, "status": self.status, "step": self.step, "seq": self.seq}
        if self.live_id is not None:
            d["live_id"] = self.live_id
        if self.verdict is not None and self.verdict.paths:
            d["paths"] = [p.to_json() for p in self.verdict.paths]
        if self.verdict is not None and (self.verdict.code_a is not None or self.verdict.code_b is not None):
            d["error_codes"] = [self.verdict.code_a, self.verdict.code_b]
        if self.latency_a_us is not None or self.latency_b_us is not None:
            d["latency_us"] = [self.latency_a_us, self.latency_b_us]
        if self.note:
            d["note"] = self.note
        return d


def _by_id(responses: Any) -> dict[Any, Any]:
    return {repr(r.get("id")): r for r in responses or () if isinstance(r, dict)}


def compare_replay(plan: Any, live: dict[int, Any], live_server_requests: Sequence[Any], notes: dict[int, str],
                   masker: Masker | None = None) -> list[ExchangeResult]:
    """Verdicts for a replay: one per c2s request (and batch member) of
    ``plan`` in order, then one per server request (original matched with live
    by method and masked params, in order). ``live``: step index -> live
    response object (None: unanswered; a step absent: not sent), each with
    ``response`` and ``latency_us`` attributes; ``live_server_requests``:
    objects with ``method`` and ``params``."""
    masker = masker or Masker()
    out: list[ExchangeResult] = []
    for step in plan.steps:
        if step.kind == "notification":
            continue
        lv = live.get(step.index)
        note = notes.get(step.index)
        if step.skip:
            out.append(ExchangeResult(step.label, SKIPPED, step.index, step.seq, note=step.skip))
            continue
        if lv is None:
            out.append(ExchangeResult(step.label, MISSING, step.index, step.seq, Verdict(MISSING), step.latency_us, None, note or "not sent"))
            continue
        if step.kind == "batch":
            orig, new = _by_id(step.response), _by_id(lv.response)
            for item in step.message if isinstance(step.message, list) else ():
                if not isinstance(item, dict) or "method" not in item or "id" not in item:
                    continue
                k = repr(item["id"])
                v = compare_responses(orig.get(k), new.get(k), item.get("method"), masker)
                out.append(ExchangeResult(f"batch {item.get('method')}", v.status, step.index, step.seq, v, None, lv.latency_us,
                                          note if v.status in (MISSING, NEW) else None))
            continue
        v = compare_responses(step.response, lv.response, step.method, masker)
        if step.response is None and lv.response is None:
            note = "unanswered in both sessions"
        out.append(ExchangeResult(step.label, v.status, step.index, step.seq, v, step.latency_us, lv.latency_us,
                                  note if v.status in (MISSING, NEW) or lv.response is None else None, lv.live_id))
    # server requests: legacy s2c requests and 2026-07-28 input requests, matched by method + masked params
    orig_reqs = [(r.method, r.params, r.seq) for r in plan.server_requests]
    for step in plan.steps:                           # 2026-07-28 input requests of the original session
        res = step.response.get("result") if isinstance(step.response, dict) else None
        if isinstance(res, dict) and res.get("resultType") == "input_required" and isinstance(res.get("inputRequests"), dict):
            for req in res["inputRequests"].values():
                if isinstance(req, dict):
                    orig_reqs.append((str(req.get("method")), req.get("params"), step.response_seq))
    pool: dict[tuple[str, int], list[Any]] = {}
    for r in live_server_requests:
        pool.setdefault((r.method, masker.fingerprint(r.params, r.method, "params")), []).append(r)
    for method, params, seq in orig_reqs:
        key = (method, masker.fingerprint(params, method, "params"))
        if pool.get(key):
            pool[key].pop(0)
            out.append(ExchangeResult(f"s2c {method}", MATCH, None, seq))
        else:
            out.append(ExchangeResult(f"s2c {method}", MISSING, None, seq, Verdict(MISSING), note="the live server did not make this request"))
    for entries in pool.values():
        for r in entries:
            out.append(ExchangeResult(f"s2c {r.method}", NEW, None, None, Verdict(NEW), note=f"answered: {r.how}"))
    return out
