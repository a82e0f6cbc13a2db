"""Secrets on mcptap's own command line stay out of every capture it writes, not only
``record -- CMD``'s: ``replay CAPTURE -- CMD`` (its new capture of the server it
starts), ``replay --url URL`` and ``record --upstream URL`` (a key in the URL's query, its
user info or its path, repeated by the server in a header or an answer)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from mcptap.known_secrets import redacted_values
from mcptap.redact import scrub_command_url
from mcptap.redact.argv import placeholder
from peers import connect_when_listening, free_port
from scripted import c2s, handshake, record, req, res, s2c

ROOT = Path(__file__).resolve().parents[1]
MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]
KEY = "MyApiKeyValue99"
PASSWORD = "Hunter2Secret"
PATH_TOKEN = "sk-ak-AbCdEf1234567890XyZ"

ECHO = """
import json, sys
print("starting with", sys.argv, file=sys.stderr, flush=True)
for line in sys.stdin:
    m = json.loads(line)
    if "id" in m and "method" in m:
        r = {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "e", "version": "1"}} if m["method"] == "initialize" else {}
        r["argv"] = sys.argv
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}), flush=True)
"""


def test_the_password_of_url_user_info_is_searched_alone_too() -> None:
    url = f"https://bob:{PASSWORD}@example.com/mcp?api_key={KEY}"
    found = redacted_values([url], [scrub_command_url(url)], placeholder)
    assert found[f"bob:{PASSWORD}"] == placeholder(f"bob:{PASSWORD}")
    assert found[PASSWORD] == placeholder(PASSWORD) and found[KEY] == placeholder(KEY)
    assert "bob" not in found


def test_a_path_token_of_an_upstream_url_is_not_shown() -> None:
    shown = scrub_command_url(f"https://actions.example.com/mcp/{PATH_TOKEN}/sse?api_key={KEY}")
    assert PATH_TOKEN not in shown and KEY not in shown and shown.startswith("https://actions.example.com/mcp/«redacted:hmac:")


def test_replay_stdio_capture_holds_no_argv_secret(tmp_path: Path) -> None:
    (tmp_path / "echo.py").write_text(ECHO)
    cap = record(tmp_path / "cap.jsonl", handshake() + [c2s(req(2, "ping")), s2c(res(2)), ("exit", 0)])
    new = tmp_path / "new.jsonl"
    p = subprocess.run([*MCPTAP, "replay", str(cap), "--timeout", "20", "-o", str(new), "--", sys.executable, "echo.py",
                        "--api-key", KEY], capture_output=True, text=True, cwd=tmp_path, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.returncode in (0, 1) and "new capture:" in p.stdout, p.stderr
    text = new.read_text()
    assert KEY not in text and KEY not in p.stdout
    recs = [json.loads(line) for line in text.splitlines()]
    stderr = "".join(r.get("data", "") for r in recs if r["type"] == "stderr")
    assert "starting with" in stderr and placeholder(KEY) in stderr
    answers = [r for r in recs if r["type"] == "message" and r["dir"] == "s2c"]
    assert answers and all(placeholder(KEY) in json.dumps(r, ensure_ascii=False) for r in answers)
    check = subprocess.run([*MCPTAP, "check", "--fail-on", "error", str(new)], capture_output=True, text=True, timeout=60)
    assert check.returncode == 0 and "digest_mismatch" not in check.stdout, check.stdout


def _accept_request(srv: socket.socket) -> tuple[socket.socket, bytes]:
    """The next connection and its request (head and a JSON body)."""
    c, _ = srv.accept()
    data = b""
    while b"\r\n\r\n" not in data or not data.endswith(b"}"):
        chunk = c.recv(65536)
        if not chunk:
            break
        data += chunk
    return c, data


def _upstream(srv: socket.socket, got: list[bytes]) -> None:
    """One exchange: read a request with a JSON body, answer with the key and password echoed."""
    c, data = _accept_request(srv)
    got.append(data)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text":
                       f"you used key {KEY} and password {PASSWORD} at /mcp/{PATH_TOKEN}/sse"}]}}).encode()
    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Echo: " + KEY.encode()
              + b"\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    time.sleep(0.3)
    c.close()


def _listen() -> tuple[socket.socket, int]:
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    return srv, srv.getsockname()[1]


BODY = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{}}}'


def test_http_tap_capture_holds_no_secret_of_the_upstream_url(tmp_path: Path) -> None:
    srv, up_port = _listen()
    tap_port = free_port()
    got: list[bytes] = []
    threading.Thread(target=_upstream, args=(srv, got), daemon=True).start()
    out = tmp_path / "http.jsonl"
    upstream = f"http://bob:{PASSWORD}@127.0.0.1:{up_port}/mcp/{PATH_TOKEN}/sse?api_key={KEY}"
    tap = subprocess.Popen([*MCPTAP, "record", "-q", "--upstream", upstream, "--listen", f"127.0.0.1:{tap_port}", "-o", str(out)],
                           stderr=subprocess.PIPE)
    try:
        c = connect_when_listening(tap_port, tap)
        c.sendall(f"POST /mcp/{PATH_TOKEN}/sse HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                  "Accept: application/json, text/event-stream\r\n".encode() + b"Content-Length: %d\r\n\r\n" % len(BODY) + BODY)
        c.settimeout(10)
        answer = b""
        while PASSWORD.encode() not in answer:
            chunk = c.recv(65536)
            if not chunk:
                break
            answer += chunk
        c.close()
        time.sleep(0.3)
    finally:
        tap.terminate()
        _, err = tap.communicate(timeout=30)
        srv.close()
    assert KEY.encode() in answer and PASSWORD.encode() in answer          # the client gets the answer as it was
    text = out.read_text()
    assert not [s for s in (KEY, PASSWORD, PATH_TOKEN) if s in text]
    # the tap's own URL on stderr hides the upstream path's token too (clients use the path they gave)
    assert not [s for s in (KEY, PASSWORD, PATH_TOKEN) if s.encode() in err]
    recs = [json.loads(line) for line in text.splitlines()]
    heads = dict(next(r for r in recs if r.get("event") == "response")["headers"])
    assert heads["X-Echo"] == placeholder(KEY)
    answer_text = next(r for r in recs if r["type"] == "message" and r["dir"] == "s2c")["json"]["result"]["content"][0]["text"]
    assert answer_text == f"you used key {placeholder(KEY)} and password {placeholder(PASSWORD)} at /mcp/{placeholder(PATH_TOKEN)}/sse"
    check = subprocess.run([*MCPTAP, "check", "--fail-on", "error", str(out)], capture_output=True, text=True, timeout=60)
    assert check.returncode == 0 and "digest_mismatch" not in check.stdout, check.stdout


def test_replay_url_capture_and_report_hold_no_secret_of_the_url(tmp_path: Path) -> None:
    cap = record(tmp_path / "cap.jsonl", [c2s(req(1, "tools/call", {"name": "x", "arguments": {}})),
                                          s2c(res(1, {"content": []})), ("exit", 0)])
    srv, up_port = _listen()
    got: list[bytes] = []
    threading.Thread(target=_upstream, args=(srv, got), daemon=True).start()
    new = tmp_path / "new.jsonl"
    url = f"http://bob:{PASSWORD}@127.0.0.1:{up_port}/mcp?api_key={KEY}"
    try:
        p = subprocess.run([*MCPTAP, "replay", str(cap), "--allow-side-effects", "--timeout", "10", "-o", str(new), "--url", url],
                           capture_output=True, text=True, timeout=120)
    finally:
        srv.close()
    assert got and KEY.encode() in got[0]              # the server got the real URL
    assert "new capture:" in p.stdout, p.stderr
    text = new.read_text()
    assert not [s for s in (KEY, PASSWORD) if s in text or s in p.stdout or s in p.stderr]
    assert placeholder(KEY) in text and placeholder(PASSWORD) in text


def _echo_auth(srv: socket.socket, got: list[bytes]) -> None:
    """One exchange: answer with the credential of the request's Authorization header, bare."""
    c, data = _accept_request(srv)
    got.append(data)
    cred = next(line.split(b" ", 2)[2] for line in data.split(b"\r\n") if line.lower().startswith(b"authorization:"))
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "you are " + cred.decode()}]}}).encode()
    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    time.sleep(0.3)
    c.close()


