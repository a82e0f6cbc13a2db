"""`mcptap serve` on the command line: raw JSON-RPC lines over stdio, bad input
as one-line errors with exit status 2."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson

from mcptap.capture.reader import read_capture
from scripted import c2s, handshake, record, req, res, s2c

MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]


def _serve(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*MCPTAP, "serve", *args], input=stdin, capture_output=True, timeout=60)


def test_serves_recorded_answers_over_stdio_and_records_its_own_session(tmp_path: Path) -> None:
    cap = record(tmp_path / "c.jsonl", [*handshake(), c2s(req(2, "tools/list")), s2c(res(2, {"tools": []}))])
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                                                        "clientInfo": {"name": "x", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": "b", "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "prompts/list"},
    ]
    own = tmp_path / "own.jsonl"
    proc = _serve(str(cap), "-o", str(own), stdin=b"".join(orjson.dumps(v) + b"\n" for v in lines))
    assert proc.returncode == 0, proc.stderr
    out = [orjson.loads(x) for x in proc.stdout.splitlines()]
    assert [o["id"] for o in out] == [1, "b", 3]
    assert out[0]["result"]["serverInfo"] == {"name": "s", "version": "1"} and out[1]["result"] == {"tools": []}
    assert out[2]["error"]["code"] == -32601
    assert proc.stderr.decode().count("\n") == 1 and "prompts/list" in proc.stderr.decode()
    mine = read_capture(str(own))
    assert mine.header["served_from"] == str(cap) and mine.end is not None
    assert [f["code"] for r in mine.records if r.get("dir") == "s2c" for f in r.get("findings", ()) if f["code"].startswith("serve.")] \
        == ["serve.no_recorded_answer"]


def _one_line_error(proc: subprocess.CompletedProcess[bytes], *words: str) -> None:
    err = proc.stderr.decode()
    assert proc.returncode == 2 and err.startswith("mcptap: ") and err.count("\n") == 1, err
    assert "Traceback" not in err and all(w in err for w in words), err
    assert proc.stdout == b""


def test_a_capture_on_stdin_is_refused_over_stdio(tmp_path: Path) -> None:
    """Over stdio, standard input is the client's channel: `serve -` read the
    capture from it (gzip: 'empty file'; found by a breaker helper)."""
    cap = Path(__file__).parents[2] / "captures" / "clean-2025-06-18.jsonl"
    _one_line_error(_serve("-", stdin=cap.read_bytes()), "give the capture as a file")


def test_a_file_that_is_not_a_capture_is_an_error(tmp_path: Path) -> None:
    bad = tmp_path / "notes.txt"
    bad.write_text("hello\n")
    _one_line_error(_serve(str(bad)), "not an mcptap capture")
    _one_line_error(_serve(str(tmp_path / "missing.jsonl")), "cannot open")


def test_an_empty_capture_is_an_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    _one_line_error(_serve(str(empty)), "empty")
    nothing = record(tmp_path / "nothing.jsonl", [])
    _one_line_error(_serve(str(nothing)), "no recorded server messages")
    only_client = record(tmp_path / "client.jsonl", [c2s(req(1, "tools/list"))])
    _one_line_error(_serve(str(only_client)), "no recorded server messages")


def test_unwritable_output_is_an_error(tmp_path: Path) -> None:
    cap = record(tmp_path / "c.jsonl", [*handshake()])
    _one_line_error(_serve(str(cap), "-o", str(cap / "under-a-file.jsonl")), "cannot create")


def test_extend_needs_a_server_command_and_stdio(tmp_path: Path) -> None:
    cap = record(tmp_path / "c.jsonl", [*handshake()])
    _one_line_error(_serve(str(cap), "--extend"), "--extend needs the real server")
    _one_line_error(_serve(str(cap), "--", "python", "server.py"), "--extend needs the real server")
    _one_line_error(_serve(str(cap), "--extend", "--listen", "127.0.0.1:0", "--", "python"), "--extend needs the real server")


def test_recorded_latency_answers_even_after_stdin_closes(tmp_path: Path) -> None:
    cap = record(tmp_path / "c.jsonl", [*handshake(), c2s(req(2, "tools/list")), s2c(res(2, {"tools": []}))])
    lines = [{"jsonrpc": "2.0", "id": 7, "method": "tools/list"}, {"jsonrpc": "2.0", "id": 8, "method": "tools/list"}]
    proc = _serve(str(cap), "--latency", "recorded", "--speed", "0.02", stdin=b"".join(orjson.dumps(v) + b"\n" for v in lines))
    assert proc.returncode == 0, proc.stderr
    # both answered (the second with the last answer again), each at its own time: in any order
    assert sorted(orjson.loads(x)["id"] for x in proc.stdout.splitlines()) == [7, 8]


def test_unanswered_client_methods_are_escaped_and_bounded(tmp_path: Path) -> None:
    # the client's method names are peer text: before, printed raw (ESC, CR reached the terminal) and whole
    cap = record(tmp_path / "c.jsonl", [*handshake(), c2s(req(2, "tools/list")), s2c(res(2, {"tools": []}))])
    evil = "x\x1b[2K\r\u202e" + "m" * 50_000
    lines = [{"jsonrpc": "2.0", "id": 1, "method": evil}, {"jsonrpc": "2.0", "id": 2, "method": "a\x1b]0;t\x07"}]
    proc = _serve(str(cap), "-o", str(tmp_path / "own.jsonl"), stdin=b"".join(orjson.dumps(v) + b"\n" for v in lines))
    assert proc.returncode == 0, proc.stderr
    err = proc.stderr.decode()
    assert "\x1b" not in err and "\r" not in err and "\u202e" not in err and "\x07" not in err
    assert "x\\x1b[2K\\r\\u202e" in err and "…(" in err and len(err) < 3_000 and "a\\x1b]0;t\\x07" in err


def test_stdio_batches_garbage_and_empty_batches_are_answered_as_json_rpc_asks(tmp_path: Path) -> None:
    """Over stdio the mock answered a batch's requests as separate lines and
    left a line that is not JSON and an empty batch unanswered, where the HTTP
    mock answers an array, -32700 and -32600 (JSON-RPC 2.0 §5.1, §6). A blank
    line is still nothing; a batch of notifications gets no answer. With
    ``-o`` the mock's own capture holds the array and its finding."""
    cap = record(tmp_path / "c.jsonl", [*handshake(), c2s(req(2, "tools/list")), s2c(res(2, {"tools": []}))])
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-03-26", "capabilities": {},
                                                                           "clientInfo": {"name": "x", "version": "0"}}}
    stdin = b"".join([orjson.dumps(init) + b"\n",
                      b'[{"jsonrpc":"2.0","id":2,"method":"tools/list"},{"jsonrpc":"2.0","method":"notifications/initialized"},'
                      b'{"jsonrpc":"2.0","id":3,"method":"nope"},{"jsonrpc":"2.0","id":4,"method":"nope2"},5]\n',
                      b"garbage\n", b"\n", b"[]\n", b'[{"jsonrpc":"2.0","method":"notifications/initialized"}]\n'])
    own = tmp_path / "own.jsonl"
    proc = _serve(str(cap), "-o", str(own), stdin=stdin)
    assert proc.returncode == 0, proc.stderr
    out = [orjson.loads(x) for x in proc.stdout.splitlines()]
    assert [o["id"] for o in out[:1]] == [1] and len(out) == 4
    batch, parse, empty = out[1:]
    assert [(m["id"], "result" in m, m.get("error", {}).get("code")) for m in batch] == [
        (2, True, None), (3, False, -32601), (4, False, -32601), (None, False, -32600)]
    assert parse == {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
    assert empty == {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Invalid Request"}}
    mine = read_capture(str(own))
    answers = [r for r in mine.records if r.get("dir") == "s2c" and r.get("type") == "message"]
    # one line, every member's finding: both methods the capture cannot answer
    assert answers[1]["kind"] == "batch" and [f["code"] for f in answers[1].get("findings", ()) if f["code"].startswith("serve.")] \
        == ["serve.no_recorded_answer"] * 2


def _calls(*names: str, args: dict[str, Any] | None = None) -> bytes:
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                                                          "clientInfo": {"name": "x", "version": "0"}}}
    calls = [{"jsonrpc": "2.0", "id": i + 2, "method": "tools/call", "params": {"name": n, "arguments": args or {}}}
             for i, n in enumerate(names)]
    return b"".join(orjson.dumps(v) + b"\n" for v in [init, *calls])


