"""The stdio tap end to end: mcptap runs as a subprocess around real server
processes (small Python scripts, coreutils), no OS mocks.

Timeouts below are hang guards, not timing assertions.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from mcptap.capture.reader import read_capture
from mcptap.check.reannotated import Reannotated
from mcptap.transport import stdio

ROOT = Path(__file__).resolve().parents[2]
MCPTAP = [sys.executable, "-m", "mcptap.cli.main", "record"]
PY = sys.executable
HANG = 30  # s, hang guard for one tap run

ECHO_RAW = """
import os
while True:
    data = os.read(0, 65536)
    if not data:
        break
    view = memoryview(data)
    while view:
        view = view[os.write(1, view):]
"""

TRAP = """
import os, signal, sys, time
def handler(signum, frame):
    os.write(1, f"got {signal.Signals(signum).name}\\n".encode())
    os._exit(10 + signum)
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
    signal.signal(s, handler)
os.write(1, b"ready\\n")
while True:
    time.sleep(1)
"""

COUNT_SIGINT = """
import os, signal, time
seen = []
signal.signal(signal.SIGINT, lambda s, f: seen.append(s))
os.write(1, b"ready\\n")
while not seen:
    time.sleep(0.01)
time.sleep(0.5)     # a second, duplicate SIGINT would land here
os.write(1, f"sigint x{len(seen)}\\n".encode())
"""

STUBBORN = """
import os, signal, time
signal.signal(signal.SIGTERM, lambda s, f: os.write(1, b"term ignored\\n"))
os.write(1, b"ready\\n")
while True:
    time.sleep(0.05)
"""


def script(tmp_path: Path, name: str, body: str) -> str:
    p = tmp_path / name
    p.write_text(body)
    return str(p)


def tap(tmp_path: Path, *cmd: str, opts: tuple[str, ...] = (), **kw) -> subprocess.Popen[bytes]:
    env = dict(os.environ, MCPTAP_DIR=str(tmp_path / "caps"))
    return subprocess.Popen([*MCPTAP, "-o", str(tmp_path / "cap.jsonl"), "--quiet", *opts, "--", *cmd],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT, **kw)


def records(tmp_path: Path, type_: str | None = None, event: str | None = None) -> list[dict]:
    cap = read_capture(str(tmp_path / "cap.jsonl"))
    out = [r for r in cap.records if type_ is None or r["type"] == type_]
    return [r for r in out if event is None or r.get("event") == event]


def wait_records(tmp_path: Path, p: subprocess.Popen[bytes], type_: str, event: str, n: int = 1) -> None:
    """Wait (hang guard ``HANG``) until the running tap's capture holds ``n`` such records."""
    deadline = time.monotonic() + HANG
    while len(records(tmp_path, type_, event)) < n:
        assert p.poll() is None, p.returncode
        assert time.monotonic() < deadline, f"no {n} {type_} {event} record(s)"
        time.sleep(0.01)


def end_record(tmp_path: Path) -> dict:
    cap = read_capture(str(tmp_path / "cap.jsonl"))
    assert cap.end is not None
    return cap.end


def codes(recs: list[dict]) -> set[str]:
    return {f["code"] for r in recs for f in r.get("findings", ())}


def readline(stream, limit: float = HANG) -> bytes:
    """Read one line from a pipe with a hang guard."""
    out: list[bytes] = []
    t = threading.Thread(target=lambda: out.append(stream.readline()), daemon=True)
    t.start()
    t.join(limit)
    assert out, "no line from the tap"
    return out[0]


# -- bytes ------------------------------------------------------------------

def test_binary_round_trip_is_byte_exact_both_ways(tmp_path: Path) -> None:
    rnd = os.urandom(1 << 20)
    payload = b'{"jsonrpc":"2.0","method":"x"}\n' + rnd + b"\r\n\n\x00\xff" + b"tail without newline"
    p = tap(tmp_path, PY, "-c", ECHO_RAW)
    out, err = p.communicate(payload, timeout=HANG)
    assert p.returncode == 0, err
    assert out == payload
    assert err == b""
    end = end_record(tmp_path)
    digest = hashlib.sha256(payload).hexdigest()
    assert end["c2s"]["bytes"] == end["s2c"]["bytes"] == len(payload)
    assert end["c2s"]["sha256"] == end["s2c"]["sha256"] == digest


