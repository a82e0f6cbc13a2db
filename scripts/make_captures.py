#!/usr/bin/env python3
"""Regenerate the example captures in captures/ and their golden outputs.

Every capture is recorded by the real Recorder (mcptap/recorder.py) from a
fixed script of stdio byte chunks with a fixed clock and start time, so the
files are byte-for-byte reproducible. The golden outputs in
tests/data/golden/ are what `mcptap show` / `mcptap check` print for them with
today's rules; tests/test_golden.py compares against them.

    .venv/bin/python scripts/make_captures.py            # captures + goldens
    .venv/bin/python scripts/make_captures.py --golden   # goldens only (rules changed)
    .venv/bin/python scripts/make_captures.py --check    # exit 1 if anything differs
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import orjson  # noqa: E402

from mcptap.capture.writer import CaptureWriter  # noqa: E402
from mcptap.model import Direction  # noqa: E402
from mcptap.recorder import Recorder  # noqa: E402

CAPTURES = ROOT / "captures"
GOLDEN = ROOT / "tests" / "data" / "golden"
STARTED = "2026-01-15T09:30:00.000000Z"
C2S, S2C = Direction.C2S, Direction.S2C


def j(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


def req(i: Any, method: str, params: dict[str, Any] | None = None) -> bytes:
    m: dict[str, Any] = {"jsonrpc": "2.0", "id": i, "method": method}
    if params is not None:
        m["params"] = params
    return j(m)


def note(method: str, params: dict[str, Any] | None = None) -> bytes:
    m: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        m["params"] = params
    return j(m)


def res(i: Any, result: dict[str, Any]) -> bytes:
    return j({"jsonrpc": "2.0", "id": i, "result": result})


def err(i: Any, code: int, message: str) -> bytes:
    return j({"jsonrpc": "2.0", "id": i, "error": {"code": code, "message": message}})


def init(version: str = "2025-06-18", server_caps: dict[str, Any] | None = None) -> list[tuple]:
    caps = {"tools": {"listChanged": True}, "logging": {}} if server_caps is None else server_caps
    return [
        (0, "c2s", req(1, "initialize", {"protocolVersion": version, "capabilities": {"roots": {}},
                                         "clientInfo": {"name": "example-host", "version": "1.0.0"}})),
        (41_000, "s2c", res(1, {"protocolVersion": version, "capabilities": caps,
                                "serverInfo": {"name": "example-server", "version": "0.1.0"}})),
        (45_000, "c2s", note("notifications/initialized")),
    ]


def call(i: int, tool: str, args: dict[str, Any], token: Any = None) -> bytes:
    params: dict[str, Any] = {"name": tool, "arguments": args}
    if token is not None:
        params["_meta"] = {"progressToken": token}
    return req(i, "tools/call", params)


def text_result(text: str, is_error: bool = False) -> dict[str, Any]:
    r: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    if is_error:
        r["isError"] = True
    return r


# -- the scripts: (t_us, stream, bytes) ; stream: c2s s2c err eof:c2s eof:s2c exit:N ----

def clean() -> list[tuple]:
    """A well-behaved 2025-06-18 session."""
    return init() + [
        (50_000, "c2s", req(2, "tools/list")),
        (58_000, "s2c", res(2, {"tools": [{"name": "echo", "inputSchema": {"type": "object"}},
                                          {"name": "slow", "inputSchema": {"type": "object"}}]})),
        (60_000, "c2s", call(3, "echo", {"text": "hello"}, token="p-3")),
        (70_000, "s2c", note("notifications/progress", {"progressToken": "p-3", "progress": 1, "total": 2})),
        (80_000, "s2c", note("notifications/progress", {"progressToken": "p-3", "progress": 2, "total": 2})),
        (95_000, "s2c", res(3, text_result("hello"))),
        (100_000, "err", b"example-server: echo done\n"),
        (120_000, "c2s", call(4, "slow", {"seconds": 30})),
        (130_000, "s2c", note("notifications/message", {"level": "info", "data": "slow started"})),
        (620_000, "c2s", note("notifications/cancelled", {"requestId": 4, "reason": "user pressed stop"})),
        (700_000, "c2s", req(5, "ping")),
        (701_200, "s2c", res(5, {})),
        (710_000, "c2s", call(6, "echo", {"text": ""})),
        (712_000, "s2c", res(6, text_result("empty text", is_error=True))),
        (800_000, "eof:c2s", b""),
        (850_000, "eof:s2c", b""),
        (860_000, "exit:0", b""),
    ]


def faulty() -> list[tuple]:
    """A server with the classic stdio and JSON-RPC faults (cases B01 B02 B03 B07 B12)."""
    return [
        (0, "c2s", req(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                         "clientInfo": {"name": "example-host", "version": "1.0.0"}})),
        (30_000, "s2c", b"example-server 0.1.0 ready (stdio mode)\n"),
        (41_000, "s2c", res(1, {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                                "serverInfo": {"name": "example-server", "version": "0.1.0"}})),
        (45_000, "c2s", note("notifications/initialized")),
        (50_000, "c2s", req(2, "tools/list")),
        (60_000, "s2c", res(2, {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]})[:-1] + b"\r\n"),
        (70_000, "c2s", call(3, "echo", {"text": "hi"}, token=7)),
        (80_000, "s2c", note("notifications/progress", {"progressToken": 7, "progress": 5})),
        (90_000, "s2c", note("notifications/progress", {"progressToken": 7, "progress": 3})),
        (95_000, "s2c", b'{\n  "jsonrpc": "2.0",\n  "id": "3",\n  "result": {"content": []}\n}\n'),
        (200_000, "c2s", call(4, "echo", {"text": "again"})),
        (230_000, "s2c", err(4, 0, "internal failure")),
        (240_000, "s2c", res(99, {})),
        (300_000, "c2s", call(5, "echo", {"text": "never answered"})),
        (400_000, "err", b"Traceback (most recent call last):\n  ValueError: boom\n"),
        (410_000, "eof:s2c", b""),
        (420_000, "exit:1", b""),
    ]


def stateless() -> list[tuple]:
    """A 2026-07-28 (stateless era) exchange: server/discover, per-request _meta."""
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}
    return [
        (0, "c2s", req(1, "server/discover", {"_meta": meta})),
        (20_000, "s2c", res(1, {"resultType": "complete", "ttlMs": 0, "cacheScope": "private", "supportedVersions": ["2026-07-28"],
                                "capabilities": {"tools": {}}, "serverInfo": {"name": "example-server", "version": "2.0.0"}})),
        (30_000, "c2s", req(2, "tools/list", {"_meta": meta})),
        (45_000, "s2c", res(2, {"resultType": "complete", "ttlMs": 60_000, "cacheScope": "public",
                                "tools": [{"name": "echo", "inputSchema": {"type": "object"}}]})),
        (50_000, "c2s", req(3, "tools/call", {"name": "echo", "arguments": {"text": "hi"}, "_meta": meta})),
        (62_000, "s2c", res(3, {"resultType": "complete", "content": [{"type": "text", "text": "hi"}]})),
        (70_000, "c2s", req(4, "tools/call", {"name": "echo", "arguments": {"text": "no meta"}})),
        (81_000, "s2c", res(4, {"content": [{"type": "text", "text": "no meta"}]})),
        (90_000, "eof:c2s", b""),
        (95_000, "eof:s2c", b""),
        (96_000, "exit:0", b""),
    ]


def record(script: list[tuple], path: Path, argv: list[str]) -> None:
    now = {"t": 0}
    rec = Recorder(CaptureWriter.open(str(path)), "stdio", {"argv": argv}, clock=lambda: now["t"], started=STARTED)
    for t, stream, data in script:
        now["t"] = t
        if stream in ("c2s", "s2c"):
            rec.stdio_bytes(Direction(stream), data)
        elif stream == "err":
            rec.stderr(data)
        elif stream.startswith("eof:"):
            rec.stdio_eof(Direction(stream[4:]))
        elif stream.startswith("exit:"):
            rec.exit(code=int(stream[5:]))
    rec.close(exit_code=next((int(s[5:]) for _, s, _ in script if s.startswith("exit:")), None))
    # the recorder stamps the wall-clock start time; pin it so the file is reproducible
    head, rest = path.read_bytes().split(b"\n", 1)
    header = orjson.loads(head)
    header["started"] = STARTED
    path.write_bytes(orjson.dumps(header) + b"\n" + rest)


def killed(path: Path) -> None:
    """The clean session as left by a `kill -9` of mcptap mid-write: no end
    record and the last message record cut in half."""
    record(clean()[:9], path, ["python", "server.py"])
    data = path.read_bytes()
    lines = data.splitlines(keepends=True)
    kept = [ln for ln in lines if b'"type":"end"' not in ln]
    last = kept.pop()
    path.write_bytes(b"".join(kept) + last[: len(last) // 2])


CAPTURE_FILES: dict[str, Callable[[Path], None]] = {
    "clean-2025-06-18.jsonl": lambda p: record(clean(), p, ["python", "server.py"]),
    "faulty-server.jsonl": lambda p: record(faulty(), p, ["node", "faulty-server.js"]),
    "stateless-2026-07-28.jsonl": lambda p: record(stateless(), p, ["python", "modern_server.py"]),
    "killed-mid-write.jsonl": killed,
}

#: golden file -> mcptap arguments (run from the repository root)
GOLDENS: dict[str, list[str]] = {}
for _name in CAPTURE_FILES:
    _stem = _name[:-6]
    GOLDENS[f"{_stem}.show.txt"] = ["show", "--no-color", f"captures/{_name}"]
    GOLDENS[f"{_stem}.check.txt"] = ["check", "--no-color", "--fail-on", "never", f"captures/{_name}"]
GOLDENS["clean-2025-06-18.show.mmd"] = ["show", "--format", "mermaid", "captures/clean-2025-06-18.jsonl"]
GOLDENS["faulty-server.show.jsonl"] = ["show", "--format", "json", "captures/faulty-server.jsonl"]
GOLDENS["faulty-server.filter-errors.txt"] = ["show", "--no-color", "--oneline", "--filter", "~sev error", "captures/faulty-server.jsonl"]
GOLDENS["faulty-server.check.json"] = ["check", "--format", "json", "captures/faulty-server.jsonl"]
GOLDENS["faulty-server.check.sarif"] = ["check", "--format", "sarif", "captures/faulty-server.jsonl"]
GOLDENS["faulty-server.check.junit.xml"] = ["check", "--format", "junit", "captures/faulty-server.jsonl"]


def run_cli(args: list[str]) -> str:
    """What `mcptap ARGS` prints on stdout, run from the repository root."""
    from click.testing import CliRunner

    from mcptap.cli.main import mcptap

    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        result = CliRunner().invoke(mcptap, args, catch_exceptions=False, env={"NO_COLOR": None})
    finally:
        os.chdir(cwd)
    return result.stdout


def _without_rules(data: bytes) -> bytes:
    """A capture minus its header's rules fingerprint, which changes with every
    rule edit (annotations that differ still show up in the records)."""
    head, _, rest = data.partition(b"\n")
    h = orjson.loads(head)
    h.pop("rules", None)
    return orjson.dumps(h) + b"\n" + rest


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--golden", action="store_true", help="only regenerate the golden outputs")
    ap.add_argument("--check", action="store_true", help="compare instead of writing; exit 1 on a difference")
    args = ap.parse_args()
    differ = 0
    want: dict[Path, bytes] = {}
    tmp = ROOT / "captures" / ".tmp"
    if not args.golden:
        tmp.mkdir(exist_ok=True)
        for name, make in CAPTURE_FILES.items():
            make(tmp / name)
            want[CAPTURES / name] = (tmp / name).read_bytes()
            (tmp / name).unlink()
        tmp.rmdir()
        for path, data in want.items():
            if args.check:
                if not path.exists() or _without_rules(path.read_bytes()) != _without_rules(data):
                    print(f"differs: {path.relative_to(ROOT)}")
                    differ = 1
            else:
                path.write_bytes(data)
                os.chmod(path, 0o644)
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for name, cli in GOLDENS.items():
        out = run_cli(cli)
        path = GOLDEN / name
        if args.check:
            old = path.read_text() if path.exists() else ""
            if old != out:
                print(f"differs: {path.relative_to(ROOT)}")
                sys.stdout.writelines(list(difflib.unified_diff(old.splitlines(True), out.splitlines(True), "golden", "now"))[:40])
                differ = 1
        else:
            path.write_text(out)
    if not args.check:
        print(f"wrote {len(want)} captures and {len(GOLDENS)} golden outputs")
    return differ


if __name__ == "__main__":
    sys.exit(main())
