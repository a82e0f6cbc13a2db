"""Running the patterns (patterns.py) over a string: ``Scanner`` (pure).

Which part of a match is the secret (its ``secret…`` group, a library or user regex's
first group, or all of it), which of overlapping matches wins, and how each pattern is
searched so that no string takes quadratic time (``_matches``).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass

from mcptap.redact import urlview
from mcptap.redact.keyed import PLACEHOLDER
from mcptap.redact.keys import secret_name
from mcptap.redact.patterns import ASSIGNED, CHECKS, CONNECTION_PAIR, MYSQL_PROGRAMS, NEEDLES, P_PASSWORD_PROGRAMS, YAML_BLOCK_KEY


@dataclass(frozen=True, slots=True)
class Span:
    """One secret found in a string: ``start``/``end`` offsets, ``rule`` name, and the
    secret itself when it is not the text there (``secret``: found percent-decoded)."""

    start: int
    end: int
    rule: str
    secret: str | None = None


class Scanner:
    """All patterns over one string. ``patterns``: (name, regex) pairs; a
    match's secret is its ``secret…`` named group that took part (``secret``,
    ``secret2``…), else, for a regex in ``first_group`` (user patterns, the
    audited library ones), its first group that took part, else the whole match.
    Where two matches overlap the one that starts first wins, and at the same
    start the earlier pattern (user rules go first). Each pattern runs on its
    own (Python's regex engine keeps its literal-prefix speed-ups that way; one
    big alternation was 7x slower), skipped when a string lacks the literal
    text the pattern needs (``NEEDLES``). Raises re.error for a bad regex
    (callers validate user patterns first)."""

    def __init__(self, patterns: Iterable[tuple[str, str]], first_group: Collection[str] = ()) -> None:
        self._rx: list[tuple[re.Pattern[str], tuple[int, ...], str]] = []
        self._always: list[int] = []                     # patterns without needles
        self._needles: dict[str, list[int]] = {}         # needle -> patterns that need it
        for name, rx in patterns:
            compiled = re.compile(rx)
            needles = NEEDLES.get(name, ())
            for n in needles:
                self._needles.setdefault(n, []).append(len(self._rx))
            if not needles:
                self._always.append(len(self._rx))
            self._rx.append((compiled, _secret_groups(compiled, rx in first_group), name))

    def spans(self, text: str) -> list[Span]:
        """Non-overlapping secret spans in ``text``, in order. Percent-encoded text is read
        decoded too (``urlview``; twice encoded, twice): a secret found there is a span of
        what encodes it, its rule marked ``(url-encoded)``; at the same start a match in the
        text as written wins."""
        if not self._rx or len(text) < 6:
            return []
        found = self._found(text, 0)
        if not found:
            return []
        found.sort(key=lambda f: (f[0], f[1]))
        out: list[Span] = []
        last = -1
        for start, _, end, name, secret in found:
            if start >= last:
                out.append(Span(start, end, name, secret))
                last = end
        return out

    def _found(self, text: str, depth: int) -> list[tuple[int, int, int, str, str | None]]:
        """Every match's secret in ``text``: (start, order, end, rule, secret or None)."""
        holes = _placeholders(text) if "«" in text else []
        scan = _masked(text, holes) if holes else text
        lower = scan.lower()
        active = set(self._always)
        for n, idx in self._needles.items():
            if n in lower:
                active.update(idx)
        found: list[tuple[int, int, int, str, str | None]] = []
        for order in sorted(active):
            rx, groups, name = self._rx[order]
            for m in _matches(rx, scan, name):
                start, end = m.span(_taking_part(m, groups))
                if end == m.end():
                    end = unclosed_end(scan, start, end)
                if start < 0 or end <= start:
                    continue
                if holes and _overlaps(holes, start, end) or "«" in (piece := text[start:end]) or "»" in piece:
                    continue
                found.append((start, order, end, name, _form_secret(scan, m, name, piece)))
        if depth < 2 and "%" in text and (decoded := urlview.view(text)) is not None:
            vtext, at = decoded
            later = len(self._rx) * (depth + 1)
            for start, order, end, name, secret in self._found(vtext, depth + 1):
                rule = name if name.endswith(" (url-encoded)") else name + " (url-encoded)"
                found.append((at[start], order + later, at[end], rule, vtext[start:end] if secret is None else secret))
        return found

    def redact(self, text: str, replace: Callable[[str, str], str]) -> tuple[str, list[Span]]:
        """``text`` with every secret span replaced by ``replace(secret, rule)``, and
        those spans (offsets in ``text``, in order, none overlapping).

        The result is scanned again, and redacted again while that finds more (at most
        ``AGAIN`` more passes): patterns overlap, and a match that lost to an earlier one
        still hid what its own pattern would have found inside it (``&sig=Basic PW--token
        hunter22``: ``sig=``'s value wins over ``Basic PW--token``, which had hidden ``token
        hunter22``). Without it a second scrub found what the first had left (scrubbing
        twice must be scrubbing once). Each pass is linear, so the whole is. A later pass
        never takes in a placeholder (``spans``), so its spans are spans of ``text`` too."""
        done = self.spans(text)
        if not done:
            return text, done
        reps = [replace(text[sp.start:sp.end] if sp.secret is None else sp.secret, sp.rule) for sp in done]
        out = replaced(text, done, reps)
        for _ in range(AGAIN):
            more = self.spans(out)
            if not more:
                break
            # where each replacement starts in ``out``, and how far ``out`` is shifted after it
            at, shift, pos = [], [], 0
            for sp, rep in zip(done, reps, strict=True):
                at.append(sp.start + pos)
                pos += len(rep) - (sp.end - sp.start)
                shift.append(pos)
            for m in more:
                i = bisect.bisect_right(at, m.start)
                d = shift[i - 1] if i else 0
                done.append(Span(m.start - d, m.end - d, m.rule, m.secret))
                reps.append(replace(text[m.start - d:m.end - d] if m.secret is None else m.secret, m.rule))
            order = sorted(range(len(done)), key=lambda k: done[k].start)
            done, reps = [done[k] for k in order], [reps[k] for k in order]
            out = replaced(text, done, reps)
        return out, done


