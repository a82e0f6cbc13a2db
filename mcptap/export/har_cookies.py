"""HAR cookies of recorded HTTP headers (export/har.py).

:func:`_cookies` reads the ``Cookie`` headers of a request (``a=1; b=2``),
:func:`_set_cookies` the ``Set-Cookie`` headers of a response (name, value,
``path``, ``domain``, ``expires`` as ISO 8601, ``httpOnly``, ``secure``), as
HAR 1.2 cookie objects; values stay exactly as recorded (redaction
placeholders and all). ``headers``: the record's ``[[name, value], …]``; odd
items are skipped. Pure; raises nothing.
"""

from __future__ import annotations

from email.utils import parsedate_to_datetime
from typing import Any


def _cookies(headers: Any) -> list[dict[str, str]]:
    """HAR cookies of the recorded ``Cookie`` headers (``a=1; b=2``; a pair without ``=`` is a
    nameless value, as browsers read it): values exactly as recorded, placeholders and all."""
    out = []
    for h in headers or ():
        if isinstance(h, (list, tuple)) and len(h) == 2 and str(h[0]).lower() == "cookie":
            for pair in str(h[1]).split(";"):
                if pair.strip():
                    name, eq, value = pair.strip().partition("=")
                    out.append({"name": name.strip(), "value": value.strip()} if eq else {"name": "", "value": name})
    return out


def _expires(text: str) -> str | None:
    """A Set-Cookie ``Expires`` date (RFC 1123) as HAR's ISO 8601, None when it is not one."""
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return when.isoformat() if when.tzinfo is not None else when.isoformat() + "Z"


def _set_cookies(headers: Any) -> list[dict[str, Any]]:
    """HAR cookies of the recorded ``Set-Cookie`` headers: name, value (as recorded) and the
    path, domain, expires, httpOnly and secure attributes."""
    out: list[dict[str, Any]] = []
    for h in headers or ():
        if not (isinstance(h, (list, tuple)) and len(h) == 2 and str(h[0]).lower() == "set-cookie"):
            continue
        first, *attrs = str(h[1]).split(";")
        name, eq, value = first.strip().partition("=")
        cookie: dict[str, Any] = {"name": name.strip(), "value": value.strip()} if eq else {"name": "", "value": name}
        for attr in attrs:
            key, _, val = attr.strip().partition("=")
            low = key.strip().lower()
            if low in ("path", "domain"):
                cookie[low] = val.strip()
            elif low == "expires" and _expires(val.strip()) is not None:
                cookie["expires"] = _expires(val.strip())
            elif low == "httponly":
                cookie["httpOnly"] = True
            elif low == "secure":
                cookie["secure"] = True
        out.append(cookie)
    return out
