"""Real servers and clients beyond the Python SDK through `mcptap record`, judged
by `check` (recorded annotations + shapes) and `check --full` (today's rules
from the bytes): a session between well-behaved real peers gives zero error
and warn findings, or exactly the documented true ones (docs/real-peers.md).

Peers (pinned in scripts/install_peers.sh, which these tests call):
* npm: @modelcontextprotocol/server-everything (stdio, streamableHttp),
  server-filesystem, server-memory, server-sequential-thinking, and the
  TypeScript SDK's client (tests/e2e/ts_peer_client.cjs);
* PyPI, in their own venv: mcp-server-time, mcp-server-git, fastmcp 4.x
  (tests/e2e/fastmcp_server.py, and its Client in tests/e2e/py_peer_client.py,
  which also drives the official SDK's `mcp.Client` in both eras).

Tests skip with the installer's reason when node/npm, the registry or a
package is unavailable. server-everything listens on all interfaces by
default: a --require preload makes listen() default to 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from mcptap.capture.reader import read_capture
from mcptap.check.report import check_capture
from peers import free_port

pytestmark = pytest.mark.e2e
HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
NODE_CACHE = Path(os.environ.get("MCPTAP_NODE_CACHE", ROOT / ".cache" / "node"))
PY_VENV = Path(os.environ.get("MCPTAP_PYPEERS", ROOT / ".cache" / "pypeers"))
MCP = NODE_CACHE / "node_modules" / "@modelcontextprotocol"
TAP = [sys.executable, "-m", "mcptap.cli.main"]
LOOPBACK = """
const net = require('net');
const orig = net.Server.prototype.listen;
net.Server.prototype.listen = function (...a) {
  if ((typeof a[0] === 'number' || /^\\d+$/.test(String(a[0]))) && (a.length === 1 || typeof a[1] === 'function')) a.splice(1, 0, '127.0.0.1');
  else if (a[0] && typeof a[0] === 'object' && !a[0].host && !a[0].path) a[0] = { ...a[0], host: '127.0.0.1' };
  return orig.apply(this, a);
};
"""
_INSTALLED: dict[str, str | None] = {}


def _install(part: str) -> None:
    """scripts/install_peers.sh PART once per run; skip with its reason on failure."""
    if part not in _INSTALLED:
        if part == "npm" and not (shutil.which("npm") and shutil.which("node")):
            _INSTALLED[part] = "node/npm not available"
        else:
            r = subprocess.run(["bash", str(ROOT / "scripts" / "install_peers.sh"), part], capture_output=True, timeout=600)
            _INSTALLED[part] = None if r.returncode == 0 else r.stderr.decode(errors="replace").strip()[-300:] or f"exit {r.returncode}"
    if _INSTALLED[part]:
        pytest.skip(f"install_peers.sh {part} failed: {_INSTALLED[part]}")


@pytest.fixture(scope="module")
def npm() -> Path:
    _install("npm")
    pre = NODE_CACHE / "loopback-peers.cjs"
    pre.write_text(LOOPBACK)
    return pre


@pytest.fixture(scope="module")
def pypeers() -> Path:
    _install("py")
    return PY_VENV / "bin"


def node_server(name: str, *args: str) -> list[str]:
    return ["node", str(MCP / name / "dist" / "index.js"), *args]


def ts_client(mode: str, calls: Any, *target: str, sdk: Path = MCP / "sdk") -> list[str]:
    return ["node", str(HERE / "ts_peer_client.cjs"), str(sdk), mode, calls if isinstance(calls, str) else json.dumps(calls), *target]


def py_client(bin_: Path, kind: str, mode: str, calls: Any, *target: str) -> list[str]:
    return [str(bin_ / "python"), str(HERE / "py_peer_client.py"), kind, mode, json.dumps(calls), *target]


def run_client(argv: list[str], timeout: float = 90) -> list[str]:
    r = subprocess.run(argv, capture_output=True, timeout=timeout, cwd=str(ROOT))
    out = r.stdout.decode(errors="replace").splitlines()
    assert r.returncode == 0, f"client failed ({r.returncode}): {out[-5:]} {r.stderr.decode(errors='replace')[-800:]}"
    assert out and out[0].startswith("ok initialize"), out
    return out


def judge(cap: Path, expected: dict[str, int] | None = None) -> None:
    """Error and warn findings of `check` and `check --full` are exactly ``expected``
    (code -> count); the capture is complete and every request answered."""
    c = read_capture(str(cap))
    assert c.end is not None and not c.truncated, "capture must end with an end record"
    msgs = [r for r in c.records if r["type"] == "message"]
    assert len(msgs) >= 6, "the client walked the server's surface"
    for reuse in (True, False):
        rep = check_capture(str(cap), reuse=reuse)
        got = {code: g.count for code, g in rep.groups.items() if g.severity in ("error", "warn")}
        assert got == (expected or {}), f"check{'' if reuse else ' --full'}: " + "; ".join(
            f"{code} {g.severity}: {[p.message for p in g.places]}" for code, g in rep.groups.items() if code in got)


def tapped_stdio(cap: Path, *server: str, grace: float = 5.0) -> list[str]:
    return ["--", *TAP, "record", "-q", "--grace", str(grace), "-o", str(cap), "--", *server]


@contextmanager
def serving(argv: list[str], port: int, env: dict[str, str] | None = None) -> Iterator[str]:
    """An HTTP server subprocess, ready once 127.0.0.1:PORT accepts a connection."""
    import socket
    import time

    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=str(ROOT))
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None, f"{argv} died at start"
                assert time.monotonic() < deadline, f"{argv} never listened"
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(10)


@contextmanager
def tap_http(upstream: str, cap: Path) -> Iterator[str]:
    """`mcptap record --upstream URL`; yields the tap's URL, stops it with SIGINT."""
    proc = subprocess.Popen([*TAP, "record", "--upstream", upstream, "-q", "-o", str(cap)], stderr=subprocess.PIPE, cwd=str(ROOT))
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline().decode()
        assert "listening on" in line, line
        yield line.split("listening on ", 1)[1].split()[0]
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(30)


