"""The re-annotated record stream of one capture (level 3): today's rules over
the capture's raw bytes, plus findings about the capture file itself.

``Reannotated.open(path) -> Reannotated``; iterate for record dicts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from mcptap.capture.fields import record_findings
from mcptap.capture.integrity import Integrity
from mcptap.capture.reader import CaptureStream, reusable
from mcptap.protocol.codes import finding
from mcptap.protocol.gap_pending import gap_finding
from mcptap.records.end import says_ended


class Reannotated:
    """The re-annotated records of one capture, in order (streaming).

    Iterate to get record dicts (docs/capture-format.md) as today's rules
    annotate them; the last one is a fresh ``end`` record whose ``capture``
    list holds findings about the capture file itself. While iterating,
    ``line`` is the 1-based line of the current record in the capture file
    (None for a synthesized end record). ``header`` is the header record.
    Raises CaptureReadError (from the reader) on a corrupt record.
    """

    def __init__(self, header: dict[str, Any], records: Iterable[dict[str, Any]], path: str | None = None,
                 truncated: Callable[[], bool] = lambda: False, shapes: bool = True, light: bool = False,
                 reuse: bool = True) -> None:
        self.header = header
        self.shapes = shapes
        self.light = light
        # a capture with chunk records is re-framed from its bytes (its recorded annotations miss those
        # messages); standard input, a FIFO cannot be searched for them first, so they take the full path too
        self.reuse = reuse and (path is None or reusable(path))
        self.path = path
        self.line: int | None = 1
        self._records = records
        self._truncated = truncated
        self._src_line = 1
        self._src_done = False
        self._had_end = False
        self._integrity = Integrity(header.get("transport"))

    @classmethod
    def open(cls, path: str, shapes: bool = True, light: bool = False, reuse: bool = True) -> Reannotated:
        """Open a capture file. ``shapes``: include schema shape checks
        (protocol/shapes.py); ``light``: annotation-only message records
        (see recorder.reannotate). Raises CaptureReadError (missing, not a
        capture, unsupported version)."""
        stream = CaptureStream(path)
        return cls(stream.header, stream, path, lambda: stream.truncated, shapes, light, reuse)

    def _source(self) -> Iterator[dict[str, Any]]:
        from mcptap.records.refusals import mark_refusals, needs_marking

        records = self._records
        # an old HTTP capture's refusals marked here, its records then counted as lines in their order
        for n, r in enumerate(mark_refusals(records) if needs_marking(self.header) else records, 2):
            # a line cut by a failed write (skipped by the reader, a gap record after it) is a line too
            self._src_line = n + getattr(records, "cut_records", 0)
            self._integrity.feed(r)
            if r.get("type") == "end":
                self._had_end = says_ended(r)       # one marked incomplete: as none
            yield r
        self._src_done = True

    def __iter__(self) -> Iterator[dict[str, Any]]:
        # here: the recorder and every rule, which check's fast scan does not need
        from mcptap.reannotate import reannotate

        for rec in reannotate(self.header, self._source(), shapes=self.shapes, light=self.light, reuse=self.reuse, marked=True):
            typ = rec.get("type")
            if typ == "end":
                self.line = self._src_line if self._had_end else None
                rec["capture"] = self._capture_findings(rec)
            else:
                self.line = self._src_line
                if typ == "gap" and not rec.get("findings"):
                    rec = dict(rec, findings=[gap_finding(rec).to_json()])
            yield rec

    def _capture_findings(self, end: dict[str, Any]) -> list[dict[str, Any]]:
        return capture_findings(self._truncated(), self._had_end, end, self._integrity, spill_name(self.header))


def spill_name(header: dict[str, Any]) -> str | None:
    """The stdio spill file a capture's header names (``mcptap recover``), or None."""
    spill = header.get("spill")
    return spill if isinstance(spill, str) else None


def capture_findings(truncated: bool, had_end: bool, end: dict[str, Any], integrity: Integrity, spill: str | None = None) -> list[dict[str, Any]]:
    """The findings about the capture file itself, as finding dicts: a cut
    last line (``truncated``), no end record (``had_end`` False), a failed
    recording (the re-annotated ``end`` record's ``capture_error`` /
    ``dropped_records``), then ``integrity``'s (order and digests). ``spill``:
    the header's stdio spill file name (``mcptap recover`` hint)."""
    out = []
    if truncated:
        out.append(finding("capture.truncated", "the capture's last line is cut mid-record (mcptap was killed while writing); it was ignored"))
    if not had_end:
        hint = (f" (if the spill file its header names, {spill}, is beside it, `mcptap recover` adds the bytes the killed tap had "
                "set aside there)") if spill else ""
        out.append(finding("capture.incomplete",
                           "the capture has no end record: mcptap was killed, is still recording, or could not write (disk full); open requests are not "
                           f"judged{hint}"))
    if end.get("capture_error") or end.get("dropped_records"):
        out.append(finding("capture.gap", f"recording failed: {end.get('capture_error')} ({end.get('dropped_records', 0)} records lost)",
                           {"dropped_records": end.get("dropped_records", 0)}))
    out += integrity.findings()
    return [f.to_json() for f in out]


def all_findings(rec: dict[str, Any]) -> list[dict[str, Any]]:
    """Every finding a re-annotated record carries (end: unanswered requests
    and capture findings too)."""
    fs = record_findings(rec)
    capture = rec.get("capture")
    if rec.get("type") == "end" and capture:
        return list(fs) + list(capture)
    return fs