def test_16_mib_line_relayed_whole(tmp_path: Path) -> None:
    line = b'{"jsonrpc":"2.0","id":1,"result":{"blob":"' + b"a" * (16 << 20) + b'"}}\n'
    p = tap(tmp_path, PY, "-c", ECHO_RAW)
    out, _ = p.communicate(line, timeout=HANG * 2)
    assert p.returncode == 0
    assert len(out) == len(line) and out == line
    # the recorder may fall behind a 16 MiB burst and store it unframed
    # (chunk records); re-annotation frames it into the same two messages
    msgs = [r for r in Reannotated.open(str(tmp_path / "cap.jsonl")) if r["type"] == "message"]
    assert [m["dir"] for m in msgs] == ["c2s", "s2c"]
    assert all(m.get("raw", "").encode() == line for m in msgs)


def test_stdout_carries_only_server_bytes_and_stderr_passes_through(tmp_path: Path) -> None:
    body = "import sys; sys.stderr.buffer.write(b'log line\\n\\xff\\x00progress 10%\\r'); sys.stderr.flush(); sys.stdout.buffer.write(b'ONLY THIS')"
    env = dict(os.environ, MCPTAP_DIR=str(tmp_path / "caps"))
    # no --quiet: mcptap's own "recording to" line must go to stderr, never stdout
    p = subprocess.run([*MCPTAP, "--", PY, "-c", body], input=b"", capture_output=True, env=env, timeout=HANG, cwd=ROOT)
    assert p.returncode == 0
    assert p.stdout == b"ONLY THIS"
    assert p.stderr.startswith(b"mcptap: recording to ")
    assert b"log line\n\xff\x00progress 10%\r" in p.stderr


def test_stderr_recorded_exactly(tmp_path: Path) -> None:
    blob = bytes(range(256)) * 40
    body = f"import sys; sys.stderr.buffer.write({blob!r}); sys.stderr.flush()"
    p = tap(tmp_path, PY, "-c", body)
    out, err = p.communicate(b"", timeout=HANG)
    assert (p.returncode, out, err) == (0, b"", blob)
    end = end_record(tmp_path)
    assert end["stderr"]["bytes"] == len(blob)
    assert end["stderr"]["sha256"] == hashlib.sha256(blob).hexdigest()


INTERLEAVED = """
import os, time
for i in range(400):
    os.write(1, b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":%d}}\\n' % i)
    os.write(2, b"log %d\\n" % i)
    if i % 20 == 0:
        time.sleep(0.003)
"""


def test_stderr_and_stdout_records_keep_time_order(tmp_path: Path) -> None:
    # the copy of stdout reaches the recorder later than stderr does (a held trickle,
    # the copy pipe): the records must still come in the order of their times
    p = tap(tmp_path, PY, "-c", INTERLEAVED)
    out, err = p.communicate(timeout=HANG)          # host stdin stays open until the server exits
    assert p.returncode == 0 and out.count(b"\n") == 400 and err.count(b"\n") == 400
    recs = records(tmp_path)
    assert [r["seq"] for r in recs] == sorted(r["seq"] for r in recs)
    times = [r["t_us"] for r in recs]
    late = [(recs[i - 1]["type"], recs[i]["type"]) for i in range(1, len(times)) if times[i] < times[i - 1]]
    assert late == []
    assert sum(r["type"] == "message" for r in recs) == 400
    assert records(tmp_path, "process", "exit")[0]["t_us"] >= max(times[:-1])


# -- exit status ---------------------------------------------------------------

