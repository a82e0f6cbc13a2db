"""Invalid JSON-RPC requests get the errors JSON-RPC 2.0 §5 asks for, not recorded results
echoing an id no answer can carry: -32600 Invalid Request (id null unless the id is a valid
one), -32602 for params that are an array (MCP's params are objects), nothing for an invalid
notification; over stdio and HTTP, in a batch too. What the recorded server answered all the
same (the capture shows it) is replayed as recorded. The mock's own capture is then clean on
the server's side (``check`` blames the client that sent them, not the mock)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx2 as httpx
import trio

from mcptap.capture.reader import read_capture
from mcptap.serve.core import ServeCore
from mcptap.serve.http import HttpMock
from mcptap.serve.script import script_from_path
from scripted import c2s, handshake, j, record, req, res, s2c

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "live", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
#: (what the client sends, the error code answered, the id it carries)
INVALID: list[tuple[Any, int, Any]] = [
    ({"jsonrpc": "2.0", "id": None, "method": "ping"}, -32600, None),
    ({"jsonrpc": "2.0", "id": True, "method": "ping"}, -32600, None),
    ({"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"}, -32600, None),
    ({"jsonrpc": "1.0", "id": 7, "method": "ping"}, -32600, 7),
    ({"id": 8, "method": "ping"}, -32600, 8),
    ({"jsonrpc": "2.0", "id": 9, "method": "ping", "params": [1]}, -32602, 9),
    ({"jsonrpc": "2.0", "id": 10, "method": 5}, -32600, None),
    ({"jsonrpc": "2.0", "id": 11, "method": "ping", "params": "x"}, -32600, 11),
    ({"jsonrpc": "2.0", "id": 12}, -32600, None),
    (5, -32600, None),
]


def _capture(path: Path, *steps: tuple[str, Any]) -> Path:
    # 2025-03-26: the revision with batches
    return record(path, [*handshake("2025-03-26"), c2s(req(2, "ping")), s2c(res(2)), *steps])


def _serve(cap: Path, messages: list[Any], *extra: str) -> list[Any]:
    done = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "serve", str(cap), *extra],
                          input=b"".join(j(m) for m in messages), capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return [json.loads(x) for x in done.stdout.splitlines()]


def _error(code: int, i: Any) -> tuple[int, Any]:
    return code, i


def test_stdio_invalid_requests_get_json_rpc_errors_and_the_mocks_capture_is_clean(tmp_path: Path) -> None:
    cap, own = _capture(tmp_path / "cap.jsonl"), tmp_path / "own.jsonl"
    batch = [{"jsonrpc": "2.0", "id": 14, "method": "ping"}, {"jsonrpc": "2.0", "id": True, "method": "ping"}, 5]
    proc = subprocess.Popen([sys.executable, "-m", "mcptap.cli.main", "serve", str(cap), "-o", str(own)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None

    def ask(msg: Any, answered: bool = True) -> Any:
        # one at a time, as a client waits for each answer (the capture then pairs them as they came)
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(j(msg))
        proc.stdin.flush()
        return json.loads(proc.stdout.readline()) if answered else None

    assert "result" in ask(INIT)
    ask(INITIALIZED, answered=False)
    for msg, code, i in INVALID:
        got = ask(msg)
        assert (got["error"]["code"], got["id"]) == (code, i), msg
    ask({"jsonrpc": "1.0", "method": "notifications/initialized"}, answered=False)      # an invalid notification: nothing
    assert ask({"jsonrpc": "2.0", "id": 13, "method": "ping"}) == {"jsonrpc": "2.0", "id": 13, "result": {}}
    assert [(a["id"], a.get("error", {}).get("code")) for a in ask(batch)] == [(14, None), (None, -32600), (None, -32600)]
    proc.stdin.close()
    assert proc.wait(timeout=60) == 0 and proc.stdout.read() == b""
    proc.stdout.close()
    assert proc.stderr is not None
    proc.stderr.close()
    mine = read_capture(str(own))
    assert mine.end is not None and mine.end["pending"] == []
    blamed = {f["code"] for r in mine.records if r.get("dir") == "s2c" for f in r.get("findings", ()) if f["severity"] != "info"}
    assert blamed == set()


def test_what_the_recorded_server_answered_all_the_same_is_replayed(tmp_path: Path) -> None:
    cap = _capture(tmp_path / "cap.jsonl",
                   c2s(b'{"jsonrpc":"1.0","id":3,"method":"tools/list"}\n'), s2c(res(3, {"tools": [{"name": "old"}]})),
                   c2s(req(4, "prompts/list", [1])), s2c(res(4, {"prompts": []})))
    got = _serve(cap, [INIT, INITIALIZED, {"jsonrpc": "1.0", "id": 30, "method": "tools/list"},
                       {"jsonrpc": "2.0", "id": 40, "method": "prompts/list", "params": [1]},
                       {"jsonrpc": "2.0", "id": True, "method": "ping"}])
    assert got[1:] == [{"jsonrpc": "2.0", "id": 30, "result": {"tools": [{"name": "old"}]}},
                       {"jsonrpc": "2.0", "id": 40, "result": {"prompts": []}},
                       {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Invalid Request: the id must be a string or a number"}}]


async def test_http_invalid_requests_get_400_and_their_error(tmp_path: Path) -> None:
    cap = _capture(tmp_path / "cap.jsonl")
    server = HttpMock(ServeCore(script_from_path(str(cap))))
    accept = {"Accept": "application/json, text/event-stream"}
    async with trio.open_nursery() as nursery:
        url = await nursery.start(server.serve)
        async with httpx.AsyncClient(timeout=30) as http:
            assert (await http.post(url, json=INIT, headers=accept)).status_code == 200
            for msg, code, i in INVALID:
                r = await http.post(url, json=msg, headers=accept)
                assert r.status_code == 400 and (r.json()["error"]["code"], r.json()["id"]) == (code, i)
            r = await http.post(url, json={"jsonrpc": "1.0", "method": "notifications/initialized"}, headers=accept)
            assert r.status_code == 202 and r.content == b""
            r = await http.post(url, json=[{"jsonrpc": "2.0", "id": 14, "method": "ping"}, {"jsonrpc": "2.0", "id": True, "method": "ping"}],
                                headers=accept)
            assert r.status_code == 200 and sorted((a["id"] or 0, "error" in a) for a in r.json()) == [(0, True), (14, False)]
            r = await http.post(url, json=[{"jsonrpc": "2.0", "id": None, "method": "ping"}], headers=accept)
            assert r.status_code == 200 and [a["error"]["code"] for a in r.json()] == [-32600]
        nursery.cancel_scope.cancel()
