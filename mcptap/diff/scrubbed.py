"""A scrubbed capture against one in clear, for ``diff`` (pure given the user's Keyer).

A scrubbed capture (``header.scrubbed``: its passes, each ``{rules, key}``, the key as its
fingerprint) holds ``«redacted:hmac:…»`` where the other capture may hold the secret
itself (a replay's new session, a second recording). Compared as they are, every value
that carries a secret differs, and the report prints the clear one. So the capture in
clear is scrubbed as it is read, with the scrubbed one's rules and key
(``redact/live.py`` ``live_redactors``, ``redact/scrub.py`` ``Scrubber``): it then holds
the same placeholders, and nothing in clear reaches the report.

``scrub_plan(header_a, header_b, keyer) -> (scrub_a, scrub_b)``: for each side, None
(read as it is) or a function from its records (in order, after its header) to those
records scrubbed. Raises ``ScrubMismatch`` (a ``McptapError``) when one side is scrubbed
and its passes cannot be redone with ``keyer`` (another key, none, unreadable rules): the
caller refuses to diff rather than print the other side's secrets.

Two scrubbed captures are compared as they are when their passes used one key (the same
secret has the same placeholder: a changed secret is a change). Scrubbed with different
keys (``keys_differ``), the same secret has a different placeholder on each side and
nothing can tell which ones hold the same secret; compared as they are, every placeholder
would be a difference. ``by_kind`` then reads both sides with each placeholder replaced by
its kind (``«redacted:hmac:6d43690916bb»`` → ``«redacted:hmac»``): placeholders equal one
another, what is not a secret is still compared, and ``KEYS_NOTE`` says that a changed
secret cannot be seen.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from mcptap.capture.fields import message_value
from mcptap.compare.depth import bounded
from mcptap.errors import McptapError
from mcptap.model import UNPARSED
from mcptap.redact.keyed import PLACEHOLDER, Keyer
from mcptap.redact.live import live_redactors
from mcptap.redact.scrub import Scrubber

Records = Callable[[Iterable[dict[str, Any]]], Iterator[dict[str, Any]]]


class ScrubMismatch(McptapError):
    """One capture is scrubbed, the other is not, and the scrub cannot be redone."""


def _scrubbed(header: dict[str, Any]) -> bool:
    return isinstance(header.get("scrubbed"), list) and bool(header["scrubbed"])


def needs_key(header_a: dict[str, Any], header_b: dict[str, Any]) -> bool:
    """One capture is scrubbed and the other is not: ``scrub_plan`` needs the user's key."""
    return _scrubbed(header_a) != _scrubbed(header_b)


def scrubbers(header: dict[str, Any], target_header: dict[str, Any], keyer: Keyer | None) -> list[Scrubber] | None:
    """The passes of the scrubbed capture with ``header``, ready to scrub a capture in
    clear with ``target_header`` (each has seen that header), or None when they cannot be
    redone with ``keyer``."""
    redactors, _ = live_redactors(header, keyer)
    if redactors is None:
        return None
    out = []
    for r in redactors:
        s = Scrubber(r)
        s.header(target_header)              # (its transport: what a record's fields mean)
        out.append(s)
    return out


def _records(passes: list[Scrubber]) -> Records:
    def run(records: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        out: Iterable[dict[str, Any]] = records
        for s in passes:
            out = s.records(out)
        return iter(out)

    return run


def scrub_plan(header_a: dict[str, Any], header_b: dict[str, Any], keyer: Keyer | None,
               names: tuple[str, str] = ("A", "B")) -> tuple[Records | None, Records | None]:
    """See the module docstring. ``names``: the captures as the message names them."""
    sa, sb = _scrubbed(header_a), _scrubbed(header_b)
    if sa == sb:
        return None, None
    scrubbed, clear = (header_a, header_b) if sa else (header_b, header_a)
    which, other = names if sa else names[::-1]
    passes = scrubbers(scrubbed, clear, keyer)
    if passes is None:
        fps = ", ".join(str(p.get("key")) for p in scrubbed["scrubbed"] if isinstance(p, dict))
        mine = "you have no redaction key" if keyer is None else f"yours is {keyer.fingerprint()}"
        raise ScrubMismatch(f"{which} is scrubbed (redaction key fingerprint {fps}; {mine}) and {other} is not: compared as "
                            f"they are, {other}'s secrets would differ from {which}'s placeholders and be printed; set "
                            f"MCPTAP_REDACT_KEY to the key that scrubbed {which}, or scrub {other} with it first "
                            f"(mcptap scrub {other} -o SCRUBBED)")
    run = _records(passes)
    return (None, run) if sa else (run, None)


#: the report's note when ``by_kind`` was used ({a}, {b}: the key fingerprints of each side)
KEYS_NOTE = ("A and B were scrubbed with different redaction keys (A: {a}; B: {b}): the same secret has another "
             "placeholder in each, so placeholders were compared by kind (any one equals any other) and a secret "
             "that changed is not shown; scrub both sources with one key to compare them")
_DIGEST = re.compile(r":[^:»]*»$")


def key_ids(header: dict[str, Any]) -> tuple[str, ...]:
    """The key fingerprints of a scrubbed capture's passes, sorted, once each (() in clear)."""
    if not _scrubbed(header):
        return ()
    return tuple(sorted({str(p.get("key")) for p in header["scrubbed"] if isinstance(p, dict)}))


def keys_differ(header_a: dict[str, Any], header_b: dict[str, Any]) -> bool:
    """Both captures are scrubbed, not with the same key(s): ``by_kind`` is needed."""
    ka, kb = key_ids(header_a), key_ids(header_b)
    return bool(ka) and bool(kb) and ka != kb


def _kind(m: re.Match[str]) -> str:
    text = m.group(0)
    return _DIGEST.sub("»", text) if text.count(":") >= 2 else text


def _by_kind(v: Any) -> Any:
    if isinstance(v, str):
        return PLACEHOLDER.sub(_kind, v) if "«redacted:" in v else v
    if isinstance(v, list):
        out = [_by_kind(x) for x in v]
        return v if all(x is y for x, y in zip(out, v, strict=True)) else out
    if isinstance(v, dict):
        pairs = [(_by_kind(k), _by_kind(x)) for k, x in v.items()]
        return v if all(k is k2 and x is x2 for (k2, x2), (k, x) in zip(pairs, v.items(), strict=True)) else dict(pairs)
    return v


def by_kind(records: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """``records`` with every placeholder in a message replaced by its kind (see the module
    docstring); the message then holds its value as ``json`` (its bytes are not compared)."""
    for rec in records:
        if rec.get("type") == "message":
            value = message_value(rec)
            if value is not UNPARSED and value is not None:
                new = _by_kind(bounded(value))
                if new is not value:
                    rec = {k: x for k, x in rec.items() if k not in ("raw", "raw_b64")}
                    rec["json"] = new
        yield rec
