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
