"""`mcptap record --upstream URL` as a process: listening URL on stderr, relay,
SIGINT ends it with status 0 and a finished capture; usage errors exit 2."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest
import trio

from mcptap.capture.reader import read_capture

sys.path.insert(0, str(__import__("pathlib").Path(__file__).parents[1] / "transport"))
from test_http_tap import fake_mcp, post, upstream_server

CMD = [sys.executable, "-m", "mcptap.cli.record_http"]


async def test_record_http_process(tmp_path):
    cap = tmp_path / "c.jsonl"
    async with upstream_server(fake_mcp) as port:
        proc = subprocess.Popen(CMD + ["--upstream", f"http://127.0.0.1:{port}/mcp", "-o", str(cap)], stderr=subprocess.PIPE, text=True)
        try:
            line = await trio.to_thread.run_sync(proc.stderr.readline)
            assert line.startswith("mcptap: listening on http://127.0.0.1:") and line.rstrip().endswith(f"/mcp -> http://127.0.0.1:{port}/mcp"), line
            url = line.split()[3]
            st, body = await post(url, {"jsonrpc": "2.0", "id": 7, "method": "tools/list"})
            assert st == 200 and json.loads(body)["id"] == 7
        finally:
            proc.send_signal(signal.SIGINT)
            rc = await trio.to_thread.run_sync(proc.wait, 10)
    assert rc == 0
    c = read_capture(str(cap))
    assert c.header["transport"] == "http" and c.end is not None
    assert [r["kind"] for r in c.records if r["type"] == "message"] == ["request", "response"]


async def test_a_server_s_own_signals_never_stop_the_http_tap(tmp_path):
    """SIGUSR1/SIGUSR2/SIGALRM (the stdio tap passes them on to its server; the HTTP tap has
    none to pass them to) ended mcptap by their default action, its capture without an end."""
    cap = tmp_path / "c.jsonl"
    async with upstream_server(fake_mcp) as port:
        proc = subprocess.Popen(CMD + ["--upstream", f"http://127.0.0.1:{port}/mcp", "-o", str(cap)], stderr=subprocess.PIPE, text=True)
        try:
            url = (await trio.to_thread.run_sync(proc.stderr.readline)).split()[3]
            for i, sig in enumerate((signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM)):
                proc.send_signal(sig)
                st, body = await post(url, {"jsonrpc": "2.0", "id": i, "method": "tools/list"})   # answered after it: still relaying
                assert st == 200 and json.loads(body)["id"] == i
            assert proc.poll() is None
        finally:
            proc.send_signal(signal.SIGINT)
            rc = await trio.to_thread.run_sync(proc.wait, 10)
    assert rc == 0
    assert read_capture(str(cap)).end is not None


async def test_a_killed_recorder_process_never_stops_the_relay(tmp_path):
    """The recorder runs in a process of its own (transport/http_recorder.py):
    killed, it costs the capture its end, never the relay; one line says so,
    and --strict-capture exits 74."""
    cap = tmp_path / "c.jsonl"
    async with upstream_server(fake_mcp) as port:
        proc = subprocess.Popen(CMD + ["--upstream", f"http://127.0.0.1:{port}/mcp", "-o", str(cap), "--strict-capture"],
                                stderr=subprocess.PIPE, text=True)
        try:
            url = (await trio.to_thread.run_sync(proc.stderr.readline)).split()[3]
            st, _ = await post(url, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
            with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as f:
                (child,) = [int(x) for x in f.read().split()]
            os.kill(child, signal.SIGKILL)
            for i in range(2, 6):
                st, body = await post(url, {"jsonrpc": "2.0", "id": i, "method": "tools/list"})
                assert st == 200 and json.loads(body)["id"] == i
        finally:
            proc.send_signal(signal.SIGINT)
            rc = await trio.to_thread.run_sync(proc.wait, 10)
    err = proc.stderr.read()
    assert rc == 74, err
    assert err.count("recording stopped: the recorder process was killed by signal 9 (the relay goes on)") == 1, err
    assert "stopped: 5 exchange(s)" in err and "capture incomplete (the recorder process was killed by signal 9; no end record)" in err
    assert read_capture(str(cap)).end is None


@pytest.mark.parametrize("args, msg", [
    (["--upstream", "ftp://x"], "http:// or https://"),
    (["--upstream", "http://127.0.0.1:9/mcp", "--listen", "0.0.0.0:0"], "--allow-remote"),
    (["--upstream", "http://127.0.0.1:9/mcp", "--listen", "127.0.0.1:99999"], "the port 99999 is out of range"),
    (["--upstream", "http://127.0.0.1:9/mcp", "--listen", "banana"], "the host name does not resolve"),
])
def test_usage_errors_exit_2(args, msg, tmp_path):
    p = subprocess.run(CMD + args + ["-o", str(tmp_path / "c.jsonl")], capture_output=True, text=True, timeout=30)
    assert p.returncode == 2 and msg in p.stderr, p.stderr


def test_parse_listen():
    from mcptap.cli.record_http import parse_listen
    assert parse_listen("127.0.0.1:8080") == ("127.0.0.1", 8080)
    assert parse_listen(":9") == ("127.0.0.1", 9) and parse_listen("9") == ("127.0.0.1", 9)
    assert parse_listen("[::1]:5") == ("::1", 5) and parse_listen("localhost") == ("localhost", 0)


def test_a_tap_that_cannot_listen_keeps_the_older_captures_and_leaves_none(tmp_path):
    """`--keep 1` with a busy port used to delete the server's previous capture
    and leave an empty one in its place."""
    import socket

    from mcptap.capture.writer import CaptureWriter
    from mcptap.clock import monotonic_us_clock, utc_timestamp
    from mcptap.recorder import Recorder

    old = tmp_path / "20200101T000000Z-srv-1.jsonl"
    rec = Recorder(CaptureWriter.open(str(old)), "http", target={"url": "http://127.0.0.1:9/mcp"}, header_extra={"name": "srv"},
                   clock=monotonic_us_clock(), started=utc_timestamp())
    rec.close(exit_code=0)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        p = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "record", "--upstream", "http://127.0.0.1:9/mcp",
                            "--listen", f"127.0.0.1:{port}", "--dir", str(tmp_path), "--name", "srv", "--keep", "1"],
                           capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "cannot listen" in p.stderr and "removed" not in p.stderr, p.stderr
    assert sorted(f.name for f in tmp_path.iterdir()) == [old.name]


async def test_a_token_in_the_upstream_path_is_never_printed(tmp_path):
    """The listen URL repeats the upstream's path: a token there (``/mcp/sk-live-…``) is hidden
    on stderr as in the capture (hosts keep a server's stderr in their logs); clients use the
    path they gave (``pytest_plugin.tap_url``), and so does a usage error's message."""
    from mcptap.pytest_plugin import tap_url
    from mcptap.redact import placeholder

    token = "sk-live-" + "A1b2C3d4E5f6G7h8I9j0K1"
    cap = tmp_path / "c.jsonl"
    async with upstream_server(fake_mcp) as port:
        upstream = f"http://127.0.0.1:{port}/mcp/{token}"
        proc = subprocess.Popen(CMD + ["--upstream", upstream, "-o", str(cap)], stderr=subprocess.PIPE, text=True)
        try:
            line = await trio.to_thread.run_sync(proc.stderr.readline)
            assert line.startswith("mcptap: listening on http://127.0.0.1:") and token not in line, line
            assert f"/mcp/{placeholder(token)} -> http://127.0.0.1:{port}/mcp/{placeholder(token)}" in line, line
            st, body = await post(tap_url(line.split()[3], upstream), {"jsonrpc": "2.0", "id": 7, "method": "tools/list"})
            assert st == 200 and json.loads(body)["id"] == 7
        finally:
            proc.send_signal(signal.SIGINT)
            rc = await trio.to_thread.run_sync(proc.wait, 10)
            rest = proc.stderr.read()
    assert rc == 0 and token not in rest and token not in cap.read_text()
    for argv in (CMD + ["--upstream", f"ftp://127.0.0.1/mcp/{token}"], CMD + ["--upstream", f"http://[::1/mcp/{token}"],
                 [sys.executable, "-m", "mcptap.cli.main", "replay", str(cap), "--url", f"ftp://h/mcp/{token}"]):
        bad = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        assert bad.returncode == 2 and "URL" in bad.stderr and token not in bad.stderr and placeholder(token) in bad.stderr, bad.stderr


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGQUIT])
async def test_a_hangup_or_quit_stops_the_http_tap_with_its_capture_finished(tmp_path, sig):
    """SIGHUP (the terminal closed) and SIGQUIT ended mcptap by their default action (SIGQUIT
    with a core), its capture without an end record; they stop it as SIGINT/SIGTERM do, as
    they stop the stdio tap and serve."""
    cap = tmp_path / "c.jsonl"
    async with upstream_server(fake_mcp) as port:
        proc = subprocess.Popen(CMD + ["--upstream", f"http://127.0.0.1:{port}/mcp", "-o", str(cap)], stderr=subprocess.PIPE, text=True)
        try:
            url = (await trio.to_thread.run_sync(proc.stderr.readline)).split()[3]
            st, _ = await post(url, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
            assert st == 200
        finally:
            proc.send_signal(sig)
            rc = await trio.to_thread.run_sync(proc.wait, 10)
    assert rc == 0
    c = read_capture(str(cap))
    assert c.end is not None and c.end.get("complete", True)


BOOM = """
import sys
from mcptap.relay.http.observe import HttpObserver
def boom(self, items):
    raise RuntimeError("boom")
HttpObserver.handle = boom
from mcptap.cli.record_http import standalone
sys.argv[0] = "mcptap"
standalone()
"""


async def test_recording_stopped_is_an_incomplete_capture_for_strict_capture(tmp_path):
    """The HTTP tap's recorder stopping after an internal error (the relay goes on) said only
    "recording stopped" and exited 0 under --strict-capture, where the stdio tap says the
    capture is incomplete and exits 74."""
    cap = tmp_path / "c.jsonl"
    async with upstream_server(fake_mcp) as port:
        proc = subprocess.Popen([sys.executable, "-c", BOOM, "--upstream", f"http://127.0.0.1:{port}/mcp", "-o", str(cap), "--strict-capture"],
                                stderr=subprocess.PIPE, text=True)
        try:
            url = (await trio.to_thread.run_sync(proc.stderr.readline)).split()[3]
            st, _ = await post(url, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
            assert st == 200                                  # the relay goes on
        finally:
            proc.send_signal(signal.SIGTERM)
            rc = await trio.to_thread.run_sync(proc.wait, 20)
    err = proc.stderr.read()
    assert rc == 74, err
    assert "capture incomplete (recording stopped" in err
