"""The redaction engine: secrets out of JSON values and strings (pure, given
a Keyer).

``Redactor(rules, keyer)``:

* ``message(value)`` — a JSON-RPC message (object, or a batch array of them):
  ``jsonrpc``, ``id`` and ``method`` at the top of each message are never
  touched (pairing and classification must not change); everything else is
  walked by ``value``;
* ``value(v, path)`` — a JSON value: under a secret key (keys.py, or a user
  key) or at a user path the whole value is redacted (every string and
  number in it becomes a placeholder; ``null``, booleans and empty strings
  stay, they hide nothing); every other string is scanned by the patterns, and
  a string that is itself JSON (a tool result's ``text`` often is) is walked
  as JSON and re-encoded when something in it was redacted;
* ``text(s, path)`` — a free string (stderr, a header value, a URL).

Each returns the redacted copy (the input is never modified) and a list of
``Hit(path, rule, placeholder)`` — what ``scrub --dry-run`` lists. A value
that is already a placeholder is left alone, so redacting twice changes
nothing (``redact(redact(x)) == redact(x)``).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import orjson

from mcptap.redact import deep
from mcptap.redact.deep import CONTAINER as _CONTAINER
from mcptap.redact.deep import KEY_SCAN_FROM, MAX_DEPTH
from mcptap.redact.keyed import Keyer, is_placeholder
from mcptap.redact.keys import SCHEMA_INSTANCES, VALUE_KEYS, context_secrets, is_schema_property, is_secret_key, normalise
from mcptap.redact.repeats import RULE, Repeats
from mcptap.redact.rules import PathSeg, Rules, format_path
from mcptap.redact.scanner import Scanner, replaced
from mcptap.redact.shapes import shaped_list

#: Top-level message members that are never redacted.
_ENVELOPE = frozenset({"jsonrpc", "id", "method"})
_VALUE_KEYS = frozenset(VALUE_KEYS)
#: Nesting walked by recursion (fast); deeper, an explicit stack takes over (deep.py).
RECURSE_TO = 100


@dataclass(frozen=True, slots=True)
class Hit:
    """One redaction: ``path`` (``params.arguments.password``; ``stderr``,
    ``headers.Authorization``…), ``rule`` (``key:password``, ``path:…``,
    ``github-token``…), ``placeholder``."""

    path: str
    rule: str
    placeholder: str

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "rule": self.rule, "placeholder": self.placeholder}


class Redactor:
    """Apply ``rules`` with ``keyer``'s placeholders (see module doc).
    Raises nothing on any JSON value or string."""

    def __init__(self, rules: Rules, keyer: Keyer) -> None:
        self.rules = rules
        self.keyer = keyer
        self.scanner = Scanner(rules.all_patterns(), rules.first_group_patterns())
        self._user_keys = rules.keys
        self._paths = rules.paths
        self._memo: dict[str, str] = {}
        self._keys: dict[str, str | None] = {}
        #: every secret given a placeholder so far, searched in every later string (repeats.py)
        self.repeats = Repeats()

    def placeholder(self, secret: str) -> str:
        """``secret``'s placeholder; ``secret`` is then found wherever it is repeated."""
        ph = self._memo.get(secret)
        if ph is None:
            ph = self.keyer.placeholder(secret)
            if len(self._memo) < 100_000:
                self._memo[secret] = ph
        if self.repeats.on:
            self.repeats.learn(secret)
        return ph

    def remembering(self, known: Repeats | None = None) -> Redactor:
        """A Redactor of the same rules, key and compiled patterns that remembers each
        secret it redacts and replaces it wherever a later string repeats it
        (``repeats.py``): what a ``Scrubber`` uses for one capture; ``known``: secrets
        to replace from the start (a first pass over the whole capture). ``self`` is
        unchanged (the process-wide one of record time redacts unrelated strings)."""
        other = copy.copy(self)
        other.repeats = Repeats(on=True)
        for value in known.values() if known is not None else ():
            other.repeats.learn(value)
        return other

    def _secret_key(self, key: str) -> str | None:
        try:
            return self._keys[key]
        except KeyError:
            pass
        rule = None
        if self._user_keys and normalise(key) in self._user_keys or self.rules.builtin and is_secret_key(key):
            rule = f"key:{key}"
        if len(self._keys) < 100_000:      # messages reuse few key names: decide each once
            self._keys[key] = rule
        return rule

    def _context(self, obj: dict[str, Any], path: tuple[PathSeg, ...]) -> dict[str, str]:
        """Members of ``obj`` that are secrets by where they are (``keys.context_secrets``)."""
        return context_secrets(obj, path[-1] if path else None, self._secret_key)

    def _path_rule(self, path: tuple[PathSeg, ...]) -> str | None:
        for p in self._paths:
            if len(p) == len(path) and all(a == "*" or a == b for a, b in zip(p, path, strict=True)):
                return "path:" + format_path(p)
        return None

    # -- entry points -----------------------------------------------------------------
    def message(self, value: Any) -> tuple[Any, list[Hit]]:
        """Redact one parsed message (see module doc)."""
        hits: list[Hit] = []
        if isinstance(value, list):
            out = [self._message(m, (i,), hits) for i, m in enumerate(value)]
            return (out if any(a is not b for a, b in zip(out, value, strict=True)) else value), hits
        return self._message(value, (), hits), hits

    def value(self, v: Any, path: tuple[PathSeg, ...] = ()) -> tuple[Any, list[Hit]]:
        hits: list[Hit] = []
        return self._walk(v, path, hits, 0), hits

    def key_rule(self, key: str) -> str | None:
        """``key:<key>`` when the value under JSON key ``key`` is a secret
        (built-in or user key), else None."""
        return self._secret_key(key)

    def member(self, key: str, v: Any, path: tuple[PathSeg, ...] = ()) -> tuple[Any, list[Hit]]:
        """``v`` as the value of member ``key`` of the object at ``path``: all of
        it under a secret key or user path, else walked."""
        hits: list[Hit] = []
        return self._member(key, v, path, hits, 0), hits

    def string(self, s: str) -> tuple[str, list[Hit]]:
        """A string value: JSON text inside it walked as JSON, else the patterns."""
        hits: list[Hit] = []
        return self._string(s, (), hits, 0), hits

    def text(self, s: str, path: str = "") -> tuple[str, list[Hit]]:
        hits: list[Hit] = []
        return self._text(s, path, hits), hits

    def located(self, s: str, where: str = "") -> tuple[str, list[tuple[int, int, Hit]] | None]:
        """``string(s)``'s result and where in ``s`` each secret was: ``(start, end, hit)``,
        in order, the result being ``s`` with each span replaced by ``hit.placeholder``; None
        instead when ``s`` is JSON text, walked and re-encoded (the result's bytes then map to
        no spans of ``s``; the hits are lost: call ``string`` for them)."""
        if len(s) >= 6 and s.lstrip()[:1] in ("{", "[") and len(s) <= (16 << 20):
            try:
                inner = orjson.loads(s)
            except orjson.JSONDecodeError:
                inner = None
            if isinstance(inner, dict | list):
                out, _ = self.string(s)
                return (s, []) if out == s else (out, None)
        return self._spans(s, where)

    # -- walking ---------------------------------------------------------------------
    def _message(self, m: Any, path: tuple[PathSeg, ...], hits: list[Hit]) -> Any:
        if not isinstance(m, dict):
            return self._walk(m, path, hits, 0)
        out: dict[str, Any] | None = None
        for k, v in m.items():
            if k in _ENVELOPE:
                continue
            nv = self._member(k, v, path, hits, 0)
            if nv is not v:
                if out is None:
                    out = dict(m)
                out[k] = nv
        return m if out is None else out

    def _member(self, k: str, v: Any, path: tuple[PathSeg, ...], hits: list[Hit], depth: int) -> Any:
        sub = path + (k,)
        rule = self._secret_key(k) or (self._path_rule(sub) if self._paths else None)
        if rule is not None:
            if path and is_schema_property(path[-1], v) and rule.startswith("key:"):
                # a tool's parameter named ``password``: its schema stays, instances in it go
                return self._schema(v, sub, rule, hits, depth + 1)
            return self._all(v, sub, rule, hits, depth + 1)
        return self._walk(v, sub, hits, depth + 1)

    def _schema(self, v: dict[str, Any], path: tuple[PathSeg, ...], rule: str, hits: list[Hit], depth: int) -> Any:
        out: dict[str, Any] | None = None
        for k, x in v.items():
            nx = self._all(x, path + (k,), rule, hits, depth + 1) if k in SCHEMA_INSTANCES else self._member(k, x, path, hits, depth)
            if nx is not x:
                out = dict(v) if out is None else out
                out[k] = nx
        return v if out is None else out

    # The recursive walkers below are the fast path; from RECURSE_TO levels on, the
    # same walk continues with an explicit stack (_node): a peer's message may nest
    # as deep as its parser allows (orjson: 1024 levels), beyond Python's recursion.
    def _walk(self, v: Any, path: tuple[PathSeg, ...], hits: list[Hit], depth: int) -> Any:
        if depth > MAX_DEPTH:
            return v
        if isinstance(v, str):
            return self._string(v, path, hits, depth)
        if depth >= RECURSE_TO and isinstance(v, dict | list):
            return self._node(v, path, None, hits, depth)
        if isinstance(v, dict):
            out: dict[str, Any] | None = None
            renamed: dict[str, str] | None = None
            ctx = self._context(v, path) if "code" in v or not _VALUE_KEYS.isdisjoint(v) else None
            for k, x in v.items():
                if ctx and k in ctx:
                    nx = self._all(x, path + (k,), ctx[k], hits, depth + 1)
                else:
                    nx = self._member(k, x, path, hits, depth)
                if nx is not x:
                    if out is None:
                        out = dict(v)
                    out[k] = nx
                if len(k) >= KEY_SCAN_FROM:
                    nk = self._key(k, path, hits)
                    if nk is not k:
                        renamed = renamed or {}
                        renamed[k] = nk
            res = v if out is None else out
            return res if renamed is None else {renamed.get(k, k): x for k, x in res.items()}
        if isinstance(v, list):
            shaped = self._shaped(v, path, hits, depth)
            if shaped is not None:
                return shaped
            lst: list[Any] | None = None
            for i, x in enumerate(v):
                sub = path + (i,)
                rule = self._path_rule(sub) if self._paths else None
                nx = self._all(x, sub, rule, hits, depth + 1) if rule else self._walk(x, sub, hits, depth + 1)
                if nx is not x:
                    if lst is None:
                        lst = list(v)
                    lst[i] = nx
            return v if lst is None else lst
        return v

    def _all(self, v: Any, path: tuple[PathSeg, ...], rule: str, hits: list[Hit], depth: int) -> Any:
        """Redact every string and number in ``v`` (a value under a secret key)."""
        if depth > MAX_DEPTH:
            return v
        if isinstance(v, dict | list):
            if depth >= RECURSE_TO:
                return self._node(v, path, rule, hits, depth)
            # a copy only when something changed (all placeholders already: ``v`` itself, so a
            # second scrub sees no change)
            if isinstance(v, dict):
                out = {}
                same = True
                for k, x in v.items():
                    nx = self._all(x, path + (k,), rule, hits, depth + 1)       # the value's hits, then the key's
                    nk = k if len(k) < KEY_SCAN_FROM else self._key(k, path, hits)
                    out[nk] = nx
                    same = same and nx is x and nk is k
                return v if same else out
            lst = [self._all(x, path + (i,), rule, hits, depth + 1) for i, x in enumerate(v)]
            return v if all(a is b for a, b in zip(lst, v, strict=True)) else lst
        return self._leaf(v, path, rule, hits, depth)

    def _leaf(self, v: Any, path: tuple[PathSeg, ...], rule: str | None, hits: list[Hit], depth: int) -> Any:
        """``v`` redacted when it is no container (``_CONTAINER`` when it is).
        ``rule``: None walks (patterns on strings), else the whole value goes."""
        if isinstance(v, dict | list):
            return _CONTAINER
        if rule is None:
            return self._string(v, path, hits, depth) if isinstance(v, str) else v
        if isinstance(v, str):
            if not v or is_placeholder(v):
                return v
            ph = self.placeholder(v)
        elif isinstance(v, bool) or v is None or not isinstance(v, int | float):
            return v
        else:
            ph = self.placeholder(orjson.dumps(v).decode() if isinstance(v, float) else str(v))
        hits.append(Hit(format_path(path), rule, ph))
        return ph

    def _member_rule(self, container: Any, path: tuple[PathSeg, ...], key: Any) -> str | None:
        """The rule that makes member ``key`` of ``container`` (at ``path``) a secret whole, or None."""
        r = None
        if isinstance(key, str):
            r = self._secret_key(key)
            if r is None and (key == "code" or key in _VALUE_KEYS) and isinstance(container, dict):
                r = self._context(container, path).get(key)
        if r is None and self._paths:
            r = self._path_rule(path + (key,))
        return r

    def _shaped(self, v: list[Any], path: tuple[PathSeg, ...], hits: list[Hit], depth: int) -> Any:
        """A list of strings shaped as a command line or a [name, value] pair, redacted
        as one (``argv`` rule on the list's path); None for any other list."""
        if v and type(v[0]) is str and self.rules.builtin:
            return shaped_list(v, bool(path) and type(path[-1]) is int, self._secret_key,
                               lambda x: self._leaf(x, path, "argv", hits, depth), lambda x: self._string(x, path, hits, depth))
        return None

    def _node(self, v: Any, path: tuple[PathSeg, ...], rule: str | None, hits: list[Hit], depth: int) -> Any:
        """``v`` at ``path`` redacted with an explicit stack (deep.py): nesting beyond recursion."""
        return deep.walk(v, path, rule, depth, self._member_rule, lambda x, p, r, d: self._leaf(x, p, r, hits, d),
                         lambda k, p: self._key(k, p, hits), lambda x, p, d: self._shaped(x, p, hits, d))

    def _key(self, k: str, path: tuple[PathSeg, ...], hits: list[Hit]) -> str:
        """An object's key (a map keyed by tokens: ``{"ghp_…": {...}}``) gets the
        string patterns too (from ``KEY_SCAN_FROM`` characters); ``k`` itself
        when nothing matched."""
        if len(k) < KEY_SCAN_FROM or is_placeholder(k):
            return k
        new = self._text(k, format_path(path), hits)
        return k if new == k else new

    def _string(self, s: str, path: tuple[PathSeg, ...], hits: list[Hit], depth: int) -> str:
        if len(s) < 6 or is_placeholder(s):
            if s in self.repeats:           # too short for the patterns, but a secret seen before
                ph = self.placeholder(s)
                hits.append(Hit(format_path(path), RULE, ph))
                return ph
            return s
        head = s.lstrip()[:1]
        if head in ("{", "[") and len(s) <= (16 << 20):
            try:
                inner = orjson.loads(s)
            except orjson.JSONDecodeError:
                inner = None
            if isinstance(inner, dict | list):
                before = len(hits)
                red = self._walk(inner, path, hits, depth + 1)
                if red is inner:
                    return s
                # tag the hits as inside embedded JSON, re-encode compactly
                for i in range(before, len(hits)):
                    h = hits[i]
                    hits[i] = Hit(h.path, h.rule + " (in JSON text)", h.placeholder)
                # the whitespace around the JSON stays (a log line's newline: the next line must not join it)
                body = s.strip(" \t\r\n")
                start = s.index(body[:1]) if body else 0
                return s[:start] + orjson.dumps(red).decode() + s[start + len(body):]
        return self._text(s, format_path(path), hits)

    def _text(self, s: str, where: str, hits: list[Hit]) -> str:
        out, found = self._spans(s, where)
        hits.extend(h for _, _, h in found)
        return out

    def _spans(self, s: str, where: str) -> tuple[str, list[tuple[int, int, Hit]]]:
        out, spans = self.scanner.redact(s, lambda secret, rule: self.placeholder(secret))
        if self.repeats:
            more = self.repeats.spans(s, spans)
            if more:
                spans = sorted(spans + more, key=lambda sp: sp.start)
                out = replaced(s, spans, [self.placeholder(s[sp.start:sp.end] if sp.secret is None else sp.secret) for sp in spans])
        return out, [(sp.start, sp.end, Hit(where, sp.rule, self.placeholder(s[sp.start:sp.end] if sp.secret is None else sp.secret)))
                     for sp in spans]
