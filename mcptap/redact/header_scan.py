"""Token shapes in header values a capture keeps (pure).

A header whose name is no credential's (``redact.headers.is_secret_header``)
may still carry one: ``X-Upstream-Credential: ghp_…``, a JWT in a proxy's
own field. ``scan_value`` runs the value through the same scanner ``mcptap
scrub`` runs over every header value (the default ``Redactor``'s string
rules, the user's key), so a capture recorded with the defaults and the same
capture scrubbed afterwards hold the same placeholders (docs/redaction.md).
"""

from __future__ import annotations

from mcptap.redact.default import default_redactor

#: values found clean: the same few (media types, user agents, dates of one second) come in every
#: exchange and whether one holds a token shape depends on its text alone (bounded: a peer inventing
#: values only costs a re-scan after a reset; long values are not kept)
_CLEAN: set[str] = set()
_CLEAN_MAX = 4096
_CLEAN_LONGEST = 512


def scan_value(value: str) -> str:
    """``value`` (a header value, latin-1 decoded) with every token shape the
    scanner knows replaced by its placeholder; unchanged when there is none."""
    if value in _CLEAN or not value:
        return value
    out, _ = default_redactor().string(value)
    if out == value and len(value) <= _CLEAN_LONGEST:
        if len(_CLEAN) >= _CLEAN_MAX:
            _CLEAN.clear()
        _CLEAN.add(value)
    return out
