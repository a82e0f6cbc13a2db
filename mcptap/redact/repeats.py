"""Values already judged secret, found again wherever a peer repeats them (pure, level 1).

A value redacted under a key (``params.arguments.password``, a user's ``--redact-key ssn``),
at a user path, or found by a pattern, is often repeated where nothing marks it as a secret:
the server's stderr ("login attempt bob with Tr0ub4dor&3"), a tool result's text, its
``structuredContent``. ``Repeats`` remembers each such value with its placeholder and finds it
in any later string, by the rule ``known_secrets`` uses for a server's argv secrets
(``repeat_match``: the same minimum length, the same common words left alone, never inside a
placeholder nor as a piece of a longer word or number).
"""

from __future__ import annotations

from mcptap.redact.repeat_match import find, repeatable
from mcptap.redact.scanner import Span

#: values remembered at most: each string is searched for each of them (a C substring search
#: apiece); a capture has few distinct secrets, and past this many the later ones are only
#: redacted where their key or pattern marks them
MOST = 256
#: the rule of a repeated value's span (``scrub --dry-run``)
RULE = "repeated-secret"


class Repeats:
    """``learn(secret)`` remembers a secret (``repeat_match.repeatable``: at least
    ``MIN_REPEATED`` characters, not blank, not a ``COMMON`` word, no placeholder in it) when
    ``on`` (``Redactor.remembering``, for one capture: a Redactor that redacts unrelated strings, the process-wide one of record time, must not carry one
    string's secret into the next); ``spans(text, taken)`` finds the remembered ones in ``text``."""

    __slots__ = ("_order", "_values", "on")

    def __init__(self, on: bool = False) -> None:
        self.on = on
        self._values: set[str] = set()
        self._order: list[str] = []          # longest first: a secret before one inside it

    def __bool__(self) -> bool:
        return bool(self._values)

    def __contains__(self, value: str) -> bool:
        return value in self._values

    def values(self) -> list[str]:
        """The values remembered, longest first."""
        return list(self._order)

    def learn(self, secret: str) -> None:
        if not self.on or secret in self._values or len(self._values) >= MOST or not repeatable(secret):
            return
        self._values.add(secret)
        self._order.append(secret)
        self._order.sort(key=len, reverse=True)

    def spans(self, text: str, taken: list[Span]) -> list[Span]:
        """Where remembered values occur in ``text``, outside the spans ``taken`` and
        outside placeholders, and not as a piece of a longer word or number (``0123`` in
        ``01234567``, ``abcd`` in ``abcdef``: a short secret found inside other text would
        wreck it, and is no repeat of the value): non-overlapping ``Span``s (``secret`` None:
        the text there), in no particular order."""
        return [Span(a, b, RULE) for a, b, _ in find(text, self._order, [(sp.start, sp.end) for sp in taken])]
