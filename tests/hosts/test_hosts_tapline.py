"""Reading a tap line back whoever wrote it (mcptap/hosts/tapline.py):
``--opt=value`` forms, launchers wrap did not write (runners, a custom
``--mcptap`` whose record is lost), and never a tap inside a tap."""

from __future__ import annotations

from typing import Any

import pytest

from mcptap.hosts import dialects
from mcptap.hosts.wrap import WrapSpec, unwrap, wrap

SPEC = WrapSpec(("/opt/mcptap/bin/mcptap",), "/caps")
PLAIN = '{"mcpServers": {"a": {"command": "node", "args": ["a.js"]}}}'


def actions(out: Any) -> dict[str, str]:
    return {n.name: n.action for n in out.notes}


def args_of(text: str, name: str = "a") -> list[str]:
    return list(dialects.MCP_SERVERS.servers(text)[name].args or ())


@pytest.mark.parametrize(("written", "value"), [("--keep=3", "3"), ("--dir=/mine", "/mine"), ("--name=other", "other")])
def test_an_opt_equals_value_form_is_the_managed_option(written: str, value: str) -> None:
    """Before: ``--keep=3`` was an extra option: wrap said "unchanged" and
    ``wrap --keep 5`` wrote ``--keep 5 --keep=3`` (click takes the last: 3)."""
    once = wrap(dialects.MCP_SERVERS, PLAIN, None, SPEC)
    edited = once.text.replace('"a", "--"', f'"a", "{written}", "--redact-key=apiKey", "--"')
    again = wrap(dialects.MCP_SERVERS, edited, once.memo, SPEC)
    assert actions(again) == {"a": "rewrapped"}
    assert args_of(again.text) == ["record", "--dir", "/caps", "--name", "a", "--redact-key=apiKey", "--", "node", "a.js"]
    keep5 = wrap(dialects.MCP_SERVERS, edited, once.memo, WrapSpec(SPEC.launcher, "/caps", keep=5))
    assert args_of(keep5.text) == ["record", "--dir", "/caps", "--name", "a", "--keep", "5", "--redact-key=apiKey",
                                   "--", "node", "a.js"]
    assert value not in args_of(keep5.text)
    assert unwrap(dialects.MCP_SERVERS, keep5.text, keep5.memo).text == PLAIN


def entry(command: str, args: list[str]) -> str:
    import json
    return json.dumps({"mcpServers": {"a": {"command": command, "args": args}}})


TAIL = ["record", "--name", "a", "--", "node", "a.js"]


@pytest.mark.parametrize(("command", "head"), [
    ("uvx", ["mcptap"]), ("uvx", ["--from", "mcptap", "mcptap"]), ("uvx", ["mcptap@0.3"]),
    ("/usr/bin/env", ["mcptap"]), ("/usr/bin/env", ["MCPTAP_X=1", "python3", "-m", "mcptap"]),
    ("pipx", ["run", "mcptap"]), ("npx", ["-y", "mcptap"]), ("uv", ["tool", "run", "--python", "3.12", "mcptap"]),
    ("uv", ["run", "python", "-m", "mcptap.cli.main"]),
])
def test_a_runner_starting_mcptap_is_a_tap_line(command: str, head: list[str]) -> None:
    """Before: ``uvx mcptap record …`` was not recognised: wrap put a second tap
    in front of it."""
    text = entry(command, [*head, *TAIL])
    for memo in (None, {"format": "mcptap-wrap", "version": 1, "servers": {}}):
        out = wrap(dialects.MCP_SERVERS, text, memo, SPEC)
        assert actions(out) == {"a": "left"} and out.text == text and out.memo["servers"] == {}
        back = unwrap(dialects.MCP_SERVERS, text, memo)
        assert actions(back) == {"a": "left"} and back.text == text
    shaped = entry(command, [*head, "record", "--dir", "/caps", "--name", "a", "--", "node", "a.js"])
    back = unwrap(dialects.MCP_SERVERS, shaped, None)        # wrap's shape, record lost: removed
    assert actions(back) == {"a": "restored-args"} and args_of(back.text) == ["a.js"]


@pytest.mark.parametrize(("command", "args"), [
    ("npx", ["-y", "@scope/server", "record", "--name", "a", "--", "x"]),
    ("uvx", ["mcptap-lookalike", "serve", "--", "x"]),
    ("node", ["record", "--name", "a", "--", "x"]),
    ("node", ["record", "--dir", "/d", "--name", "a", "--redact", "--", "x"]),
])
def test_other_lines_are_not_tap_lines(command: str, args: list[str]) -> None:
    out = wrap(dialects.MCP_SERVERS, entry(command, args), None, SPEC)
    assert actions(out) == {"a": "wrapped"}
    assert args_of(out.text)[-len(args) - 1:] == [command, *args]


def test_a_custom_launcher_whose_record_is_lost_is_never_wrapped_again() -> None:
    """Before: ``wrap --mcptap "/tmp/x/my dir/tap"``, sidecar lost, ``wrap``:
    a tap inside a tap; unwrap removed the outer one, then said "not wrapped"."""
    custom = wrap(dialects.MCP_SERVERS, PLAIN, None, WrapSpec(("/tmp/x/my dir/tap",), "/caps", keep=2))
    again = wrap(dialects.MCP_SERVERS, custom.text, None, SPEC)
    assert actions(again) == {"a": "left"} and again.text == custom.text
    note = again.notes[0].detail
    assert "record is missing" in note and "mcptap unwrap" in note
    back = unwrap(dialects.MCP_SERVERS, custom.text, None)
    assert actions(back) == {"a": "restored-args"} and back.text == PLAIN
    assert actions(unwrap(dialects.MCP_SERVERS, back.text, None)) == {"a": "not-wrapped"}
