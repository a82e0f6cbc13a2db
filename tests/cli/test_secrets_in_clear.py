"""Issue 9 item 7, reproducer ``shared/repro/secrets-in-clear.sh``: secrets in
argv (JSON ``--config``, ``--dsn … password=``, ``Password=`` connection
strings, ``-p PASS``), in the legacy SSE ``endpoint`` URL and in credential
headers (``Authentication``, ``X-…-Token``, ``X-…-Key``, ``X-…-Creds``) never
reach a capture in clear."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from peers import connect_when_listening, free_port

SECRETS = ("SMITHERY_KEY", "DSN_PASS", "ADO_PASS", "SHORT_PASS", "ENDPOINT_TOKEN", "HDR_TOKEN", "AUTHN_VALUE",
           "XTOKEN_VALUE", "XKEY_VALUE", "XCREDS_VALUE")


def test_argv_secrets_are_redacted(tmp_path: Path) -> None:
    out = tmp_path / "argv.jsonl"
    p = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "record", "-q", "-o", str(out), "--",
                        "sh", "-c", "cat", "sh", "--config", '{"apiKey":"SMITHERY_KEY","region":"eu"}',
                        "--dsn", "host=db password=DSN_PASS", "--conn", "Server=x;Password=ADO_PASS", "-p", "SHORT_PASS",
                        "--port", "8080", "-p", "5432"], input=b"{}\n", capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr
    text = out.read_text()
    assert not [s for s in SECRETS if s in text]
    argv = json.loads(text.splitlines()[0])["target"]["argv"]
    assert argv[5].startswith('{"apiKey":"«redacted:hmac:') and argv[5].endswith('","region":"eu"}')
    assert argv[7].startswith("host=db password=«redacted:hmac:") and argv[9].startswith("Server=x;Password=«redacted:hmac:")
    assert argv[11].startswith("«redacted:hmac:") and argv[12:] == ["--port", "8080", "-p", "5432"]


def test_sse_endpoint_query_and_credential_headers_are_redacted(tmp_path: Path) -> None:
    up_port, tap_port = free_port(), free_port()
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", up_port))
    srv.listen()

    def upstream() -> None:
        c, _ = srv.accept()
        c.recv(65536)
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"
                  b"event: endpoint\ndata: /messages?token=ENDPOINT_TOKEN\n\n")
        time.sleep(0.5)
        c.close()

    threading.Thread(target=upstream, daemon=True).start()
    out = tmp_path / "sse.jsonl"
    tap = subprocess.Popen([sys.executable, "-m", "mcptap.cli.main", "record", "-q", "--upstream", f"http://127.0.0.1:{up_port}/sse",
                            "--listen", f"127.0.0.1:{tap_port}", "-o", str(out)], stderr=subprocess.PIPE)
    try:
        c = connect_when_listening(tap_port, tap)
        c.sendall(b"GET /sse HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer HDR_TOKEN\r\nAuthentication: AUTHN_VALUE\r\n"
                  b"X-Foo-Token: XTOKEN_VALUE\r\nX-Foo-Key: XKEY_VALUE\r\nX-Foo-Creds: XCREDS_VALUE\r\n\r\n")
        got = b""
        c.settimeout(10)
        while b"ENDPOINT_TOKEN" not in got:
            chunk = c.recv(65536)
            if not chunk:
                break
            got += chunk
        assert b"/messages?token=" in got           # the relay forwards the real endpoint (rewritten or not)
        c.close()
        time.sleep(0.3)
    finally:
        tap.terminate()
        tap.wait(timeout=30)
        srv.close()
    text = out.read_text()
    assert not [s for s in SECRETS if s in text]
    recs = [json.loads(line) for line in text.splitlines()]
    endpoint = next(r for r in recs if r.get("endpoint"))["endpoint"]
    assert endpoint["data"].startswith("/messages?token=«redacted:hmac:")
    heads = dict(next(r for r in recs if r.get("event") == "request")["headers"])
    assert heads["Authorization"].startswith("Bearer «redacted:hmac:")
    assert all(heads[h].startswith("«redacted:hmac:") for h in ("Authentication", "X-Foo-Token", "X-Foo-Key", "X-Foo-Creds"))


def test_http_record_redact_scrubs_bodies_but_forwards_them(tmp_path: Path) -> None:
    up_port, tap_port = free_port(), free_port()
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", up_port))
    srv.listen()
    seen: list[bytes] = []

    def upstream() -> None:
        c, _ = srv.accept()
        data = b""
        while b"\r\n\r\n" not in data or not data.endswith(b"}"):
            chunk = c.recv(65536)
            if not chunk:
                break
            data += chunk
        seen.append(data)
        body = b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"key AKIAQWERTYUIOPASDFGH"}]}}'
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        time.sleep(0.3)
        c.close()

    threading.Thread(target=upstream, daemon=True).start()
    out = tmp_path / "redacted.jsonl"
    tap = subprocess.Popen([sys.executable, "-m", "mcptap.cli.main", "record", "-q", "--redact", "--upstream", f"http://127.0.0.1:{up_port}/mcp",
                            "--listen", f"127.0.0.1:{tap_port}", "-o", str(out)], stderr=subprocess.PIPE)
    try:
        c = connect_when_listening(tap_port, tap)
        body = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"login","arguments":{"password":"DSN_PASS"}}}'
        c.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(body) + body)
        c.settimeout(10)
        got = b""
        while b"AKIA" not in got:
            chunk = c.recv(65536)
            if not chunk:
                break
            got += chunk
        assert b"AKIAQWERTYUIOPASDFGH" in got          # the client gets the real answer
        c.close()
        time.sleep(0.3)
    finally:
        tap.terminate()
        tap.wait(timeout=30)
        srv.close()
    assert seen and b"DSN_PASS" in seen[0]               # the server got the real request
    text = out.read_text()
    assert "DSN_PASS" not in text and "AKIAQWERTYUIOPASDFGH" not in text and text.count("«redacted:hmac:") >= 2
    assert json.loads(text.splitlines()[0])["scrubbed"][0]["rules"]["builtin"] is True
