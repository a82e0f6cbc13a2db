"""The ``header`` record: the first line of every capture."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcptap.records.base import get_int, get_str, malformed, rest

_KNOWN = frozenset({"type", "format", "version", "mcptap", "started", "transport", "target"})


@dataclass(frozen=True, slots=True)
class Header:
    """The first record: ``format`` and integer ``version`` of the capture
    format, the writing ``mcptap`` version, ``started`` (ISO 8601 UTC),
    ``transport`` ("stdio" or "http"), ``target`` (argv with secrets scrubbed,
    or the upstream URL), then ``extra`` keys in their given order (``rules``,
    ``name``, ``replay_of``…)."""

    format: str
    version: int
    mcptap: str
    started: str
    transport: str
    target: dict[str, Any]
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"type": "header", "format": self.format, "version": self.version, "mcptap": self.mcptap,
                             "started": self.started, "transport": self.transport, "target": self.target}
        d.update(self.extra)
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Header:
        """Raises CaptureReadError when ``format``/``version`` are missing or a
        field has the wrong type (``transport`` defaults to stdio, ``target`` to {})."""
        target = d.get("target", {})
        if not isinstance(target, dict):
            raise malformed(d, f"target {target!r} is not an object")
        return cls(get_str(d, "format"), get_int(d, "version"), get_str(d, "mcptap", ""), get_str(d, "started", ""),
                   get_str(d, "transport", "stdio"), target, rest(d, _KNOWN))