@pytest.mark.parametrize(("body", "code"), [
    ("import sys; sys.exit(0)", 0),
    ("import sys; sys.exit(7)", 7),
    ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", 128 + 9),
    ("import os, signal; os.kill(os.getpid(), signal.SIGTERM)", 128 + 15),
])
def test_exit_code_is_the_servers(tmp_path: Path, body: str, code: int) -> None:
    p = tap(tmp_path, PY, "-c", body)
    p.communicate(b"", timeout=HANG)
    assert p.returncode == code
    (exit_rec,) = records(tmp_path, "process", "exit")
    if code > 128:
        assert exit_rec["signal"] == code - 128
    else:
        assert exit_rec["code"] == code
    assert end_record(tmp_path)["exit_code"] == code


def test_server_exit_ends_the_tap_while_host_stdin_still_open(tmp_path: Path) -> None:
    big = b"z" * (3 << 20)
    body = f"import os; v = memoryview(b'z' * {len(big)})\nwhile v: v = v[os.write(1, v):]"
    p = tap(tmp_path, PY, "-c", body)
    data = p.stdout.read()          # stdin stays open: the tap must not wait for it
    assert p.wait(timeout=HANG) == 0
    assert data == big              # everything the server wrote is delivered before exit
    p.stdin.close()
    assert "since_stdin_eof_s" not in records(tmp_path, "process", "exit")[0]


def test_host_closing_stdout_gives_server_sigpipe(tmp_path: Path) -> None:
    p = tap(tmp_path, "yes")
    assert p.stdout.read(100_000)
    p.stdout.close()
    assert p.wait(timeout=HANG) == 128 + signal.SIGPIPE
    (rec,) = records(tmp_path, "process", "stdout_closed_by_host")
    # the bytes the host never got are a finding, so check reports them (it said PASS)
    (f,) = [f for f in rec["findings"] if f["code"] == "process.stdout_closed_by_host"]
    assert f["severity"] == "warn" and f["data"]["undelivered_bytes"] == rec["undelivered_bytes"] > 0


def test_server_closing_stdin_gives_host_epipe(tmp_path: Path) -> None:
    body = "import os, time; os.close(0); os.write(1, b'closed\\n'); time.sleep(3)"
    p = tap(tmp_path, PY, "-c", body)
    assert readline(p.stdout) == b"closed\n"
    deadline = time.monotonic() + HANG
    with pytest.raises(BrokenPipeError):
        while time.monotonic() < deadline:
            p.stdin.write(b'{"jsonrpc":"2.0","method":"x"}\n')
            p.stdin.flush()
            time.sleep(0.01)
    p.wait(timeout=HANG)
    (rec,) = records(tmp_path, "process", "stdin_closed_by_server")
    (f,) = [f for f in rec["findings"] if f["code"] == "process.stdin_closed_by_server"]
    assert f["severity"] == "warn" and f["data"]["undelivered_bytes"] == rec["undelivered_bytes"] > 0


def test_orphan_holding_stdout_is_relayed_and_flagged(tmp_path: Path) -> None:
    p = tap(tmp_path, "sh", "-c", "(sleep 1.5; echo late) & echo early")
    out, _ = p.communicate(timeout=HANG)
    assert out == b"early\nlate\n"
    assert p.returncode == 0
    assert "process.exited_but_stdout_open" in codes(records(tmp_path, "process"))


SETSID_ORPHAN = """
import os, sys, time
if os.fork() == 0:
    os.setsid()                      # leaves the server's process group, keeps stdout
    time.sleep(2.5)
    os.write(1, b"late\\n")
    os._exit(0)
os.write(1, b"early\\n")
sys.stdin.read()
"""


def test_an_orphan_in_a_session_of_its_own_is_not_a_server_still_running(tmp_path: Path) -> None:
    """The server exits on stdin EOF at once; a child that called setsid keeps
    its stdout. The capture said "server still running 0.3 s after its stdin
    was closed" and never exited_but_stdout_open, which is only judged while
    the process group lives (found by a breaker helper)."""
    p = tap(tmp_path, PY, "-c", SETSID_ORPHAN, opts=("--grace", "0.3"))
    assert readline(p.stdout) == b"early\n"
    p.stdin.close()
    assert p.stdout.read() == b"late\n"
    assert p.wait(timeout=HANG) == 0
    found = codes(records(tmp_path, "process"))
    assert "process.exited_but_stdout_open" in found and "process.no_exit_after_stdin_eof" not in found


