"""The server's stderr redacted as one stream across its records (pure).

stderr is recorded in pieces as the tap read them, so a secret can be cut across two
``stderr`` records (``Authorization: Bearer abc`` in one read, ``def123…`` in the next);
redacted record by record, neither piece matched. Two ways across the cut:

* **offline** (``scrub``, ``report``: the records are all there): ``Grouper`` holds the
  stderr records of an unfinished line (a record that does not end with a line end), and
  the records between them, until the line ends; ``split`` redacts the group's text as one
  and gives each record its part, each secret replaced whole in the record where it starts.
  The scrubbed stream is the redaction of the whole line. Bounded: a group closes at
  ``GROUP_RECORDS`` records, ``GROUP_CHARS`` characters of stderr or ``GROUP_OTHERS`` other
  records held (a secret cut exactly there is seen as two pieces).
* **live** (``record --redact``: each record is written as it comes): ``Carry`` keeps the
  stream's unfinished line (its last ``CARRY`` characters) and scans it with the next record;
  a secret that began in the earlier record has its rest replaced by its placeholder. What
  the earlier record held is written already: a piece that did not match alone stays there.
  Bounded: the carried text is at most ``CARRY`` characters, and for a small read a few
  times its length (``Carry.redact``).
"""

from __future__ import annotations

import bisect
from typing import Any

from mcptap.capture.format import decode_bytes
from mcptap.redact.engine import Hit, Redactor

#: live: characters of an unfinished line scanned again with the next stderr record: at
#: most ``CARRY``, and at most ``CARRY_SMALL`` + 2 × the record's own length (a server
#: that writes a few bytes at a time must not make each of its reads cost ``CARRY``)
CARRY = 512
CARRY_SMALL = 32
#: offline: a group of held records closes at this many records …
GROUP_RECORDS = 512
#: … or this many characters of stderr text …
GROUP_CHARS = 1 << 20
#: … or this many other records held behind it (messages can be large; a line is written in
#: pieces within moments, not across a session's traffic)
GROUP_OTHERS = 32


def record_text(rec: dict[str, Any]) -> str | None:
    """A ``stderr`` record's bytes as text (undecodable bytes kept by surrogateescape); None
    for any other record, or one without readable data."""
    if rec.get("type") != "stderr":
        return None
    try:
        data = decode_bytes(rec, "data")
    except ValueError:
        return None
    return None if data is None else data.decode("utf-8", "surrogateescape")


def split(redactor: Redactor, texts: list[str]) -> tuple[list[str], list[list[Hit]]]:
    """``texts`` (consecutive stderr records of one stream) redacted as one text: each
    record's new text and hits. A secret is replaced, whole, in the record where it starts
    (the records after it lose their piece of it); JSON text walked and re-encoded goes
    whole into the first record."""
    joined = "".join(texts)
    out, spans = redactor.located(joined, "stderr")
    if spans is None:
        _, found = redactor.string(joined)
        return [out] + [""] * (len(texts) - 1), [[Hit("stderr", h.rule, h.placeholder) for h in found]] + [[]] * (len(texts) - 1)
    starts = []
    pos = 0
    for t in texts:
        starts.append(pos)
        pos += len(t)
    parts: list[list[str]] = [[] for _ in texts]
    hits: list[list[Hit]] = [[] for _ in texts]

    def plain(a: int, b: int) -> None:
        i = bisect.bisect_right(starts, a) - 1
        while a < b and i < len(texts):
            end = min(b, starts[i] + len(texts[i]))
            if end > a:
                parts[i].append(joined[a:end])
            a = max(a, end)
            i += 1

    pos = 0
    for start, end, hit in spans:
        plain(pos, start)
        i = bisect.bisect_right(starts, start) - 1
        while not texts[i]:      # an empty record holds no start
            i += 1
        parts[i].append(hit.placeholder)
        hits[i].append(hit)
        pos = end
    plain(pos, len(joined))
    return ["".join(p) for p in parts], hits


class Carry:
    """Live: the stream's unfinished line, scanned again with the next record (module doc)."""

    __slots__ = ("text",)

    def __init__(self) -> None:
        self.text = ""

    def redact(self, redactor: Redactor, text: str) -> tuple[str, list[Hit]]:
        """The next record's ``text`` redacted with what came before it on its line."""
        before = self.text[-min(CARRY, CARRY_SMALL + 2 * len(text)):]
        nl = text.rfind("\n")
        self.text = (self.text + text if nl < 0 else text[nl + 1:])[-CARRY:]
        if not before:
            return redactor.string(text)
        joined = before + text
        out, spans = redactor.located(joined, "stderr")
        if spans is None:
            return redactor.string(text)
        cut = len(before)
        pieces: list[str] = []
        hits: list[Hit] = []
        pos = cut
        for start, end, hit in spans:
            if end <= cut:
                continue     # all of it in the record before: redacted there
            pieces.append(joined[pos:max(pos, start)])
            pieces.append(hit.placeholder)      # a secret begun before: its rest goes too
            hits.append(hit)
            pos = end
        pieces.append(joined[pos:])
        return "".join(pieces), hits


class Grouper:
    """Offline: which records wait for a stderr line to end (module doc). ``add`` a
    record; when it returns True, the held records (``held``, in order, the stderr ones
    at ``stderr``) are to be scrubbed together and ``clear``-ed."""

    __slots__ = ("held", "stderr", "chars")

    def __init__(self) -> None:
        self.held: list[dict[str, Any]] = []
        self.stderr: list[int] = []
        self.chars = 0      # stderr text held

    def open(self) -> bool:
        """True while a stderr line is unfinished (records are held)."""
        return bool(self.stderr)

    def add(self, rec: dict[str, Any], text: str | None) -> bool:
        """Hold ``rec`` (``text``: its stderr text, None for any other record); True when
        the group is complete: its line ended, or it reached its bounds."""
        if text is not None:
            self.stderr.append(len(self.held))
            self.chars += len(text)
        self.held.append(rec)
        ended = text is not None and (text.endswith("\n") or text.endswith("\r"))
        return (ended or len(self.held) >= GROUP_RECORDS or self.chars >= GROUP_CHARS
                or len(self.held) - len(self.stderr) >= GROUP_OTHERS)

    def clear(self) -> None:
        self.held, self.stderr, self.chars = [], [], 0


class ChunkCarries:
    """Live ``chunk`` records: per direction, the unfinished line of the chunk
    just before (a ``Carry``), used only when the next chunk starts where it
    ended (its ``offset``): bytes of a line the record before cut."""

    __slots__ = ("carries",)

    def __init__(self) -> None:
        self.carries: dict[Any, tuple[int | None, Carry]] = {}     # dir -> (where its last chunk ended, its line)

    def redact(self, redactor: Redactor, direction: Any, offset: Any, size: int, text: str) -> tuple[str, list[Hit]]:
        """``text`` (a chunk of ``size`` bytes at stream ``offset`` in ``direction``) redacted
        with the unfinished line of the chunk before when it follows that one."""
        end, carry = self.carries.get(direction, (None, None))
        if carry is None or not isinstance(offset, int) or end != offset:
            carry = Carry()
        self.carries[direction] = (offset + size if isinstance(offset, int) else None, carry)
        return carry.redact(redactor, text)
