"""Request smuggling through the HTTP tap (issue 9 item 3; reproducer
../shared/repro/cl-te-smuggling.py).

The tap must never forward ambiguous framing (RFC 9112 §6.1, §6.3) nor a Host
carrying userinfo; and whatever the client sends, the upstream only ever
receives requests that the capture records, byte for byte (request line,
headers as the tap documents it rewrites them, decoded body).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import trio
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mcptap.capture.format import decode_bytes, message_from_record
from mcptap.capture.reader import read_capture
from mcptap.capture.writer import CaptureWriter
from mcptap.clock import monotonic_us_clock, utc_timestamp
from mcptap.recorder import Recorder
from mcptap.relay.http.guard import request_problem
from mcptap.transport.http import HttpTap, HttpTapConfig

REPRO = "cl-te-smuggling.py"
HIDDEN = b"POST /admin HTTP/1.1\r\nHost: evil.example\r\nContent-Length: 0\r\n\r\n"


@pytest.mark.parametrize(("headers", "why"), [
    ([(b"Host", b"a"), (b"Content-Length", b"4"), (b"Transfer-Encoding", b"chunked")], "both Content-Length and Transfer-Encoding"),
    ([(b"Host", b"a"), (b"Transfer-Encoding", b"chunked"), (b"Transfer-Encoding", b"chunked")], "more than one Transfer-Encoding"),
    ([(b"Host", b"a"), (b"Content-Length", b"4"), (b"Content-Length", b"5")], "conflicting Content-Length"),
    ([(b"Host", b"a"), (b"Host", b"b")], "more than one Host"),
    ([], "no Host"),
    ([(b"Host", b"127.0.0.1:1@evil.example")], "userinfo"),
    ([(b"Host", b"a b")], "not a valid host"),
    ([(b"Host", b"a/b")], "not a valid host"),
])
def test_requests_an_intermediary_must_not_forward(headers: list[tuple[bytes, bytes]], why: str) -> None:
    problem = request_problem(headers)
    assert problem is not None and why in problem


@pytest.mark.parametrize(("target", "ok"), [
    (b"/mcp", True), (b"*", True), (b"http://a/mcp", True), (b"HTTP://A:80/x", False), (b"http://b/mcp", False),
    (b"http://u@a/mcp", False), (b"https://a", True),
])
def test_absolute_form_targets_name_the_host(target: bytes, ok: bool) -> None:
    assert (request_problem([(b"Host", b"a")], b"1.1", target) is None) is ok


@pytest.mark.parametrize("host", [b"127.0.0.1", b"127.0.0.1:8080", b"localhost:1", b"[::1]:80", b"example.com", b"xn--e-ufa.org:"])
def test_ordinary_requests_pass(host: bytes) -> None:
    assert request_problem([(b"Host", host), (b"Content-Length", b"4"), (b"Content-Length", b"4")]) is None
    assert request_problem([(b"Host", host), (b"Transfer-Encoding", b"chunked")]) is None


# -- a strict upstream that logs exactly what it received ------------------------------

@dataclass
class UpRequest:
    method: bytes
    target: bytes
    headers: list[tuple[bytes, bytes]]
    body: bytes | None      # None: cut (the client left mid-body)
    framing: str            # "length", "chunked", "none"


@dataclass
class Upstream:
    raw: list[bytes] = field(default_factory=list)        # bytes per upstream connection

    async def handler(self, stream: trio.SocketStream) -> None:
        i = len(self.raw)
        self.raw.append(b"")
        try:
            while True:
                data = await stream.receive_some(65536)
                if not data:
                    return
                self.raw[i] += data
                # answer every complete request (the tap waits for a response before the next)
                while self._answered(i) < len(parse_requests(self.raw[i])[0]):
                    self._count[i] = self._answered(i) + 1
                    await stream.send_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return

    def __post_init__(self) -> None:
        self._count: dict[int, int] = {}

    def _answered(self, i: int) -> int:
        return self._count.get(i, 0)

    def requests(self) -> list[UpRequest]:
        out: list[UpRequest] = []
        for data in self.raw:
            reqs, rest = parse_requests(data)
            out += reqs
            if b"\r\n\r\n" in rest:
                # the client went away mid-body: the head was forwarded, the body is cut
                lines = rest.split(b"\r\n\r\n", 1)[0].split(b"\r\n")
                method, target, _version = lines[0].split(b" ")
                headers = [(n, v.strip()) for n, v in (ln.split(b":", 1) for ln in lines[1:])]
                names = [n.lower() for n, _ in headers]
                assert not (b"content-length" in names and b"transfer-encoding" in names), f"ambiguous framing forwarded: {rest!r}"
                out.append(UpRequest(method, target, headers, None, "cut"))
        return out


def parse_requests(data: bytes) -> tuple[list[UpRequest], bytes]:
    """Requests in ``data`` as a strict RFC 9112 server frames them; asserts
    that no request had ambiguous framing."""
    out: list[UpRequest] = []
    while b"\r\n\r\n" in data:
        head, rest = data.split(b"\r\n\r\n", 1)
        lines = head.split(b"\r\n")
        method, target, _version = lines[0].split(b" ")
        headers = [(n, v.strip()) for n, v in (ln.split(b":", 1) for ln in lines[1:])]
        names = [n.lower() for n, _ in headers]
        assert not (b"content-length" in names and b"transfer-encoding" in names), f"ambiguous framing forwarded: {head!r}"
        assert names.count(b"host") == 1, f"upstream got {names.count(b'host')} Host fields: {head!r}"
        if b"transfer-encoding" in names:
            body, pos = b"", 0
            while True:
                end = rest.find(b"\r\n", pos)
                if end < 0:
                    return out, data
                size = int(rest[pos:end].split(b";")[0], 16)
                if size == 0:
                    trailer_end = rest.find(b"\r\n\r\n", end)
                    if rest[end:end + 4] == b"\r\n\r\n":
                        trailer_end = end
                    if trailer_end < 0:
                        return out, data
                    rest = rest[trailer_end + 4:]
                    break
                if len(rest) < end + 2 + size + 2:
                    return out, data
                body += rest[end + 2:end + 2 + size]
                pos = end + 2 + size + 2
            framing = "chunked"
        elif b"content-length" in names:
            n = int(dict((k.lower(), v) for k, v in headers)[b"content-length"])
            if len(rest) < n:
                return out, data
            body, rest = rest[:n], rest[n:]
            framing = "length"
        else:
            body, framing = b"", "none"
        out.append(UpRequest(method, target, headers, body, framing))
        data = rest
    return out, data


async def run_through_tap(tmp_path: Path, client_bytes: bytes) -> tuple[list[dict[str, Any]], list[UpRequest], bytes]:
    up = Upstream()
    path = tmp_path / "fuzz.jsonl"
    async with trio.open_nursery() as n:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        port = listeners[0].socket.getsockname()[1]
        await n.start(trio.serve_listeners, up.handler, listeners)
        rec = Recorder(CaptureWriter.open(str(path)), "http", {"url": "x"}, clock=monotonic_us_clock(), started=utc_timestamp())
        tap = HttpTap(HttpTapConfig(upstream=f"http://127.0.0.1:{port}/mcp"), rec)
        url = await n.start(tap.serve)
        host, tport = url.split("//")[1].split("/")[0].split(":")
        s = await trio.open_tcp_stream(host, int(tport))
        await s.send_all(client_bytes)
        await s.send_eof()
        answer = b""
        with trio.fail_after(20):
            while chunk := await s.receive_some(65536):
                answer += chunk
        await s.aclose()
        before = -1
        while before != rec.seq:                    # let the recorder catch up
            before = rec.seq
            await trio.sleep(0.05)
        n.cancel_scope.cancel()
    rec.close()
    return read_capture(str(path)).records, up.requests(), answer


def captured_requests(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Forwarded requests in the capture: request line, headers and body bytes."""
    bodies: dict[int, bytes] = {}
    for r in records:
        if r["type"] == "http" and r.get("event") == "request_body":
            bodies[r["exchange"]] = decode_bytes(r, "body") or b""
        if r["type"] == "message" and r["dir"] == "c2s" and isinstance(r.get("transport"), dict):
            ex = r["transport"].get("exchange")
            bodies[ex] = bodies.get(ex, b"") + message_from_record(r).raw
    rejected = {r["exchange"] for r in records if r["type"] == "http" and r.get("event") == "end"
                and r.get("how") in ("request_rejected", "host_rejected")}
    return [dict(r, body=bodies.get(r["exchange"], b"")) for r in records
            if r["type"] == "http" and r.get("event") == "request" and r["exchange"] not in rejected]


