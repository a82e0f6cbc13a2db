"""A scrubbed capture served by ``mcptap serve``: the redaction of the live client's requests
(so they match the recorded placeholders) and of the mock's own records (``-o``, ``--extend``).

A capture that says it holds no secrets (``header.scrubbed``, docs/redaction.md) must not turn
into files that hold the live ones: the mock's ``-o`` capture is scrubbed with the capture's
passes and this user's key, as ``replay``'s new capture and ``--extend``'s merged session are;
when the passes cannot be redone (no key, another key) ``serve -o`` stops before anything is
written, unless ``--unscrubbed-output``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcptap.errors import McptapError
from mcptap.escape import escape_name
from mcptap.serve.script_model import Script


def live_redaction(script: Script, say: Callable[[str], None]) -> Callable[[Any], Any] | None:
    """A scrubbed capture: live params redacted as its were, when this user's key made it
    (else ``say``s why, once). Raises RedactionError when the user's key is there but
    unusable (keyfile.existing_keyer)."""
    from mcptap.redact.keyfile import existing_keyer
    from mcptap.redact.live import live_redaction as redaction

    if not script.header.get("scrubbed"):
        return None
    prepare, why = redaction(script.header, existing_keyer())
    if why is not None:
        say(why)
    return prepare


def extend_scrubbers(script: Script, capture: str) -> list[Any]:
    """``--extend`` of a scrubbed capture: a Scrubber per scrub pass its header names, made
    with those rules and this user's key, so the new session is redacted as the capture was
    ([] for a capture that is not scrubbed). Raises McptapError when they cannot be made:
    appending a session in clear to a capture that says it holds no secrets would be a lie."""
    if not script.header.get("scrubbed"):
        return []
    from mcptap.redact.keyfile import existing_keyer
    from mcptap.redact.live import live_redactors
    from mcptap.redact.scrub import Scrubber

    redactors, why = live_redactors(script.header, existing_keyer())
    if redactors is None:
        raise McptapError(f"cannot extend {escape_name(capture)}: it is scrubbed, and the new session cannot be redacted as its records "
                          f"were: {why or 'its scrub passes are unreadable'}")
    return [Scrubber(r) for r in redactors]


def output_scrub(script: Script, unscrubbed: bool, say: Callable[[str], None]) -> Callable[[dict[str, Any]], dict[str, Any]] | None:
    """The ``-o`` capture's record transform (``CaptureWriter.transform``) for a scrubbed
    capture: every record, header included, scrubbed with its passes and this user's key
    (``header.scrubbed`` then lists them; scrubbing is idempotent, so ``--extend``'s merge of
    that file gives the same records); None for a capture in clear. Raises McptapError when the
    passes cannot be redone, unless ``unscrubbed`` (then ``say``s why and returns None), and
    RedactionError when the user's key is unusable."""
    if not script.header.get("scrubbed"):
        return None             # (before the key is looked up: an unusable one concerns a scrubbed capture only)
    from mcptap.redact.keyfile import existing_keyer
    from mcptap.redact.live import output_redactors
    from mcptap.redact.scrub import record_scrub

    redactors = output_redactors(script.header, existing_keyer(), unscrubbed,
                                 "the mock's own capture (-o) would hold the live client's secrets in clear, so serve stops", say)
    return None if redactors is None else record_scrub(redactors)
