"""Parse a very large JSON payload without decoding its long strings (pure, sans-IO).

``parse_message(raw)`` returns what ``jsonparse.parse_json_full(raw)`` returns —
``(value, invalid_utf8_offsets, oddities)``, never raising — but for a payload
above ``SKELETON_ABOVE`` bytes whose bulk is a few long string values (a
64 MiB ``text``, ``blob`` or log ``data``), the value is a *skeleton*: the
structure and every short value as orjson reads them, and each long string
payload (a string literal longer than ``LONG_STRING`` bytes that is the value
of a ``text``, ``blob`` or ``data`` member, or an item of an array there,
inside a message's ``params``, ``result`` or ``error``)
replaced by a ``LongString`` that reads its text from ``raw`` only when
asked; long strings elsewhere get their real text. Peak memory is
then the payload plus the skeleton, instead of the payload, orjson's copy of
it and the decoded value at once.

Exactness: the payload is accepted exactly when orjson accepts it — the
document with each long literal replaced by a short one is parsed by orjson
(syntax, numbers, nesting, short strings) and each long literal is checked by
orjson too, in pieces cut only between whole characters and escapes (never
inside a UTF-8 sequence, an escape or a surrogate pair), so syntax, control
characters, escapes and lone surrogates are judged by orjson itself. Anything
off the plain path (invalid UTF-8, a number beyond a double, a refused
payload, a long literal without a safe cut, too many strings, a skeleton that
would not be small) is handed to ``parse_json_full`` whole, so the answer is
always the one it gives. Object keys are never replaced.

A ``LongString`` is a ``str`` whose own characters are a unique marker (NUL
first, so it never equals a peer's short string in C-level comparisons), but
every ``str`` operation called on it in Python — ``==``, ``hash``, ``len``,
slicing, ``in``, ``str()``, formatting, every ``str`` method — works on the
real text, decoded from the payload on demand (not kept). Code that hands it to
C functions reading the characters directly (``re``, ``orjson.dumps``,
``"x" in some_str``) sees the marker: the annotator's rules never do that with
message values, and what must (JSON Schema validation: ``pattern`` runs ``re``)
gets ``real_text(value)`` first (tests/protocol/test_skeleton.py holds the
annotations of skeletons equal to those of full parses).
"""

from __future__ import annotations

import re
import secrets
from typing import Any

import orjson

from mcptap.model import UNPARSED
from mcptap.protocol.jsonparse import parse_json_full
from mcptap.protocol.utf8 import is_utf8

#: payloads above this many bytes are parsed as a skeleton (as capture/pieces.py's STREAM_ABOVE)
SKELETON_ABOVE = 4 << 20
#: string literals above this many bytes become LongString placeholders
LONG_STRING = 64 << 10
#: members whose long string values (or the long strings of an array there) become placeholders
PAYLOAD_KEYS = frozenset({"text", "blob", "data"})
#: a long literal is checked by orjson in pieces of about this many bytes
PIECE = 256 << 10           # 1 MiB pieces: the recorder process's peak 4 MiB higher (64 MiB event)
#: more quote characters than this: the payload is not a few long strings (parsed whole)
MAX_QUOTES = 20_000
#: the document without its long literals must stay below this fraction of the payload
MAX_REST_SHARE = 8

_WS = re.compile(rb"[ \t\r\n]*")
_BACKSLASH = 0x5C


def parse_message(raw: bytes, above: int | None = None, long: int | None = None) -> tuple[Any, tuple[int, ...], int]:
    """``parse_json_full(raw)``; above ``above`` bytes (default
    ``SKELETON_ABOVE``) with strings longer than ``long`` (default
    ``LONG_STRING``) as ``LongString`` (see module doc)."""
    if len(raw) <= (SKELETON_ABOVE if above is None else above):
        return parse_json_full(raw)
    sk = _skeleton(raw, LONG_STRING if long is None else long)
    return parse_json_full(raw) if sk is None else (sk, (), 0)


class LongString(str):
    """A string value of ``raw`` (its JSON literal ``raw[start:end]``, quotes
    included) that is decoded only when an operation needs its text."""

    _src: bytes
    _start: int
    _end: int
    _hash: int | None

    def __new__(cls, marker: str, src: bytes, start: int, end: int) -> LongString:
        self = super().__new__(cls, marker)
        self._src, self._start, self._end, self._hash = src, start, end, None
        return self

    def text(self) -> str:
        """The real text (decoded now: a new str of the full length)."""
        with memoryview(self._src) as view, view[self._start:self._end] as lit:
            value: str = orjson.loads(lit)
        return value

    @property
    def literal_bytes(self) -> int:
        """Length of the JSON literal in the payload (bytes, quotes included)."""
        return self._end - self._start

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        return repr(self.text())

    def __format__(self, spec: str) -> str:
        return format(self.text(), spec)

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(self.text())
        return self._hash

    def __eq__(self, other: object) -> bool:
        if other is self:
            return True
        if not isinstance(other, str):
            return NotImplemented
        return self.text() == (other.text() if isinstance(other, LongString) else str.__str__(other))

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __len__(self) -> int:
        src, a, b = self._src, self._start + 1, self._end - 1
        if src.find(b"\\", a, b) < 0 and _is_ascii(src, a, b):
            return self._end - self._start - 2      # one character per byte: no need to decode
        return len(self.text())

    def __bool__(self) -> bool:
        return self._end - self._start > 2          # only the empty literal "" decodes to ""

    def __reduce__(self) -> tuple[Any, ...]:
        # copies and pickles are plain strings with the real text
        return (str, (self.text(),))

    def __getnewargs__(self) -> tuple[str]:
        return (self.text(),)


