"""Excerpts of peer text in finding messages (pure): cut at a length, but
never inside a keyed placeholder of a scrubbed capture (``«redacted:hmac:…»``,
mcptap/redact/keyed.py). Findings are made again from scrubbed text
(``check --full``, ``report``), and a cut placeholder reads as another value.

    clip("debug api_key=«redacted:hmac:0123456789ab»", 20)
        -> "debug api_key=«redacted:hmac:0123456789ab»"
"""

from __future__ import annotations

OPEN = "«redacted:"
CLOSE = "»"
LONGEST = 80        # characters a placeholder has at most (keyed: 28; a labelled one more)


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
