"""Every option of every command is documented on its command's pages (README
or docs/), and the help of the shared redaction options says what the docs and
the code say (which group of a ``--redact-pattern`` is the secret)."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from mcptap.cli.main import mcptap

ROOT = Path(__file__).resolve().parents[1]
README = "README.md"
#: where a user looks for a command's options; README for the rest
PAGES = {
    "record": [README, "docs/http-tap.md", "docs/redaction.md"], "replay": ["docs/replay-diff.md"], "diff": ["docs/replay-diff.md"],
    "report": ["docs/report.md"], "serve": ["docs/serve.md"], "export": ["docs/export.md"], "scrub": ["docs/redaction.md"],
    "show": [README, "docs/filters.md"], "check": [README, "docs/findings.md"], "wrap": ["docs/hosts.md"], "unwrap": ["docs/hosts.md"],
}


def _commands() -> list[tuple[str, click.Command]]:
    ctx = click.Context(mcptap)
    out = []
    for name in mcptap.list_commands(ctx):
        cmd = mcptap.get_command(ctx, name)
        assert cmd is not None
        out.append((name, cmd))
    return out


def _options() -> list[tuple[str, tuple[str, ...]]]:
    return [(name, tuple(p.opts + p.secondary_opts)) for name, cmd in _commands() for p in cmd.params
            if isinstance(p, click.Option) and "--help" not in p.opts]


def test_the_walk_sees_every_command() -> None:
    names = {n for n, _ in _commands()}
    assert {"record", "replay", "diff", "report", "serve", "show", "check", "scrub", "wrap"} <= names


@pytest.mark.parametrize(("command", "spellings"), _options(), ids=lambda x: x if isinstance(x, str) else "/".join(x))
def test_every_option_is_documented_on_its_commands_pages(command: str, spellings: tuple[str, ...]) -> None:
    text = "\n".join((ROOT / p).read_text() for p in PAGES.get(command, [README]))
    found = [o for o in spellings if re.search(r"(?<![\w-])" + re.escape(o) + r"(?![\w-])", text)]
    assert found, f"{command} {'/'.join(spellings)}: in none of {PAGES.get(command, [README])}"


@pytest.mark.parametrize("command", ["scrub", "report", "record"])
def test_redact_pattern_help_names_the_secret_group_as_the_docs_do(command: str) -> None:
    ctx = click.Context(mcptap)
    cmd = mcptap.get_command(ctx, command)
    assert cmd is not None
    (opt,) = [p for p in cmd.params if isinstance(p, click.Option) and "--redact-pattern" in p.opts]
    text = " ".join((opt.help or "").split())
    assert "(?P<secret>...)" in text and "else the first group that took part" in text, text
    docs = " ".join((ROOT / "docs" / "redaction.md").read_text().split())
    assert "the group named `(?P<secret>…)` if it has one, else the first group that took part" in docs


@pytest.mark.parametrize(("pattern", "kept", "after"), [
    (r"ref-(q)-(?P<secret>\d{6})", "ref-q-", " now"),        # the named group, though another comes first
    (r"ref-(?:(z)|(q))-(\d{6})", "ref-", "-123456 now"),     # no secret group: the first group that took part (q)
])
def test_the_documented_secret_group_is_what_is_redacted(pattern: str, kept: str, after: str) -> None:
    from mcptap.redact.engine import Redactor
    from mcptap.redact.keyfile import load_keyer
    from mcptap.redact.rules import build_rules

    r = Redactor(build_rules((), (), (pattern,), (), builtin=False), load_keyer(strict=False))
    out, hits = r.string("see ref-q-123456 now")
    assert hits and out.startswith("see " + kept + "«") and out.endswith("»" + after), out
