"""The fast ``check`` of a capture that needs re-annotation (level 3, pure):
``--full``, a capture written under other rules, one with ``chunk`` records.

The reference (``report.check_capture``) streams the records through the
reader, the integrity check, ``reannotate``, ``Reannotated`` and
``check_stream``, a generator each. :class:`FullScan` does the same work in
one loop over the capture's lines: one ``orjson.loads`` a line, the reader's
record checks for the common message shape inlined, the integrity check's
digests hashed in large blocks, each record replayed through the same
``Reannotator`` (so every finding is today's rules' own), its records grouped
as they come. tests/test_check_scan.py proves the same report for every
capture there. Anything unusual (a damaged record, an impossible ``t_us``) raises
:class:`~mcptap.check.scan.Unsupported`: the caller takes the reference way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from mcptap.capture.dumps import dumps as exact_dumps
from mcptap.capture.integrity import BACKWARDS_US, MAX_T_US, Integrity, StreamTally
from mcptap.capture.reader import exact_ids
from mcptap.capture.record_checks import malformed
from mcptap.check.full_tally import FullTally
from mcptap.check.reannotated import capture_findings, spill_name
from mcptap.check.report import CaptureReport, add_finding
from mcptap.check.scan import FLUSH_BYTES, INT_OR_NONE, STR_OR_NONE, Unsupported
from mcptap.check.shape_oracle import Batch, ShapeOracle, plain_fields
from mcptap.model import Kind, Message
from mcptap.protocol import shapes
from mcptap.protocol.gap_pending import counted_findings
from mcptap.reannotate import end_record, reannotator_for
from mcptap.records import annotation_json
from mcptap.records.end import says_ended

_DIRS = ("c2s", "s2c")

_NO_TRANSPORT: dict[str, Any] = {}      # a record without transport facts passes the type test


class Uncommon(Exception):
    """``FullScan.only_types``: ``args[0]`` is the first line of the list that is no record of those types."""


class FullScan(FullTally):
    """Re-annotation and grouping of one capture's lines (after the header).

    ``header``: the header record; ``keep``: first places kept per code;
    ``shapes``: schema shape checks; ``on_bytes(stream, data)`` receives, in
    order, the bytes the integrity check hashes per stream. :meth:`run` the
    lines, :meth:`end_of_input`, then :meth:`report`. Raises Unsupported."""

    def __init__(self, header: dict[str, Any], keep: int, shapes: bool, on_bytes: Callable[[str, bytes], None]) -> None:
        self.header = header
        self.keep = keep
        self.on_bytes = on_bytes
        self.rec = reannotator_for(header, shapes, light=True)
        self.stdio = header.get("transport") == "stdio"
        self.rep = CaptureReport("", header.get("transport"), header.get("started"))
        self.methods: dict[Any, Any] = {}       # open request seq -> method (check_stream's)
        self.n = 0                              # source records read
        self.cut = 0                            # lines cut by a failed write, each before a gap record (not records)
        self.old_end: dict[str, Any] | None = None
        self.had_end = False
        self.counts = {"c2s": [0, 0], "s2c": [0, 0], "stderr": [0, 0]}
        self.bufs: dict[str, list[bytes]] = {"c2s": [], "s2c": [], "stderr": []}
        self.buffered = 0
        self.gaps = 0
        self.gap_since_last = False
        self.last_seq: int | None = None
        self.order: list[Any] = []
        self.end_seen: dict[str, Any] | None = None    # the integrity check's end record (the last)
        self.t_floor = 0                                  # a message t_us below this goes back too far (Integrity's)
        self.pending: bytes | None = None
        self.truncated = False
        self.oracle: ShapeOracle | None = None            # shape checks computed ahead (check/shape_oracle.py)
        self._stop_speculation: Callable[[], None] = lambda: None
        self.rec.on_message = self._reframed
        self._line_no = 0                                 # the line of the record being re-framed
        self.firsts: dict[Any, tuple[int, int]] | None = None     # check/fullsplit.py: report.add_finding's
        self.only_types: frozenset[str] | None = None    # check/fullsplit.py: raise Uncommon at a record of another type

    def speculated(self, batches: Callable[[], Batch | None], stop: Callable[[], None] = lambda: None) -> ShapeOracle:
        """Take the shape checks of each list of lines :meth:`run` gets from
        ``batches()`` (another process's :class:`Speculation` of the same
        lists) until the capture's bytes are re-framed (``chunk`` records:
        lines are no longer messages), then ``stop()`` that process."""
        self.oracle = ShapeOracle(batches)
        self.rec.annotator.shape_check = self.oracle.check
        self._stop_speculation = stop
        return self.oracle

    def run(self, lines: list[bytes]) -> None:
        loads, dumps, JSONDecodeError, NL = orjson.loads, orjson.dumps, orjson.JSONDecodeError, b"\n"
        replay_json, rec, rep, methods = self.rec.replay_json, self.rec, self.rep, self.methods
        REQUEST = Kind.REQUEST
        stdio, counts, bufs = self.stdio, self.counts, self.bufs
        # the common line: a stdio message record in sequence, its payload as canonical json, nothing
        # for the reader's full check or the integrity check's rarer cases (both inlined: see _line);
        # its counters are kept in locals, handed back before anything else may read them
        fast = stdio and not self.gap_since_last and self.end_seen is None
        reframing = rec.reframing
        oracle = self.oracle
        plains = None           # the speculating process's plain_record verdicts for these lines, when it has sent them
        if oracle is not None:
            oracle.next_batch(lines)
            plains = oracle.plain
        n, last, buffered, plain = self.n, self.last_seq, self.buffered, 0
        t_floor = self.t_floor
        for i, line in enumerate(lines):
            try:
                r = loads(line)
            except JSONDecodeError:
                if self.only_types is not None:
                    self._uncommon(i, n, last, buffered, t_floor, plain)
                if self.pending is not None:
                    raise Unsupported("corrupt record") from None
                self.pending = line
                continue
            if plains is not None:      # the type tests were made: what depends on the records before is left
                common = (plains[i] and fast and self.pending is None and last is not None and (seq := r["seq"]) == last + 1
                          and t_floor <= (t := r["t_us"]))
                if common:
                    d, value, offset = r["dir"], r["json"], r.get("offset", 0)
            else:           # the type tests and the values read next, in one call
                fields = plain_fields(r) if fast else None
                common = fields is not None and self.pending is None
                if common:
                    seq, t, d, value, offset = fields     # type: ignore[misc]
                    common = last is not None and seq == last + 1 and t_floor <= t
            if common:
                whole = True
                try:
                    data = dumps(value) + NL      # not OPT_APPEND_NEWLINE: its bytes keep a ~4 KiB buffer
                except (TypeError, orjson.JSONEncodeError):
                    data = exact_dumps(value) + NL   # a hand-edited json orjson refuses (deep, big integer)
                    whole = False
                if data:
                    n += 1
                    last = seq
                    if t - BACKWARDS_US > t_floor:
                        t_floor = t - BACKWARDS_US
                    c = counts[d]
                    c[1] += 1
                    c[0] += len(data)
                    bufs[d].append(data)
                    buffered += len(data)
                    if buffered > FLUSH_BYTES:
                        self.flush()
                        buffered = 0
                    rec.t_us = t
                    if reframing:        # its messages go to _reframed
                        self._line_no = n + self.cut + 1
                        rec.replay_json_reframed(r, data, whole)
                        continue
                    if oracle is not None:
                        oracle.line = i
                    msg = replay_json(value, offset, data, seq, t, d)
                    if msg.findings:
                        self._group(annotation_json(msg, True), n + self.cut + 1)
                        continue
                    plain += 1
                    if t > rep.duration_us:
                        rep.duration_us = t
                    if msg.kind is REQUEST:
                        methods[seq] = msg.method
                    elif msg.pair is not None:
                        methods.pop(msg.pair, None)
                    continue
            if self.only_types is not None and not (type(r) is dict and r.get("type") in self.only_types):
                self._uncommon(i, n, last, buffered, t_floor, plain)
            self.n, self.last_seq, self.buffered, self.t_floor = n, last, buffered, t_floor
            self._line(r, line, i)
            n, last, buffered, t_floor = self.n, self.last_seq, self.buffered, self.t_floor
            fast = stdio and not self.gap_since_last and self.end_seen is None
            reframing = rec.reframing
            if oracle is not None and rec.reframing:       # no line is a message any more: no speculation helps
                rec.annotator.shape_check = shapes.check
                self.oracle = oracle = None
                self._stop_speculation()
        self.n, self.last_seq, self.buffered, self.t_floor = n, last, buffered, t_floor
        rep.records += plain
        rep.messages += plain

    def _uncommon(self, i: int, n: int, last: int | None, buffered: int, t_floor: int, plain: int) -> None:
        self.n, self.last_seq, self.buffered, self.t_floor = n, last, buffered, t_floor    # run's counters kept
        self.rep.records, self.rep.messages = self.rep.records + plain, self.rep.messages + plain
        raise Uncommon(i)

    def _line(self, r: Any, line: bytes, i: int) -> None:
        """Line ``i`` of the list, parsed (``r``), any shape."""
        rec, rep, methods, counts, bufs = self.rec, self.rep, self.methods, self.counts, self.bufs
        if self.pending is not None:
            if not (isinstance(r, dict) and r.get("type") == "gap"):
                raise Unsupported("corrupt record")
            self.pending = None
            self.cut += 1
        if type(r) is not dict or type(r.get("type")) is not str:
            raise Unsupported("record is not an object with a type")
        if type(r.get("id")) is float or "members" in r or "findings" in r or r["type"] == "end":
            r = exact_ids(r, line)              # big integers (the reader's rule)
        typ = r["type"]
        seq = r.get("seq")
        t = r.get("t_us")
        d = r.get("dir")
        if (typ != "message" or type(seq) is not int or type(t) is not int or type(d) is not str or d not in _DIRS
                or type(r.get("kind")) is not str or "json" not in r or "raw" in r or "raw_b64" in r or "findings" in r
                or "session" in r or "eol" in r or (r.get("method") is not None and type(r.get("method")) is not str)
                or type(r.get("rev", "")) is not str or type(r.get("transport", _NO_TRANSPORT)) is not dict
                or type(r.get("link", 0)) is not int or type(r.get("pair")) not in INT_OR_NONE
                or type(r.get("latency_us")) not in INT_OR_NONE or type(r.get("phase")) not in STR_OR_NONE):
            bad = malformed(r)             # the rarer shapes get the reader's full check
            if bad is not None:
                raise Unsupported(bad)
        if type(t) is int:
            if not (self.t_floor if typ == "message" else 0) <= t <= MAX_T_US:
                raise Unsupported("impossible t_us")
            if typ == "message" and t - BACKWARDS_US > self.t_floor:
                self.t_floor = t - BACKWARDS_US
        self.n += 1
        last = self.last_seq
        if (typ == "message" and self.stdio and last is not None and seq == last + 1 and not self.gap_since_last and self.end_seen is None
                and "raw" not in r and "raw_b64" not in r and "eol" not in r):
            # the common case of _integrity, inlined
            self.last_seq = seq
            c = counts[r["dir"]]
            c[1] += 1
            try:
                data = orjson.dumps(r["json"]) + b"\n"
            except (TypeError, orjson.JSONEncodeError):
                data = exact_dumps(r["json"]) + b"\n"
            c[0] += len(data)
            bufs[r["dir"]].append(data)
            self.buffered += len(data)
            if self.buffered > FLUSH_BYTES:
                self.flush()
        else:
            self._integrity(r, typ, seq)
        # reannotate(): the replay clock, the end record kept aside
        if type(t) is int:
            rec.t_us = t
        if typ == "end":
            self.old_end = r
            self.had_end = says_ended(r)            # one marked incomplete: as none
            return
        line_no = self._line_no = self.n + self.cut + 1
        if self.oracle is not None:
            self.oracle.line = -1 if rec.reframing else i     # re-framed: lines are not messages
        for out in rec.replay(r):
            if "findings" not in out and out.get("type") == "message":
                # _group for a message without findings, inlined
                rep.records += 1
                rep.messages += 1
                ot = out.get("t_us")
                if isinstance(ot, int) and ot > rep.duration_us:
                    rep.duration_us = ot
                if out.get("kind") == "request":
                    methods[out["seq"]] = out.get("method")
                elif "pair" in out:
                    methods.pop(out["pair"], None)
            else:
                self._group(out, line_no)

    def _reframed(self, msg: Message) -> None:
        """``_group`` of a re-framed message (``Reannotator.on_message``), no record built without findings."""
        if msg.findings:
            self._group(annotation_json(msg, True), self._line_no)
            return
        rep = self.rep
        rep.records += 1
        rep.messages += 1
        t = msg.t_us
        if type(t) is int and t > rep.duration_us:
            rep.duration_us = t
        if msg.kind is Kind.REQUEST:
            self.methods[msg.seq] = msg.method
        elif msg.pair is not None:
            self.methods.pop(msg.pair, None)

    def _group(self, out: dict[str, Any], line: int) -> None:
        """check_stream for one re-annotated record (not the end)."""
        rep = self.rep
        rep.records += 1
        typ = out.get("type")
        t = out.get("t_us")
        if isinstance(t, int) and t > rep.duration_us:
            rep.duration_us = t
        method = out.get("method")
        if typ == "message":
            rep.messages += 1
            if out.get("kind") == "request":
                self.methods[out["seq"]] = method
            elif "pair" in out:
                method = self.methods.pop(out["pair"], None)
        fs = counted_findings(out)        # (a gap record: Reannotated's capture.gap)
        if not fs:
            return
        tt = t if isinstance(t, int) else None
        for f in fs:
            add_finding(rep.groups, rep.severities, self.keep, f, out.get("seq"), tt, line, out.get("dir"), method, self.firsts)

    def end_of_input(self) -> None:
        self.flush()
        if self.pending is not None:
            if self.pending.endswith(b"\n"):
                raise Unsupported("corrupt record")
            self.truncated = True
            self.pending = None

    def report(self, path: str, tallies: dict[str, StreamTally]) -> CaptureReport:
        """The capture's report; ``tallies``: the streams' SHA-256 of every byte ``on_bytes`` received."""
        rep = self.rep
        rep.path = path
        if self.oracle is not None:
            self.oracle.line = -1
        end = end_record(self.rec, self.old_end)
        for name, (nbytes, nmsg) in self.counts.items():
            tallies[name].bytes, tallies[name].messages = nbytes, nmsg
        integrity = Integrity.restore(self.header.get("transport"), tallies, self.end_seen, self.gaps, self.order)
        capture = capture_findings(self.truncated, self.had_end, end, integrity, spill_name(self.header))
        rep.records += 1
        t = end.get("t_us")
        if isinstance(t, int) and t > rep.duration_us:
            rep.duration_us = t
        rep.complete = not any(f["code"] == "capture.incomplete" for f in capture)
        rep.truncated = any(f["code"] == "capture.truncated" for f in capture)
        u, un = end.get("findings"), end.get("unanswered")
        fs = list(u if isinstance(u, list) else un if isinstance(un, list) else []) + capture
        line = self.n + self.cut + 1 if self.had_end else None
        for f in fs:
            where = end.get("method")
            if isinstance(f.get("data"), dict):
                where = f["data"].get("method", where)
            add_finding(rep.groups, rep.severities, self.keep, f, None, t if isinstance(t, int) else None, line, end.get("dir"), where)
        return rep
