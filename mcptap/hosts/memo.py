"""The wrap memo (pure): the record ``wrap`` keeps for each wrapped server
(the CLI keeps the memo in a sidecar file beside the configuration).

A record is keyed by ``Dialect.memo_key(name)``: the server name, prefixed
with the scope for a scoped section (Claude Code's local scope
``projects[DIR]:NAME``), so the records of several sections of one file
share one memo.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mcptap.hosts.dialects import Dialect
from mcptap.hosts.errors import ConfigError

MEMO_FORMAT = "mcptap-wrap"
MEMO_VERSION = 1


def empty_memo() -> dict[str, Any]:
    return {"format": MEMO_FORMAT, "version": MEMO_VERSION, "servers": {}}


def check_memo(memo: Any) -> dict[str, Any]:
    """A memo as read from a sidecar, validated; raises ConfigError."""
    if not isinstance(memo, dict) or memo.get("format") != MEMO_FORMAT or not isinstance(memo.get("servers"), dict):
        raise ConfigError("the sidecar file is not an mcptap wrap record")
    if memo.get("version") != MEMO_VERSION:
        raise ConfigError(f"the sidecar file has version {memo.get('version')!r}; this mcptap reads version {MEMO_VERSION}")
    return memo


def usable(rec: Any) -> bool:
    """A wrap record unwrap can use (a sidecar edited by hand may hold anything)."""
    if not isinstance(rec, dict) or not isinstance(rec.get("before"), str) or not isinstance(rec.get("after"), str):
        return False
    original = rec.get("original")
    if rec.get("kind") == "url":
        return isinstance(original, dict) and isinstance(original.get("url"), str)
    return rec.get("kind") == "stdio"


def record(records: dict[str, Any], key: str, kind: str) -> dict[str, Any] | None:
    """The usable wrap record of ``kind`` under ``key``, else None."""
    rec = records.get(key)
    return rec if isinstance(rec, dict) and usable(rec) and rec.get("kind") == kind else None


def launchers(current: Sequence[str] | None, rec: dict[str, Any] | None) -> list[Sequence[str]]:
    """The launchers a tap line may start with: the one in use and the one
    the record says wrap wrote (any path: ``--mcptap /opt/tap``)."""
    out = [current] if current else []
    launcher = rec.get("launcher") if rec is not None else None
    if isinstance(launcher, list) and launcher and all(isinstance(a, str) for a in launcher):
        out.append(launcher)
    return out


def splice_at(dialect: Dialect, text: str, name: str, before: str, after: str) -> int | None:
    """Where ``before`` goes back in place of ``after``: the one occurrence
    of ``after`` whose change stays inside server ``name``'s own entry
    (another scope of the file may hold the very same wrapped text); None
    when there is not exactly one."""
    if not after:
        return None
    p = 0                            # after was widened with unchanged context: only the middle changes
    while p < min(len(before), len(after)) and before[p] == after[p]:
        p += 1
    s = 0
    while s < min(len(before), len(after)) - p and before[-1 - s] == after[-1 - s]:
        s += 1
    hits = []
    at = text.find(after)
    while at >= 0:
        if dialect.confined(text, name, at + p, at + len(after) - s, before[p:len(before) - s]):
            hits.append(at)
        at = text.find(after, at + 1)
    return hits[0] if len(hits) == 1 else None