#: Passes over a redacted text that may find more (``Scanner.redact``); one is almost always
#: enough, more are there for matches that overlapped several.
AGAIN = 4


#: patterns whose value may be a URL query's or a form body's (``?password=p%40ss``, ``&code=…``)
_FORM_RULES = frozenset({"secret-assignment", "query-param"})


def _form_secret(text: str, m: re.Match[str], rule: str, piece: str) -> str | None:
    """The secret of a value written percent-encoded in a URL query or a form body: decoded
    (``urlview.form_decode``), as the HTTP tap takes it (``scrub_url``, ``scrub_query``), so it
    gets the placeholder it has where it is plain. None: the text as written is the secret."""
    if rule not in _FORM_RULES or "%" not in piece and "+" not in piece:
        return None
    if not urlview.in_form_pair(text, m.start("name") if "name" in m.re.groupindex else m.start()):
        return None
    decoded = urlview.form_decode(piece)
    return decoded if decoded != piece else None


def replaced(text: str, spans: list[Span], reps: list[str]) -> str:
    """``text`` with each of ``spans`` (in order, none overlapping) replaced by its ``reps``."""
    pieces: list[str] = []
    pos = 0
    for sp, rep in zip(spans, reps, strict=True):
        pieces.append(text[pos:sp.start])
        pieces.append(rep)
        pos = sp.end
    pieces.append(text[pos:])
    return "".join(pieces)


def _matches(rx: re.Pattern[str], text: str, name: str) -> Iterator[re.Match[str]]:
    """Pattern ``name``'s (regex ``rx``) matches in ``text`` that pass its check (``CHECKS``).

    Each failed attempt costs little, so that no string takes quadratic time: a pattern with a
    head (``HEADS``: ``NAME=`` before the value) has its name checked before its value is read
    (``sort_key=sort_key=…``, ``id0:id1:…:token`` read the rest of the text for every name);
    after a name that fails the search goes on after the name (``note: password=…``: ``note``'s
    value holds the secret assignment); after another failed match, after the match (its value
    was read once). A pattern with a runner (``RUNNERS``) is run by it."""
    runner = RUNNERS.get(name)
    if runner is not None:
        yield from runner(rx, text)
        return
    check = CHECKS.get(name)
    if check is None:
        yield from rx.finditer(text)
        return
    head = HEADS.get(name)
    pos = 0
    while True:
        if head is not None:
            h = head.search(text, pos)
            if h is None:
                return
            pos = h.end("name")
            if not secret_name(h.group("name")):
                continue
            m = rx.match(text, h.start())
            if m is not None and check(m):
                yield m
                pos = max(m.end(), pos)
            continue
        m = rx.search(text, pos)
        if m is None:
            return
        if check(m):
            yield m
            pos = max(m.end(), m.start() + 1)
        elif "name" in rx.groupindex:
            pos = max(m.start() + 1, m.end("name"))
        else:
            pos = max(m.end(), m.start() + 1)


