"""Wrap/unwrap facing what users and other tools leave in a configuration and
its sidecar: malformed wrap records, entries wrapped by hand or with options
the user added, several scopes holding the same entry, tap ports, TOML
layouts, text that cannot be UTF-8."""

from __future__ import annotations

from typing import Any

import pytest

from mcptap.hosts import dialects
from mcptap.hosts.wrap import WrapSpec, unwrap, wrap

SPEC = WrapSpec(("/opt/mcptap/bin/mcptap",), "/caps")
HTTP = WrapSpec(SPEC.launcher, "/caps", http=True)


def actions(out: Any) -> dict[str, str]:
    return {n.name: n.action for n in out.notes}


@pytest.mark.parametrize("original", ["https://x/mcp", {}, {"url": 3}, None, ["https://x/mcp"]])
def test_a_malformed_url_record_is_treated_as_absent_by_wrap(original: Any) -> None:
    text = '{"mcpServers": {"w": {"url": "https://x/mcp"}}}'
    memo = {"format": "mcptap-wrap", "version": 1,
            "servers": {"w": {"kind": "url", "before": "a", "after": "b", "original": original}}}
    out = wrap(dialects.MCP_SERVERS, text, memo, HTTP)
    assert actions(out) == {"w": "wrapped"}
    assert out.memo["servers"]["w"]["original"]["url"] == "https://x/mcp"
    assert unwrap(dialects.MCP_SERVERS, out.text, out.memo).text == text
    assert actions(wrap(dialects.MCP_SERVERS, text, memo, SPEC)) == {"w": "skipped"}