def test_the_tap_ends_when_the_server_exits_while_the_host_keeps_stdin_open(tmp_path: Path) -> None:
    # the relay's c2s pump is blocked reading a host that never writes again:
    # the relay process ends at once all the same (mcptap closes its control
    # pipe), not after the tap's 5 s fallback kill of a relay that moves nothing
    p = tap(tmp_path, PY, "-c", "print('bye')")
    assert readline(p.stdout) == b"bye\n"
    t0 = time.monotonic()
    code = p.wait(timeout=HANG)
    took = time.monotonic() - t0
    p.stdin.close()
    assert code == 0
    assert took < stdio.RELAY_EXIT_WAIT - 1
    assert records(tmp_path, "process", "exit")


# -- signals and shutdown ------------------------------------------------------

@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT])
def test_signals_are_forwarded_to_the_server(tmp_path: Path, sig: signal.Signals) -> None:
    p = tap(tmp_path, PY, "-c", TRAP)
    assert readline(p.stdout) == b"ready\n"
    p.send_signal(sig)
    out, _ = p.communicate(timeout=HANG)
    assert out == f"got {sig.name}\n".encode()
    assert p.returncode == 10 + sig
    (rec,) = records(tmp_path, "process", "signal")
    assert (rec["signal"], rec["reason"]) == (sig.name, "forwarded")
    assert "process.signal_forwarded" in codes([rec])


OWN_SIGNALS = """
import os, signal, sys
for s in (signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM):
    signal.signal(s, lambda n, f: os.write(1, f"got {signal.Signals(n).name}\\n".encode()))
os.write(1, b"ready\\n")
sys.stdin.buffer.read()
"""


def test_a_server_s_own_signals_are_passed_on_and_never_stop_the_tap(tmp_path: Path) -> None:
    # node opens its inspector on SIGUSR1: by default it killed mcptap (and so the server), the
    # capture left without its end record
    p = tap(tmp_path, PY, "-c", OWN_SIGNALS)
    assert readline(p.stdout) == b"ready\n"
    for sig in (signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM, signal.SIGUSR1):
        p.send_signal(sig)
        assert readline(p.stdout) == f"got {sig.name}\n".encode()
    p.stdin.close()
    assert p.wait(timeout=HANG) == 0
    sigs = [(r["signal"], r["reason"]) for r in records(tmp_path, "process", "signal")]
    assert sigs == [("SIGUSR1", "forwarded"), ("SIGUSR2", "forwarded"), ("SIGALRM", "forwarded"), ("SIGUSR1", "forwarded")]
    assert end_record(tmp_path)["type"] == "end"


def test_terminal_ctrl_c_reaches_the_server_once(tmp_path: Path) -> None:
    # a terminal sends SIGINT to the whole foreground process group
    p = tap(tmp_path, PY, "-c", COUNT_SIGINT, start_new_session=True)
    assert readline(p.stdout) == b"ready\n"
    os.killpg(p.pid, signal.SIGINT)
    out, _ = p.communicate(timeout=HANG)
    assert out == b"sigint x1\n"
    assert p.returncode == 0


IGNORE_ALL = """
import os, signal, time
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(s, signal.SIG_IGN)
os.write(1, b"ready\\n")
while True:
    time.sleep(0.05)
"""