def assert_upstream_saw_only_captured(records: list[dict[str, Any]], got: list[UpRequest]) -> None:
    want = captured_requests(records)
    assert len(got) <= len(want), f"upstream served {len(got)} requests, the capture has {len(want)}"
    for u, c in zip(got, want, strict=False):
        # the capture keeps the target as the client sent it; an absolute-form one goes upstream in origin-form
        target = c["target"]
        if "://" in target:
            parts = urlsplit(target)
            target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        assert (u.method.decode(), u.target.decode()) == (c["method"], target)
        sent = [(n.lower(), v) for n, v in u.headers if n.lower() != b"host"]
        # the capture holds the request as the client sent it; a proxy drops the hop-by-hop
        # fields and those the Connection field names (RFC 9110 §7.6.1)
        named = {t.strip().lower() for n, v in c["headers"] if n.lower() == "connection" for t in v.split(",")}
        hop = {"host", "connection", "keep-alive", "te", "upgrade", "proxy-connection"} | named
        recorded = [(n.lower().encode(), v.encode("latin-1")) for n, v in c["headers"] if n.lower() not in hop]
        assert sent == recorded
        if u.body is None:
            continue
        assert u.body == c["body"]


def test_connect_is_answered_by_the_tap_and_never_forwarded(tmp_path: Path) -> None:
    """CONNECT was forwarded; an upstream's 2xx turned the connection into a
    tunnel nothing recorded, and the GET after it on the same socket was
    neither forwarded, answered nor recorded (found by a breaker helper)."""
    wire = (b"CONNECT 127.0.0.1:22 HTTP/1.1\r\nHost: 127.0.0.1:22\r\n\r\n"
            b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
    records, got, answer = trio.run(run_through_tap, tmp_path, wire)
    assert answer.startswith(b"HTTP/1.1 400 ") and b"Connection: close" in answer
    assert got == []
    ends = [r for r in records if r["type"] == "http" and r.get("event") == "end"]
    assert [e["how"] for e in ends] == ["request_rejected"]


def test_an_absolute_form_target_goes_upstream_in_origin_form(tmp_path: Path) -> None:
    wire = b"GET http://127.0.0.1/mcp?x=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n"
    records, got, answer = trio.run(run_through_tap, tmp_path, wire)
    assert [u.target for u in got] == [b"/mcp?x=1"]
    assert [r["target"] for r in records if r["type"] == "http" and r.get("event") == "request"] == ["http://127.0.0.1/mcp?x=1"]


def test_the_reproducer_is_refused_and_nothing_hidden_reaches_the_upstream(tmp_path: Path) -> None:
    smuggled = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"
                + b"%x\r\n%s\r\n0\r\n\r\n" % (len(HIDDEN), HIDDEN))
    records, got, answer = trio.run(run_through_tap, tmp_path, smuggled)
    assert answer.startswith(b"HTTP/1.1 400 ") and b"Connection: close" in answer
    assert got == []
    codes = [f["code"] for r in records for f in r.get("findings", ())]
    assert "http.request_rejected" in codes
    ends = [r for r in records if r["type"] == "http" and r.get("event") == "end"]
    assert ends and ends[0]["how"] == "request_rejected"


