"""Record fields as the serve script reads them (pure, level 3; serve/script.py's helpers):
defensive readers of a hand-editable capture's values (a wrong type reads as None or empty)
and what counts as a server chore."""

from __future__ import annotations

from typing import Any


def int_field(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def status_field(v: Any) -> int | None:
    """An HTTP status the mock can send again (100-599), or None."""
    return v if isinstance(v, int) and not isinstance(v, bool) and 100 <= v <= 599 else None


def key_field(v: Any) -> Any:
    """A hashable record field (exchange ids), or None."""
    return v if isinstance(v, (int, str)) and not isinstance(v, bool) else None


def dict_field(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


#: requests a server answers from what it has, not by running something that logs or asks back
CHORES = frozenset({"ping", "initialize", "server/discover", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"})


def chore(method: str) -> bool:
    return method in CHORES or method.endswith("/list")


#: message record kinds that are not a JSON-RPC message (docs/capture-format.md)
NOT_MESSAGES = ("non_json", "invalid")


def batch_members(rec: dict[str, Any]) -> dict[int, int]:
    """A batch record's member answers: recorded request seq by member index."""
    ms = rec.get("members") if rec.get("kind") == "batch" else None
    return {m["index"]: m["pair"] for m in ms if isinstance(m, dict) and int_field(m.get("index")) is not None
            and int_field(m.get("pair")) is not None and m.get("kind") in ("response", "error")} if isinstance(ms, list) else {}


def id_key(v: Any) -> Any:
    """A JSON-RPC id as a dict key that keeps 1 and "1" apart, or None."""
    return ("s", v) if isinstance(v, str) else ("i", v) if isinstance(v, int) and not isinstance(v, bool) else None
