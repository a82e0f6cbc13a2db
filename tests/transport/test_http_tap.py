"""The trio HTTP tap against small fake upstreams: 502 and recovery, many
concurrent connections, credential redaction, TLS with --cacert, endpoint
rewriting, loopback-only listening."""

from __future__ import annotations

import json
import subprocess
from contextlib import asynccontextmanager
from pathlib import Path

import h11
import pytest
import trio

from h11_upstream import answer, requests
from mcptap.capture.reader import read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.clock import monotonic_us_clock, utc_timestamp
from mcptap.errors import McptapError
from mcptap.recorder import Recorder
from mcptap.redact import placeholder
from mcptap.transport.http import HttpTap, HttpTapConfig


async def fake_mcp(stream: trio.abc.Stream) -> None:
    """Answers each JSON-RPC request POST with application/json, notifications with 202."""
    conn = h11.Connection(h11.SERVER)
    try:
        async for req, body in requests(stream, conn):
            if req.method == b"GET":
                head = h11.Response(status_code=200, headers=[("Content-Type", "text/event-stream")])
                ev_bytes = b"event: endpoint\ndata: " + stream_origin.encode() + b"/messages?session_id=s1\n\n"
                await stream.send_all(conn.send(head) + conn.send(h11.Data(data=ev_bytes)))
                await trio.sleep_forever()
            msg = json.loads(body)
            if "id" in msg and "method" in msg:
                out = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {"echo": msg.get("params"),
                                                                                "auth": dict(req.headers).get(b"authorization", b"").decode()}}).encode()
                await stream.send_all(answer(conn, 200, [("Content-Type", "application/json"), ("Content-Length", str(len(out)))], out))
            else:
                await stream.send_all(answer(conn, 202, [("Content-Length", "0")]))
    except (trio.BrokenResourceError, trio.ClosedResourceError, h11.RemoteProtocolError):
        return


def canned(headers: list[tuple[str, str]], body: bytes, seen: list[list[tuple[bytes, bytes]]] | None = None):
    """An upstream handler that answers every request with a 200 of ``headers``
    and ``body`` (chunked without a Content-Length); ``seen``: gets each
    request's headers as the upstream received them."""
    async def handler(stream: trio.abc.Stream) -> None:
        conn = h11.Connection(h11.SERVER)
        async for req, _ in requests(stream, conn):
            if seen is not None:
                seen.append(list(req.headers))
            await stream.send_all(answer(conn, 200, headers, body))
    return handler


stream_origin = ""


@asynccontextmanager
async def upstream_server(handler=fake_mcp, ssl_context=None):
    async with trio.open_nursery() as n:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        port = listeners[0].socket.getsockname()[1]
        if ssl_context is not None:
            listeners = [trio.SSLListener(lst, ssl_context, https_compatible=True) for lst in listeners]
        await n.start(trio.serve_listeners, handler, listeners)
        yield port
        n.cancel_scope.cancel()


@asynccontextmanager
async def tap(tmp_path: Path, **cfg):
    rec = Recorder(CaptureWriter.open(str(tmp_path / "cap.jsonl")), "http", {"url": cfg["upstream"]}, clock=monotonic_us_clock(), started=utc_timestamp())
    async with trio.open_nursery() as n:
        t = HttpTap(HttpTapConfig(**cfg), rec)
        url = await n.start(t.serve)
        yield url, rec
        n.cancel_scope.cancel()
    rec.close()


async def post(url: str, body: dict, headers: list | None = None, conn: trio.abc.Stream | None = None) -> tuple[int, bytes]:
    host, rest = url.split("//")[1].split("/", 1)
    h, p = host.split(":")
    s = conn or await trio.open_tcp_stream(h, int(p))
    c = h11.Connection(h11.CLIENT)
    data = json.dumps(body).encode()
    hdrs = [("Host", host), ("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream"),
            ("Content-Length", str(len(data)))] + (headers or [])
    await s.send_all(c.send(h11.Request(method="POST", target="/" + rest, headers=hdrs)) + c.send(h11.Data(data=data)) + c.send(h11.EndOfMessage()))
    status, out = await read_response(c, s)
    if conn is None:
        await s.aclose()
    return status, out