def test_host_with_userinfo_is_refused(tmp_path: Path) -> None:
    req = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:1@evil.example\r\nContent-Length: 2\r\n\r\n{}"
    records, got, answer = trio.run(run_through_tap, tmp_path, req)
    assert answer.startswith(b"HTTP/1.1 400 ") and b"userinfo" in answer
    assert got == []


# -- the fuzz test ------------------------------------------------------------------------------

_token = st.sampled_from([b"POST", b"GET", b"DELETE", b"PO ST", b"post", b""])
_target = st.sampled_from([b"/mcp", b"/mcp?x=1", b"/admin", b"*", b"http://127.0.0.1/mcp", b"/m cp", b""])
_host = st.sampled_from([b"127.0.0.1", b"localhost:1", b"127.0.0.1:1@evil.example", b"evil.example", b"a b", b""])
_body = st.sampled_from([b"", b"{}", b'{"jsonrpc":"2.0","id":1,"method":"ping"}', HIDDEN, b"not json", b"0\r\n\r\n"])
_framing = st.sampled_from(["cl", "te", "cl+te", "te+cl", "te,te", "cl,cl", "cl!=cl", "none", "te-identity", "cl-bad", "te-bad-chunk"])
_extra = st.lists(st.sampled_from([(b"Connection", b"close"), (b"Connection", b"keep-alive, X-Foo"), (b"X-Foo", b"1"),
                                   (b"Transfer-Encoding", b" chunked"), (b"Content-Length", b"+2"), (b"Host", b"127.0.0.1"),
                                   (b"Content-Type", b"application/json"), (b"Te", b"trailers"), (b" Bad", b"x")]), max_size=2)


