"""Schema shape checks of ``check --full`` computed ahead, on another core
(level 3, pure: the process that runs :class:`Speculation` is
check/shape_child.py's).

Re-annotation is sequential (every message's annotation depends on the ones
before it), but the shape checks (protocol/shapes.py: the official wire
models, pydantic) are a pure function of the message's sender, kind, method
(a response: its request's), payload, revision, and for a response whether
its request was task-augmented; they cost about a third of ``check --full``.
A message record carries the annotations it was recorded with, so
:class:`Speculation` computes each message's check with the *recorded*
kind, method and revision, reading the same lines; :class:`ShapeOracle`,
the annotator's shape check in the re-annotating process, takes that verdict
when re-annotation asks for the check of the same line with the same inputs
(the payload is the same: it is parsed from the same line), and computes it
itself otherwise. The findings are therefore exactly those of one process,
whatever the capture holds; only the work moves.

Only the common record shape is speculated (a stdio message record whose
payload is a ``json`` object, no ``raw`` bytes, no integer beyond 64 bits);
each line gets at most one check (a batch's members are checked here).

The speculating process also tells, per line, whether the record has the
common message shape of :func:`plain_record` (the type tests of
``FullScan.run``'s common line, all but the ones that depend on the records
before it): the re-annotating process, which parses the same line, then makes
only those (about a tenth of its work moves).
"""

from __future__ import annotations

import zlib
from array import array
from collections.abc import Callable, Iterable
from typing import Any

import orjson

from mcptap.capture.integrity import MAX_T_US
from mcptap.model import Direction, Finding, Kind
from mcptap.protocol import shapes

#: one list of lines, as handed from the speculating process: (lines, their bytes,
#: the key id per line (-1: none), keys new since the last list, line index -> findings,
#: per line 1 when ``plain_record`` holds for its record, else 0, the CRC-32 of its first and last line)
Batch = tuple[int, int, bytes, list[tuple[Any, ...]], dict[int, list[Finding]], bytes, tuple[int, int]]

#: the keys of the common message record (no raw bytes, findings, session, eol, transport facts, batch members)
PLAIN_KEYS = frozenset({"type", "seq", "t_us", "dir", "kind", "id", "method", "pair", "latency_us", "phase", "rev", "json", "link", "offset"})
_INT_OR_NONE = frozenset({int, type(None)})
_STR_OR_NONE = frozenset({str, type(None)})

#: distinct (sender, kind, method, revision, task) keys speculated at most (a capture of
#: ever new method names gets the rest of its checks from the re-annotating process)
MAX_KEYS = 4096
_KINDS = {"request": Kind.REQUEST, "notification": Kind.NOTIFICATION, "response": Kind.RESPONSE}
_DIRS = {"c2s": Direction.C2S, "s2c": Direction.S2C}


def _key(direction: str, kind: str, method: str, revision: Any, request_params: Any) -> tuple[Any, ...]:
    """What a shape check depends on besides its payload (see ``shapes.check``)."""
    return (direction, kind, method, revision, isinstance(request_params, dict) and "task" in request_params)


def plain_record(r: Any) -> bool:
    """True when ``r`` (a parsed record line) is a message record of the
    common shape: only ``PLAIN_KEYS``, integer ``seq`` and ``t_us`` (at most
    ``MAX_T_US``), ``dir`` c2s or s2c, a string ``kind``, a ``json`` payload,
    an ``id`` that is no float, every other annotation of its type. What it
    leaves to the reader of the records in order: ``seq`` follows the last
    one, ``t_us`` does not go back too far (``FullScan.run``)."""
    return plain_fields(r) is not None


def plain_fields(r: Any) -> tuple[int, int, str, Any, Any] | None:
    """``(seq, t_us, dir, json, offset)`` of ``r`` when ``plain_record(r)`` (``offset``:
    0 when absent, as ``r.get("offset", 0)``), else None: the common line's type
    tests and the values ``FullScan.run`` reads next, in one call."""
    if type(r) is not dict:
        return None
    # the tests depend on which keys come in which order (a recorder writes a handful of layouts):
    # one generated test per layout takes the values by position, no key looked up
    keys = tuple(r)
    test = _LAYOUTS.get(keys)
    if test is None:
        test = _layout_test(keys)
        if len(_LAYOUTS) < MAX_SIGNATURES:
            _LAYOUTS[keys] = test
    return test(r)