async def read_response(c: h11.Connection, s: trio.abc.Stream) -> tuple[int, bytes]:
    """The status and body of the response ``c`` (client side) reads from ``s``."""
    status, out = 0, b""
    while True:
        ev = c.next_event()
        if ev is h11.NEED_DATA:
            c.receive_data(await s.receive_some(65536))
        elif isinstance(ev, h11.Response):
            status = ev.status_code
        elif isinstance(ev, h11.Data):
            out += ev.data
        elif isinstance(ev, (h11.EndOfMessage, h11.ConnectionClosed)):
            break
    return status, out


def records(tmp_path: Path) -> list[dict]:
    return read_capture(str(tmp_path / "cap.jsonl")).records


async def test_unreachable_upstream_gives_502_and_tap_keeps_serving(tmp_path):
    with trio.socket.socket() as s:
        await s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]          # bound, not listening: connection refused
        async with tap(tmp_path, upstream=f"http://127.0.0.1:{dead}/mcp") as (url, rec):
            for _ in range(2):
                st, body = await post(url, {"jsonrpc": "2.0", "id": 1, "method": "ping"})
                assert st == 502 and b"unreachable" in body
    recs = records(tmp_path)
    fails = [f for r in recs for f in r.get("findings", ()) if f["code"] == "http.upstream_failed"]
    assert len(fails) == 2 and all(f["severity"] == "error" for f in fails)
    # the tap answered them (502): not also "unanswered"
    end = recs[-1]
    assert end["type"] == "end" and end["pending"] == [] and "unanswered" not in end


async def test_request_body_sent_after_the_headers_is_recorded_when_upstream_is_down(tmp_path):
    """The 502 waits for the request body, so the capture keeps the request."""
    with trio.socket.socket() as s:
        await s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
        async with tap(tmp_path, upstream=f"http://127.0.0.1:{dead}/mcp") as (url, rec):
            h, p = url.split("//")[1].split("/")[0].split(":")
            stream = await trio.open_tcp_stream(h, int(p))
            body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/list"}).encode()
            await stream.send_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                                  b"Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n" % len(body))
            await trio.sleep(0.3)              # the upstream connect fails meanwhile
            await stream.send_all(body)
            got = b""
            with trio.move_on_after(5):
                while chunk := await stream.receive_some(65536):
                    got += chunk
            await stream.aclose()
    assert got.startswith(b"HTTP/1.1 502")
    msgs = [r for r in records(tmp_path) if r["type"] == "message"]
    assert [(m["dir"], m.get("id"), m.get("method")) for m in msgs] == [("c2s", 7, "tools/list")]


