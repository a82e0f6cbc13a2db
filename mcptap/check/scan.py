"""The fast ``check`` of a capture written under the current rules (level 3, pure).

``check`` of such a capture reuses its recorded annotations and only adds
schema shape checks (``reuse_annotations.reuse_annotations``, grouped by
``report.check_stream``). :class:`Scan` computes exactly that report straight
from the capture's lines: one ``orjson.loads`` per line, no re-annotated
record dicts, stream digests hashed in large blocks. It is also splittable:
a scan of a later run of lines (``first=False``) starts without knowing what
came before and keeps what depends on it (responses to earlier requests, the
sequence check at its first record) for :meth:`Scan.absorb`, which merges it
into the scan of the lines before it exactly as one scan over both would
have ended (mcptap/check/parallel.py runs the two halves in two processes).

Anything a scan does not handle (a damaged or hand-edited capture: corrupt
lines, malformed records, an impossible ``t_us``, seqs out of order across a
split, ``chunk`` records, records after the end record across a split) raises
:class:`Unsupported` or makes ``absorb`` return False; the caller then checks
the capture the reference way (``report.check_capture``), which reports it.
tests/test_check_scan.py proves both paths give the same report.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import orjson

from mcptap.capture.dumps import dumps as exact_dumps
from mcptap.capture.integrity import BACKWARDS_US, MAX_T_US, StreamTally
from mcptap.capture.reader import exact_ids, may_hold_big_ids
from mcptap.capture.record_checks import malformed
from mcptap.check.merge import UNSET, absorb
from mcptap.check.report import CaptureReport, CodeGroup, add_finding
from mcptap.check.scan_records import Unsupported as Unsupported  # re-exported: callers catch scan.Unsupported
from mcptap.check.scan_records import after_end, check_seq, other_record, payload
from mcptap.check.scan_report import scan_report
from mcptap.model import UNPARSED, Direction, Kind, severity_counts
from mcptap.records import message_bytes

_DIRS = {"c2s": Direction.C2S, "s2c": Direction.S2C}
_KINDS = {"request": Kind.REQUEST, "notification": Kind.NOTIFICATION}
_loads = orjson.loads
_dumps = orjson.dumps
_JSONDecodeError = orjson.JSONDecodeError
#: the types the reader allows for a message record's ``pair``/``latency_us`` and ``phase`` (else its full check words the error)
#: the members of the common message record (check/shape_oracle.py's; no raw bytes, findings, eol, session, transport facts, batch members)
PLAIN_KEYS = frozenset({"type", "seq", "t_us", "dir", "kind", "id", "method", "pair", "latency_us", "phase", "rev", "json", "link", "offset"})
INT_OR_NONE = frozenset({int, type(None)})
STR_OR_NONE = frozenset({str, type(None)})
FLUSH_BYTES = 1 << 20       # stream bytes buffered before they are handed to ``on_bytes``


class Scan:
    """Check state over consecutive capture lines (after the header), reuse mode.

    ``transport``: the header's; ``keep``: first places kept per code;
    ``shapes``: add schema shape checks; ``first``: the lines start right
    after the header (else a later run, see :meth:`absorb`). ``on_bytes(stream,
    data)`` receives, in order, the bytes the integrity check hashes per stream
    (``"c2s"``, ``"s2c"``, ``"stderr"``). Feed lines with :meth:`run` (any
    number of calls), then :meth:`end_of_input`; :meth:`report` gives the
    capture's report. Raises :class:`Unsupported`."""

    def __init__(self, transport: str | None, keep: int, shapes: bool, first: bool,
                 on_bytes: Callable[[str, bytes], None]) -> None:
        self.transport = transport
        self.keep = keep
        self.shapes = shapes
        self.first = first
        self.on_bytes = on_bytes
        self.n = 0                          # records read (the reader's line count after the header)
        self.cut = 0                        # lines cut by a failed write, each before a gap record (not records)
        self.n_end = 0                      # end records among them
        self.messages = 0
        self.duration = 0
        self.groups: dict[str, CodeGroup] = {}
        #: later run: where each code and (code, severity) first occurs (check/merge.py)
        self.firsts: dict[Any, tuple[int, int]] | None = None if first else {}
        self.sev = severity_counts()
        self.reqs: dict[Any, dict[str, Any]] = {}    # open requests: seq -> request record
        #: later run: responses to requests before it, (line, record, parsed payload)
        self.deferred: list[tuple[int, dict[str, Any], Any]] = []
        self.end: dict[str, Any] | None = None
        self.last_rec_seq: int | None = None     # seq and t_us of the last record with a seq
        self.last_t: Any = 0 if first else UNSET  # (a later run: the t_us before it is not known)
        self.any_seq = False
        # message times (Integrity's capture.impossible_time): a scan leaves any to the reference
        self.t_latest = 0                   # the latest message t_us (a later run: of its own)
        self.t_min: int | None = None       # the earliest message t_us (absorb judges it against the run before)
        # integrity (capture/integrity.Integrity, inlined)
        self.counts = {"c2s": [0, 0], "s2c": [0, 0], "stderr": [0, 0]}   # stream -> [bytes, messages]
        self.bufs: dict[str, list[bytes]] = {"c2s": [], "s2c": [], "stderr": []}
        self.buffered = 0
        self.gaps = 0
        self.gap_since_last = False
        self.last_seq: int | None = None
        self.increasing = True
        self.order: list[tuple[bool, Any]] = []        # (a sequence finding?, Finding)
        self.first_seq: tuple[int, str, bool, int] | None = None   # later run: seq, type, gap before it, len(order)
        self.pending: bytes | None = None
        self.truncated = False
        self.failed: str | None = None
        #: (dir, kind, method, rev) -> shapes.checks of that key, [sure, slow] (for the messages' shape checks)
        self.checkers: dict[tuple[str, str, str, str], list[Any]] = {}

    # -- the hot loop ------------------------------------------------------------------------
    def run(self, lines: Iterable[bytes]) -> None:
        """Consume capture lines (with their newlines), in file order."""
        loads, dumps, JSONDecodeError, DIRS, KINDS, NL = _loads, _dumps, _JSONDecodeError, _DIRS, _KINDS, b"\n"
        plain_keys = PLAIN_KEYS.issuperset      # (a set's own method on the dict: cheaper than keys() <= PLAIN_KEYS)
        stdio = self.transport == "stdio"
        shapes = self.shapes
        if shapes:
            from mcptap.protocol import shapes as shape_rules
            check_shape, checker, checkers = shape_rules.check, shape_rules.checks, self.checkers
        # the last request's or notification's checks key (dir, kind, method, rev) and its checks; the last response's
        # (dir, method, rev): locals, not a tuple, so the usual test of the next message's key indexes nothing
        m_d: Any = None
        m_kind: Any = None
        m_method: Any = None
        m_rev: Any = None
        r_d: Any = None
        r_method: Any = None
        r_rev: Any = None
        m_pair: Any = None
        r_pair: Any = None
        reqs, first, counts, bufs, deferred = self.reqs, self.first, self.counts, self.bufs, self.deferred
        n, messages, buffered, duration = self.n, self.messages, self.buffered, self.duration
        any_seq, last_rec_seq, last_t = self.any_seq, self.last_rec_seq, self.last_t
        base = (1 if first else 0) + self.cut      # line of record n: n + base
        last_seq = self.last_seq
        pending = self.pending is not None      # a cut line before (self.pending)
        nxt = self._next_seq()           # the seq that needs no sequence check (None: every seq does)
        t_latest, t_min = self.t_latest, self.t_min
        t_floor = t_latest - BACKWARDS_US         # below it: too far back (negative times are caught apart)
        for line in lines:
            try:
                rec = loads(line)
            except JSONDecodeError:
                if self.pending is not None:
                    raise Unsupported("corrupt record") from None
                self.pending = line
                pending = True
                continue
            if pending:
                if not (isinstance(rec, dict) and rec.get("type") == "gap"):
                    raise Unsupported("corrupt record")
                self.pending = None
                pending = False
                self.cut += 1
                base += 1
            if type(rec) is not dict:
                raise Unsupported("record is not an object")
            typ: Any = rec.get("type")
            n += 1
            seq: Any
            t: Any
            if typ == "message":
                seq = rec.get("seq")
                t = rec.get("t_us")
                kind: Any = rec.get("kind")
                d: Any = rec.get("dir")
                method: Any = rec.get("method")
                rev: Any = rec.get("rev")
                # the common record: only PLAIN_KEYS (no raw bytes, findings, eol…), each of the type the reader
                # wants, no id orjson read as a float (so no big integer: exact_ids would leave it as it is)
                plain = (type(rec.get("id")) is not float and plain_keys(rec) and type(seq) is int and type(t) is int
                         and (d == "c2s" or d == "s2c")
                         and type(kind) is str and "json" in rec and (method is None or type(method) is str)
                         and (type(rev) is str or (rev is None and "rev" not in rec)) and type(rec.get("link", 0)) is int
                         and type(rec.get("pair")) in INT_OR_NONE and type(rec.get("latency_us")) in INT_OR_NONE
                         and type(rec.get("phase")) in STR_OR_NONE)
                if not plain:
                    if may_hold_big_ids(rec):
                        rec = exact_ids(rec, line)          # big integers (the reader's rule)
                        seq, t, kind, d, method, rev = (rec.get("seq"), rec.get("t_us"), rec.get("kind"), rec.get("dir"),
                                                        rec.get("method"), rec.get("rev"))
                    bad = malformed(rec)          # the rarer shapes get the reader's full check
                    if bad is not None:
                        raise Unsupported(bad)
                    if kind == "batch" and shapes:      # its members' shape checks: reuse_annotations' (batch_shapes.py)
                        raise Unsupported("batch record")
                messages += 1
                if t > t_latest:            # the common case (a later time than any before): one comparison
                    if t > MAX_T_US:
                        raise Unsupported("impossible t_us")
                    t_latest, t_floor = t, t - BACKWARDS_US
                    t_min = t if t_min is None else t_min
                elif t < t_floor or t < 0:
                    raise Unsupported("impossible t_us")
                elif t_min is None or t < t_min:
                    t_min = t
                # integrity (Integrity.feed's order): the sequence, then the bytes
                if seq == nxt:
                    last_seq, nxt = seq, seq + 1
                else:
                    self.last_seq = last_seq
                    check_seq(self, seq, typ)
                    last_seq = self.last_seq
                    self.gap_since_last = False
                    if self.end is not None:
                        after_end(self, seq, typ)
                    nxt = self._next_seq()
                c = counts[d]
                c[1] += 1
                if stdio:
                    if plain:           # message_bytes inlined for the common record
                        value = rec["json"]
                        try:
                            data = dumps(value) + NL
                        except (TypeError, orjson.JSONEncodeError):   # a hand-edited json orjson refuses (deep, big integer)
                            data = exact_dumps(value) + NL
                    else:
                        data = message_bytes(rec) or b""
                    size = len(data)
                    c[0] += size
                    bufs[d].append(data)
                    buffered += size
                    if buffered > FLUSH_BYTES:
                        self.flush()
                        buffered = 0
                # pairing and shapes (reuse_annotations.reuse_annotations)
                answered = task_params = None
                if kind == "request":
                    reqs[seq] = rec
                elif "pair" in rec:
                    if kind != "response" and kind != "error":
                        raise Unsupported("a paired message that is not a response")
                    q = reqs.pop(rec["pair"], None)
                    if q is not None:
                        answered = q.get("method")
                        j = q.get("json")
                        if type(j) is dict:
                            params = j.get("params")
                            if type(params) is dict and "task" in params:
                                task_params = params
                    elif not first:
                        # answers a request before this run: judged when merged (absorb)
                        deferred.append((n + base, rec, payload(rec) if shapes else None))
                        any_seq, last_rec_seq, last_t = True, seq, t
                        continue
                    method = answered
                fs = rec.get("findings") if not plain else None
                if shapes:
                    value = rec["json"] if plain else rec.get("json", UNPARSED)
                    if value is UNPARSED and ("raw" in rec or "raw_b64" in rec):
                        value = payload(rec)
                    if type(value) is dict:
                        extra = None
                        if kind == "request" or kind == "notification":
                            if type(method) is str:     # a request's or notification's own method
                                if type(rev) is str:
                                    # the key of the message before on this path, the usual one (its strings are new
                                    # objects: comparing them is cheaper than hashing them for the lookup)
                                    if method == m_method and rev == m_rev and d == m_d and kind == m_kind:
                                        pair = m_pair
                                    else:
                                        m_d, m_kind, m_method, m_rev = key = (d, kind, method, rev)
                                        pair = checkers.get(key)
                                        if pair is None:
                                            pair = checkers[key] = checker(DIRS[d], KINDS[kind], method, rev)
                                        m_pair = pair
                                    p = value.get("params")
                                    try:
                                        sure = type(p) is dict and p and pair[0](p)
                                    except Exception:  # noqa: BLE001 - "not sure": its check decides
                                        sure = False
                                    if not sure:
                                        extra = pair[1](p)
                                else:
                                    extra = check_shape(DIRS[d], KINDS[kind], method, value.get("params"), rev)
                        elif answered is not None and kind == "response":
                            if task_params is None and type(rev) is str:
                                if answered == r_method and rev == r_rev and d == r_d:     # as above
                                    pair = r_pair
                                else:
                                    r_d, r_method, r_rev = d, answered, rev
                                    key = (d, kind, answered, rev)
                                    pair = checkers.get(key)
                                    if pair is None:
                                        pair = checkers[key] = checker(DIRS[d], Kind.RESPONSE, answered, rev)
                                    r_pair = pair
                                p = value.get("result")
                                try:
                                    sure = type(p) is dict and p and pair[0](p)
                                except Exception:  # noqa: BLE001 - "not sure": its check decides
                                    sure = False
                                if not sure:
                                    extra = pair[1](p)
                            else:
                                extra = check_shape(DIRS[d], Kind.RESPONSE, answered, value.get("result"), rev, task_params)
                        if extra:
                            fs = list(fs or ()) + [f.to_json() for f in extra]
                if fs:
                    self._group(fs, seq, t, n + base, d, method)
                any_seq, last_rec_seq, last_t = True, seq, t     # (duration: the latest message time, t_latest, at the end)
                continue
            else:
                if may_hold_big_ids(rec):
                    rec = exact_ids(rec, line)          # big integers (the reader's rule)
                seq = rec.get("seq")
                t = rec.get("t_us")
                if type(typ) is not str:
                    raise Unsupported("record without a type")
                bad = malformed(rec)
                if bad is not None:
                    raise Unsupported(bad)
                if typ == "chunk":
                    raise Unsupported("chunk record")
                self.last_seq = last_seq
                self.buffered = buffered
                other_record(self, rec, typ, seq, t, n + base)
                last_seq, buffered = self.last_seq, self.buffered
                nxt = self._next_seq()
                if typ == "end":
                    continue
            if type(seq) is int:
                any_seq, last_rec_seq, last_t = True, seq, rec.get("t_us", last_t)
            if type(t) is int and t > duration:
                duration = t
        self.n, self.messages, self.buffered, self.duration = n, messages, buffered, max(duration, t_latest)
        self.any_seq, self.last_rec_seq, self.last_t = any_seq, last_rec_seq, last_t
        self.last_seq = last_seq
        self.t_latest, self.t_min = t_latest, t_min

    def _next_seq(self) -> int | None:
        """The seq a message may have with no sequence check (the last + 1, no gap or end record since)."""
        last = self.last_seq
        return last + 1 if last is not None and not self.gap_since_last and self.end is None else None

    def _group(self, fs: list[Any], seq: Any, t: Any, line: int | None, d: Any, method: Any) -> None:
        for f in fs:
            if type(f) is not dict:
                raise Unsupported("a finding that is not an object")
            add_finding(self.groups, self.sev, self.keep, f, seq, t, line, d, method, self.firsts)

    def flush(self) -> None:
        """Hand the buffered stream bytes to ``on_bytes``."""
        for name, buf in self.bufs.items():
            if buf:
                self.on_bytes(name, b"".join(buf))
                buf.clear()
        self.buffered = 0

    def end_of_input(self) -> None:
        """The lines ended (the end of the file): a cut last line is a
        truncated capture (the reader's rule)."""
        self.flush()
        if self.pending is not None:
            if self.pending.endswith(b"\n"):
                raise Unsupported("corrupt record")
            self.truncated = True
            self.pending = None

    # -- merging a later run ---------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """What :meth:`absorb` needs of a later run (picklable; bytes already handed out)."""
        self.flush()
        keys = ("n", "cut", "n_end", "messages", "duration", "groups", "firsts", "sev", "reqs", "deferred", "end", "last_rec_seq",
                "last_t", "any_seq", "t_latest", "t_min", "counts", "gaps", "gap_since_last", "last_seq", "increasing", "order", "first_seq",
                "pending", "truncated")
        return {k: getattr(self, k) for k in keys}

    def absorb(self, b: dict[str, Any]) -> bool:
        """Merge the :meth:`state` of the run of lines right after this one,
        as if this scan had read them. False (nothing changed) when that run
        cannot be merged exactly: the caller then scans those lines here."""
        return absorb(self, b)

    # -- the result ---------------------------------------------------------------------------
    def report(self, path: str, header: dict[str, Any], tallies: dict[str, StreamTally]) -> CaptureReport:
        """The capture's report (as ``report.check_capture`` gives it; check/scan_report.py).
        ``tallies``: the streams' SHA-256 of every byte ``on_bytes`` received."""
        return scan_report(self, path, header, tallies)