def _text_of(x: Any) -> Any:
    return x.text() if type(x) is LongString else x


def _delegate(name: str) -> Any:
    method = getattr(str, name)

    def call(self: LongString, *args: Any, **kwargs: Any) -> Any:
        return method(self.text(), *(_text_of(a) for a in args), **kwargs)

    call.__name__ = name
    return call


def _reflected(name: str) -> Any:
    method = getattr(str, name)

    def call(self: LongString, other: Any) -> Any:
        return method(_text_of(other), self.text()) if isinstance(other, str) else NotImplemented

    call.__name__ = name
    return call


for _name in [n for n in dir(str) if not n.startswith("_")] + [
        "__lt__", "__le__", "__gt__", "__ge__", "__getitem__", "__contains__", "__iter__", "__add__",
        "__mul__", "__rmul__", "__mod__"]:
    setattr(LongString, _name, _delegate(_name))
# rules name a value's type with ``type(v).__name__`` ("result is str, ...")
LongString.__name__ = "str"
for _name, _base in (("__radd__", "__add__"), ("__rmod__", "__mod__")):
    setattr(LongString, _name, _reflected(_base))
del _name, _base


def real_text(value: Any) -> Any:
    """``value`` with every ``LongString`` in it replaced by its real text
    (containers copied), or ``value`` itself when it holds none — for code
    that reads a string's characters in C, where a placeholder would show its
    marker (``re`` behind a JSON Schema ``pattern``). Best effort: a value
    orjson cannot write (an integer beyond 64 bits, nesting beyond 255) is
    returned as it is."""
    if type(value) is LongString:
        return value.text()
    stack = [value]
    while stack:
        node = stack.pop()
        if type(node) is dict:
            node = list(node.values())
        if type(node) is list:
            for v in node:
                if type(v) is LongString:
                    try:
                        return orjson.loads(orjson.dumps(value, default=_text_of, option=orjson.OPT_PASSTHROUGH_SUBCLASS))
                    except (TypeError, orjson.JSONEncodeError):
                        return value
                if type(v) in (dict, list):
                    stack.append(v)
    return value


# -- the skeleton ---------------------------------------------------------------------------
def _skeleton(raw: bytes, long: int) -> Any:
    """The skeleton of ``raw`` or None (then ``parse_json_full`` answers)."""
    if not raw.isascii() and not is_utf8(raw):
        return None
    spans = _long_values(raw, long)
    if not spans:
        return None
    rest = len(raw) - sum(e - s for s, e in spans)
    if rest * MAX_REST_SHARE > len(raw):
        return None
    for s, e in spans:
        if not _literal_ok(raw, s, e):
            return None
    nonce = secrets.token_hex(8)
    marks: dict[str, LongString] = {}
    parts: list[bytes] = []
    pos = 0
    with memoryview(raw) as view:
        for i, (s, e) in enumerate(spans):
            mark = f"\x00mcptap-long-string:{nonce}:{i}"
            marks[mark] = LongString(mark, raw, s, e)
            parts.append(view[pos:s].tobytes())
            parts.append(b'"\\u0000' + mark[1:].encode("ascii") + b'"')
            pos = e
        parts.append(view[pos:].tobytes())
    value, bad, odd = parse_json_full(b"".join(parts))
    if value is UNPARSED or bad or odd:
        return None
    return _substitute(value, marks)