async def test_foreign_host_is_refused_by_a_loopback_tap(tmp_path):
    """DNS rebinding: evil.example resolving to 127.0.0.1 must not reach the upstream."""
    async with upstream_server() as port, tap(tmp_path, upstream=f"http://127.0.0.1:{port}/mcp") as (url, rec):
        h, p = url.split("//")[1].split("/")[0].split(":")
        for host, want in ((b"evil.example:%s" % p.encode(), b"HTTP/1.1 403"), (b"localhost:%s" % p.encode(), b"HTTP/1.1 200")):
            stream = await trio.open_tcp_stream(h, int(p))
            body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
            await stream.send_all(b"POST /mcp HTTP/1.1\r\nHost: " + host + b"\r\nContent-Type: application/json\r\n"
                                  b"Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
            got = b""
            with trio.move_on_after(5):
                while not got.endswith(b"}") and b"refused" not in got:
                    chunk = await stream.receive_some(65536)
                    if not chunk:
                        break
                    got += chunk
            await stream.aclose()
            assert got.startswith(want), (host, got[:80])
    recs = records(tmp_path)
    refused = [f for r in recs for f in r.get("findings", ()) if f["code"] == "http.host_rejected"]
    assert len(refused) == 1 and "evil.example" in refused[0]["message"]
    # the refused request is still in the capture
    assert sum(1 for r in recs if r["type"] == "message" and r["dir"] == "c2s") == 2


async def test_many_concurrent_connections(tmp_path):
    async with upstream_server() as port, tap(tmp_path, upstream=f"http://127.0.0.1:{port}/mcp") as (url, rec):
        results = {}

        async def one(i: int) -> None:
            h, p = url.split("//")[1].split("/")[0].split(":")
            s = await trio.open_tcp_stream(h, int(p))
            for k in range(3):                      # keep-alive: 3 requests on one connection
                st, body = await post(url, {"jsonrpc": "2.0", "id": k, "method": "tools/call", "params": {"n": i}}, conn=s)
                results[(i, k)] = (st, json.loads(body)["result"]["echo"]["n"])
            await s.aclose()

        async with trio.open_nursery() as n:
            for i in range(60):
                n.start_soon(one, i)
    assert results == {(i, k): (200, i) for i in range(60) for k in range(3)}
    recs = records(tmp_path)
    msgs = [r for r in recs if r["type"] == "message"]
    assert len(msgs) == 360
    assert all("pair" in r for r in msgs if r["dir"] == "s2c")
    # each response paired with the request of its own exchange, though ids repeat across clients
    by_seq = {r["seq"]: r for r in msgs}
    assert all(by_seq[r["pair"]]["transport"]["exchange"] == r["transport"]["exchange"] for r in msgs if r["dir"] == "s2c")


async def test_credentials_redacted_unless_asked(tmp_path):
    for secrets in (False, True):
        d = tmp_path / str(secrets)
        d.mkdir()
        async with upstream_server() as port, tap(d, upstream=f"http://127.0.0.1:{port}/mcp", record_secrets=secrets) as (url, rec):
            st, body = await post(url + "?api_key=k123", {"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                  [("Authorization", "Bearer s3cr3t-token"), ("Cookie", "sid=abc; theme=dark")])
            assert json.loads(body)["result"]["auth"] == "Bearer s3cr3t-token"    # forwarded unchanged
        req = next(r for r in records(d) if r.get("event") == "request")
        hdrs = dict(req["headers"])
        if secrets:
            assert hdrs["Authorization"] == "Bearer s3cr3t-token" and "k123" in req["target"]
        else:
            assert "s3cr3t" not in json.dumps([r for r in records(d) if r["type"] != "message"])  # the echo body is the server's business
            assert hdrs["Authorization"].startswith("Bearer «redacted:hmac:") and "s3cr3t" not in hdrs["Authorization"]
            assert hdrs["Cookie"].startswith("sid=«redacted:hmac:") and "theme=«" in hdrs["Cookie"]
            assert "k123" not in req["target"]


def _make_cert(tmp_path: Path) -> tuple[Path, Path]:
    key, crt = tmp_path / "k.pem", tmp_path / "c.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(crt), "-days", "2",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    return key, crt


async def test_https_upstream_with_cacert(tmp_path):
    import ssl
    try:
        key, crt = _make_cert(tmp_path)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("openssl not available")
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(str(crt), str(key))
    async with upstream_server(ssl_context=ctx) as port:
        async with tap(tmp_path, upstream=f"https://127.0.0.1:{port}/mcp", cacert=str(crt)) as (url, rec):
            st, body = await post(url, {"jsonrpc": "2.0", "id": 1, "method": "ping"})
            assert st == 200 and json.loads(body)["id"] == 1
        d = tmp_path / "untrusted"
        d.mkdir()
        async with tap(d, upstream=f"https://127.0.0.1:{port}/mcp") as (url, rec):
            st, body = await post(url, {"jsonrpc": "2.0", "id": 1, "method": "ping"})
            assert st == 502 and b"certificate" in body


async def test_endpoint_naming_upstream_origin_is_rewritten(tmp_path):
    global stream_origin
    async with upstream_server() as port:
        stream_origin = f"http://127.0.0.1:{port}"
        async with tap(tmp_path, upstream=f"http://127.0.0.1:{port}/sse") as (url, rec):
            host = url.split("//")[1].split("/")[0]
            s = await trio.open_tcp_stream(host.split(":")[0], int(host.split(":")[1]))
            await s.send_all(f"GET /sse HTTP/1.1\r\nHost: {host}\r\nAccept: text/event-stream\r\n\r\n".encode())
            got = b""
            while b"session_id=s1" not in got:
                got += await s.receive_some(65536)
            assert f"data: http://{host}/messages?session_id=s1".encode() in got and stream_origin.encode() not in got
            st, _ = await post(f"http://{host}/messages?session_id=s1", {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
            await s.aclose()
    recs = records(tmp_path)
    ep = next(r for r in recs if r.get("event") == "sse")
    # the legacy session id authorises the POSTs: a credential, stored as a placeholder (docs/redaction.md)
    assert ep["endpoint"]["rewritten"] == f"http://{host}/messages?session_id={placeholder('s1')}"
    codes = [f["code"] for f in ep["findings"]]
    assert "sse.endpoint_rewritten" in codes and "sse.endpoint_foreign_origin" not in codes
    init = next(r for r in recs if r["type"] == "message" and r.get("method") == "initialize")
    assert init["session"] == placeholder("s1")


def test_non_loopback_listen_needs_allow_remote():
    with pytest.raises(McptapError, match="non-loopback"):
        HttpTap(HttpTapConfig(upstream="http://127.0.0.1:1/mcp", listen_host="0.0.0.0"), None)
    HttpTap(HttpTapConfig(upstream="http://127.0.0.1:1/mcp", listen_host="0.0.0.0", allow_remote=True), None)
    with pytest.raises(McptapError, match="http:// or https://"):
        HttpTap(HttpTapConfig(upstream="ftp://x/"), None)


async def test_a_session_id_the_client_names_in_connection_never_reaches_the_upstream_and_the_capture_says_so(tmp_path):
    """The tap removes the fields a client's Connection header names (RFC 9110
    §7.6.1), Mcp-Session-Id too: the upstream gets the ping without it, and the
    capture, which holds the client's headers, says so (a breaker found the
    capture silent while it attributed the ping to session s1)."""
    seen: list[list[tuple[bytes, bytes]]] = []
    out = b'{"jsonrpc":"2.0","id":2,"result":{}}'
    answer = canned([("Content-Type", "application/json"), ("Content-Length", str(len(out)))], out, seen)

    async with upstream_server(answer) as port, tap(tmp_path, upstream=f"http://127.0.0.1:{port}/mcp") as (url, rec):
        st, _ = await post(url, {"jsonrpc": "2.0", "id": 2, "method": "ping"},
                           [("Mcp-Session-Id", "s1"), ("Connection", "Mcp-Session-Id")])
        assert st == 200
    assert seen and not any(n.lower() in (b"mcp-session-id", b"connection") for n, _ in seen[0])
    c = read_capture(str(tmp_path / "cap.jsonl"))
    codes = [f["code"] for r in c.records for f in r.get("findings") or ()]
    assert "http.connection_drops_field" in codes, codes


async def _raw(url: str, data: bytes) -> bytes:
    """Send ``data`` on a fresh connection to the tap; what comes back until it closes."""
    h, p = url.split("//")[1].split("/", 1)[0].split(":")
    s = await trio.open_tcp_stream(h, int(p))
    await s.send_all(data)
    got = b""
    with trio.move_on_after(5):
        while chunk := await s.receive_some(65536):
            got += chunk
    await s.aclose()
    return got


@pytest.mark.parametrize(("data", "mid"), [
    (b"GARBAGE\r\n\r\n", False),                                                          # not a request line
    (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header: x\r\nContent-Length: 2\r\n\r\n{}", False),
    (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: -1\r\n\r\n", False),
    (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"jso\r\nzz\r\n", True),
])
async def test_a_client_that_sends_invalid_http_is_a_finding(tmp_path, data, mid):
    """Bytes h11 refuses from a client: the tap answers 400 and closes. The
    capture used to hold only a conn_close (or an end record saying
    client_closed) with a detail string and no finding, so ``check`` was
    silent; now the connection's close (nothing forwarded) or, mid-exchange,
    the exchange's end (the head and the body bytes before were forwarded)
    carries http.client_invalid_http (found by a breaker helper)."""
    async with upstream_server(fake_mcp) as port, tap(tmp_path, upstream=f"http://127.0.0.1:{port}/mcp") as (url, rec):
        got = await _raw(url, data)
        assert got.startswith(b"HTTP/1.1 400 ") or (mid and got == b""), got[:200]
        await trio.sleep(0.2)
    recs = read_capture(str(tmp_path / "cap.jsonl")).records
    where = [(r["event"], f["code"]) for r in recs if r["type"] == "http" for f in r.get("findings") or () if f["code"] == "http.client_invalid_http"]
    assert where == [("end" if mid else "conn_close", "http.client_invalid_http")], [r for r in recs if r["type"] == "http"]


@pytest.mark.parametrize("data", [b"\n", b"\r\n\r\n", b"\r\n"])
async def test_a_client_that_sends_only_empty_lines_sent_nothing(tmp_path, data):
    """RFC 9112 §2.2: empty lines before a request line are ignored. A client that sent a lone
    empty line and closed got http.client_invalid_http (an error) reading "the client sent
    no request line received"; it sent nothing, as a client that connects and leaves. An
    empty line before a real request is ignored too (h11 refused the request with 400)."""
    async with upstream_server(fake_mcp) as port, tap(tmp_path, upstream=f"http://127.0.0.1:{port}/mcp") as (url, rec):
        assert await _raw(url, data) == b""
        host = url.split("//")[1].split("/", 1)[0]
        body = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
        got = await _raw(url, data + b"POST /mcp HTTP/1.1\r\nHost: " + host.encode() + b"\r\nContent-Type: application/json\r\n"
                         b"Accept: application/json, text/event-stream\r\nConnection: close\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        assert got.startswith(b"HTTP/1.1 200 "), got[:200]
        await trio.sleep(0.2)
    recs = read_capture(str(tmp_path / "cap.jsonl")).records
    codes = [f["code"] for r in recs for f in r.get("findings") or ()]
    assert "http.client_invalid_http" not in codes, codes
    assert [r.get("method") for r in recs if r["type"] == "message" and r["dir"] == "c2s"] == ["ping"]


def test_the_invalid_http_finding_reads_as_a_sentence() -> None:
    from mcptap.protocol.http_judge import HttpJudge
    from mcptap.protocol.http_rules import INVALID_FROM_CLIENT
    f = HttpJudge.conn_closed("client", True, INVALID_FROM_CLIENT + "illegal request line")[0]
    assert f.message.startswith("the client sent bytes that are not an HTTP/1.1 request (illegal request line): "), f.message


async def test_an_sse_id_with_nul_and_an_invalid_retry_are_findings_live_and_re_annotated(tmp_path):
    """WHATWG clients ignore an ``id`` field that contains NUL (so a
    reconnect's Last-Event-ID cannot name that event) and a ``retry`` that is
    not all digits. The parser knew (``id_ignored``, ``retry_invalid``) but no
    finding said so. Both are findings in the live capture and stay so when
    ``check --full`` re-annotates it (the block without data keeps them as
    recorded: its bytes are not in the capture)."""
    from mcptap.check.report import check_capture

    events = (b"retry: 1x\n\n"
              b"id: a\x00b\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n")

    answer = canned([("Content-Type", "text/event-stream")], events)
    async with upstream_server(answer) as port, tap(tmp_path, upstream=f"http://127.0.0.1:{port}/mcp") as (url, rec):
        st, body = await post(url, {"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert st == 200 and body == events                     # forwarded as sent
    path = str(tmp_path / "cap.jsonl")
    live = [f["code"] for r in read_capture(path).records for f in r.get("findings") or ()]
    assert {"sse.event_id_ignored", "sse.retry_ignored"} <= set(live), live
    for reuse in (True, False):                                  # recorded annotations, and re-annotated (--full)
        rep = check_capture(path, reuse=reuse)
        assert {"sse.event_id_ignored", "sse.retry_ignored"} <= set(rep.groups), (reuse, sorted(rep.groups))


async def test_a_client_gone_inside_a_chunked_request_body_is_a_finding_live_and_re_annotated(tmp_path):
    """A client that closes inside a chunked request body: the Content-Length
    version of this had http.request_body_incomplete, the chunked one nothing.
    The end record now says ``request_cut`` so re-annotation judges it too."""
    from mcptap.check.report import check_capture

    head = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n{\"jsonrpc\":\"2.0\"")
    async with upstream_server(fake_mcp) as port, tap(tmp_path, upstream=f"http://127.0.0.1:{port}/mcp") as (url, rec):
        h, p = url.split("//")[1].split("/", 1)[0].split(":")
        s = await trio.open_tcp_stream(h, int(p))
        await s.send_all(head)
        await trio.sleep(0.2)
        await s.aclose()
        await trio.sleep(0.2)
    path = str(tmp_path / "cap.jsonl")
    ends = [r for r in read_capture(path).records if r["type"] == "http" and r.get("event") == "end"]
    assert [(e["how"], e.get("request_cut"), [f["code"] for f in e.get("findings") or ()]) for e in ends] == [
        ("client_closed", True, ["http.request_body_incomplete"])]
    for reuse in (True, False):
        assert "http.request_body_incomplete" in check_capture(path, reuse=reuse).groups
