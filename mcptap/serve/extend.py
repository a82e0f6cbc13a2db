"""Extend a capture with a new episode (level 3): ``mcptap serve --extend``.

    added = extend_capture(path, episode, scrubbers=())

Both files are stdio captures. The capture at ``path`` is copied line for
line, byte for byte (every record: messages, ``chunk``, ``gap``, ``context``,
``note``, ``stderr``, ``process``…; streamed, never held whole), except its end
record; then the session recorded in ``episode`` (the mock's own session, in
which the requests the capture could not answer were forwarded to the real
server, with that server's stderr and process records) is fed again, byte for
byte, through a Recorder that continues the capture's record numbers and
stream offsets (an ``offset`` is a position in its direction's stream, which
the file's records of every session make up) under a session key of its own
(``episode-N``), so its lifecycle and pairing state stay apart and it is
annotated by today's rules. The recorded notifications the mock replayed to the
client (``replayed``: their seqs in the episode) are left out: the capture
holds them already, and added again they would read as the server's new
behaviour. The answers and server requests it replayed stay,
so the new session's exchanges stay paired. A new end record closes the
merged capture: per-direction counts and SHA-256 digests of the bytes the file
holds (all sessions), findings counted over every record, the original end
record's pending requests and end-of-session findings kept beside the new
session's, and a scrubbed capture's ``original`` (the digests of the streams
its tap forwarded, before scrubbing) as it was. The header is the original's (its ``started``: record times stay
what they were) with ``episodes`` counted up; the episode's times are placed
after the original's (at its own wall-clock time where that is later). A
capture that had no end record (its tap was killed) gets a ``gap`` record
before the new session saying so.

A scrubbed capture (``header.scrubbed``): ``scrubbers`` (``redact.scrub.Scrubber``,
one per pass, made with the header's rules and key) redact the new session's
records as its own were; the caller refuses to extend when they cannot be made.
A gzip capture (``.jsonl.gz``) is written back gzip-compressed.

The merged capture is written to a hidden file beside the capture
(``.NAME.extending-PID``, under the capture lock while it is written, removed on any
failure; one a SIGKILLed mcptap left is removed by the next serve of that capture, ``ls``
and ``prune``: ``liveness.stale_merges``) and then renamed over ``path`` in one step: a
process killed meanwhile leaves the original capture as it was. Raises CaptureReadError (unreadable input), CaptureWriteError (cannot
write), ValueError (not a capture that can be extended).
"""

from __future__ import annotations

import gzip
import os
from collections.abc import Callable, Collection, Iterable, Sequence
from datetime import datetime
from typing import IO, Any, cast

import orjson

from mcptap.capture.format import VERSION, decode_bytes
from mcptap.capture.integrity import StreamTally
from mcptap.capture.reader import CaptureStream, parse_header
from mcptap.capture.source import CUT, lines, open_input, read_line
from mcptap.capture.writer import CaptureWriter, lock
from mcptap.errors import CaptureWriteError
from mcptap.escape import escape_name
from mcptap.liveness import remove_leftovers
from mcptap.model import Direction, Severity
from mcptap.protocol.gap_pending import counted_findings
from mcptap.recorder import Recorder
from mcptap.records import Eof, MessageRecord, Process, Stderr, message_bytes
from mcptap.records.end import says_ended

_DIRS = ("c2s", "s2c", "stderr")
#: the end record's lists that carry over from the original session
_CARRIED = ("pending", "cancelled_unanswered", "unanswered")