def _substitute(value: Any, marks: dict[str, LongString]) -> Any:
    """``value`` with each marker string replaced by its LongString where the
    string is a payload (the value of a ``text``, ``blob`` or ``data`` member,
    or an item of an array there, inside a message's ``params``, ``result`` or
    ``error``; or the whole message), else by its real text: ids, methods,
    names, URIs, versions, cursors and tool arguments are read by the rules
    (also by C code: regular expressions, JSON Schema patterns) and copied
    into records (an object id ``{"text": …}`` is stored as the peer sent it).
    Iterative: nesting may be deep."""
    if type(value) is str:
        return marks[value] if value in marks else value
    # modes: 0 a message (or a batch item), 1 inside its params/result/error, 2 anywhere else
    stack: list[tuple[Any, bool, int]] = []
    if type(value) is list:
        stack.extend((v, False, 0 if type(v) is dict else 2) for v in value if type(v) in (dict, list))
        for i, v in enumerate(value):
            if type(v) is str and v in marks:
                value[i] = marks[v].text()
    else:
        stack.append((value, False, 0))
    while stack:
        node, payload, mode = stack.pop()
        if type(node) is dict:
            for k, v in node.items():
                child = (1 if k in _BODIES else 2) if mode == 0 else mode
                if type(v) is str:
                    if v in marks:
                        node[k] = marks[v] if child == 1 and k in PAYLOAD_KEYS else marks[v].text()
                elif type(v) is dict:
                    stack.append((v, False, child))
                elif type(v) is list:
                    stack.append((v, child == 1 and k in PAYLOAD_KEYS, child))
        else:
            for i, v in enumerate(node):
                if type(v) is str:
                    if v in marks:
                        node[i] = marks[v] if payload else marks[v].text()
                elif type(v) is dict:
                    stack.append((v, False, mode))
                elif type(v) is list:
                    stack.append((v, payload, mode))
    return value


#: the members of a message whose payload strings may stay placeholders
_BODIES = frozenset({"params", "result", "error"})


def _long_values(raw: bytes, long: int) -> list[tuple[int, int]] | None:
    """(start, end) of each string literal longer than ``long`` bytes that is
    not an object key (end exclusive, quotes included); None when the payload
    has too many quotes or an unterminated string (parsed whole instead)."""
    spans: list[tuple[int, int]] = []
    n = len(raw)
    pos = 0
    quotes = 0
    while True:
        s = raw.find(b'"', pos)
        if s < 0:
            return spans
        e = s + 1
        while True:
            quotes += 1
            if quotes > MAX_QUOTES:
                return None
            e = raw.find(b'"', e)
            if e < 0:
                return None
            if raw[e - 1] != _BACKSLASH or _backslashes_before(raw, e, s) % 2 == 0:
                break
            e += 1
        e += 1
        if e - s > long:
            m = _WS.match(raw, e)
            after = m.end() if m is not None else e
            if after >= n or raw[after] != 0x3A:      # not followed by ':' (a key)
                spans.append((s, e))
        pos = e


def _backslashes_before(raw: bytes, e: int, floor: int) -> int:
    """Length of the run of backslashes ending just before ``raw[e]`` (not before ``floor``)."""
    k = e
    while k > floor:
        lo = max(floor, k - 256)
        window = raw[lo:k]
        stripped = window.rstrip(b"\\")
        k -= len(window) - len(stripped)
        if stripped:
            break
    return e - k


def _literal_ok(raw: bytes, s: int, e: int) -> bool:
    """orjson accepts the string literal ``raw[s:e]`` (checked in pieces).

    An ASCII piece that JSON encodes as it is (no quote, backslash or control
    character: ``orjson.dumps`` of its text is two bytes longer) is accepted at
    once; any other piece is parsed by orjson. (orjson's parse makes a str
    ~1.1 ns a byte: ~75 ms of the HTTP recorder process's CPU for a 64 MiB SSE
    event's data; an ASCII decode and ``dumps`` take ~12.)"""
    body_end = e - 1
    pos = s + 1
    with memoryview(raw) as view:
        while pos < body_end:
            cut = _safe_cut(raw, pos + PIECE, body_end)
            if cut is None:
                return False
            piece = view[pos:cut]
            try:
                plain = len(orjson.dumps(str(piece, "ascii"))) == cut - pos + 2
            except UnicodeDecodeError:
                plain = False
            if not plain:
                try:
                    orjson.loads(b'"' + piece + b'"')
                except orjson.JSONDecodeError:
                    return False
            pos = cut
    return True


def _safe_cut(raw: bytes, t: int, end: int) -> int | None:
    """A position at or after ``t`` (or ``end``) where a string body may be cut:
    a byte that starts a character, is not a backslash, with no backslash in the
    6 bytes before it (so no escape or surrogate pair spans it); None when none
    is found within ``PIECE`` bytes."""
    if t >= end:
        return end
    limit = min(end, t + max(PIECE, 64))
    c = t
    while c < limit:
        b = raw.rfind(b"\\", c - 6, c + 1)
        if b >= 0:
            c = b + 7
            continue
        if raw[c] & 0xC0 == 0x80:
            c += 1
            continue
        return c
    return end if limit == end else None


def _is_ascii(src: bytes, start: int, end: int) -> bool:
    """``src[start:end]`` is ASCII, checked in pieces (no whole copy)."""
    for k in range(start, end, PIECE):
        if not src[k:min(end, k + PIECE)].isascii():
            return False
    return True
