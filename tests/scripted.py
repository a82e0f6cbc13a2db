"""Build small captures from scripted stdio traffic with the real Recorder
(fixed clock, one millisecond per step) for check/show/report tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mcptap.capture.writer import CaptureWriter
from mcptap.model import Direction
from mcptap.recorder import Recorder


def j(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


def req(i: Any, method: str, params: Any = None, **extra: Any) -> bytes:
    m: dict[str, Any] = {"jsonrpc": "2.0", "id": i, "method": method, **extra}
    if params is not None:
        m["params"] = params
    return j(m)


def note(method: str, params: Any = None) -> bytes:
    m: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        m["params"] = params
    return j(m)


def res(i: Any, result: Any = None) -> bytes:
    return j({"jsonrpc": "2.0", "id": i, "result": {} if result is None else result})


def err(i: Any, code: Any = -32603, message: Any = "failed") -> bytes:
    return j({"jsonrpc": "2.0", "id": i, "error": {"code": code, "message": message}})


def c2s(data: bytes) -> tuple[str, Any]:
    return ("c2s", data)


def s2c(data: bytes) -> tuple[str, Any]:
    return ("s2c", data)


def handshake(version: str = "2025-06-18", server_caps: dict[str, Any] | None = None,
              client_caps: dict[str, Any] | None = None) -> list[tuple[str, Any]]:
    """initialize / result / notifications/initialized."""
    caps = {"tools": {}, "resources": {}, "prompts": {}, "logging": {}} if server_caps is None else server_caps
    return [
        c2s(req(1, "initialize", {"protocolVersion": version, "capabilities": client_caps if client_caps is not None else {},
                                  "clientInfo": {"name": "t", "version": "1"}})),
        s2c(res(1, {"protocolVersion": version, "capabilities": caps, "serverInfo": {"name": "s", "version": "1"}})),
        c2s(note("notifications/initialized")),
    ]


META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}


def record(path: Path, steps: list[tuple[str, Any]], end: bool = True, transport: str = "stdio") -> Path:
    """Write a capture of ``steps``: ("c2s"|"s2c", bytes), ("err", bytes),
    ("eof", "c2s"|"s2c"), ("exit", code), ("gap", reason), ("lost", ("c2s"|"s2c", nbytes))
    (bytes forwarded but not recorded: a directed gap), ("wait", µs),
    ("chunk", ("c2s"|"s2c", bytes)) (a ``chunk`` record). ``end``: write the
    end record (False: as if mcptap was killed)."""
    now = {"t": 0}
    rec = Recorder(CaptureWriter.open(str(path)), transport, {"argv": ["server"]}, clock=lambda: now["t"], started="2026-01-01T00:00:00.000000Z")
    for kind, data in steps:
        now["t"] += 1000
        if kind in ("c2s", "s2c"):
            rec.stdio_bytes(Direction(kind), data)
        elif kind == "err":
            rec.stderr(data)
        elif kind == "eof":
            rec.stdio_eof(Direction(data))
        elif kind == "exit":
            rec.exit(code=data)
        elif kind == "gap":
            rec.gap(data)
        elif kind == "lost":
            rec.lost(Direction(data[0]), data[1])
        elif kind == "chunk":                   # (dir, bytes) stored unframed, as when analysis fell behind
            rec.stdio_unframed(Direction(data[0]), data[1])
        elif kind == "wait":
            now["t"] += int(data)                # µs more before the next step
        else:
            raise ValueError(kind)
    if end:
        rec.close()
    else:
        rec.writer.flush()
        rec.writer.close()
    return path


def chunk_capture(path: Path) -> Path:
    """A stdio capture (written under today's rules) whose every tenth answer is stored as two chunk records."""
    steps = list(handshake("2025-06-18", server_caps={"tools": {}}))
    for i in range(10, 60):
        steps.append(c2s(req(i, "tools/call", {"name": "echo", "arguments": {}})))
        r = res(i, {"content": [{"type": "text", "text": "x" * 50}]})
        steps += [("chunk", ("s2c", r[:20])), ("chunk", ("s2c", r[20:]))] if i % 10 == 0 else [s2c(r)]
    return record(path, steps + [("eof", "c2s"), ("eof", "s2c"), ("exit", 0)])
