"""Keyed placeholders: ``«redacted:hmac:XXXXXXXXXXXX»`` (pure, given the key).

A placeholder is the first 12 hex digits of HMAC-SHA256(key, secret), where
the key is 32 random bytes kept by each user (:mod:`mcptap.redact.keyfile`).
The same secret gives the same placeholder in all of one user's captures, so
``diff`` and ``replay`` still see "same token" / "changed token"; without the
key nobody can confirm a guessed secret (an unsalted hash would let anyone
check a candidate password against a shared capture).

``PLACEHOLDER`` matches every placeholder mcptap ever wrote, including the
older unkeyed ``«redacted:sha256:…»`` form, so re-scrubbing leaves them alone.
"""

from __future__ import annotations

import hashlib
import hmac
import re

PLACEHOLDER = re.compile(r"«redacted:[A-Za-z0-9_.:-]{1,64}»")
#: Length of the HMAC prefix in a placeholder (hex digits): 48 bits.
DIGITS = 12
#: Shortest secret replaced wherever it is repeated (argv secrets, values judged secret under a
#: key): a shorter one would replace unrelated text all over a capture.
MIN_REPEATED = 4


class Keyer:
    """Turns secrets into placeholders with one HMAC key (``key``: bytes,
    at least 16). ``placeholder(secret)`` is deterministic for a key."""

    __slots__ = ("_key",)

    def __init__(self, key: bytes) -> None:
        if len(key) < 16:
            raise ValueError("a redaction key has at least 16 bytes")
        self._key = key

    def placeholder(self, secret: str) -> str:
        """``«redacted:hmac:`` + 12 hex + ``»`` for ``secret`` (any str;
        lone surrogates from undecodable bytes are kept as they are)."""
        mac = hmac.new(self._key, secret.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()
        return f"«redacted:hmac:{mac[:DIGITS]}»"

    def fingerprint(self) -> str:
        """A short public id of the key (sha256 of an HMAC of a fixed label),
        recorded in scrubbed captures so a user can tell which key made them
        without revealing it."""
        return hmac.new(self._key, b"mcptap key id", hashlib.sha256).hexdigest()[:8]


def is_placeholder(value: str) -> bool:
    """True when ``value`` is exactly one placeholder (already redacted)."""
    return PLACEHOLDER.fullmatch(value) is not None
