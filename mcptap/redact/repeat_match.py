"""The one rule by which a secret already known is found again (pure, level 1).

Two things replace a known secret wherever it reappears: ``repeats.Repeats`` (a value a
scrub redacted under a secret key, at a user path or by a pattern) and
``known_secrets.KnownSecrets`` (a secret taken out of the server's argv or mcptap's own URL,
in every record line, stderr stream and replayed answer). Both use this module, so both
search the same values the same way:

* ``repeatable(value)``: only values of at least ``MIN_REPEATED`` characters, not blank, not a
  word of ``COMMON`` (``--token none``, ``"password": "none"``: redacted where they stand,
  but "none" elsewhere is no secret) and holding no placeholder are searched for;
* ``find``: an occurrence counts unless it is inside a placeholder or, for a value shorter than
  ``WORDLESS`` characters, a piece of a longer word or number (``0123`` in ``01234567``,
  ``abcd`` in ``abcdef``: an alphanumeric end of the value next to an alphanumeric character,
  ``str.isalnum``). A longer value (a token, a key) is found anywhere: by chance it is no piece
  of another word, while a secret glued to text (``0x`` before a hex key) must not stay in clear; longer values first, no
  two occurrences overlap. ``encoded``: ``text`` is JSON-encoded (a record line, a message's
  raw JSON text), where the letter ending an escape (``\\n``, ``\\u00e9``) is no letter of
  the decoded text: it does not make a value a piece of a word (a doubtful case is replaced), nor
  do the hex digits of a percent-escape in any text (``?q=%3Dsk_abcdefgh%20``);
* a quote cut short: a finding quotes peer text cut at a length and marked ``…``
  (``protocol.excerpt.cut``, which never ends inside a word): the beginning of a value of at
  least ``MIN_REPEATED`` characters that ends exactly at such a marker (``correct horse …``) is
  replaced too, under the same rule of words, so no piece of a known secret stays in clear (the
  last ``MARKS_SEARCHED`` markers of a text are looked at: findings come last in a record line);
* ``safe_cut``: where a stream of text may be cut so that searching each piece alone finds
  exactly what searching the whole would (``KnownSecrets.take``).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterable, Sequence

from mcptap.redact.keyed import MIN_REPEATED, PLACEHOLDER

#: values a secret-named field or option often holds that are no secret but words any text holds
#: (``"password": "none"``, ``--api-key default``): redacted where they stand, never searched for
#: elsewhere, or every later "none" and "true" of a capture would become a placeholder
COMMON = frozenset({"none", "null", "nil", "true", "false", "undefined", "empty", "unset", "default",
                    "enabled", "disabled", "required", "optional", "string", "bearer", "basic", "token",
                    "secret", "password", "redacted", "hidden", "masked"})
#: the longest placeholder (``keyed.PLACEHOLDER``): a stream is not cut inside one
_PLACEHOLDER_MAX = 76
#: from this length on a value is found inside longer words too (see module doc)
WORDLESS = 12
_ESCAPE_TAIL = re.compile(r"\\u[0-9A-Fa-f]{4}\Z")
_HEX = frozenset("0123456789ABCDEFabcdef")
#: the marker of a quote cut short (``protocol.excerpt.MARK``)
MARK = "\u2026"
#: markers looked at per text, the last ones (a peer's own text may hold many)
MARKS_SEARCHED = 64


def repeatable(value: str) -> bool:
    """True when ``value`` is searched for wherever it may reappear (see module doc)."""
    return (len(value) >= MIN_REPEATED and bool(value.strip()) and value.casefold() not in COMMON
            and PLACEHOLDER.search(value) is None)


def _word_before(text: str, at: int, encoded: bool) -> bool:
    c = text[at - 1]
    if not c.isalnum():
        return False
    if encoded and ((at >= 2 and text[at - 2] == "\\") or _ESCAPE_TAIL.search(text, max(0, at - 6), at)):
        return False        # the end of an escape: a control character or one given by its code
    if at >= 3 and text[at - 3] == "%" and text[at - 2] in _HEX and c in _HEX:
        return False        # a percent-escape's hex digits (``%3Dsk_abcdefgh``): no letter of the decoded text
    return True


def find(text: str, values: Iterable[str], blocked: Iterable[tuple[int, int]] = (),
         encoded: bool = False) -> list[tuple[int, int, str]]:
    """``(start, end, value)`` of each occurrence in ``text`` of ``values`` (longest first)
    outside the ``blocked`` ranges and outside placeholders, not a piece of a longer word or
    number unless the value has ``WORDLESS`` characters or more; non-overlapping, in no
    particular order."""
    taken = _union(list(blocked) + ([(m.start(), m.end()) for m in PLACEHOLDER.finditer(text)] if "«" in text else []))
    out: list[tuple[int, int, str]] = []
    n = len(text)
    for value in values:
        # ``taken`` is disjoint and sorted (so are its ends): an occurrence overlaps it iff the
        # last range starting before the occurrence's end ends after its start; one bisect a
        # hit, not a scan of every earlier hit (40,000 repeats of a secret took 100 s)
        starts = [a for a, _ in taken]
        ends = [b for _, b in taken]
        mine: list[tuple[int, int]] = []
        at = text.find(value)
        while at >= 0:
            end = at + len(value)
            i = bisect_left(starts, end) - 1
            if ((i >= 0 and ends[i] > at) or (mine and mine[-1][1] > at)
                    or (len(value) < WORDLESS
                        and ((at > 0 and value[0].isalnum() and _word_before(text, at, encoded))
                             or (end < n and value[-1].isalnum() and text[end].isalnum())))):
                at = text.find(value, at + 1)
                continue
            out.append((at, end, value))
            mine.append((at, end))
            at = text.find(value, end)
        if len(value) > MIN_REPEATED and MARK in text:
            for a, b in _cut_prefixes(text, value, starts, ends, mine, encoded):
                out.append((a, b, value))
                mine.append((a, b))
        if mine:
            taken = sorted(taken + mine)
    return out


def _cut_prefixes(text: str, value: str, starts: list[int], ends: list[int], mine: list[tuple[int, int]],
                  encoded: bool) -> list[tuple[int, int]]:
    """Ranges of ``text`` holding the longest beginning (``MIN_REPEATED`` characters or more,
    shorter than ``value``) of ``value`` that ends right at a cut marker, outside ``taken``
    (``starts``/``ends``) and ``mine``, not a piece of a longer word when shorter than ``WORDLESS``."""
    marks: list[int] = []
    at = text.rfind(MARK)
    while at >= 0 and len(marks) < MARKS_SEARCHED:
        marks.append(at)
        at = text.rfind(MARK, 0, at)
    head = value[:MIN_REPEATED]
    out = []
    for p in marks:
        lo = max(0, p - len(value) + 1)
        a = text.find(head, lo, p)
        while a >= 0:
            if text.startswith(value[:p - a], a):
                i = bisect_left(starts, p) - 1
                if not ((i >= 0 and ends[i] > a) or any(x < p and a < y for x, y in mine)
                        or (p - a < WORDLESS and a > 0 and value[0].isalnum() and _word_before(text, a, encoded))):
                    out.append((a, p))
                break
            a = text.find(head, a + 1, p)
    return out


def _union(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``ranges`` as sorted disjoint ranges covering the same positions."""
    out: list[tuple[int, int]] = []
    for a, b in sorted(ranges):
        if out and a < out[-1][1]:
            if b > out[-1][1]:
                out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