def test_the_summary_names_each_unanswered_request_and_counts_the_rest(tmp_path: Path) -> None:
    """It said "7 request(s) had no recorded answer:" then five identical "tools/call: the capture has
    no answer for these params", naming no tool and leaving two out without a word."""
    cap = record(tmp_path / "c.jsonl", [*handshake(), c2s(req(2, "tools/call", {"name": "echo", "arguments": {"text": "a"}})),
                                        s2c(res(2, {"content": []}))])
    own = tmp_path / "own.jsonl"
    proc = _serve(str(cap), "-o", str(own), stdin=_calls("t1", "t1", "t\x1b[2", "t3", "t4", "t5", "t6", "t7"))
    assert proc.returncode == 0, proc.stderr
    err = proc.stderr.decode()
    why = ": the capture has no answer for these params"
    assert err == (f"mcptap: 8 request(s) had no recorded answer: tools/call t1{why} (2 times); tools/call t\\x1b[2{why}; "
                   f"tools/call t3{why}; tools/call t4{why}; tools/call t5{why}; … and 2 more\n")
    messages = [f["message"] for r in read_capture(str(own)).records for f in r.get("findings", ())
                if f["code"] == "serve.no_recorded_answer"]
    assert messages[0] == f"mock answered with an error: tools/call t1{why}" and len(messages) == 8
    # the arguments, secrets left out
    proc = _serve(str(cap), stdin=_calls("echo", args={"text": "b", "password": "hunter2"}))
    assert proc.stderr.decode() == f'mcptap: 1 request(s) had no recorded answer: tools/call echo {{"text":"b","password":"…"}}{why}\n'


