"""A live peer's text quoted in replay's own words (pure, level 3).

Replay quotes what the server said where it reports something the server did not
say as a JSON-RPC answer: an HTTP error body's start (``error 429 'HTTP 429 without a
JSON-RPC answer: …'``), a body that answered nothing, a response's content type, an
exception's text (h11 quotes the bytes it could not read as HTTP), a failed
handshake's error message. Those quotes reach the terminal, the JSON report and the
new capture (notes, synthetic errors, record ``detail``s), so each goes through
:func:`said`: the default redaction of record time (``redact.scrub_text``: the
built-in rules with the user's key, as argv, URLs and header values are redacted;
a token, a key, ``Authorization: Bearer …``, a secret JSON key's value become
``«redacted:hmac:…»``), then control characters escaped (``escape.escape_controls``).
The CLI adds the rest of replay's redaction to notes as it does to live answers (the
secrets of the command line or URL, a scrubbed capture's own rules).
"""

from __future__ import annotations

from mcptap.escape import escape_controls, unrepr_bytes
from mcptap.redact import scrub_text

#: bytes of a body redacted for its quote: a JSON error object whole (its secret keys are found by
#: their names only in JSON that parses), not only the characters shown
SCAN_BYTES = 64 * 1024


def said(text: str, limit: int | None = None) -> str:
    """``text`` as replay may print and store it: redacted whole first (a secret cut at
    ``limit`` would match no rule), whitespace runs as one space, at most ``limit``
    characters (``…`` when cut), controls escaped. One line; never raises."""
    text = " ".join(scrub_text(unrepr_bytes(text)).split())
    if limit is not None and len(text) > limit:
        text = text[:limit] + "…"
    return escape_controls(text)


def said_body(body: bytes, limit: int) -> str:
    """The start of a response ``body`` (its first ``SCAN_BYTES`` redacted, undecodable
    bytes replaced) as :func:`said` gives it: at most ``limit`` characters."""
    return said(body[:SCAN_BYTES].decode("utf-8", "replace"), limit)


def failure(exc: BaseException) -> str:
    """An I/O failure as replay tells it (``NAME: text``), through :func:`said`: h11's
    ``illegal status line: bytearray(b'…')`` quotes what the server sent."""
    return said(f"{type(exc).__name__}: {exc}")