def started_everything(npm: Path) -> tuple[list[str], int, dict[str, str]]:
    port = free_port()
    return ["node", "--require", str(npm), str(MCP / "server-everything" / "dist" / "index.js"), "streamableHttp"], port, \
        {**os.environ, "PORT": str(port)}


# -- the TypeScript SDK client against the npm reference servers (stdio) ------------------

FS_CALLS = [{"name": "list_directory", "arguments": {"path": "{dir}"}}, {"name": "read_text_file", "arguments": {"path": "{dir}/a.txt"}},
            {"name": "read_text_file", "arguments": {"path": "/etc/passwd"}}]          # outside the allowed dir: isError


def test_ts_client_filesystem(npm: Path, tmp_path: Path) -> None:
    d = tmp_path / "files"
    d.mkdir()
    (d / "a.txt").write_text("hello")
    cap = tmp_path / "cap.jsonl"
    calls = json.loads(json.dumps(FS_CALLS).replace("{dir}", str(d)))
    run_client(ts_client("stdio", calls, *tapped_stdio(cap, *node_server("server-filesystem", str(d)))))
    judge(cap)


def test_ts_client_memory_with_invalid_arguments(npm: Path, tmp_path: Path) -> None:
    cap = tmp_path / "cap.jsonl"
    calls = [{"name": "create_entities", "arguments": {"entities": [{"name": "a", "entityType": "t", "observations": ["x"]}]}},
             {"name": "read_graph"},
             {"name": "create_entities", "arguments": {"entities": "bad"}}]      # the client's own fault, on purpose
    env_file = tmp_path / "memory.jsonl"
    out = run_client(ts_client("stdio", calls, *tapped_stdio(cap, "env", f"MEMORY_FILE_PATH={env_file}", *node_server("server-memory"))))
    assert "ok tools/call read_graph" in out
    # true finding: arguments that do not match the tool's inputSchema (server/tools: "inputSchema: JSON Schema
    # defining expected parameters"; the TypeScript SDK client does not validate them before sending)
    judge(cap, {"tool.arguments_invalid": 1})