#: plain_fields' generated test per key layout (the keys in order), at most MAX_SIGNATURES
_LAYOUTS: dict[tuple[Any, ...], Callable[[dict[str, Any]], tuple[int, int, str, Any, Any] | None]] = {}
MAX_SIGNATURES = 1024

#: plain_record's test of each field's value (``{v}``), "": none; a field absent passes
#: unless it is required (type, seq, t_us, dir, kind, json)
_FIELD_TESTS = {
    "type": 'type({v}) is str and {v} == "message"', "seq": "type({v}) is int", "t_us": "type({v}) is int and {v} <= MAX_T_US",
    "dir": 'type({v}) is str and ({v} == "c2s" or {v} == "s2c")', "kind": "type({v}) is str", "id": "type({v}) is not float",
    "method": "({v} is None or type({v}) is str)", "rev": "type({v}) is str", "link": "type({v}) is int",
    "pair": "({v} is None or type({v}) is int)", "latency_us": "({v} is None or type({v}) is int)",
    "phase": "({v} is None or type({v}) is str)", "json": "", "offset": ""}
_REQUIRED = ("type", "seq", "t_us", "dir", "kind", "json")
#: the fields plain_fields gives, in order (offset: 0 when absent)
_GIVEN = ("seq", "t_us", "dir", "json", "offset")


def _never(r: dict[str, Any]) -> None:
    return None


def _layout_test(keys: tuple[Any, ...]) -> Callable[[dict[str, Any]], tuple[int, int, str, Any, Any] | None]:
    """``plain_fields`` of a dict whose keys are ``keys``, in that order."""
    if not set(keys) <= PLAIN_KEYS or not all(k in keys for k in _REQUIRED):
        return _never
    names = [f"v{i}" for i in range(len(keys))]
    tests = [_FIELD_TESTS[k].format(v=n) for k, n in zip(keys, names, strict=True) if _FIELD_TESTS[k]]
    given = [names[keys.index(k)] if k in keys else "0" for k in _GIVEN]
    src = (f"def test(r):\n    {', '.join(names)}, = r.values()\n"
           f"    if {' and '.join(tests)}:\n        return ({', '.join(given)})\n    return None\n")
    scope: dict[str, Any] = {"MAX_T_US": MAX_T_US}
    exec(src, scope)            # (source built here from _FIELD_TESTS and _GIVEN alone)
    test: Callable[[dict[str, Any]], tuple[int, int, str, Any, Any] | None] = scope["test"]
    return test


def plain_record_reference(r: Any) -> bool:
    """``plain_record`` tested field by field, without its cache (tests hold it to this)."""
    if type(r) is not dict or not r.keys() <= PLAIN_KEYS or r.get("type") != "message":
        return False
    t, d, method = r.get("t_us"), r.get("dir"), r.get("method")
    return (type(r.get("seq")) is int and type(t) is int and t <= MAX_T_US and (d == "c2s" or d == "s2c")
            and type(r.get("kind")) is str and "json" in r and type(r.get("id")) is not float
            and (method is None or type(method) is str) and type(r.get("rev", "")) is str
            and type(r.get("link", 0)) is int and type(r.get("pair")) in _INT_OR_NONE
            and type(r.get("latency_us")) in _INT_OR_NONE and type(r.get("phase")) in _STR_OR_NONE)