class _Tally:
    """What the merged end record states, counted over the records as written (after
    scrubbing): the streams' bytes, digests and record counts, findings by severity and
    code, chunk records."""

    def __init__(self) -> None:
        self.streams = {d: StreamTally() for d in _DIRS}
        self.severities = {s.value: 0 for s in Severity}
        self.codes: dict[str, int] = {}
        self.chunks = [0, 0]

    def findings(self, fs: Any) -> None:
        for f in fs if isinstance(fs, list) else ():
            if isinstance(f, dict) and isinstance(f.get("code"), str):
                sev = f.get("severity")
                if sev in self.severities:
                    self.severities[sev] += 1
                self.codes[f["code"]] = self.codes.get(f["code"], 0) + 1

    def add(self, rec: dict[str, Any]) -> None:
        typ = rec.get("type")
        d = rec.get("dir")
        if typ == "message" and d in ("c2s", "s2c"):
            self.streams[d].add(message_bytes(rec) or b"")
        elif typ == "chunk" and d in ("c2s", "s2c"):
            data = decode_bytes(rec, "data") or b""
            self.streams[d].add(data, message=False)
            self.chunks[0] += 1
            self.chunks[1] += len(data)
        elif typ == "gap" and d in ("c2s", "s2c") and isinstance(rec.get("bytes"), int):
            self.streams[d].bytes += rec["bytes"]
        elif typ == "stderr":
            self.streams["stderr"].add(decode_bytes(rec, "data") or b"")
        self.findings(counted_findings(rec))     # (a gap record: its capture.gap, as the recorder counts it)


