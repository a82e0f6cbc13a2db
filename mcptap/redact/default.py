"""The default Redactor: built-in rules with the user's key, loaded on the
first redaction (record time: argv, URLs, header values)."""

from __future__ import annotations

from mcptap.redact.engine import Redactor
from mcptap.redact.keyfile import LazyKeyer
from mcptap.redact.rules import Rules

_default: list[Redactor] = []


def default_redactor() -> Redactor:
    """Built-in rules, the user's key (``MCPTAP_REDACT_KEY`` / key file, or a
    process-only key when neither can be had). Never raises."""
    if not _default:
        _default.append(Redactor(Rules(), LazyKeyer()))
    return _default[0]