def _one_request(method: bytes, target: bytes, host: bytes, body: bytes, framing: str,
                 extra: list[tuple[bytes, bytes]], version: bytes) -> bytes:
    hdrs: list[tuple[bytes, bytes]] = [(b"Host", host)] if host or version == b"HTTP/1.1" else []
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body) if body else b"0\r\n\r\n"
    cl = str(len(body)).encode()
    payload = body
    if framing == "cl":
        hdrs.append((b"Content-Length", cl))
    elif framing in ("te", "te-identity"):
        hdrs.append((b"Transfer-Encoding", b"chunked" if framing == "te" else b"identity"))
        payload = chunked if framing == "te" else body
    elif framing in ("cl+te", "te+cl"):
        pair = [(b"Content-Length", cl), (b"Transfer-Encoding", b"chunked")]
        hdrs += pair if framing == "cl+te" else pair[::-1]
        payload = chunked
    elif framing == "te,te":
        hdrs += [(b"Transfer-Encoding", b"chunked"), (b"Transfer-Encoding", b"chunked")]
        payload = chunked
    elif framing == "cl,cl":
        hdrs += [(b"Content-Length", cl), (b"Content-Length", cl)]
    elif framing == "cl!=cl":
        hdrs += [(b"Content-Length", cl), (b"Content-Length", str(len(body) + 1).encode())]
    elif framing == "cl-bad":
        hdrs.append((b"Content-Length", b"-" + cl))
    elif framing == "te-bad-chunk":
        hdrs.append((b"Transfer-Encoding", b"chunked"))
        payload = b"zz\r\n" + body + b"\r\n0\r\n\r\n"
    else:
        payload = b""
    head = method + b" " + target + b" " + version + b"\r\n" + b"".join(n + b": " + v + b"\r\n" for n, v in hdrs + extra)
    return head + b"\r\n" + payload


