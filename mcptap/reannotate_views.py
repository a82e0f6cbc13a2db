"""Records of a capture for its readers, annotated as each needs (level 1):
as stored when that is right, else re-framed and re-annotated from the
capture's bytes (``reannotate.reannotate``).

    framed(stream)     # diff, replay, scrub, report: chunk records re-framed
    annotated(stream)  # diff, replay, serve: today's kinds, ids and pairs
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from mcptap.capture.reader import CaptureStream, has_chunks, reusable
from mcptap.protocol.fingerprint import rules_fingerprint
from mcptap.reannotate import reannotate


def framed(stream: CaptureStream) -> Iterator[dict[str, Any]]:
    """The records of an open capture for consumers that read message records
    directly (diff, replay): as stored, or, when the capture holds stdio
    ``chunk`` records (bytes the live recorder stored unframed), re-framed and
    re-annotated so those bytes become message records too (seqs renumbered,
    a fresh end record)."""
    if has_chunks(stream.path):
        return reannotate(stream.header, stream, shapes=False, reuse=False)
    return iter(stream)


def annotated(stream: CaptureStream) -> Iterator[dict[str, Any]]:
    """The records of an open capture with today's annotations, for consumers
    that read kinds, ids and pairs from message records (diff, replay, serve):
    as stored when the capture was written under today's rules (its ``rules``
    fingerprint) and holds no ``chunk`` records; else re-annotated from its
    bytes (chunks re-framed; a hand-written or older capture's pairing derived
    again, not trusted)."""
    fp = stream.header.get("rules")
    if fp and fp == rules_fingerprint() and reusable(stream.path):
        return iter(stream)
    return reannotate(stream.header, stream, shapes=False, reuse=False)