class _Out:
    """The merged file, ``.NAME.extending-PID`` beside the capture until ``publish`` renames
    it over the capture; ``discard`` removes it. One a killed mcptap left (SIGKILL: nothing
    else stops a merge, signals wait for it) is removed by the next serve of that capture."""

    def __init__(self, path: str, gz: bool) -> None:
        self.path = path
        where, name = os.path.split(os.path.abspath(path))
        remove_leftovers(where, name)
        self.named: str | None = os.path.join(where, f".{name}.extending-{os.getpid()}")
        fd = os.open(self.named, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        # the capture writer's lock, held until the file is the capture: ls and prune see a merge
        # in progress (liveness.stale_merges) whatever its pid (pids are reused)
        lock(fd)
        self.raw: IO[bytes] = os.fdopen(fd, "wb", buffering=1 << 20)
        self.fp: IO[bytes] = cast(IO[bytes], gzip.GzipFile(fileobj=self.raw, mode="wb", compresslevel=6, mtime=0)) if gz else self.raw

    def write(self, data: bytes) -> None:
        self.fp.write(data)

    def publish(self) -> None:
        """Finish the file and put it in the capture's place (one rename)."""
        if self.fp is not self.raw:
            self.fp.close()
        self.raw.flush()
        os.fsync(self.raw.fileno())
        assert self.named is not None
        os.replace(self.named, self.path)       # before close: the lock holds until it is the capture
        self.named = None
        self.raw.close()

    def discard(self) -> None:
        for close in (self.fp.close, self.raw.close):
            try:
                close()
            except (OSError, ValueError):
                pass
        if self.named is not None:
            try:
                os.unlink(self.named)
            except OSError:
                pass


class _Sink(CaptureWriter):
    """The episode's records into the merged file, after ``transforms`` (scrubbing), counted
    in ``tally``; the end record gets the merged counts (``finish_end``)."""

    def __init__(self, out: _Out, tally: _Tally, transforms: Sequence[Callable[[dict[str, Any]], dict[str, Any]]],
                 finish_end: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        super().__init__(-1, out.path)
        self.out = out
        self.tally = tally
        self._transforms = list(transforms)
        self._finish_end = finish_end
        self.transform = self._scrub
        self.line_filter = self._count

    def _scrub(self, rec: dict[str, Any]) -> dict[str, Any]:
        for t in self._transforms:
            rec = t(rec)
        return self._finish_end(rec) if rec.get("type") == "end" else rec

    def _count(self, rec: dict[str, Any], line: bytes) -> bytes:
        if rec.get("type") != "end":
            self.tally.add(rec)
        return line

    def _write(self, data: bytes | memoryview) -> int:
        self.out.write(bytes(data))
        return len(data)

    def close(self) -> None:
        self.flush()
        self.closed = True


def _copy(src: IO[bytes], path: str, out: _Out, tally: _Tally) -> tuple[int, int, dict[str, Any] | None, set[str], bool]:
    """Copy the records after the header, except the end record, line for line; returns (last
    seq, last t_us, the end record, the session keys of its messages, whether its last line was cut)."""
    seq = t = 0
    end: dict[str, Any] | None = None
    keys: set[str] = set()
    cut = False
    for line in lines(src, path):
        if line == CUT:
            cut = True
            break
        try:
            rec = orjson.loads(line)
        except orjson.JSONDecodeError:
            rec = None
        if not isinstance(rec, dict):
            out.write(line if line.endswith(b"\n") else line + b"\n")       # kept as it was (a cut record, with its gap)
            cut = not line.endswith(b"\n")
            continue
        if rec.get("type") == "end":
            end = rec
            continue
        out.write(line if line.endswith(b"\n") else line + b"\n")
        tally.add(rec)
        if isinstance(rec.get("seq"), int):
            seq = max(seq, rec["seq"])
        if type(rec.get("t_us")) is int:
            t = max(t, rec["t_us"])
        if rec.get("type") == "message" and isinstance(rec.get("session"), str):
            keys.add(rec["session"])
    return seq, t, end, keys, cut


def _feed(rec: Recorder, records: Iterable[dict[str, Any]], clock: dict[str, int], offset: int, key: str,
          replayed: Collection[int] = ()) -> int:
    """Re-record ``records`` (times shifted by ``offset`` µs, session ``key``), except the
    message records whose seq is in ``replayed``; returns the number of messages."""
    n = 0
    for r in records:
        typ = r.get("type")
        clock["t"] = offset + int(r.get("t_us") or 0)
        if typ == "message" and r.get("seq") in replayed:
            continue
        if typ == "message":
            m = MessageRecord.from_json(r).message
            rec.stdio_bytes(m.direction, m.raw)
            n += 1
        elif typ == "eof":
            rec.stdio_eof(Direction(Eof.from_json(r).dir))
        elif typ == "stderr":
            rec.stderr(Stderr.from_json(r).data)
        elif typ == "process":
            p = Process.from_json(r)
            fields = {k: v for k, v in p.fields.items() if k != "session"}
            if p.event == "exit":
                rec.exit(**fields)
            else:
                rec.process(p.event, **fields)
        elif typ not in ("header", "end"):
            # anything else the mock's recorder wrote (a gap: its disk was full): kept, renumbered
            rec._write({**r, "seq": rec._next(), "t_us": clock["t"]})
            rec._flush()
    return n


def _offset(header: dict[str, Any], episode: dict[str, Any], last: int) -> int:
    """Where the episode's times start (µs after the capture's start): after the last record,
    and at its own wall-clock time when the two ``started`` stamps say that is later."""
    try:
        delta = datetime.fromisoformat(str(episode.get("started"))) - datetime.fromisoformat(str(header.get("started")))
        wall = int(delta.total_seconds() * 1e6)
    except (TypeError, ValueError, OverflowError):
        wall = 0
    return max(last + 1, wall)


def extend_capture(path: str, episode: str, scrubbers: Sequence[Any] = (), source: str | None = None,
                   replayed: Collection[int] = ()) -> int:
    """Append ``episode``'s session to the capture at ``path`` (see module docstring);
    ``scrubbers``: a scrubbed capture's passes, redone on the new records; ``source``: where
    to read the capture when not at ``path`` (a descriptor's ``/proc/self/fd/N``: one removed
    meanwhile is merged, and put back, all the same); ``replayed``: the seqs of the episode's
    message records that are recorded notifications the mock replayed (``ServeResult.replayed``),
    left out. Returns the number of client and server messages added."""
    src = open_input(source or path)
    try:
        gz = isinstance(src, gzip.GzipFile)
        header = parse_header(read_line(src, path), path)
        if header.get("transport", "stdio") != "stdio":
            raise ValueError(f"{escape_name(path)}: only stdio captures can be extended")
        if header.get("version") != VERSION:
            raise ValueError(f"{escape_name(path)}: capture format version {header.get('version')!r}: only version {VERSION} captures can be extended")
        if header.get("scrubbed") and not scrubbers:
            raise ValueError(f"{escape_name(path)} is scrubbed, and the new session cannot be scrubbed as it was")
        ep = CaptureStream(episode)
        out = _Out(path, gz)
        try:
            added = _merge(src, path, header, ep, out, scrubbers, replayed)
            out.publish()
        except BaseException:
            out.discard()
            raise
    finally:
        src.close()
    return added


def _merge(src: IO[bytes], path: str, header: dict[str, Any], ep: CaptureStream, out: _Out, scrubbers: Sequence[Any],
           replayed: Collection[int]) -> int:
    tally = _Tally()
    # the header is the only line rewritten: the episode count, nothing else
    head = dict(header)
    head["episodes"] = int(header.get("episodes") or 0) + 1 if isinstance(header.get("episodes"), int) else 1
    out.write(orjson.dumps(head) + b"\n")
    last_seq, last_t, end, keys, cut = _copy(src, path, out, tally)
    for s in scrubbers:
        s.header(header)            # each pass knows the transport, as on the capture it scrubbed
        s._last_seq, s._last_t = last_seq, last_t
        for d in ("c2s", "s2c"):    # its offsets continue the file's streams, as the recorder's do
            s._digests[d].bytes = tally.streams[d].bytes
    old = end or {}
    tally.findings(old.get("unanswered"))

    def finish_end(rec: dict[str, Any]) -> dict[str, Any]:
        tally.findings(rec.get("unanswered"))
        new = dict(rec)
        for d in _DIRS:
            new[d] = tally.streams[d].json()
        # a scrubbed capture's proof of what its tap forwarded (scrub_streams._end): the source's
        # digests, kept as they were; the new session was redacted as it was recorded
        if "original" in old:
            new["original"] = old["original"]
        else:
            new.pop("original", None)
        new["severities"], new["codes"] = dict(tally.severities), dict(sorted(tally.codes.items()))
        for k in _CARRIED:
            both = list(old.get(k) or []) + list(rec.get(k) or [])
            if both or k == "pending":
                new[k] = both
            else:
                new.pop(k, None)
        if tally.chunks[0]:
            new["chunks"] = {"records": tally.chunks[0], "bytes": tally.chunks[1]}
        return new

    clock = {"t": last_t}
    sink = _Sink(out, tally, [s.record for s in scrubbers], finish_end)
    rec = Recorder(None, "stdio", target=header.get("target") or {}, clock=lambda: clock["t"], started=str(header.get("started")))
    rec.writer = sink
    sink.on_gap = rec.writer_gap        # its own gap records reach the annotator (recorder.writer_gap)
    rec.seq = last_seq
    for d in (Direction.C2S, Direction.S2C):
        # offsets are positions in the direction's stream, which the file's records make up
        # (every session, gap bytes included: docs/capture-format.md): the new session's continue it
        rec.streams[d].bytes = tally.streams[d._value_].bytes
    if cut:
        out.write(b"\n")
        rec.gap("mcptap was killed while writing this record")
    if not says_ended(end):       # none, or one marked incomplete (a scrubbed copy of a killed tap's capture)
        rec.gap("the capture extended here had no end record (its tap was killed or is still running): its earlier "
                "sessions may be incomplete")
    key = f"episode-{len(keys) + 2}"
    rec.segment(key)
    offset = _offset(header, ep.header, last_t)
    added = _feed(rec, ep, clock, offset, key, replayed)
    rec.close(exit_code=old.get("exit_code"))
    if sink.failed is not None or sink.dropped:
        raise CaptureWriteError(f"cannot write the extended capture: {sink.failed}")
    return added


__all__ = ["extend_capture"]
