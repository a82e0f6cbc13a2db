"""The bookkeeping of a fast check scan around its messages (level 3, pure).

:class:`~mcptap.check.scan.Scan` handles the common message record in its own
loop; this module holds the rest of its per-record work, as functions of the
scan (``scan``: a ``Scan``, whose fields they read and update):

* :func:`check_seq` — ``Integrity._check_seq`` (capture/integrity.py) for one
  ``seq``, plus what a later run keeps for ``absorb`` (``first_seq``);
* :func:`after_end` — the ``capture.out_of_sequence`` finding of a record
  after the end record;
* :func:`other_record` — every record but a message (eof, stderr, process,
  gap, end…): its times, sequence, stderr bytes and findings;
* :func:`payload` — the parsed JSON-RPC value of a message record (its
  ``json``, else its ``raw``/``raw_b64`` parsed; ``UNPARSED`` when none).

Anything the scan cannot judge exactly raises :class:`Unsupported` (the caller
then checks the capture the reference way, see check/scan.py).
"""

from __future__ import annotations

import base64
from typing import Any

from mcptap.capture.integrity import MAX_T_US, sequence_finding
from mcptap.model import UNPARSED
from mcptap.protocol.codes import finding
from mcptap.protocol.gap_pending import counted_findings
from mcptap.protocol.jsonparse import parse_json


class Unsupported(Exception):
    """The capture needs the reference check (check/scan.py); the message says why."""


def check_seq(scan: Any, seq: int, typ: Any) -> None:
    """Integrity._check_seq, plus what a later run keeps for absorb."""
    last = scan.last_seq
    if last is None:
        if not scan.first and scan.first_seq is None:
            scan.first_seq = (seq, typ, scan.gap_since_last, len(scan.order))
    elif len(scan.order) < 5:
        f = sequence_finding(seq, typ, last, scan.gap_since_last)
        if f is not None:
            scan.order.append((True, f))
    if last is not None and seq <= last:
        scan.increasing = False
    scan.last_seq = seq if last is None else max(seq, last)


def after_end(scan: Any, seq: Any, typ: Any) -> None:
    scan.order.append((False, finding("capture.out_of_sequence", f"a {typ} record (seq {seq}) follows the end record")))


def payload(rec: dict[str, Any]) -> Any:
    value = rec.get("json", UNPARSED)
    if value is UNPARSED and ("raw" in rec or "raw_b64" in rec):
        raw = rec.get("raw")
        data = raw.encode("utf-8") if raw is not None else base64.b64decode(rec["raw_b64"])
        value = parse_json(data or b"")[0]
    return value


def other_record(scan: Any, rec: dict[str, Any], typ: str, seq: Any, t: Any, line: int) -> None:
    """Every record but a message (rare: eof, stderr, process, gap, end…)."""
    if type(t) is int and not 0 <= t <= MAX_T_US:
        raise Unsupported("impossible t_us")
    if typ == "gap":
        scan.gaps += 1
        scan.gap_since_last = True
    if type(seq) is int:
        check_seq(scan, seq, typ)
        scan.gap_since_last = False
    if scan.end is not None and typ != "end":
        after_end(scan, seq, typ)
    if typ == "stderr":
        raw = rec.get("data")
        data = raw.encode("utf-8") if raw is not None else base64.b64decode(rec["data_b64"]) if "data_b64" in rec else b""
        c = scan.counts["stderr"]
        c[0] += len(data)
        c[1] += 1
        scan.bufs["stderr"].append(data)
        scan.buffered += len(data)
    elif typ == "end":
        scan.end = rec
        scan.n_end += 1
        return
    fs = counted_findings(rec)
    if fs:
        scan._group(fs, seq, t, line, rec.get("dir"), rec.get("method"))
