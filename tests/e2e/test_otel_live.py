"""Live OTLP export: a real SDK session through `mcptap record --otlp-endpoint`,
spans received by a loopback OTLP/HTTP receiver (decoded with
opentelemetry-proto); an unreachable collector never costs the session or the
capture."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import trio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest, ExportTraceServiceResponse

from mcptap.capture.reader import read_capture
from otlp_helpers import attrs, parse_otlp_json, spans_of
from peers import free_port
from sdk_scenario import EXPECTED, drive

pytestmark = pytest.mark.e2e
HERE = Path(__file__).parent


class Receiver:
    """A loopback OTLP/HTTP traces receiver (protobuf bodies on /v1/traces)."""

    def __init__(self) -> None:
        self.requests: list[ExportTraceServiceRequest] = []
        self.paths: list[str] = []
        self.headers: list[dict[str, str]] = []
        self.got = threading.Event()

    def spans(self) -> list[Any]:
        return [s for r in self.requests for s in spans_of(r)]


@contextmanager
def otlp_receiver() -> Iterator[tuple[str, Receiver]]:
    got = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            got.paths.append(self.path)
            got.headers.append({k.lower(): v for k, v in self.headers.items()})
            got.requests.append(ExportTraceServiceRequest.FromString(body))
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)
            got.got.set()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", got
    finally:
        server.shutdown()
        server.server_close()


def tapped(capture: Path, *record_args: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "mcptap.cli.main", "record", "--quiet", "-o", str(capture), *record_args, "--", sys.executable, str(HERE / "sdk_server.py")],
    )


def notes(cap: Path) -> list[dict[str, Any]]:
    return [r for r in read_capture(str(cap)).records if r["type"] == "note"]


def complete(cap: Path) -> list[dict[str, Any]]:
    c = read_capture(str(cap))
    assert c.end is not None and not c.truncated and c.end["pending"] == []
    msgs = [r for r in c.records if r["type"] == "message"]
    reqs = {r["seq"] for r in msgs if r["kind"] == "request"}
    assert reqs == {r["pair"] for r in msgs if "pair" in r}
    return msgs


async def test_stdio_session_exports_spans_live(tmp_path: Path) -> None:
    cap = tmp_path / "cap.jsonl"
    with otlp_receiver() as (url, got):
        async with Client(tapped(cap, "--otlp-endpoint", url, "--otlp-header", "x-team=mcp"), mode="legacy") as client:
            answers, progress = await drive(client)
        assert answers == EXPECTED and progress == [1.0, 2.0, 3.0]
        # the session is over; mcptap flushed before it exited
        with trio.fail_after(10):
            while not got.got.is_set():
                await trio.sleep(0.05)
    msgs = complete(cap)
    spans = got.spans()
    assert set(got.paths) == {"/v1/traces"} and all(h.get("x-team") == "mcp" for h in got.headers)
    calls = {s.name: s for s in spans if attrs(s).get("mcp.method.name") == "tools/call"}
    assert set(calls) == {"tools/call echo", "tools/call add", "tools/call slow", "tools/call boom"}
    echo = attrs(calls["tools/call echo"])
    assert echo["gen_ai.tool.name"] == "echo" and echo["network.transport"] == "pipe" and echo["jsonrpc.request.id"]
    assert calls["tools/call echo"].kind == calls["tools/call echo"].SPAN_KIND_CLIENT
    assert attrs(calls["tools/call boom"])["error.type"] == "tool_error"
    assert [attrs(e)["mcptap.progress"] for e in calls["tools/call slow"].events if e.name == "notifications/progress"] == [1.0, 2.0, 3.0]
    requests = [m for m in msgs if m["kind"] == "request"]
    assert sorted(attrs(s)["mcptap.request.seq"] for s in spans if "mcptap.request.seq" in attrs(s)) == [m["seq"] for m in requests]
    resource = {kv.key: kv.value.string_value for kv in got.requests[0].resource_spans[0].resource.attributes}
    assert resource["service.name"] == "mcptap" and "sdk_server.py" in resource["mcptap.target"]
    # the live spans are the spans a later file export gives: same names and ids
    r = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "export", str(cap), "-f", "otlp-json"], capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    filed = {(s.trace_id, s.span_id, s.name) for line in r.stdout.splitlines() for s in spans_of(parse_otlp_json(line))}
    pairs = {(s.trace_id, s.span_id, s.name) for s in spans if s.kind != s.SPAN_KIND_INTERNAL}
    assert pairs <= filed
    (summary,) = notes(cap)
    assert summary["source"] == "otlp" and summary["exported"] == summary["spans"] == len(spans) and summary["failed"] == 0


async def test_unreachable_collector_costs_nothing(tmp_path: Path) -> None:
    cap = tmp_path / "cap.jsonl"
    # nothing listens there; credentials in the URL never reach stderr or the capture in clear
    dead = f"http://ingest:pw-SECRET-77@127.0.0.1:{free_port()}/base/?api_key=q-SECRET-88"
    errlog = tmp_path / "stderr.txt"
    with open(errlog, "w") as err:
        async with Client(stdio_client(tapped(cap, "--otlp-endpoint", dead), errlog=err), mode="legacy") as client:
            answers, progress = await drive(client)
            await trio.sleep(1.0)                         # a batch is due: it fails while the session goes on
            assert (await client.call_tool("add", {"a": 1, "b": 2})).content[0].text == "3"
    assert answers == EXPECTED
    complete(cap)
    text = errlog.read_text()                          # the server's stderr passes through too
    lines = [ln for ln in text.splitlines() if ln.startswith("mcptap:")]
    assert len(lines) == 1 and lines[0].startswith("mcptap: OTLP export to "), lines
    assert "opentelemetry" not in text and "Failed to export" not in text       # no SDK log spew
    ns = notes(cap)
    failure = [n for n in ns if "message" in n]
    assert len(failure) == 1 and "OTLP export to" in failure[0]["message"] and "/v1/traces" in failure[0]["message"]
    summary = [n for n in ns if "spans" in n]
    assert len(summary) == 1 and summary[0]["exported"] == 0 and summary[0]["failed"] + summary[0]["pending"] == summary[0]["spans"] > 0
    assert "/base/v1/traces?api_key=«redacted:hmac:" in failure[0]["message"]         # the signal path before the query
    for secret in ("pw-SECRET-77", "q-SECRET-88"):
        assert secret not in text and secret not in cap.read_text()


def test_traces_url_appends_the_signal_path_to_the_path() -> None:
    from mcptap.otel import traces_url

    assert traces_url("http://127.0.0.1:4318") == "http://127.0.0.1:4318/v1/traces"
    assert traces_url("https://otel.example.com/otlp/?key=k") == "https://otel.example.com/otlp/v1/traces?key=k"
    assert traces_url("http://c:4318/v1/traces") == "http://c:4318/v1/traces"


def test_missing_sdk_is_one_line_exit_2(tmp_path: Path) -> None:
    # simulate a mcptap installed without the otel extra: hide the SDK modules
    code = ("import sys; sys.modules['opentelemetry.sdk'] = None; sys.modules['opentelemetry.sdk.trace'] = None; "
            "sys.modules['opentelemetry.sdk.trace.export'] = None; "
            "from mcptap.cli.main import main; main()")
    r = subprocess.run([sys.executable, "-c", code, "record", "-o", str(tmp_path / "c.jsonl"), "--otlp-endpoint", "http://127.0.0.1:4318",
                        "--", sys.executable, "-c", "pass"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert r.stderr.splitlines() == [r.stderr.strip()] and "pip install 'mcptap[otel]'" in r.stderr
    assert not (tmp_path / "c.jsonl").exists()       # refused before anything started


def test_bad_endpoint_and_header_are_usage_errors(tmp_path: Path) -> None:
    for extra in (["--otlp-endpoint", "grpc://x:4317"], ["--otlp-endpoint", "http://127.0.0.1:4318", "--otlp-header", "novalue"]):
        r = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "record", "-o", str(tmp_path / "c.jsonl"), *extra,
                            "--", sys.executable, "-c", "pass"], capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and r.stderr.startswith("mcptap: record: --otlp-") and r.stderr.count("\n") == 1, r.stderr


async def test_http_tap_exports_spans_live(tmp_path: Path) -> None:
    import signal

    from test_http_sdk import sdk_server

    cap = tmp_path / "cap.jsonl"
    with otlp_receiver() as (otlp, got):
        async with sdk_server("streamable-http") as base:
            proc = subprocess.Popen([sys.executable, "-m", "mcptap.cli.main", "record", "--upstream", base + "/mcp", "-o", str(cap),
                                     "--otlp-endpoint", otlp + "/v1/traces"], stderr=subprocess.PIPE, text=True)
            try:
                line = await trio.to_thread.run_sync(proc.stderr.readline)
                assert line.startswith("mcptap: listening on "), line
                async with Client(line.split()[3], mode="legacy") as client:
                    answers, _ = await drive(client)
            finally:
                proc.send_signal(signal.SIGINT)
                rc = await trio.to_thread.run_sync(proc.wait, 20)
        assert rc == 0 and answers == EXPECTED
    complete(cap)
    spans = got.spans()
    assert set(got.paths) == {"/v1/traces"}
    call = next(s for s in spans if s.name == "tools/call add")
    a = attrs(call)
    assert a["network.transport"] == "tcp" and a["mcp.session.id"] and a["server.address"] == "127.0.0.1"
    assert a["mcptap.http.exchange"] > 0 and call.kind == call.SPAN_KIND_CLIENT
    (summary,) = notes(cap)
    assert summary["exported"] == summary["spans"] == len(spans)


async def test_slow_collector_costs_nothing(tmp_path: Path) -> None:
    """A collector that accepts connections and never answers: the session
    runs, the capture ends with its end record, and says what happened."""
    import socket

    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def hold() -> None:
        lsock.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(lsock.accept()[0])     # read nothing, answer nothing
            except OSError:
                continue

    t = threading.Thread(target=hold, daemon=True)
    t.start()
    cap = tmp_path / "cap.jsonl"
    errlog = tmp_path / "stderr.txt"
    try:
        with open(errlog, "w") as err:
            async with Client(stdio_client(tapped(cap, "--otlp-endpoint", f"http://127.0.0.1:{lsock.getsockname()[1]}"), errlog=err),
                              mode="legacy") as client:
                answers, _ = await drive(client)
    finally:
        stop.set()
        t.join()
        for s in held:
            s.close()
        lsock.close()
    assert answers == EXPECTED
    complete(cap)
    lines = [ln for ln in errlog.read_text().splitlines() if ln.startswith("mcptap:")]
    assert len(lines) == 1 and lines[0].startswith("mcptap: OTLP export to "), lines
    ns = notes(cap)
    assert len([n for n in ns if "message" in n]) == 1
    (summary,) = [n for n in ns if "messages" in n]
    assert summary["messages"] > 0 and not summary.get("exported")


SECRET = "sk-" + "abcdefghijklmnopqrstuvwxyz012345"


def test_endpoint_from_the_environment_and_redaction(tmp_path: Path) -> None:
    """OTEL_EXPORTER_OTLP_ENDPOINT alone turns the live export on; with
    --redact the spans hold the same placeholders as the capture."""
    import os

    cap = tmp_path / "cap.jsonl"
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 1, "b": 2}}},
        {"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": f"https://x.example/r?api_key={SECRET}"}},
    ]
    with otlp_receiver() as (url, got):
        env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": url}
        proc = subprocess.Popen([sys.executable, "-m", "mcptap.cli.main", "record", "-q", "--redact", "-o", str(cap), "--",
                                 sys.executable, str(HERE / "sdk_server.py")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        assert proc.stdin is not None and proc.stdout is not None
        for msg in lines:
            proc.stdin.write(json.dumps(msg).encode() + b"\n")
            proc.stdin.flush()
            if "id" in msg:
                assert json.loads(proc.stdout.readline())["id"] == msg["id"]
        proc.stdin.close()
        assert proc.wait(30) == 0
    names = {s.name for s in got.spans()}
    assert {"initialize", "notifications/initialized", "tools/call add", "resources/read"} <= names
    complete(cap)
    # record --redact: the exported span holds the capture's placeholder, never the secret
    (read,) = [s for s in got.spans() if s.name == "resources/read"]
    uri = attrs(read)["mcp.resource.uri"]
    assert SECRET not in uri and "«redacted:" in uri
    assert SECRET not in cap.read_text()


BIG_ID = 2**64 + 1
#: answers every request with an empty result, echoing the id exactly
ECHO_EXACT = ("import json, sys\nfor line in sys.stdin:\n m = json.loads(line)\n if 'id' in m and 'method' in m:\n"
              "  sys.stdout.write(json.dumps({'jsonrpc': '2.0', 'id': m['id'], 'result': {}}) + '\\n'); sys.stdout.flush()")


def test_a_request_id_beyond_64_bits_is_exported_exactly(tmp_path: Path) -> None:
    """The live exporter handed the export process its records with orjson,
    which refuses an integer beyond 64 bits: the span was lost and the export
    marked failed. Now the span carries the id the peer sent."""
    cap = tmp_path / "cap.jsonl"
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    stdin = (json.dumps(init) + "\n" + json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n"
             + f'{{"jsonrpc":"2.0","id":{BIG_ID},"method":"tools/list"}}\n').encode()
    with otlp_receiver() as (url, got):
        p = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "record", "-o", str(cap), "--otlp-endpoint", url, "--",
                            sys.executable, "-c", ECHO_EXACT], input=stdin, capture_output=True, timeout=60)
        assert p.returncode == 0, p.stderr
        assert str(BIG_ID).encode() in p.stdout
    ids = [attrs(s).get("jsonrpc.request.id") for s in got.spans() if attrs(s).get("mcp.method.name") == "tools/list"]
    assert ids == [str(BIG_ID)], [attrs(s) for s in got.spans()]
    (summary,) = notes(cap)
    assert summary["failed"] == 0 and summary["exported"] == summary["spans"]


def _child(url: str) -> tuple[Any, Any]:
    import io

    from mcptap.otel.child import Child
    header = {"format": "mcptap-capture", "version": 1, "mcptap": "0", "started": "2026-01-01T00:00:00Z", "transport": "stdio",
              "target": {"argv": ["x"]}}
    out = io.BytesIO()
    return Child({"url": url, "headers": None, "header": header, "timeout": 5.0, "delay_ms": 50}, out), out


def _summary(out: Any) -> dict[str, Any]:
    lines = [json.loads(ln) for ln in out.getvalue().splitlines()]
    (s,) = [ln for ln in lines if ln.get("event") == "summary"]
    return s


def _ping(seq: int) -> dict[str, Any]:
    return {"type": "message", "seq": seq, "t_us": seq, "dir": "c2s", "kind": "notification", "method": "notifications/message",
            "json": {"jsonrpc": "2.0", "method": "notifications/message", "params": {}}}


def _exit_record(seq: int) -> dict[str, Any]:
    return {"type": "process", "seq": seq, "t_us": seq, "event": "exit", "code": 3,
            "findings": [{"code": "process.exit_nonzero", "severity": "warn", "message": "exit 3"}]}


def test_a_collector_that_is_down_counts_the_spans_given_up_as_failed() -> None:
    """Nothing listens: the closing summary said exported 0, failed 0, pending N (the
    spans were never going to be sent: the export is given up). They are failed now."""
    child, out = _child(f"http://127.0.0.1:{free_port()}/v1/traces")
    for i in range(1, 41):
        child.feed(_exit_record(i))
    child.close(100, budget_s=0.4, finish_s=0.5)
    s = _summary(out)
    assert s["spans"] == 40 and s["exported"] == 0 and s["failed"] == 40 and s["pending"] == 0 and s["dropped"] == 0, s


def test_spans_the_export_queue_has_no_room_for_are_counted_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    """A collector slower than the session: the SDK queue drops spans it has no room for,
    silently; the summary said failed 0 and counted them pending. They are dropped (and
    the reason says so), and every span is in exactly one count."""
    import mcptap.otel.child as child_mod

    monkeypatch.setattr(child_mod, "QUEUE_MAX", 600)        # room for one batch (512) and a little more
    child, out = _child(f"http://127.0.0.1:{free_port()}/v1/traces")
    for i in range(1, 3001):
        child.feed(_exit_record(i))
    child.close(4000, budget_s=0.4, finish_s=0.5)
    s = _summary(out)
    assert s["dropped"] >= 1000 and s["spans"] == 3000, s
    assert s["exported"] + s["failed"] + s["dropped"] + s["pending"] == s["spans"], s
    assert b"export queue full, spans dropped" in out.getvalue()


def test_the_live_export_sends_the_spans_of_records_with_findings() -> None:
    """``export -f otlp-json`` gives a record that carries findings (a process exit, an
    http record) a span of its own (``mcptap process exit``); the live export only saw
    messages, so that span was missing although the docs say they are the same spans."""
    from mcptap.clock import utc_timestamp
    from mcptap.model import Finding, Severity
    from mcptap.otel import LiveExporter, capture_header
    from mcptap.recorder import Recorder

    with otlp_receiver() as (url, got):
        rec = Recorder(None, "stdio", {"argv": ["x"]}, clock=lambda: 5, started=utc_timestamp())
        live = LiveExporter(url + "/v1/traces", None, capture_header(rec, {"argv": ["x"]}), say=lambda _s: None)
        live.attach(rec)
        rec.process("exit", findings=[Finding("process.exit_nonzero", Severity.WARN, "exit 3")], code=3)
        live.close(10, wait=5.0)
        assert live.join(10)
    assert "mcptap process exit" in {s.name for s in got.spans()}, [s.name for s in got.spans()]
