"""Excerpts of peer text in finding messages (pure): cut at a length, but
never inside a keyed placeholder of a scrubbed capture (``«redacted:hmac:…»``,
mcptap/redact/keyed.py). Findings are made again from scrubbed text
(``check --full``, ``report``), and a cut placeholder reads as another value.

``cut`` (a finding's quote) never cuts inside a word either: a cut that falls
between two characters of one run without whitespace, quotes, brackets or
separators (``,;|<>``) drops that run whole. A secret cut
short (a token in a server's error object, a password in a stdout line) is a
piece no redaction rule knows: a token shape needs its whole length, a value
known secret is searched whole. So no piece of such a token stays; a secret
with spaces or separators in it may leave its first words, which ``cut``
marks with ``…`` and ``redact.repeat_match`` replaces when they begin a known
secret (docs/redaction.md, "Quotes cut short").

    clip("debug api_key=«redacted:hmac:0123456789ab»", 20)
        -> "debug api_key=«redacted:hmac:0123456789ab»"
"""

from __future__ import annotations

OPEN = "«redacted:"
CLOSE = "»"
LONGEST = 80        # characters a placeholder has at most (keyed: 28; a labelled one more)
#: characters that end a word for a cut: a token or a password piece holds none of them
#: (base64 ``+/=``, a JWT's ``.``, ``-_:@&%`` belong to the word and go with it)
_BREAKS = frozenset(" \t\r\n\f\v\"'`,;|()[]{}<>")
#: the marker ``cut`` puts where it cut (``redact.repeat_match`` looks for it)
MARK = "…"


def clip(text: str, n: int) -> str:
    """``text[:n]``, or up to the end of a placeholder that the cut at ``n``
    (characters, >= 0) falls in."""
    if len(text) <= n:
        return text
    start = text.rfind(OPEN, max(0, n - LONGEST), n + len(OPEN) - 1)
    if 0 <= start < n:
        end = text.find(CLOSE, start + len(OPEN), start + LONGEST)
        if end >= n:
            return text[:end + 1]
    return text[:n]


def cut(text: str, n: int) -> str:
    """``text`` when it has at most ``n`` characters (>= 1), else ``clip(text, n - 1)``,
    shorter when that cut falls inside a word (see module doc: up to the last break
    before it, possibly ``""``), and ``MARK``. For finding texts, which captures keep."""
    if len(text) <= n:
        return text
    piece = clip(text, n - 1)
    at = len(piece)
    if at == n - 1 and at and text[at - 1] not in _BREAKS and text[at] not in _BREAKS:
        while at > 0 and text[at - 1] not in _BREAKS:
            at -= 1
    return piece[:at] + MARK
