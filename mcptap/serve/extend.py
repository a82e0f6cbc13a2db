"""Extend a capture with a new episode (level 3): ``mcptap serve --extend``.

    added = extend_capture(path, episode, started=utc_timestamp())

Both files are stdio captures. The capture at ``path`` and then the session
recorded in ``episode`` (the mock's own session, in which requests the
capture could not answer were forwarded to the real server) are fed again,
byte for byte, through a fresh Recorder into ``path + ".extending"``, which
then replaces ``path``. The episode's records carry a session key of their
own (``episode-N``), so lifecycle and pairing state stay apart, and the end
record's counts and digests are those of the merged bytes: the result is a
normal capture (re-annotated by today's rules) with one more session, which
``serve`` prefers for the requests the earlier sessions could not answer.
Raises CaptureReadError (unreadable input) or CaptureWriteError.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from mcptap.capture.reader import CaptureStream
from mcptap.capture.writer import CaptureWriter
from mcptap.model import Direction
from mcptap.recorder import Recorder
from mcptap.records import Eof, MessageRecord, Process, Stderr


def _feed(rec: Recorder, records: Iterable[dict[str, Any]], clock: dict[str, int], offset: int, key: str | None) -> int:
    """Re-record ``records`` (shifted by ``offset`` µs); returns the last time and the number of messages."""
    last = offset
    for r in records:
        typ = r.get("type")
        clock["t"] = last = offset + int(r.get("t_us") or 0)
        seg = key if key is not None else r.get("session")
        if typ in ("message", "eof") and seg != rec.segment_key:
            rec.segment(seg)
        if typ == "message":
            m = MessageRecord.from_json(r).message
            rec.stdio_bytes(m.direction, m.raw)
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
    return last


def extend_capture(path: str, episode: str, started: str) -> int:
    """Append ``episode``'s session to the capture at ``path`` (see module
    docstring); ``started``: the rewritten header's start time (ISO 8601 UTC). Returns the number of client and server messages added."""
    base = CaptureStream(path)
    header = base.header
    if header.get("transport", "stdio") != "stdio":
        base.close()
        raise ValueError(f"{path}: only stdio captures can be extended")
    records = list(base)
    ep = CaptureStream(episode)
    ep_records = list(ep)
    keys = {r.get("session") for r in records if r.get("type") == "message" and r.get("session")}
    clock = {"t": 0}
    tmp = path + ".extending"
    extra = {k: v for k, v in header.items() if k not in ("type", "format", "version", "mcptap", "started", "transport", "target", "rules")}
    rec = Recorder(CaptureWriter.open(tmp), "stdio", target=header.get("target") or {}, clock=lambda: clock["t"], started=started,
                   header_extra={**extra, "episodes": len(keys) + 1})
    last = _feed(rec, records, clock, 0, None)
    _feed(rec, ep_records, clock, last + 1, f"episode-{len(keys) + 2}")
    rec.close(exit_code=(base.end or {}).get("exit_code"))
    os.replace(tmp, path)
    return sum(1 for r in ep_records if r.get("type") == "message")
