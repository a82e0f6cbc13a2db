"""Redaction options shared by ``scrub``, ``report`` and ``record --redact``.

``redact_options`` adds ``--redact-key NAME``, ``--redact-path PATH``,
``--redact-pattern REGEX`` (each repeatable), ``--redact-rules FILE`` and
``--no-builtin-rules``; ``redactor_from(kwargs)`` pops them and builds the
:class:`~mcptap.redact.engine.Redactor` with the user's key. A bad rule or an
unreadable key is a one-line ``mcptap:`` error (a rule: ``mcptap: COMMAND: …``), exit 2.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from mcptap.cli.errors import Fail, usage
from mcptap.cli.options import NonEmptyPath
from mcptap.errors import RedactionError
from mcptap.redact.engine import Redactor

NAMES = ("redact_key", "redact_path", "redact_pattern", "redact_rules", "no_builtin_rules")


def redact_options(f: Callable[..., Any]) -> Callable[..., Any]:
    opts = [
        click.option("--redact-key", multiple=True, metavar="NAME",
                     help="Also redact the value of every JSON key NAME (case, - and _ ignored). Repeatable."),
        click.option("--redact-path", multiple=True, metavar="PATH",
                     help="Also redact the whole value at PATH (as in ~j: params.arguments.query, result.content[*].text). Repeatable."),
        click.option("--redact-pattern", multiple=True, metavar="REGEX",
                     help="Also redact matches of REGEX in every string; with groups only the secret: the group named "
                          "(?P<secret>...), else the first group that took part. Repeatable."),
        click.option("--redact-rules", multiple=True, metavar="FILE", type=NonEmptyPath(dir_okay=False),
                     help="TOML rules file: keys, paths, patterns, builtin (docs/redaction.md). Repeatable."),
        click.option("--no-builtin-rules", is_flag=True, help="Only the rules given here, not the built-in keys and patterns."),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


def redactor_from(kwargs: dict[str, Any], strict_key: bool = True) -> Redactor:
    """Pop the redaction options from ``kwargs`` and build the Redactor.
    A bad rule is a usage error (``errors.usage``); an unusable key, when
    ``strict_key``, raises Fail (else a process-only key is used: record time)."""
    from mcptap.redact.keyfile import load_keyer
    from mcptap.redact.rules import build_rules

    v = {n: kwargs.pop(n, None) for n in NAMES}
    try:
        rules = build_rules(v["redact_key"] or (), v["redact_path"] or (), v["redact_pattern"] or (),
                            v["redact_rules"] or (), builtin=not v["no_builtin_rules"])
    except RedactionError as exc:       # a rule the user gave cannot be used: an option's value
        usage(str(exc))
    try:
        return Redactor(rules, load_keyer(strict=strict_key))
    except RedactionError as exc:       # the key: the environment, not the command line
        raise Fail(str(exc)) from None