def test_ts_client_sequential_thinking(npm: Path, tmp_path: Path) -> None:
    cap = tmp_path / "cap.jsonl"
    calls = [{"name": "sequentialthinking", "arguments": {"thought": "t", "nextThoughtNeeded": False, "thoughtNumber": 1, "totalThoughts": 1}}]
    run_client(ts_client("stdio", calls, *tapped_stdio(cap, *node_server("server-sequential-thinking"))))
    judge(cap)


@pytest.mark.slow
def test_ts_client_everything_stdio_whole_surface(npm: Path, tmp_path: Path) -> None:
    """Every tool with schema-made arguments, a task-augmented call (CreateTaskResult, tasks/get,
    tasks/result), sampling, elicitation and roots answered by the client, a cancelled call,
    logging/setLevel, subscribe/unsubscribe, completion/complete."""
    cap = tmp_path / "cap.jsonl"
    out = run_client(ts_client("stdio", "auto", *tapped_stdio(cap, *node_server("server-everything", "stdio"), grace=1)))
    for s in ("ok tools/call simulate-research-query (task)", "ok tools/call trigger-sampling-request",
              "ok tools/call trigger-elicitation-request", "ok resources/subscribe", "ok completion/complete"):
        assert s in out, out
    # true finding: after a task-augmented call the server no longer exits when its stdin closes (its task
    # store holds a timer for the task's ttl); basic/lifecycle Shutdown (stdio): the client closes the
    # server's input and waits for it to exit, then sends SIGTERM; mcptap warns after --grace
    judge(cap, {"process.no_exit_after_stdin_eof": 1})


@pytest.mark.slow
def test_ts_client_everything_streamable_http_whole_surface(npm: Path, tmp_path: Path) -> None:
    cap = tmp_path / "cap.jsonl"
    with serving(*started_everything(npm)) as up, tap_http(up, cap) as url:
        out = run_client(ts_client("http", "auto", url))
    assert "ok terminate" in out and "ok tools/call simulate-research-query (task)" in out, out
    judge(cap)


@pytest.mark.slow
@pytest.mark.parametrize("sdk, revision", [("sdk-1.10", "2024-11-05"), ("sdk-1.13", "2025-06-18")])
def test_older_ts_clients_against_everything(npm: Path, tmp_path: Path, sdk: str, revision: str) -> None:
    """Older TypeScript SDK releases negotiate older revisions, over stdio and Streamable HTTP."""
    calls = [{"name": "echo", "arguments": {"message": "hi"}}, {"name": "get-structured-content", "arguments": {"location": "New York"}}]
    caps = [tmp_path / "stdio.jsonl", tmp_path / "http.jsonl"]
    run_client(ts_client("stdio", calls, *tapped_stdio(caps[0], *node_server("server-everything", "stdio")), sdk=NODE_CACHE / "node_modules" / sdk))
    with serving(*started_everything(npm)) as up, tap_http(up, caps[1]) as url:
        run_client(ts_client("http", calls, url, sdk=NODE_CACHE / "node_modules" / sdk))
    for cap in caps:
        assert f'"protocolVersion":"{revision}"' in cap.read_text()
        judge(cap)


# -- Python servers: mcp-server-time, mcp-server-git, FastMCP -------------------------------

FASTMCP_CALLS = [{"name": "add", "arguments": {"a": 1, "b": 2}}, {"name": "weather", "arguments": {"city": "Oslo"}},
                 {"name": "fail", "arguments": {"reason": "r"}}, {"name": "chatty"}, {"name": "confirm"}]


