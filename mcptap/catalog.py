"""The captures in a directory: what each one is, without reading it whole
(``mcptap ls``), and which ones retention removes (``mcptap prune``,
``mcptap record --keep``).

A capture's summary comes from its first line (the header), its last line
(the end record, found by seeking back from the end of the file) and, for the
protocol revision, the first record within the first 64 KiB that carries
``rev``: listing a directory of multi-gigabyte captures costs a few reads
each. Gzip-compressed captures (``.jsonl.gz``) are read too: decompressed
as a stream, since a gzip file cannot be read backwards. Only files whose
first bytes are an mcptap capture header count as captures (also: a header
cut short, DAMAGED; no byte at all in a file named as mcptap names captures,
EMPTY); nothing else in the directory is listed or ever deleted, except a
removed capture's spill file, the stale disk-full reserves
a killed mcptap leaves (``.NAME.jsonl.reserve``, ``liveness.stale_reserves``) and
``serve --extend``'s work files of a process that is gone (``liveness.stale_merges``).
Symbolic links are not followed: a link is neither listed nor removed, so a
``latest.jsonl`` link never takes a capture's place or removes its target.

Level 1: file reads, and ``liveness`` (``/proc``, ``kill(pid, 0)``) to tell a
capture still being written from one cut short. No clock: callers pass ``now``.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from mcptap.capture.format import VERSION
from mcptap.capture.writer import locked_by_a_writer
from mcptap.capture_ends import HEAD_SCAN, cut_header, gzip_ends, is_header, last_line
from mcptap.escape import escape_name
from mcptap.liveness import Writers, being_written
from mcptap.paths import safe_name, server_name
from mcptap.records.end import says_ended

_FILE_NAME = re.compile(r"^\d{8}T\d{6}Z-(.+)-\d+\.jsonl(?:\.gz)?$")
_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$", re.I)
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}

#: Status words: the capture ended normally / has no end record and its mcptap
#: is gone / has no end record and its mcptap still runs.
COMPLETE, TRUNCATED, RECORDING = "complete", "truncated", "recording"
#: ... / it has an end record, but part of the traffic is not in it: recording stopped or
#: failed before it (the end record's ``recorder_error``: the recorder raised, a ``gap``
#: record stands for the rest; ``capture_error``/``dropped_records``: writing failed) or
#: ``gap`` records say what was not recorded (the end record's ``codes``: ``capture.gap``,
#: e.g. the relay's spill file at its bound): ``check`` reports ``capture.gap``
INCOMPLETE = "incomplete"
#: ... / its header line is cut (a gzip capture cut short within it, a tap killed
#: writing it) / a file named as mcptap names captures, with no byte (``_FILE_NAME``)
#: / a header of a capture format version this mcptap cannot read (a newer mcptap's)
DAMAGED, EMPTY, UNSUPPORTED = "damaged", "empty", "unsupported"


@dataclass(frozen=True)
class CaptureInfo:
    """One capture file, as ``mcptap ls`` shows it.

    ``messages``: messages forwarded (both directions), from the end record;
    None when there is none. ``name``: the server name as a file name shows
    it (``paths.safe_name``); ``server``: the name retention groups by (the
    header's ``name`` as given, else ``name``). ``severities``: finding counts by severity from
    the end record (empty without one; its ``error`` counts each ``capture.gap``
    that ``check`` reports: the end record's, one per gap record, and the one for a
    failed capture write). These are the live annotator's counts, which leave out
    ``check``'s schema shape checks (``shape.*``). ``status``: COMPLETE,
    INCOMPLETE, TRUNCATED or RECORDING. ``size``: bytes; ``mtime``: seconds since the epoch.
    ``unframed``: it holds bytes stored unframed while live analysis was
    behind (``chunk`` records), so its end record's counts are not the
    capture's: ``messages`` is None and ``severities`` empty (``mcptap check``
    counts them). ``version``: the header's format version (UNSUPPORTED:
    above what this mcptap reads). ``spill``: the spill file the header
    names, when it is this capture's (a name beside it); with
    ``<path>.spill``, the companions :func:`remove` deletes with it.
    ``extending``: a ``serve --extend`` holds it (its capture lock) to merge a
    new session into it; retention leaves it alone. ``named_spill``: the spill
    file name the header gives, whoever's it is (a renamed capture's header
    names its old spill file, which ``recover`` reads: it is no orphan).
    """

    path: str
    started: str
    name: str
    transport: str
    revision: str | None
    messages: int | None
    severities: dict[str, int]
    status: str
    size: int
    mtime: float
    exit_code: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    server: str = ""
    unframed: bool = False
    version: int | None = None
    spill: str | None = None
    extending: bool = False
    named_spill: str | None = None

    @property
    def no_traffic(self) -> bool:
        """True when the capture ended and no message crossed the tap
        (the host never spoke, or the server failed to start), or the file is EMPTY."""
        return (self.status == COMPLETE and self.messages == 0) or self.status == EMPTY

    def as_json(self) -> dict[str, Any]:
        return {
            "path": escape_name(self.path), "started": self.started, "name": self.name, "transport": self.transport,
            "revision": self.revision, "messages": self.messages, "severities": self.severities,
            "status": self.status, "no_traffic": self.no_traffic, "size": self.size, "exit_code": self.exit_code,
            "unframed": self.unframed, "version": self.version, "extending": self.extending,
        }


def _revision(head: bytes) -> str | None:
    for line in head.split(b"\n")[1:-1]:      # skip the header; the last piece may be cut
        if b'"rev":' not in line:
            continue
        try:
            rec = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        rev = rec.get("rev") if isinstance(rec, dict) else None
        if isinstance(rev, str):
            return rev
    return None


def _name(header: dict[str, Any], path: str) -> str:
    """The server name: the header's (``record --name``), else the one in the
    file name (``YYYYMMDDTHHMMSSZ-NAME-PID.jsonl``), else guessed from the
    target."""
    name = header.get("name")
    if isinstance(name, str) and name:
        return safe_name(name)
    m = _FILE_NAME.match(os.path.basename(path))
    if m:
        return m.group(1)
    target = header.get("target")
    target = target if isinstance(target, dict) else {}
    argv = target.get("argv")
    if isinstance(argv, list) and all(isinstance(a, str) for a in argv):
        return server_name(argv)
    upstream = target.get("url") or target.get("upstream")
    if isinstance(upstream, str):
        host = upstream.split("://", 1)[-1].split("/", 1)[0]
        return safe_name(host)
    return "?"


def read_info(path: str | os.PathLike[str], writers: Writers | None = None) -> CaptureInfo | None:
    """Summary of the capture at ``path``; None when it is not an mcptap
    capture (or cannot be read). Never raises for a damaged capture: what
    cannot be read is shown as unknown. ``writers``: a snapshot of the files
    open for writing, shared by the captures of one listing."""
    p = os.fspath(path)
    try:
        with open(p, "rb") as fp:
            st = os.fstat(fp.fileno())
            gzipped = fp.read(2) == b"\x1f\x8b"
            fp.seek(0)
            if gzipped:
                got = gzip_ends(fp)
                if got is None:
                    return None
                head, last = got
            else:
                head = fp.read(HEAD_SCAN)
                last = last_line(fp, st.st_size) if is_header(head) else None
            first = head.split(b"\n", 1)[0]
    except OSError:
        return None
    if not is_header(head):
        return _unreadable(p, head, st, gzipped, writers)
    try:
        header = orjson.loads(first)
    except orjson.JSONDecodeError:
        header = {}
    if not isinstance(header, dict):
        header = {}
    end: dict[str, Any] | None = None
    if last is not None and last != first:
        try:
            rec = orjson.loads(last)
        except orjson.JSONDecodeError:
            rec = None
        if isinstance(rec, dict) and rec.get("type") == "end" and says_ended(rec):
            end = rec                           # (one marked incomplete: a transform's of a capture that had none)
    messages = None
    severities: dict[str, int] = {}
    exit_code = None
    unframed = False
    version = header.get("version")
    if isinstance(version, int) and version > VERSION:
        end = None                  # a newer format: its end record may not mean what ours does
    if end is not None:
        messages = sum(int(end.get(d, {}).get("messages", 0) or 0) for d in ("c2s", "s2c") if isinstance(end.get(d), dict))
        sev = end.get("severities")
        if isinstance(sev, dict):
            severities = {k: int(v) for k, v in sev.items() if isinstance(v, int) and v}
        code = end.get("exit_code")
        exit_code = code if isinstance(code, int) else None
        status = COMPLETE
        codes = end.get("codes")
        gaps = codes.get("capture.gap") if isinstance(codes, dict) else None
        gaps = gaps if isinstance(gaps, int) and gaps > 0 else 0
        # the end record counts a capture.gap for each gap record (recorder_gaps); check reports
        # one more for a failed write (the end record's capture_error); a capture of an mcptap
        # that did not count gap records has recorder_error for the gap record of its failure
        failed = bool(end.get("capture_error") or end.get("dropped_records")) + bool(end.get("recorder_error") and not gaps)
        if failed or gaps:
            status = INCOMPLETE
            if failed:
                severities["error"] = severities.get("error", 0) + failed
        chunks = end.get("chunks")
        if isinstance(chunks, dict) and chunks.get("records"):
            # bytes stored unframed while live analysis was behind: the live counts miss their
            # messages (and judged the rest without them); only re-framing (check) counts them
            messages, severities, unframed = None, {}, True
    else:
        # mcptap never writes gzip live: a compressed capture without its end was cut
        status = RECORDING if not gzipped and being_written(p, (st.st_dev, st.st_ino), writers) else TRUNCATED
        if status == TRUNCATED and isinstance(version, int) and version > VERSION:
            status = UNSUPPORTED
    return CaptureInfo(
        path=os.path.abspath(p), started=str(header.get("started", "?")), name=_name(header, p),
        transport=str(header.get("transport", "?")), revision=_revision(head), messages=messages,
        severities=severities, status=status, size=st.st_size, mtime=st.st_mtime, exit_code=exit_code,
        server=_server(header, p), unframed=unframed, version=version if isinstance(version, int) else None,
        spill=_own_spill(header.get("spill"), p),
        named_spill=_spill_name(header.get("spill")),
        # a whole capture under a writer's lock: serve --extend, merging a session into it
        extending=status == COMPLETE and locked_by_a_writer(p),
    )


def _unreadable(p: str, head: bytes, st: os.stat_result, gzipped: bool, writers: Writers | None) -> CaptureInfo | None:
    """A file without a whole capture header that is a capture all the same:
    DAMAGED, its header cut (or, named as mcptap names captures, a gzip stream
    that gives no byte), EMPTY (so named, no byte), RECORDING while a tap
    still writes it; else None (not a capture)."""
    named = _FILE_NAME.match(os.path.basename(p)) is not None
    if not cut_header(head) and not (named and not head):
        return None
    status = EMPTY if st.st_size == 0 else DAMAGED
    if not gzipped and being_written(p, (st.st_dev, st.st_ino), writers):
        status = RECORDING
    return CaptureInfo(path=os.path.abspath(p), started="?", name=_name({}, p), transport="?", revision=None,
                       messages=None, severities={}, status=status, size=st.st_size, mtime=st.st_mtime, server=_server({}, p))


def _own_spill(name: Any, capture: str) -> str | None:
    """The header's ``spill`` when it names this capture's spill file beside it
    (``transport.spill.spill_path``: ``NAME.spill`` or, for a long name, one ending
    in ``~`` and 12 hex digits of the name's SHA-256): a copied or renamed capture's
    header names another capture's."""
    base = os.path.basename(capture)
    if not isinstance(name, str) or "/" in name or os.sep in name:
        return None
    tag = "~" + hashlib.sha256(os.fsencode(base)).hexdigest()[:12] + ".spill"
    return name if name == base + ".spill" or name.endswith(tag) else None


def _spill_name(name: Any) -> str | None:
    """The header's ``spill`` when it is a file name (beside the capture)."""
    return name if isinstance(name, str) and name and "/" not in name and os.sep not in name else None


def _server(header: dict[str, Any], path: str) -> str:
    """The name retention groups by: ``record --name`` as given (two names
    that differ only past 40 characters or in punctuation are two servers)."""
    name = header.get("name")
    return name if isinstance(name, str) and name else _name(header, path)


def scan(directory: str | os.PathLike[str]) -> list[CaptureInfo]:
    """Every capture (``*.jsonl``) directly in ``directory``, newest first
    (start time, then modification time); symbolic links are left out. A
    missing directory is empty; raises OSError when it cannot be read."""
    try:
        names = sorted(os.listdir(directory))
    except FileNotFoundError:
        return []
    out = []
    writers = Writers()
    for n in names:
        if not n.endswith((".jsonl", ".jsonl.gz")) or n.startswith(".mcptap-episode-"):
            continue            # (a serve --extend session file of an older mcptap: work, not a capture)
        full = os.path.join(directory, n)
        if os.path.islink(full) or not os.path.isfile(full):
            continue
        info = read_info(full, writers)
        if info is not None:
            out.append(info)
    out.sort(key=lambda i: (i.started, i.mtime, i.path), reverse=True)
    return out


def parse_age(text: str) -> float:
    """``90s``, ``15m``, ``12h``, ``7d``, ``2w`` → seconds.
    Raises ValueError for anything else, a bare number included: ``7`` meant
    as days would delete every capture older than 7 seconds."""
    m = _AGE.match(text)
    if not m:
        unit = " (a bare number has no unit: 7 seconds or 7 days?)" if re.fullmatch(r"\s*\d+(?:\.\d+)?\s*", text) else ""
        raise ValueError(f"{text!r}: expected a number with a unit s, m, h, d or w (e.g. 7d, 12h, 30m, 90s){unit}")
    return float(m.group(1)) * _UNITS[m.group(2).lower()]


def select_prune(infos: Sequence[CaptureInfo], now: float, older_than: float | None = None,
                 keep: int | None = None) -> list[CaptureInfo]:
    """The captures retention removes (pure).

    ``older_than``: seconds; a capture whose last write (mtime) is older goes.
    ``keep``: the ``keep`` newest captures of each server (``CaptureInfo.server``) always stay.
    With only ``keep``, everything but those goes. Captures still being
    recorded or extended never go.
    """
    by_name: dict[str, list[CaptureInfo]] = {}
    for info in sorted(infos, key=lambda i: (i.started, i.mtime, i.path), reverse=True):
        by_name.setdefault(info.server or info.name, []).append(info)
    doomed = []
    for group in by_name.values():
        for rank, info in enumerate(group):
            if info.status == RECORDING or info.extending:
                continue
            if keep is not None and rank < keep:
                continue
            if older_than is not None and now - info.mtime <= older_than:
                continue
            if older_than is None and keep is None:
                continue
            doomed.append(info)
    return doomed


def remove(infos: Iterable[CaptureInfo]) -> list[tuple[CaptureInfo, str | None]]:
    """Delete the files; returns (info, error or None) for each."""
    done: list[tuple[CaptureInfo, str | None]] = []
    for info in infos:
        try:
            os.unlink(info.path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            done.append((info, exc.strerror or str(exc)))
            continue
        done.append((info, None))
        # its spill file (what a killed tap set aside for `recover`): useless without the capture
        spills = {info.path + ".spill"} | ({os.path.join(os.path.dirname(info.path), info.spill)} if info.spill else set())
        for spill in spills:
            try:
                os.unlink(spill)
            except OSError:
                pass
    return done


def keep_newest(directory: str | os.PathLike[str], name: str, keep: int, current: str) -> list[tuple[CaptureInfo, str | None]]:
    """``record --keep N``: remove all but the ``keep`` newest captures of
    server ``name`` (``record --name`` as given, else the name guessed from the
    command) in ``directory``; the capture being written (``current``) always
    counts as one of them and is never removed."""
    infos = [i for i in scan(directory) if (i.server or i.name) == name]
    cur = os.path.abspath(current)
    others = [i for i in infos if i.path != cur]
    return remove(select_prune(others, now=0.0, keep=max(keep - 1, 0)))