def test_second_signal_escalates_while_the_host_keeps_stdin_open(tmp_path: Path) -> None:
    p = tap(tmp_path, PY, "-c", IGNORE_ALL, opts=("--grace", "0.2"))
    assert readline(p.stdout) == b"ready\n"
    p.send_signal(signal.SIGINT)
    wait_records(tmp_path, p, "process", "signal")   # forwarded (a second one sent sooner could merge with it)
    assert p.poll() is None                      # the first one is only forwarded
    p.send_signal(signal.SIGINT)                 # stdin still open: escalate
    assert p.wait(timeout=HANG) == 128 + signal.SIGKILL
    p.stdin.close()
    sigs = [(r["signal"], r["reason"]) for r in records(tmp_path, "process", "signal")]
    assert sigs == [("SIGINT", "forwarded"), ("SIGINT", "forwarded"), ("SIGTERM", "escalation"), ("SIGKILL", "escalation")]


def test_stdin_eof_closes_server_stdin(tmp_path: Path) -> None:
    body = "import sys, os; data = sys.stdin.buffer.read(); os.write(1, b'eof after %d bytes\\n' % len(data))"
    p = tap(tmp_path, PY, "-c", body)
    out, _ = p.communicate(b"abc", timeout=HANG)
    assert out == b"eof after 3 bytes\n"
    assert p.returncode == 0
    (exit_rec,) = records(tmp_path, "process", "exit")
    assert exit_rec["since_stdin_eof_s"] >= 0
    assert not records(tmp_path, "process", "signal")
    assert [r["dir"] for r in records(tmp_path, "eof")] == ["c2s", "s2c"]


def test_server_ignoring_eof_gets_sigterm_after_grace(tmp_path: Path) -> None:
    body = "import time\nwhile True: time.sleep(1)"
    p = tap(tmp_path, PY, "-c", body, opts=("--grace", "0.2"))
    p.communicate(b"", timeout=HANG)
    assert p.returncode == 128 + signal.SIGTERM
    sigs = records(tmp_path, "process", "signal")
    assert [(r["signal"], r["reason"]) for r in sigs] == [("SIGTERM", "shutdown")]
    assert "process.no_exit_after_stdin_eof" in codes(records(tmp_path, "process"))


def test_server_ignoring_eof_and_sigterm_gets_sigkill(tmp_path: Path) -> None:
    p = tap(tmp_path, PY, "-c", STUBBORN, opts=("--grace", "0.2"))
    assert readline(p.stdout) == b"ready\n"
    p.stdin.close()
    out = p.stdout.read()
    assert p.wait(timeout=HANG) == 128 + signal.SIGKILL
    assert out == b"term ignored\n"
    sigs = records(tmp_path, "process", "signal")
    assert [r["signal"] for r in sigs] == ["SIGTERM", "SIGKILL"]
    (exit_rec,) = records(tmp_path, "process", "exit")
    assert exit_rec["signal"] == signal.SIGKILL
    assert exit_rec["since_stdin_eof_s"] >= 0.4


# -- stderr backpressure -------------------------------------------------------

def test_host_not_draining_stderr_never_blocks_the_server(tmp_path: Path) -> None:
    n = 4 << 20
    body = f"import os\nv = memoryview(b'E' * {n})\nwhile v: v = v[os.write(2, v):]\nos.write(1, b'done\\n')"
    p = tap(tmp_path, PY, "-c", body)
    # read stdout only; mcptap's stderr pipe stays full until the tap exits
    assert readline(p.stdout) == b"done\n"
    p.stdin.close()
    assert p.wait(timeout=HANG) == 0
    shown = p.stderr.read()
    assert 0 < len(shown) < n
    end = end_record(tmp_path)
    assert end["stderr"]["bytes"] == n                  # everything recorded
    assert "process.stderr_backpressure" in codes(records(tmp_path, "process"))
    (exit_rec,) = records(tmp_path, "process", "exit")
    assert exit_rec["stderr_dropped"] > 0


# -- terminals -------------------------------------------------------------------