def replace(text: str, values: Sequence[str], placeholders: dict[str, str], encoded: bool = False) -> str:
    """``text`` with each occurrence ``find`` gives replaced by ``placeholders[value]``."""
    hits = sorted(find(text, values, encoded=encoded))
    if not hits:
        return text
    parts, at = [], 0
    for start, end, value in hits:
        parts += [text[at:start], placeholders[value]]
        at = end
    parts.append(text[at:])
    return "".join(parts)


def safe_cut(text: str, values: Sequence[str]) -> int:
    """The largest ``c`` such that ``find`` over ``text[:c]`` and, later, over ``text[c:]`` plus
    what follows finds what it would over the whole stream (``text`` follows an earlier safe
    cut): no occurrence, nor a beginning of a value or placeholder at the end, runs across
    ``c``, and ``c`` does not split a word where a value could end or begin (unless the
    ``longest + 1`` characters on each side are all alphanumeric: no value fits there).
    ``len(text)`` for most text, which ends in a newline or space; 0 when no cut is safe."""
    n = len(text)
    if not n or not values:
        return n
    longest = max(len(v) for v in values)
    lo = max(0, n - (2 * longest + 2 + _PLACEHOLDER_MAX))
    limit = n
    for v in values:                            # the beginning of a value at the end: it may go on
        i = text.find(v[0], max(0, n - len(v) + 1))
        while 0 <= i < limit:
            if v.startswith(text[i:]):
                limit = i
                break
            i = text.find(v[0], i + 1)
    opened = text.rfind("«", max(0, n - _PLACEHOLDER_MAX))
    if opened >= 0 and "»" not in text[opened:]:
        limit = min(limit, opened)
    start = max(0, lo - longest - _PLACEHOLDER_MAX)
    spans = [(a + start, b + start) for a, b, _ in find(text[start:], values)]
    if "«" in text:
        spans += [(m.start() + start, m.end() + start) for m in PLACEHOLDER.finditer(text, start)]
    for c in range(limit, lo - 1, -1):
        if c == 0:
            return 0
        if any(a < c < b for a, b in spans):
            continue
        if not text[c - 1].isalnum() or (c < n and not text[c].isalnum()):
            return c
        if c < n and c > longest and c + longest < n and _all_alnum(text, c - longest - 1, c + longest + 1):
            return c
    return 0


def _all_alnum(text: str, a: int, b: int) -> bool:
    return a >= 0 and text[a:b].isalnum()