def test_serve_over_http_prints_the_summary_when_it_ends(tmp_path: Path) -> None:
    """The --listen branch returned without the summary stdio prints (docs/serve.md, README)."""
    import httpx2 as httpx

    cap = record(tmp_path / "c.jsonl", [*handshake(), c2s(req(2, "tools/list")), s2c(res(2, {"tools": []}))])
    for quiet in ((), ("-q",)):
        proc = subprocess.Popen([*MCPTAP, "serve", str(cap), "--listen", "127.0.0.1:0", *quiet], stderr=subprocess.PIPE)
        assert proc.stderr is not None
        url = proc.stderr.readline().decode().split(" on ")[-1].strip()
        hs = {"Accept": "application/json, text/event-stream"}
        for body in orjson.loads(b"[" + _calls("nope").replace(b"\n", b",")[:-1] + b"]"):
            httpx.post(url, json=body, headers=hs, timeout=10)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 0
        expected = "" if quiet else ("mcptap: 1 request(s) had no recorded answer: tools/call nope: the capture has no request "
                                     "of this method\n")
        assert err.decode() == expected


def test_the_mocks_own_method_not_found_does_not_blame_the_recorded_server(tmp_path: Path) -> None:
    """The recorded server declared resources; the capture holds no resources/templates/list. The
    mock's -32601 for it was judged capability.declared_but_unsupported (warn) in its -o capture,
    live and again by check, blaming the server for a gap in the capture."""
    cap = record(tmp_path / "c.jsonl", [*handshake(), c2s(req(2, "resources/list")), s2c(res(2, {"resources": []}))])
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                                                          "clientInfo": {"name": "x", "version": "0"}}}
    lines = [init, {"jsonrpc": "2.0", "method": "notifications/initialized"},
             {"jsonrpc": "2.0", "id": 2, "method": "resources/templates/list"}]
    own = tmp_path / "own.jsonl"
    proc = _serve(str(cap), "-o", str(own), "-q", stdin=b"".join(orjson.dumps(v) + b"\n" for v in lines))
    assert orjson.loads(proc.stdout.splitlines()[-1])["error"]["code"] == -32601
    codes = [f["code"] for r in read_capture(str(own)).records for f in r.get("findings", ())]
    assert "serve.no_recorded_answer" in codes and "capability.declared_but_unsupported" not in codes
    check = subprocess.run([*MCPTAP, "check", str(own), "--format", "json"], capture_output=True, timeout=60)
    assert b"serve.no_recorded_answer" in check.stdout and b"declared_but_unsupported" not in check.stdout, check.stdout
    # a real server's -32601 for a method it declared still is one
    real = record(tmp_path / "r.jsonl", [*handshake(), c2s(req(2, "resources/templates/list")),
                                         s2c(b'{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"Method not found"}}\n')])
    check = subprocess.run([*MCPTAP, "check", str(real), "--format", "json"], capture_output=True, timeout=60)
    assert b"capability.declared_but_unsupported" in check.stdout


def test_extend_of_a_pipe_is_a_usage_error(tmp_path: Path) -> None:
    """``serve <(…) --extend``: the episode goes beside CAPTURE and is merged into it, which a
    pipe cannot take (it once opened the FIFO again to hold it, waiting for a writer forever)."""
    import os

    fifo = tmp_path / "cap.fifo"
    os.mkfifo(fifo)
    proc = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "serve", str(fifo), "--extend", "--", sys.executable, "-c", "pass"],
                          cwd=tmp_path, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "--extend adds a session to CAPTURE: give it as a file, not a pipe or descriptor" in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cap.fifo"]
