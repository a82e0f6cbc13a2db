"""Capture → one JSON line per message with its annotations, for jq.

Each line is the capture's ``message`` record (docs/capture-format.md) with
``time`` (UTC wall clock, ISO 8601; left out when the capture has no start
time or the record's ``t_us`` is beyond the years 1-9999) added and the payload always as ``json``
when it parses (a large message stored as raw bytes only is parsed again);
``raw``/``raw_b64`` stay only for payloads that are not JSON, or whose ``json`` has null
for a number beyond any double (``1e400``; a null ``id`` then comes with ``id_text``,
``1e400``, as views show it). A lone UTF-16
surrogate (``"\\ud800"``), U+FFFD in the record, is the peer's exact text in
``id``, ``method`` and ``json`` (written as its escape). Exact bytes
remain the capture's business: use ``mcptap show --format json`` or the
capture itself for those.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from mcptap.capture.dumps import dumps
from mcptap.capture.fields import message_json, record_findings
from mcptap.capture.format import decode_bytes
from mcptap.export.spans import epoch_us, iso_us
from mcptap.model import UNPARSED
from mcptap.protocol.jsonparse import exact_json
from mcptap.protocol.jsonrpc import show_id
from mcptap.records.message import exact_payload

NON_FINITE = "jsonrpc.non_finite_number"


def _non_finite(rec: dict[str, Any]) -> bool:
    """Whether a message record's payload holds a number beyond any double (its finding)."""
    return any(f.get("code") == NON_FINITE for f in record_findings(rec) if isinstance(f, dict))


def message_lines(header: dict[str, Any], records: Iterable[dict[str, Any]]) -> Iterator[bytes]:
    """JSON lines (bytes, newline-terminated), one per message record."""
    try:
        epoch: int | None = epoch_us(str(header.get("started") or ""))
    except ValueError:
        epoch = None
    for rec in records:
        if rec.get("type") != "message":
            continue
        out = {k: v for k, v in rec.items() if k not in ("type", "raw", "raw_b64", "eol", "offset")}
        if epoch is not None and isinstance(rec.get("t_us"), int):
            time = iso_us(epoch + rec["t_us"])
            if time is not None:        # (a hand-edited t_us beyond the year 9999: no time)
                out["time"] = time
        exact = exact_payload(rec)
        if exact is not None:
            # a lone surrogate (an id, a method, a URI): the record's U+FFFD is the peer's exact
            # text here, written escaped ("\ud800"), as id_text shows it (which the line keeps)
            if isinstance(exact, dict):
                for k in ("id", "method"):
                    if k in out and type(exact.get(k)) is str:
                        out[k] = exact[k]
            out["json"] = exact
        elif _non_finite(rec):
            # a number beyond any double (1e400): ``json`` has null in its place, so the exact
            # bytes go along (``raw`` is authoritative, docs/capture-format.md) and a null id
            # in ``id`` is told from a peer's null by ``id_text``, as views write it
            value = message_json(rec)
            if "id" in out and out["id"] is None and isinstance(value, dict) and type(value.get("id")) is float:
                out["id_text"] = show_id(value["id"])
            for k in ("raw", "raw_b64"):
                if k in rec:
                    out[k] = rec[k]
        if exact is None and "json" not in rec:
            raw = decode_bytes(rec, "raw") or b""
            value = exact_json(raw)         # a peer's integer beyond 64 bits exactly, as the record keeps it
            if value is not UNPARSED:
                out["json"] = value
            else:
                for k in ("raw", "raw_b64"):
                    if k in rec:
                        out[k] = rec[k]
        yield dumps(out) + b"\n"