def test_terminal_stdio_never_made_nonblocking(tmp_path: Path) -> None:
    # On a tty, fds 0/1 share one open file description with the shell: the tap
    # must not set O_NONBLOCK on it (it would break the shell and other jobs).
    import pty

    master, slave = pty.openpty()
    try:
        body = "import os, sys; os.write(1, b'ready\\n'); data = sys.stdin.buffer.read(); os.write(1, b'got %d\\n' % len(data))"
        env = dict(os.environ, MCPTAP_DIR=str(tmp_path / "caps"))
        p = subprocess.Popen([*MCPTAP, "-q", "-o", str(tmp_path / "cap.jsonl"), "--", PY, "-c", body],
                             stdin=slave, stdout=slave, stderr=subprocess.PIPE, env=env, cwd=ROOT)
        seen = b""
        deadline = time.monotonic() + HANG
        while b"ready" not in seen and time.monotonic() < deadline:
            seen += os.read(master, 1024)
        assert b"ready" in seen
        assert os.get_blocking(slave), "the tap set O_NONBLOCK on the terminal"
        os.write(master, b"abc\n\x04")          # a line, then Ctrl-D: EOF on the tap's stdin
        assert p.wait(timeout=HANG) == 0
        while b"got" not in seen and time.monotonic() < deadline:
            seen += os.read(master, 1024)
        assert b"got 4" in seen
        assert os.get_blocking(slave)
    finally:
        os.close(master)
        os.close(slave)


IGNORE_ALL_PID = IGNORE_ALL.replace('b"ready\\n"', 'b"%d\\n" % os.getpid()')


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_host_that_kills_mcptap_kills_the_server_too(tmp_path: Path) -> None:
    """A host stops a server it runs through mcptap as it would run it directly:
    SIGTERM (mcptap passes it on; this server ignores it), then SIGKILL. The
    SIGKILL reaches mcptap only; the server, in a session of its own, used to
    outlive it for good (its parent-death signal was SIGTERM). It dies now."""
    p = tap(tmp_path, PY, "-c", IGNORE_ALL_PID)
    pid = int(readline(p.stdout))
    p.send_signal(signal.SIGTERM)
    wait_records(tmp_path, p, "process", "signal")   # forwarded
    assert p.poll() is None                      # mcptap waits for the server, as the host would
    p.kill()
    p.wait(HANG)
    deadline = time.monotonic() + HANG
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        try:
            os.waitpid(pid, os.WNOHANG)          # (not our child: ChildProcessError)
        except ChildProcessError:
            pass
        time.sleep(0.05)
    else:
        os.kill(pid, signal.SIGKILL)
        pytest.fail("the server outlived mcptap")


def test_a_host_draining_stderr_slowly_sees_where_bytes_were_not_shown(tmp_path: Path) -> None:
    """A host that reads stderr, only slower than the server writes it: the
    tap drops what does not fit its buffer (it never blocks the server), and
    the host's stderr used to join the pieces without a trace, the finding
    blaming a host that 'is not draining'. A line now marks each hole with the
    bytes left out; shown plus left out is what the server wrote."""
    line = b"e" * 97 + b"\n"
    lines = 40000
    body = f"import os, sys\nfor i in range({lines}): os.write(2, b'{line[:-1].decode()}\\n')\nos.write(1, b'done\\n')"
    p = tap(tmp_path, PY, "-c", body)
    got = bytearray()

    def slow_reader() -> None:
        while chunk := p.stderr.read1(4096):
            got.extend(chunk)
            time.sleep(0.002)

    t = threading.Thread(target=slow_reader)
    t.start()
    assert readline(p.stdout) == b"done\n"
    p.stdin.close()
    assert p.wait(timeout=HANG) == 0
    t.join(HANG)
    marks = [m for m in bytes(got).split(b"\n") if m.startswith(b"mcptap: ") and b"not shown here" in m]
    assert marks, "the hole is not marked"
    left_out = sum(int(m.split()[1]) for m in marks)
    (exit_rec,) = records(tmp_path, "process", "exit")
    shown = bytes(got).count(line[:-1])
    assert left_out == exit_rec["stderr_dropped"] and shown * len(line) + left_out >= len(line) * lines - len(line)
    (bp,) = [f for r in records(tmp_path, "process") for f in r.get("findings", ()) if f["code"] == "process.stderr_backpressure"]
    assert "slower than the server writes it" in bp["message"]


