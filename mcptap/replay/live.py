"""What a replay saw, step by step, and the JSON helpers the runner uses
(trio only for the ``done`` events): ``Live`` (one sent step), ``LiveServerRequest``
(one request of the live server and how replay answered it), ``ReplayResult``;
``get_path``/``set_path`` (a JSON path in a message; ``MISSING`` when absent)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import trio

from mcptap.replay.plan import Plan


@dataclass(slots=True)
class Live:
    """One sent step: its fresh id, when it was sent (trio clock, s), the
    live response (None until answered) and its latency (µs)."""

    step: int
    live_id: Any
    sent_at: float
    response: Any = None
    latency_us: int | None = None
    done: trio.Event = field(default_factory=trio.Event)
    note: str | None = None
    batch: list[Any] | None = None          # batch: original ids of its requests, in order
    parts: dict[Any, Any] | None = None     # batch: answers so far, by original id


@dataclass(slots=True)
class LiveServerRequest:
    """A request the live server made and how replay answered it
    (``how``: exact / method / default / none)."""

    method: str
    params: Any
    how: str


@dataclass
class ReplayResult:
    """What happened: ``live`` by step index; ``notes`` by step index (why a
    step was not sent or had no answer); ``error``: mcptap's own failure
    (spawn failed, connection refused) or None; ``duration_s``."""

    plan: Plan
    live: dict[int, Live] = field(default_factory=dict)
    server_requests: list[LiveServerRequest] = field(default_factory=list)
    notes: dict[int, str] = field(default_factory=dict)
    error: str | None = None
    exit_code: int | None = None
    ended_by: int | None = None     # exit_code is 128+N for signal N that replay sent itself (the server outlived its stdin)
    duration_s: float = 0.0

    def responses(self) -> dict[int, Any]:
        return {i: lv.response for i, lv in self.live.items()}


#: a path absent from a value (None is a value)
MISSING = object()


def get_path(value: Any, path: Sequence[Any]) -> Any:
    for p in path:
        if isinstance(value, dict) and isinstance(p, str) and p in value:
            value = value[p]
        elif isinstance(value, list) and isinstance(p, int) and p < len(value):
            value = value[p]
        else:
            return MISSING
    return value


def set_path(value: Any, path: Sequence[Any], new: Any) -> bool:
    for p in path[:-1]:
        value = get_path(value, (p,))
        if value is MISSING:
            return False
    last = path[-1]
    if isinstance(value, dict) or isinstance(value, list) and isinstance(last, int) and last < len(value):
        value[last] = new
        return True
    return False