def _first_per_segment(first: str, stops: str) -> Callable[[re.Pattern[str], str], Iterator[re.Match[str]]]:
    """A runner for a regex that starts with ``first`` and matches within a segment of text
    (up to one of ``stops``) whatever comes between (``//.+/:_authToken=…``, ``mysql … -pPASS``):
    tried from the segment's first ``first`` only, since a match from a later one is a match from
    it; run by ``search`` such a regex reads the rest of the segment again for every ``first``."""
    first_rx, stop_rx = re.compile(first), re.compile(f"[{stops}]")

    def run(rx: re.Pattern[str], text: str) -> Iterator[re.Match[str]]:
        pos = 0
        while (s := first_rx.search(text, pos)) is not None:
            m = rx.match(text, s.start())
            if m is not None and m.end() > s.start():
                yield m
                pos = m.end()
                continue
            # the segment's end only after a failed match (after each match it read the rest of a
            # segment without stops again: ``sshpass -p a sshpass -p a …`` was quadratic)
            stop = stop_rx.search(text, s.start())
            if stop is None:
                return
            pos = stop.start() + 1

    return run


#: Patterns run by a function of their own (``_matches``).
RUNNERS: dict[str, Callable[[re.Pattern[str], str], Iterator[re.Match[str]]]] = {
    "ds:npm-tokens": _first_per_segment("//", "\n"),
    "mysql-password": _first_per_segment(MYSQL_PROGRAMS, "\r\n|;&"),
    "cli-p-password": _first_per_segment(P_PASSWORD_PROGRAMS, "\r\n|;&"),
    "redis-cli-password": _first_per_segment(r"\bredis-cli\b", "\r\n|;&"),
}
#: The part of a pattern before its value, with the name the check reads (``_matches``).
HEADS: dict[str, re.Pattern[str]] = {"secret-assignment": re.compile(ASSIGNED), "connection-string": re.compile(CONNECTION_PAIR),
                                     "yaml-block": re.compile(YAML_BLOCK_KEY)}


def _secret_groups(rx: re.Pattern[str], first_group: bool) -> tuple[int, ...]:
    """The groups that may hold a match's secret, in order (empty: the whole match)."""
    named = sorted(i for n, i in rx.groupindex.items() if n.startswith("secret"))
    if named:
        return tuple(named)
    return tuple(range(1, rx.groups + 1)) if first_group else ()


_CLOSERS = {")": "(", "]": "[", "}": "{"}


def unclosed_end(text: str, start: int, end: int) -> int:
    """``end`` less the closing brackets at the end of ``text[start:end]`` that it does not
    open: an unquoted value or a URL ends there (``(… ?token=X)``, ``[see password=X]``), the
    bracket is the text's punctuation, so the secret is the same, with the same
    placeholder, wherever it stands."""
    while end > start and (opener := _CLOSERS.get(text[end - 1])) is not None:
        piece = text[start:end]
        if piece.count(opener) >= piece.count(text[end - 1]):
            break
        end -= 1
    return end


def _taking_part(m: re.Match[str], groups: tuple[int, ...]) -> int:
    """The first of ``groups`` that took part in match ``m`` (0, the whole match, when none did)."""
    for g in groups:
        if m.start(g) >= 0:
            return g
    return 0


#: What a placeholder reads as while the patterns run (``_masked``): letters and digits, a
#: letter last (a word that ends in digits reads as a number or ``host:port``).
_MASK = "Q0" * 40


def _placeholders(text: str) -> list[tuple[int, int]]:
    """Where ``text`` holds placeholders: (start, end) pairs, in order."""
    return [m.span() for m in PLACEHOLDER.finditer(text)]


def _masked(text: str, holes: list[tuple[int, int]]) -> str:
    """``text`` with each placeholder read as a token of the same length (``Q0Q0…``).

    A placeholder stands where a secret stood, so the patterns must see a token there, as they
    saw the secret: its ``«»`` ended a value early (``Cookie: a; b=«…»`` judged on ``a; b=``),
    stopped a lazy search short of it (``mysql -p«…» -pNEXT`` took ``NEXT`` for the password) and
    made a word boundary where the secret had none (``…a1B2«…»Basic x…``). A match whose secret
    takes in any of a placeholder is dropped (``spans``), so scrubbing twice is scrubbing once."""
    parts: list[str] = []
    pos = 0
    for s, e in holes:
        parts.append(text[pos:s])
        parts.append(_MASK[:e - s - 1] + "Q")
        pos = e
    parts.append(text[pos:])
    return "".join(parts)


def _overlaps(holes: list[tuple[int, int]], start: int, end: int) -> bool:
    """True when [start, end) takes in any of a placeholder in ``holes``."""
    i = bisect.bisect_right(holes, (start, 1 << 62)) - 1     # the last placeholder starting at or before ``start``
    if i >= 0 and holes[i][1] > start:
        return True
    return i + 1 < len(holes) and holes[i + 1][0] < end
