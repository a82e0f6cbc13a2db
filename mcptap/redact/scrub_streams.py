"""The scrubbed streams' bytes (pure; part of ``scrub.Scrubber``): each direction's
bytes as the scrubbed capture holds them are tallied (``StreamTally``), a stdio
record's ``offset`` is recomputed over them (``original`` keeps where its bytes were
in the forwarded stream), ``chunk`` records get the string patterns, and the ``end``
record's ``c2s``/``s2c``/``stderr`` digests are those of the scrubbed bytes (the
source's in ``original``). ``finish`` marks a scrubbed copy of a cut source truncated.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from mcptap.capture.format import decode_bytes, encode_bytes
from mcptap.capture.integrity import StreamTally
from mcptap.errors import CaptureReadError
from mcptap.protocol.codes import finding
from mcptap.records import Gap
from mcptap.redact.engine import Hit, Redactor
from mcptap.redact.original import place_original
from mcptap.redact.stderr_stream import ChunkCarries


class StreamAccount:
    """The stream part of ``Scrubber`` (see module doc); the attributes are the scrubber's."""

    redactor: Redactor
    transport: str
    reject_chunks: bool
    _digests: dict[str, StreamTally]
    _chunk_carries: ChunkCarries
    _last_seq: int
    _last_t: int

    def _note(self, seq: int | None, hits: Iterable[Hit]) -> None:
        raise NotImplementedError

    def _generic(self, rec: dict[str, Any], seq: int | None, place: tuple[str, ...] | None = None) -> dict[str, Any]:
        raise NotImplementedError

    def _gap(self, rec: dict[str, Any]) -> None:
        """A stdio directed ``gap``'s bytes were forwarded, not recorded: counted in the stream, not
        its digest, as ``Recorder.lost`` does, so later offsets and the end's bytes match a plain capture's."""
        d, n = self._digests.get(rec.get("dir", "")) if rec.get("dir") != "stderr" else None, rec.get("bytes")
        if d is not None and self.transport == "stdio" and type(n) is int and n > 0:
            d.bytes += n

    def finish(self, truncated: bool) -> dict[str, Any] | None:
        """A record to append when the source's last line was cut (its text was
        dropped, unread): a ``gap`` carrying ``capture.truncated``, so the
        scrubbed copy stays marked truncated. None otherwise."""
        if not truncated:
            return None
        f = finding("capture.truncated", "the source capture's last line was cut mid-record (mcptap was killed while writing); "
                    "scrub dropped it")
        return Gap(self._last_seq + 1, self._last_t, "source capture truncated: its cut last line was dropped", truncated=True,
                   findings=(f.to_json(),)).to_json()

    def _end(self, end: dict[str, Any], seq: int | None) -> dict[str, Any]:
        out = self._generic({k: v for k, v in end.items() if k not in ("c2s", "s2c", "stderr", "original")}, seq)
        original = end.get("original")
        if original is None:
            original = {k: end[k] for k in ("c2s", "s2c", "stderr") if k in end}
        for k in ("c2s", "s2c", "stderr"):
            if k in end:
                out[k] = self._digests[k].json()
                if k != "stderr" and isinstance(end[k], dict) and "messages" in end[k]:
                    # messages the tap counted (a message cut by a gap still counts)
                    out[k]["messages"] = end[k]["messages"]
        out["original"] = original
        return out

    def _chunk(self, rec: dict[str, Any], seq: int | None) -> dict[str, Any]:
        """A stdio ``chunk`` record (bytes stored unframed): its bytes, decoded
        whatever they hold (a ``data_b64`` chunk is scanned as text too), get the
        string patterns; offset and digest follow the new bytes. Live chunk records
        hold whole lines (``recorder_chunks``); past that bound (a line over a MiB) the
        unfinished line of the chunk right before in its direction is scanned again
        with this one (``Carry``): the rest of a secret begun there is replaced too."""
        if self.reject_chunks:
            raise CaptureReadError("the capture holds chunk records (bytes stored unframed while analysis was behind) "
                                   "that must be re-framed before they can be scrubbed, which needs the capture as a "
                                   "regular file: give it as a file, not on stdin or through a pipe")
        out = {k: v for k, v in rec.items() if k not in ("data", "data_b64")}
        data = decode_bytes(rec, "data") or b""
        text = data.decode("utf-8", "surrogateescape")
        new_text, found = self._chunk_carries.redact(self.redactor, rec.get("dir"), rec.get("offset"), len(data), text)
        self._note(seq, [Hit("data", h.rule, h.placeholder) for h in found])
        new = new_text.encode("utf-8", "surrogateescape") if new_text != text else data
        encode_bytes(new, "data", out)
        self._place(rec, out, len(data), new, False)
        return out

    def _place(self, rec: dict[str, Any], out: dict[str, Any], old_len: int, new: bytes, message: bool) -> None:
        """Tally ``new`` (the bytes ``out`` holds) in its direction's stream and, for stdio, set
        ``out["offset"]`` to where they start in the scrubbed stream. Where that offset or the
        length differs from the source's, ``out["original"]`` = ``{offset, bytes}`` says where
        they were in the forwarded stream (a source record's own ``original`` is kept: scrubbed
        twice, it still names the forwarded bytes), so ``recover`` can tell which bytes of a
        killed tap's spill file the capture already holds."""
        d = self._digests.get(rec.get("dir", ""), None)
        if d is None:
            return
        if self.transport == "stdio" and isinstance(rec.get("offset"), int):
            out["offset"] = d.bytes
            src = rec.get("original")
            if not (isinstance(src, dict) and isinstance(src.get("offset"), int) and isinstance(src.get("bytes"), int)):
                src = {"offset": rec["offset"], "bytes": old_len}
            placed = place_original(out, src if src != {"offset": d.bytes, "bytes": len(new)} else None)
            out.clear()
            out.update(placed)
        d.add(new, message=message)