_request = st.builds(_one_request, _token, _target, _host, _body, _framing, _extra,
                     st.sampled_from([b"HTTP/1.1", b"HTTP/1.1", b"HTTP/1.0", b"HTTP/2.0"]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(_request, min_size=1, max_size=4), st.binary(max_size=8))
@example([_one_request(b"POST", b"/mcp", b"127.0.0.1", b"{}", "cl", [(b"Connection", b"keep-alive, X-Foo"), (b"X-Foo", b"1")],
                       b"HTTP/1.1")], b"")
def test_fuzz_upstream_only_receives_what_the_capture_records(tmp_path: Path, requests: list[bytes], tail: bytes) -> None:
    records, got, _answer = trio.run(run_through_tap, tmp_path, b"".join(requests) + tail)
    assert_upstream_saw_only_captured(records, got)


# -- a client that goes away mid-body --------------------------------------------------------

def _codes_live_and_full(path: Path, records: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    from mcptap.check.report import check_capture

    live = [f["code"] for r in records for f in r.get("findings", ())]
    full = check_capture(str(path), keep=3, shapes=False, reuse=False)
    return live, list(full.groups)


@pytest.mark.parametrize(("declared", "sent"), [(100, b'{"js'), (4, b'{"js')])
def test_a_client_gone_mid_body_leaves_its_bytes_and_a_finding(tmp_path: Path, declared: int, sent: bytes) -> None:
    """Content-Length 100, 4 bytes, then the client closes: the tap forwarded
    those 4 bytes, so the capture keeps them (a request_body record) and says
    the body was cut (http.request_body_incomplete), live and under
    check --full. Near miss: all declared bytes sent, no finding."""
    req = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % declared + sent
    records, got, _answer = trio.run(run_through_tap, tmp_path, req)
    assert_upstream_saw_only_captured(records, got)
    live, full = _codes_live_and_full(tmp_path / "fuzz.jsonl", records)
    cut = declared > len(sent)
    assert ("http.request_body_incomplete" in live) is cut, live
    assert ("http.request_body_incomplete" in full) is cut, full
    if cut:
        bodies = [decode_bytes(r, "body") for r in records if r["type"] == "http" and r.get("event") == "request_body"]
        assert bodies == [sent]
        end = next(r for r in records if r["type"] == "http" and r.get("event") == "end")
        assert end["how"] == "client_closed" and end["request_bytes"] == len(sent)


@pytest.mark.parametrize("head", [
    b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n",
    b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 400\r\n\r\n",
    b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:1@evil.example\r\nContent-Length: 100\r\n\r\n",
])
async def test_a_refused_head_is_answered_at_once_without_its_body(tmp_path: Path, head: bytes) -> None:
    """The head alone decides: a head with ambiguous framing (or a bad Host)
    is answered 400 and the connection closed as soon as it is parsed. It
    waited for a chunked body that would never come, and the client got 408
    after --request-timeout (found by a breaker helper)."""
    up = Upstream()
    path = tmp_path / "cap.jsonl"
    async with trio.open_nursery() as n:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        port = listeners[0].socket.getsockname()[1]
        await n.start(trio.serve_listeners, up.handler, listeners)
        rec = Recorder(CaptureWriter.open(str(path)), "http", {"url": "x"}, clock=monotonic_us_clock(), started=utc_timestamp())
        tap = HttpTap(HttpTapConfig(upstream=f"http://127.0.0.1:{port}/mcp", request_timeout=30.0), rec)
        url = await n.start(tap.serve)
        host, tport = url.split("//")[1].split("/")[0].split(":")
        s = await trio.open_tcp_stream(host, int(tport))
        await s.send_all(head)              # the head only: no body, no EOF
        answer = b""
        with trio.fail_after(5):
            while chunk := await s.receive_some(65536):
                answer += chunk
        await s.aclose()
        await trio.sleep(0.2)
        n.cancel_scope.cancel()
    rec.close()
    assert answer.startswith(b"HTTP/1.1 400 ") and b"Connection: close" in answer, answer
    assert up.requests() == []
    ends = [r for r in read_capture(str(path)).records if r["type"] == "http" and r.get("event") == "end"]
    assert [e["how"] for e in ends] == ["request_rejected"]
