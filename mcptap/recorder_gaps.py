"""The live recorder's ``gap`` records (``Recorder.gap``), apart so that the
recorder stays one responsibility a module.

A ``gap`` record says part of the forwarded traffic is not in the capture (the
relay's spill file at its bound, a failed capture write, the recorder stopped
after an internal error). ``check`` reports each one as ``capture.gap`` (an
error: ``check/scan_records.py``), so the recorder counts that finding for each
gap record as it writes (or the writer makes) it: the end record's severities
and codes, which ``mcptap ls`` shows, agree with ``check`` about the gaps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from mcptap.model import Direction, Finding
from mcptap.protocol.gap_pending import gap_finding
from mcptap.records import Gap, Record

if TYPE_CHECKING:
    from mcptap.protocol.annotate import Annotator

_DIRS = {"c2s": Direction.C2S, "s2c": Direction.S2C}


class GapRecording:
    """``gap`` records and the recorder's own failure (a mixin of ``Recorder``)."""

    if TYPE_CHECKING:
        annotator: Annotator
        record_observers: list[Callable[[dict[str, Any]], None]]

        def _put(self, make: Callable[[int, int], Record], findings: Iterable[Finding] = ()) -> int: ...
        def _count(self, findings: Iterable[Finding]) -> None: ...

    #: why recording stopped after an internal error (``stopped``; None: it did not):
    #: the end record's ``recorder_error`` (``mcptap ls``: incomplete)
    recorder_error: str | None = None

    def gap(self, reason: str, direction: Direction | None = None, nbytes: int | None = None) -> int:
        """A ``gap`` record: something could not be recorded (``nbytes``
        forwarded in ``direction``, where known); returns its seq. Requests
        open now whose answers travel that way are not judged unanswered.
        Counted as the ``capture.gap`` error ``check`` reports for it."""
        self.annotator.gap(direction, nbytes)
        return self._put(lambda seq, t: Gap(seq, t, reason, None if direction is None else direction._value_, nbytes),
                         [gap_finding({"reason": reason})])

    def writer_gap(self, rec: dict[str, Any]) -> None:
        """A ``gap`` record (its JSON) the writer made itself (an unencodable
        record, a failed write; ``CaptureWriter.on_gap``): the annotator and
        the record observers learn of it as of ``gap``'s, as re-annotation will,
        and it counts as ``gap``'s does."""
        lost = rec.get("bytes")
        self.annotator.gap(_DIRS.get(str(rec.get("dir"))), lost if type(lost) is int and lost >= 0 else None)
        self._count([gap_finding(rec)])
        for observe in self.record_observers:
            observe(rec)

    def stopped(self, reason: str) -> None:
        """Recording stops here after an internal error (``reason``, e.g. the
        exception's repr; the relay goes on): a ``gap`` record stands for the
        rest of the traffic, and the end record says ``recorder_error`` (the
        first reason). Never raises: recording may be too broken to say it."""
        if self.recorder_error is None:
            self.recorder_error = reason
        try:
            self.gap(f"recorder failed: {reason}")
        except Exception:  # noqa: BLE001 - the recorder already failed; the end record still says so
            pass