def test_replay_header_credentials_are_known_secrets(tmp_path: Path) -> None:
    """``replay --url URL -H "Authorization: Bearer X"``: the request records hold X's placeholder,
    and so does an answer that repeats X bare (no pattern knows it), as argv and URL secrets."""
    cred = "whoAmI7value8"
    cap = record(tmp_path / "cap.jsonl", [c2s(req(1, "tools/call", {"name": "x", "arguments": {}})),
                                          s2c(res(1, {"content": []})), ("exit", 0)])
    srv, up_port = _listen()
    got: list[bytes] = []
    threading.Thread(target=_echo_auth, args=(srv, got), daemon=True).start()
    new = tmp_path / "new.jsonl"
    try:
        p = subprocess.run([*MCPTAP, "replay", str(cap), "--allow-side-effects", "--timeout", "10", "-o", str(new),
                            "--url", f"http://127.0.0.1:{up_port}/mcp", "-H", f"Authorization: Bearer {cred}"],
                           capture_output=True, text=True, timeout=120)
    finally:
        srv.close()
    assert got and cred.encode() in got[0] and "new capture:" in p.stdout, p.stderr
    text = new.read_text()
    assert cred not in text and cred not in p.stdout and cred not in p.stderr
    answer = next(json.loads(line) for line in text.splitlines() if '"dir":"s2c"' in line and '"type":"message"' in line)
    assert answer["json"]["result"]["content"][0]["text"] == "you are " + placeholder(cred)
