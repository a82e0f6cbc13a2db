"""The default Redactor: built-in rules with the user's key (cached)."""

from __future__ import annotations

from mcptap.redact.engine import Redactor
from mcptap.redact.keyfile import load_keyer
from mcptap.redact.rules import Rules

_cache: dict[int, Redactor] = {}


def default_redactor() -> Redactor:
    """Built-in rules, the user's key (``MCPTAP_REDACT_KEY`` / key file).
    Raises RedactionError when the key cannot be read or created."""
    keyer = load_keyer()
    r = _cache.get(id(keyer))
    if r is None:
        r = _cache[id(keyer)] = Redactor(Rules(), keyer)
    return r