class Speculation:
    """The speculating side: ``batch(lines)`` for each list of record lines
    (after the header, in the order the re-annotating process reads them)."""

    def __init__(self, check: Callable[..., list[Finding]] = shapes.check) -> None:
        self.check = check
        self.keys: dict[tuple[Any, ...], int] = {}
        self.requests: dict[Any, tuple[str, Any]] = {}     # recorded request seq -> (method, params), until answered

    def batch(self, lines: Iterable[bytes]) -> Batch:
        ids = array("i")
        plain = bytearray()
        size = 0
        new: list[tuple[Any, ...]] = []
        found: dict[int, list[Finding]] = {}
        keys, requests, loads = self.keys, self.requests, orjson.loads
        first = line = b""          # with the count and the bytes, their CRC-32 tell a list from another (seq differs)
        for i, line in enumerate(lines):
            if i == 0:
                first = line
            size += len(line)
            spec = -1
            try:
                r = loads(line)
            except orjson.JSONDecodeError:
                r = None
            plain.append(plain_record(r))
            if type(r) is dict and r.get("type") == "message":
                got = self._one(r, requests)
                if got is not None:
                    key, fs = got
                    spec = keys.get(key, -1)
                    if spec < 0 and len(keys) < MAX_KEYS:
                        spec = keys[key] = len(keys)
                        new.append(key)
                    if fs and spec >= 0:
                        found[i] = fs
            ids.append(spec)
        return len(ids), size, ids.tobytes(), new, found, bytes(plain), (zlib.crc32(first), zlib.crc32(line))

    def _one(self, r: dict[str, Any], requests: dict[Any, tuple[str, Any]]) -> tuple[tuple[Any, ...], list[Finding]] | None:
        kind, value, d, rev, pair = r.get("kind"), r.get("json"), r.get("dir"), r.get("rev"), r.get("pair")
        req = requests.pop(pair, None) if kind in ("response", "error") and type(pair) is int else None
        if (type(value) is not dict or d not in _DIRS or "raw" in r or "raw_b64" in r or type(r.get("id")) is float
                or type(value.get("id")) is float or "members" in r or (rev is not None and type(rev) is not str)):
            return None
        if kind == "request" or kind == "notification":
            method = r.get("method")
            if type(method) is not str:
                return None
            params = value.get("params")
            if kind == "request" and type(r.get("seq")) is int:
                requests[r["seq"]] = (method, params)
            return _key(d, kind, method, rev, None), self.check(_DIRS[d], _KINDS[kind], method, params, rev)
        if kind != "response" or req is None:
            return None
        method, params = req
        return _key(d, kind, method, rev, params), self.check(_DIRS[d], Kind.RESPONSE, method, value.get("result"), rev, params)


class ShapeOracle:
    """The re-annotating side: ``check`` has ``shapes.check``'s signature and
    answers for line ``line`` of the current list (set by the caller before
    that line's record is re-annotated; -1: no line) from the speculated
    verdict when its inputs match, else computes it. ``next_batch(lines)``
    before each list of lines takes that list's batch from ``source()`` (the
    next batch in order when it is there already, else None: this process
    does not wait, it checks that list itself); a batch of other lines than
    the list (count or bytes differ) is not used."""

    def __init__(self, source: Callable[[], Batch | None]) -> None:
        self.source = source
        self.line = -1
        self.keys: dict[tuple[Any, ...], int] = {}
        self._ids: list[int] = []
        self._found: dict[int, list[Finding]] = {}
        #: this list's ``plain_record`` verdict per line (None: no batch for it, the caller tests each record)
        self.plain: bytes | None = None
        self._wanted = 0                # lists begun
        self._got = 0                   # batches taken from source (in order; a late one only for its keys)
        self.used = 0                   # checks answered from the speculation (for tests and benchmarks)

    def next_batch(self, lines: list[bytes]) -> None:
        self.line = -1
        self._wanted += 1
        current = None
        while self._got < self._wanted:
            batch = self.source()
            if batch is None:
                break
            self._got += 1
            for key in batch[3]:            # the key table grows in step with the speculating side's
                self.keys[key] = len(self.keys)
            if self._got == self._wanted:
                current = batch
        if (current is None or current[0] != len(lines) or current[1] != sum(map(len, lines))
                or current[6] != (zlib.crc32(lines[0]) if lines else 0, zlib.crc32(lines[-1]) if lines else 0)):
            self._ids, self._found, self.plain = [], {}, None
            return
        self.plain = current[5]
        ids = array("i")
        ids.frombytes(current[2])
        self._ids = ids.tolist()        # a list's items are ready objects: an array makes one per read
        self._found = current[4]

    def check(self, direction: Direction, kind: Kind, method: str, payload: Any, revision: str | None,
              request_params: Any = None) -> list[Finding]:
        i = self.line
        if i >= 0:
            self.line = -1
            ids = self._ids
            if i < len(ids):
                spec = ids[i]
                if spec >= 0 and self.keys.get((direction._value_, kind._value_, method, revision,
                                                 isinstance(request_params, dict) and "task" in request_params)) == spec:   # _key, inlined
                    self.used += 1
                    found = self._found
                    return found[i] if found and i in found else []
        return shapes.check(direction, kind, method, payload, revision, request_params)