@pytest.mark.slow
def test_ts_client_time_and_git(npm: Path, pypeers: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "f").write_text("x")
    subprocess.run(["git", "-C", str(repo), "add", "f"], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "init"], check=True)
    for name, server, calls in [
        ("time", [str(pypeers / "mcp-server-time"), "--local-timezone", "UTC"],
         [{"name": "get_current_time", "arguments": {"timezone": "UTC"}},
          {"name": "convert_time", "arguments": {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Europe/Paris"}},
          {"name": "get_current_time", "arguments": {"timezone": "Not/AZone"}}]),
        ("git", [str(pypeers / "mcp-server-git"), "--repository", str(repo)],
         [{"name": "git_status", "arguments": {"repo_path": str(repo)}}, {"name": "git_log", "arguments": {"repo_path": str(repo)}},
          {"name": "git_status", "arguments": {"repo_path": str(tmp_path / "nothing")}}]),
    ]:
        cap = tmp_path / f"{name}.jsonl"
        run_client(ts_client("stdio", calls, *tapped_stdio(cap, *server)))
        judge(cap)


@pytest.mark.slow
def test_ts_client_fastmcp_stdio_and_http(npm: Path, pypeers: Path, tmp_path: Path) -> None:
    """The client declares no capabilities, yet FastMCP's ctx.elicit() sends elicitation/create:
    a true finding (2025-11-25 basic/lifecycle Operation: both parties MUST only use capabilities
    that were successfully negotiated; client/elicitation: clients that support elicitation MUST
    declare the capability)."""
    cap = tmp_path / "stdio.jsonl"
    server = [str(pypeers / "python"), str(HERE / "fastmcp_server.py")]
    run_client(ts_client("stdio", FASTMCP_CALLS, *tapped_stdio(cap, *server)))
    judge(cap, {"capability.not_negotiated": 1})
    cap = tmp_path / "http.jsonl"
    port = free_port()
    with serving([*server, str(port)], port) as up, tap_http(up, cap) as url:
        run_client(ts_client("http", FASTMCP_CALLS, url))
    judge(cap, {"capability.not_negotiated": 1})


# -- Python clients: the official SDK's mcp.Client (both eras) and FastMCP's Client ---------

@pytest.mark.slow
@pytest.mark.parametrize("kind", ["sdk", "sdk-legacy", "fastmcp"])
def test_python_clients_against_fastmcp_stdio(pypeers: Path, tmp_path: Path, kind: str) -> None:
    cap = tmp_path / "cap.jsonl"
    out = run_client(py_client(pypeers, kind, "stdio", FASTMCP_CALLS,
                               *tapped_stdio(cap, str(pypeers / "python"), str(HERE / "fastmcp_server.py"))))
    assert out[0].endswith("2025-11-25" if kind == "sdk-legacy" else "2026-07-28"), out[0]
    judge(cap)


@pytest.mark.slow
def test_python_clients_against_everything(npm: Path, pypeers: Path, tmp_path: Path) -> None:
    calls = [{"name": "echo", "arguments": {"message": "hi"}}, {"name": "get-structured-content", "arguments": {"location": "New York"}}]
    cap = tmp_path / "sdk-stdio.jsonl"
    out = run_client(py_client(pypeers, "sdk", "stdio", calls, *tapped_stdio(cap, *node_server("server-everything", "stdio"))))
    assert out[0].endswith("2025-11-25"), out[0]          # no server/discover: the client falls back to initialize
    judge(cap)
    cap = tmp_path / "fastmcp-http.jsonl"
    with serving(*started_everything(npm)) as up, tap_http(up, cap) as url:
        out = run_client(py_client(pypeers, "fastmcp", "http", calls, url))
    assert out[0].endswith("2025-11-25"), out[0]
    judge(cap)


@pytest.mark.slow
def test_sdk_client_against_fastmcp_http(pypeers: Path, tmp_path: Path) -> None:
    port = free_port()
    cap = tmp_path / "cap.jsonl"
    with serving([str(pypeers / "python"), str(HERE / "fastmcp_server.py"), str(port)], port) as up, tap_http(up, cap) as url:
        out = run_client(py_client(pypeers, "sdk", "http", FASTMCP_CALLS, url))
    assert out[0].endswith("2026-07-28"), out[0]
    judge(cap)
