"""Build real captures for tests: JSON-RPC lines fed through the real Recorder
(annotator, writer) with a fake clock, exactly as the stdio tap would."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from mcptap.capture.writer import CaptureWriter
from mcptap.model import Direction
from mcptap.recorder import Recorder

C2S, S2C = Direction.C2S, Direction.S2C
MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}


class Tape:
    """Write one stdio capture line by line. ``t`` advances 100 µs a line
    unless ``at`` is given."""

    def __init__(self, path: str) -> None:
        self.t = 0
        self.rec = Recorder(CaptureWriter.open(path), "stdio", target={"argv": ["test-server"]}, clock=lambda: self.t, started="2026-01-01T00:00:00.000000Z")

    def send(self, direction: Direction, obj: Any, step: int = 100) -> None:
        self.t += step
        data = obj if isinstance(obj, bytes) else orjson.dumps(obj) + b"\n"
        self.rec.stdio_bytes(direction, data)

    def close(self) -> dict[str, Any]:
        self.rec.stdio_eof(C2S)
        self.rec.stdio_eof(S2C)
        return self.rec.close(exit_code=0)


@dataclass
class Ex:
    """One scripted exchange: a c2s request and the server's answer
    (``result`` or ``error``), optional server requests made meanwhile
    (``inner``: list of (method, params, client answer))."""

    method: str
    params: dict[str, Any] | None = None
    result: Any = None
    error: dict[str, Any] | None = None
    inner: list[tuple[str, Any, Any]] = field(default_factory=list)
    latency: int = 100


TOOLS = [
    {"name": "add", "description": "Add.", "inputSchema": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                                                           "required": ["a", "b"]},
     "annotations": {"readOnlyHint": True}},
    {"name": "wipe", "description": "Delete.", "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
     "annotations": {"destructiveHint": True}},
]
CAPS = {"tools": {"listChanged": False}, "resources": {}, "completions": {}}


def write_capture(path: str, exchanges: list[Ex], *, era: str = "legacy", caps: dict[str, Any] | None = None,
                  tools: list[dict[str, Any]] | None = None, id_base: int = 0, revision: str = "2025-11-25",
                  server_info: dict[str, Any] | None = None, stray: dict[int, bytes] | None = None,
                  t_step: int = 100) -> dict[str, Any]:
    """A whole session: handshake (legacy) or discover (modern), a tools/list,
    then ``exchanges`` in order. ``id_base`` shifts every JSON-RPC id (ids are
    volatile, diff must not care); ``stray``: index -> raw bytes written on
    stdout before exchange ``index``. Returns the end record."""
    tape = Tape(path)
    caps = CAPS if caps is None else caps
    tools = TOOLS if tools is None else tools
    info = server_info or {"name": "gen", "version": "1"}
    n = id_base

    def meta(params: dict[str, Any] | None) -> dict[str, Any] | None:
        if era != "modern":
            return params
        return {**(params or {}), "_meta": META}

    n += 1
    if era == "legacy":
        tape.send(C2S, {"jsonrpc": "2.0", "id": n, "method": "initialize",
                        "params": {"protocolVersion": revision, "capabilities": {"sampling": {}}, "clientInfo": {"name": "t", "version": "0"}}}, t_step)
        tape.send(S2C, {"jsonrpc": "2.0", "id": n, "result": {"protocolVersion": revision, "capabilities": caps, "serverInfo": info}}, t_step)
        tape.send(C2S, {"jsonrpc": "2.0", "method": "notifications/initialized"}, t_step)
    else:
        tape.send(C2S, {"jsonrpc": "2.0", "id": n, "method": "server/discover", "params": meta(None)}, t_step)
        result = {"supportedVersions": [MODERN], "capabilities": caps, "resultType": "complete",
                  "ttlMs": 0, "cacheScope": "public", "_meta": {"io.modelcontextprotocol/serverInfo": info}}
        tape.send(S2C, {"jsonrpc": "2.0", "id": n, "result": result}, t_step)
    n += 1
    tape.send(C2S, {"jsonrpc": "2.0", "id": n, "method": "tools/list", "params": meta(None)}, t_step)
    listed = {"tools": tools, **({"resultType": "complete", "ttlMs": 0, "cacheScope": "public"} if era == "modern" else {})}
    tape.send(S2C, {"jsonrpc": "2.0", "id": n, "result": listed}, t_step)
    srv_id = 1000
    for i, ex in enumerate(exchanges):
        if stray and i in stray:
            tape.send(S2C, stray[i], t_step)
        n += 1
        tape.send(C2S, {"jsonrpc": "2.0", "id": n, "method": ex.method, **({"params": meta(ex.params)} if meta(ex.params) is not None else {})}, t_step)
        for method, params, answer in ex.inner:
            srv_id += 1
            tape.send(S2C, {"jsonrpc": "2.0", "id": srv_id, "method": method, "params": params}, t_step)
            tape.send(C2S, {"jsonrpc": "2.0", "id": srv_id, "result": answer}, t_step)
        if ex.error is not None:
            tape.send(S2C, {"jsonrpc": "2.0", "id": n, "error": ex.error}, ex.latency)
        else:
            result = ex.result if ex.result is not None else {}
            if era == "modern" and isinstance(result, dict):
                result = {"resultType": "complete", **result}
            tape.send(S2C, {"jsonrpc": "2.0", "id": n, "result": result}, ex.latency)
    return tape.close()


def text_result(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": False}