IGNORE_EOF = """
import os, time
os.write(1, b"ready\\n")
while True:
    time.sleep(0.05)
"""


def test_a_host_that_signals_before_mcptap_s_grace_still_gets_the_late_exit_finding(tmp_path: Path) -> None:
    """The SDKs close stdin, wait 2 s, then SIGTERM; --grace is 5 s, so mcptap's
    own shutdown never ran and a server that ignores stdin EOF passed
    `check --fail-on warn` (found by a breaker helper). The host's signal while
    the server still runs after EOF is the finding, once."""
    p = tap(tmp_path, PY, "-c", IGNORE_EOF, opts=("--grace", "5"))
    assert readline(p.stdout) == b"ready\n"
    p.stdin.close()
    # the tap must have seen the EOF (its c2s eof record) before the host's wait starts: a
    # loaded machine may take longer than the host's wait to get there
    deadline = time.monotonic() + HANG
    while not [r for r in records(tmp_path, "eof") if r["dir"] == "c2s"]:
        assert p.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)
    time.sleep(0.5)
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=HANG) == 128 + signal.SIGTERM
    late = records(tmp_path, "process", "no_exit_after_stdin_eof")
    assert len(late) == 1 and 0.3 < late[0]["seconds"] < 5
    assert "when the host sent SIGTERM" in late[0]["findings"][0]["message"]
    chk = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "check", "--fail-on", "warn", str(tmp_path / "cap.jsonl")],
                         capture_output=True, text=True, timeout=60)
    assert chk.returncode == 1 and "process.no_exit_after_stdin_eof" in chk.stdout
    # near miss: a server that exits on stdin EOF, signalled afterwards, gets no such finding
    q = tap(tmp_path / "ok", PY, "-c", "import os,sys; os.write(1, b'ready\\n'); sys.stdin.read()")
    assert readline(q.stdout) == b"ready\n"
    q.stdin.close()
    assert q.wait(timeout=HANG) == 0
    assert not records(tmp_path / "ok", "process", "no_exit_after_stdin_eof")


def test_a_host_that_closes_stdin_and_signals_at_once_gives_the_server_no_time(tmp_path: Path) -> None:
    """Closing stdin and signalling in the same moment leaves the server no time
    to exit on EOF: no late-exit finding ("still running 0 s after", found by a
    fixer helper), the signal still forwarded and recorded."""
    p = tap(tmp_path, PY, "-c", IGNORE_EOF, opts=("--grace", "5"))
    assert readline(p.stdout) == b"ready\n"
    p.stdin.close()
    time.sleep(0.05)            # the tap sees the EOF first (else there is nothing to judge)
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=HANG) == 128 + signal.SIGTERM
    assert not records(tmp_path, "process", "no_exit_after_stdin_eof")
    assert records(tmp_path, "process", "signal")


def test_the_time_since_stdin_eof_is_kept_when_the_exit_is_seen_first(tmp_path: Path) -> None:
    """A busy machine may let mcptap see the server's exit before it reads the
    relay's word that the host's stdin ended (the status pipe, read late here):
    the exit record lost since_stdin_eof_s (seen in CI at load 6)."""
    late = ("import trio, mcptap.transport.stdio_os as so; read = so.read_status\n"
            "async def slow(*a):\n"
            "    await trio.sleep(0.5)\n"
            "    await read(*a)\n"
            "so.read_status = slow\n"
            "import sys; from mcptap.cli.main import main; sys.argv[0] = 'mcptap'; main()\n")
    body = "import sys; sys.stdin.buffer.read()"
    p = subprocess.Popen([sys.executable, "-c", late, "record", "-o", str(tmp_path / "cap.jsonl"), "--quiet", "--", PY, "-c", body],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    p.communicate(b"", timeout=HANG)
    assert p.returncode == 0
    (exit_rec,) = records(tmp_path, "process", "exit")
    assert exit_rec["since_stdin_eof_s"] >= 0
