"""The wrap memo (pure): the record ``wrap`` keeps for each wrapped server
(the CLI keeps the memo in a sidecar file beside the configuration), and the
records that lost their server: one whose entry was renamed is found by its
content (``claim``), one whose server is gone is stale (``stale``).

A record is keyed by ``Dialect.memo_key(name)``: the server name, prefixed
with the scope for a scoped section (Claude Code's local scope
``projects[DIR]:NAME``), so the records of several sections of one file
share one memo.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from typing import Any

from mcptap.hosts.dialects import Dialect, ServerEntry
from mcptap.hosts.errors import ConfigError
from mcptap.hosts.tapline import is_tap_of, parse_tap_line

MEMO_FORMAT = "mcptap-wrap"
MEMO_VERSION = 1
#: the key of a scoped section's record (``projects[DIR]:NAME``): not an unscoped section's
_SCOPED_KEY = re.compile(r"^\w+\[.*\]:", re.DOTALL)


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


def _section(dialect: Dialect, memo: dict[str, Any]) -> dict[str, str]:
    """Server name -> key, for the records of ``dialect``'s server section."""
    out = {}
    for key in memo["servers"]:
        if dialect.scope:
            if key.startswith(dialect.scope + ":"):
                out[key[len(dialect.scope) + 1:]] = key
        elif not _SCOPED_KEY.match(key):
            out[key] = key
    return out


def claim(dialect: Dialect, text: str, memo: dict[str, Any], entry: ServerEntry, present: Collection[str]) -> str | None:
    """The server whose wrap record ``entry`` carries when its key was
    renamed in the file (``fs`` → ``files``): a record whose server is not
    in the file (``present``: the section's server names), recognised by the
    entry's content (the ``--name`` of its tap line, the text wrapping wrote,
    or its tap URL). The record is moved to ``entry``'s key; returns its old
    name, or None."""
    records = memo["servers"]
    if dialect.memo_key(entry.name) in records or entry.kind not in ("stdio", "url"):
        return None
    for old, key in _section(dialect, memo).items():
        rec = records[key]
        if old in present or not usable(rec) or rec["kind"] != entry.kind:
            continue
        if entry.kind == "url":
            ours = is_tap_of(entry.url, rec["original"]["url"])
        else:
            assert entry.command is not None
            line = parse_tap_line(entry.command, entry.args or (), launchers(None, rec))
            ours = line is not None and (line.managed()["--name"] == old or
                                         splice_at(dialect, text, entry.name, rec["before"], rec["after"]) is not None)
        if ours:
            records[dialect.memo_key(entry.name)] = records.pop(key)
            return old
    return None


def stale(dialect: Dialect, memo: dict[str, Any], present: Collection[str]) -> dict[str, str]:
    """Name -> key of the records of ``dialect``'s section whose server is
    not in the file (``present``) and that no entry claimed."""
    return {name: key for name, key in _section(dialect, memo).items() if name not in present}
