"""Loader for the handed fault cases in ../shared/cases (see FORMAT-bug-cases.md).

The cases live outside the repo (shared/ beside the checkout, also in CI);
tests that need them skip with a clear reason when the folder is absent.
"""

from __future__ import annotations

import base64
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CASES = Path(os.environ.get("MCPTAP_CASES", Path(__file__).resolve().parents[1].parent / "shared" / "cases"))


@dataclass
class WireEvent:
    seq: int
    t_ms: float
    kind: str
    dir: str | None
    data: bytes | None
    raw: dict[str, Any] = field(repr=False, default_factory=dict)


@dataclass
class Wire:
    case: str
    name: str
    events: list[WireEvent]
    context: dict[str, Any] | None
    expected: dict[str, Any]

    @property
    def annotations(self) -> list[dict[str, Any]]:
        return [a for a in self.expected["annotations"] if a["wire"] == self.name]

    @property
    def pairs(self) -> list[dict[str, Any]]:
        return [p for p in self.expected["pairs"] if p["wire"] == self.name]

    def stream(self, d: str) -> bytes:
        return b"".join(e.data for e in self.events if e.kind == "bytes" and e.dir == d and e.data)


def _bytes(e: dict[str, Any]) -> bytes | None:
    if "b64" in e:
        return base64.b64decode(e["b64"])
    if "fill" in e:
        pat = e["fill"]["pattern"].encode("utf-8")
        n = e["fill"]["bytes"]
        return (pat * (n // len(pat) + 1))[:n]
    return None


def load_wire(case_dir: Path, name: str) -> Wire:
    expected = json.loads((case_dir / "expected.json").read_text())
    events, context = [], None
    for line in (case_dir / f"{name}.jsonl").read_text().splitlines():
        e = json.loads(line)
        if e["kind"] == "context":
            context = e.get("state")
            continue
        events.append(WireEvent(e["seq"], e.get("t_ms", 0), e["kind"], e.get("dir"), _bytes(e), e))
    return Wire(case_dir.name.split("-")[0], name, events, context, expected)


def wires(transport: str) -> list[Wire]:
    """Every wire of every case whose transport is ``transport`` ("stdio"/"http")."""
    out = []
    if not CASES.is_dir():
        return out
    for d in sorted(CASES.iterdir()):
        if not (d / "expected.json").exists():
            continue
        exp = json.loads((d / "expected.json").read_text())
        for name in exp["wires"]:
            w = load_wire(d, name)
            if w.events and w.events[0].raw.get("transport") == transport:
                out.append(w)
    return out


HTTP_ONLY_PREFIXES = ("http.", "sse.", "lifecycle.session_terminated", "lifecycle.request_before_initialized_ack")


def _payloads(body: bytes) -> list[bytes]:
    """JSON-RPC payloads in an HTTP body: the JSON body itself, or each SSE
    event's joined data lines."""
    text = body.replace(b"\r\n", b"\n")
    if not (text.startswith(b"event:") or text.startswith(b"data:") or text.startswith(b"id:") or text.startswith(b":")):
        return [body] if body.strip() else []
    out = []
    for block in text.split(b"\n\n"):
        data = [ln[5:].lstrip(b" ") for ln in block.split(b"\n") if ln.startswith(b"data:")]
        if data and any(data):
            out.append(b"\n".join(data))
    return out


def as_stdio(w: Wire) -> Wire:
    """The same JSON-RPC traffic as an HTTP wire, carried over stdio (one line
    per payload, same wire seqs). Expected HTTP-only findings are dropped, and
    pairs decided "by exchange" (no exchange on stdio) are left out."""
    events = []
    for e in w.events:
        if e.kind == "request" and e.data:
            sep = e.data.find(b"\r\n\r\n")
            body = e.data[sep + 4:] if sep >= 0 else e.data.split(b"\n\n", 1)[-1]
            for p in _payloads(body):
                events.append(WireEvent(e.seq, e.t_ms, "bytes", "c2s", p + b"\n", {"transport": "stdio"}))
        elif e.kind == "response_body" and e.data:
            for p in _payloads(e.data):
                events.append(WireEvent(e.seq, e.t_ms, "bytes", "s2c", p + b"\n", {"transport": "stdio"}))
    exp = dict(w.expected)
    exp["annotations"] = [a for a in w.expected["annotations"] if a["wire"] == w.name and not a["code"].startswith(HTTP_ONLY_PREFIXES)]
    mine = [p for p in w.expected["pairs"] if p["wire"] == w.name]
    ambiguous = {repr(p["id"]) for p in mine if "exchange" in p["match"]}
    exp["pairs"] = [p for p in mine if repr(p["id"]) not in ambiguous]
    return Wire(w.case, w.name + "-as-stdio", events, w.context, {**exp, "annotations": [{**a, "wire": w.name + "-as-stdio"} for a in exp["annotations"]],
                                                                    "pairs": [{**p, "wire": w.name + "-as-stdio"} for p in exp["pairs"]]})
