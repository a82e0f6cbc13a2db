"""Where a scrubbed record's bytes were in the forwarded stream (pure): the
``original: {offset, bytes}`` field that ``scrub``, ``record --redact`` and
``recover`` write when redaction moved or resized a record's bytes
(docs/redaction.md), so ``recover`` can tell which bytes of a killed tap's
spill file the capture already holds."""

from __future__ import annotations

from typing import Any


def place_original(rec: dict[str, Any], original: dict[str, int] | None) -> dict[str, Any]:
    """``rec`` with ``original`` (``{offset, bytes}`` in the forwarded stream) right after its
    ``offset`` (None: without one), so scrubbing twice writes the same line as once."""
    out: dict[str, Any] = {}
    for k, v in rec.items():
        if k != "original":
            out[k] = v
            if k == "offset" and original is not None:
                out["original"] = original
    return out
