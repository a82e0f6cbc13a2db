"""Live requests against a scrubbed capture (pure, given the user's Keyer).

A scrubbed capture (``header.scrubbed``: the passes, each ``{rules, key}``, the key as its
public fingerprint) holds ``«redacted:hmac:…»`` where the client sent a secret; a live client
sends the secret itself, so ``serve`` could match none of its requests that carry one; a live
server answers and asks with the secrets themselves, so ``replay`` saw every answer that
carried one changed. When every pass was made with this user's key, the live values are
redacted with the same rules and key before they are matched or compared
(``live_redaction`` for params, ``message_redaction`` for whole messages): they then equal
the recorded ones. With another key the placeholders cannot be reproduced (that is what the
key is for); the caller says so.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcptap.errors import McptapError
from mcptap.redact.engine import Redactor
from mcptap.redact.keyed import Keyer
from mcptap.redact.keyfile import ENV_KEY
from mcptap.redact.rules import rules_from_description


def live_redactors(header: dict[str, Any], keyer: Keyer | None) -> tuple[list[Redactor] | None, str | None]:
    """For a capture with ``header``: a Redactor for each of its scrub passes, in order (None
    when the capture is not scrubbed or its passes cannot be redone with ``keyer``), and why
    they cannot be (None when they can or need not)."""
    passes = header.get("scrubbed")
    if not isinstance(passes, list) or not passes:
        return None, None
    redactors: list[Redactor] = []
    for p in passes:
        if not isinstance(p, dict):
            return None, "the capture's scrub passes are unreadable: values that carry secrets will not match"
        fp = p.get("key")
        if keyer is None or fp != keyer.fingerprint():
            mine = "you have no redaction key" if keyer is None else f"yours is {keyer.fingerprint()}"
            return None, (f"the capture was scrubbed with another redaction key (fingerprint {fp}; {mine}): values "
                          f"that carry secrets will not match their recorded placeholders; set {ENV_KEY} to that key "
                          "to match them")
        rules = rules_from_description(p.get("rules"))
        if rules is None:
            return None, "the capture's scrub rules cannot be rebuilt: values that carry secrets will not match"
        # remembering, as the scrub was: a secret a live message repeats outside its key is
        # replaced there as the capture's scrub replaced it (serve's matching, replay's comparison)
        redactors.append(Redactor(rules, keyer).remembering())
    return redactors, None


def output_redactors(header: dict[str, Any], keyer: Keyer | None, unscrubbed: bool, refusal: str,
                     say: Callable[[str], None]) -> list[Redactor] | None:
    """For a new capture made from the one with ``header`` (``replay``'s, ``serve -o``): its scrub
    passes redone with ``keyer``, so the new one holds no live secret either; None for a capture in
    clear. When they cannot be redone: raises McptapError ``"WHY; {refusal} (--unscrubbed-output:
    …)"``, unless ``unscrubbed`` (``--unscrubbed-output``): then ``say``s why once and returns None."""
    if not header.get("scrubbed"):
        return None
    redactors, why = live_redactors(header, keyer)
    if redactors is None:
        why = why or "the capture's scrub passes cannot be redone"
        if not unscrubbed:
            raise McptapError(f"{why}; {refusal} (--unscrubbed-output: write it unscrubbed all the same)")
        say(why)
    return redactors


def live_redaction(header: dict[str, Any], keyer: Keyer | None) -> tuple[Callable[[Any], Any] | None, str | None]:
    """For a capture with ``header``: a function that redacts a live request's params as the
    capture's were (None when the capture is not scrubbed or cannot be matched so), and why
    it cannot be (None when it can or need not)."""
    redactors, why = live_redactors(header, keyer)
    return (None, why) if redactors is None else (params_redaction(redactors), None)


def params_redaction(redactors: list[Redactor]) -> Callable[[Any], Any]:
    """A function that redacts a live request's params as the capture's were."""
    def redact(params: Any) -> Any:
        for r in redactors:
            params = r.member("params", params)[0]
        return params

    return redact


def message_redaction(redactors: list[Redactor]) -> Callable[[Any], Any]:
    """A function that redacts a live message (or batch) as the capture's messages were
    (``Redactor.message``: ``jsonrpc``, ``id`` and ``method`` stay): replay compares live
    answers with recorded, scrubbed ones."""
    def redact(message: Any) -> Any:
        for r in redactors:
            message = r.message(message)[0]
        return message

    return redact
