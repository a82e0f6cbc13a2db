"""``mcptap record`` as a user runs it: capture location, permissions, secrets,
bad commands, capture failures. mcptap runs as a subprocess."""

from __future__ import annotations

import os
import re
import resource
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from mcptap.capture.reader import read_capture

MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]
HANG = 30
ECHO = "import sys\nfor line in sys.stdin: sys.stdout.write(line); sys.stdout.flush()"
SECRET = "hunter2-very-secret"
NAME = re.compile(r"^\d{8}T\d{6}Z-[A-Za-z0-9._-]+-\d+\.jsonl$")


def run(args: list[str], env_extra: dict[str, str] | None = None, drop: tuple[str, ...] = (), input: bytes = b"",
        cwd: str | Path = "/", **kw) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])     # cwd is "/" on purpose
    env.update(env_extra or {})
    return subprocess.run([*MCPTAP, *args], input=input, capture_output=True, env=env, cwd=cwd, timeout=HANG, **kw)


def recorded_path(stderr: bytes) -> Path:
    m = re.search(rb"^mcptap: recording to (.+)$", stderr, re.M)
    assert m, stderr
    return Path(m.group(1).decode())


def test_default_capture_dir_from_any_cwd(tmp_path: Path) -> None:
    data = tmp_path / "xdg"
    p = run(["record", "--", sys.executable, "-c", ECHO], {"XDG_DATA_HOME": str(data)}, drop=("MCPTAP_DIR",),
            input=b'{"jsonrpc":"2.0","method":"x"}\n')
    assert p.returncode == 0, p.stderr
    path = recorded_path(p.stderr)
    assert path.parent == data / "mcptap" / "captures"
    assert NAME.match(path.name) and path.exists()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert p.stdout == b'{"jsonrpc":"2.0","method":"x"}\n'


def test_mcptap_dir_override_and_server_name(tmp_path: Path) -> None:
    server = tmp_path / "weather_server.py"
    server.write_text(ECHO)
    p = run(["record", "--", sys.executable, "-u", str(server)], {"MCPTAP_DIR": str(tmp_path / "caps")})
    assert p.returncode == 0
    path = recorded_path(p.stderr)
    assert path.parent == tmp_path / "caps"
    assert "-weather_server-" in path.name
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert read_capture(str(path)).end is not None


def test_quiet_and_output_file(tmp_path: Path) -> None:
    out = tmp_path / "sub" / "my.jsonl"
    p = run(["record", "-q", "-o", str(out), "--", sys.executable, "-c", ECHO], {"MCPTAP_DIR": str(tmp_path / "caps")})
    assert (p.returncode, p.stderr) == (0, b"")
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert not (tmp_path / "caps").exists()


def test_command_without_double_dash_keeps_its_options(tmp_path: Path) -> None:
    p = run(["record", "-q", "-o", str(tmp_path / "c.jsonl"), sys.executable, "-u", "-c", "print('hi')"])
    assert (p.returncode, p.stdout) == (0, b"hi\n")


def test_secrets_in_argv_never_reach_the_capture(tmp_path: Path) -> None:
    out = tmp_path / "c.jsonl"
    p = run(["record", "-q", "-o", str(out), "--", sys.executable, "-c", ECHO, "--token", SECRET,
             f"https://bob:{SECRET}@example.com/?api_key={SECRET}"])
    assert p.returncode == 0
    assert SECRET.encode() not in out.read_bytes()
    cap = read_capture(str(out))
    argv = cap.header["target"]["argv"]
    assert argv[3] == "--token" and argv[4].startswith("«redacted:hmac:")
    (spawn,) = [r for r in cap.records if r.get("event") == "spawn"]
    assert spawn["argv"] == argv


@pytest.mark.parametrize(("make", "code", "words"), [
    (lambda d: str(d / "no-such-server"), 127, b"No such file or directory"),
    (lambda d: "definitely-not-a-command-mcptap", 127, b"No such file or directory"),
    (lambda d: (d / "plain.txt").write_text("x") and str(d / "plain.txt"), 126, b"Permission denied"),
    (lambda d: str(d), 126, b"Permission denied"),
])
def test_bad_command_exits_like_a_shell(tmp_path: Path, make, code: int, words: bytes) -> None:
    cmd = make(tmp_path)
    out = tmp_path / "c.jsonl"
    p = run(["record", "-q", "-o", str(out), "--", cmd, "arg"])
    assert p.returncode == code
    assert p.stdout == b""
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(b"mcptap: cannot run ") and words in lines[0]
    cap = read_capture(str(out))
    (failed,) = [r for r in cap.records if r["type"] == "process"]
    assert failed["event"] == "spawn_failed"
    assert [f["code"] for f in failed["findings"]] == ["process.spawn_failed"]
    assert cap.end is not None and cap.end["exit_code"] == code


def test_uncreatable_capture_still_relays(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    env = {"MCPTAP_DIR": str(blocker / "caps")}
    p = run(["record", "--", sys.executable, "-c", ECHO + "\nsys.exit(3)"], env, input=b"hello\n")
    assert (p.returncode, p.stdout) == (3, b"hello\n")
    assert b"relaying WITHOUT recording" in p.stderr
    strict = run(["record", "--strict-capture", "--", sys.executable, "-c", "print('started')"], env)
    assert (strict.returncode, strict.stdout) == (74, b"")


def test_output_that_is_not_a_regular_file_is_refused() -> None:
    before = os.stat("/dev/null").st_mode
    p = run(["record", "-o", "/dev/null", "--", sys.executable, "-c", "print('ok')"])
    assert (p.returncode, p.stdout) == (0, b"ok\n")
    assert b"not a regular file; relaying WITHOUT recording" in p.stderr
    assert os.stat("/dev/null").st_mode == before


def _small_fsize() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (3000, 3000))


@pytest.mark.parametrize(("opts", "code"), [((), 0), (("--strict-capture",), 74)])
def test_capture_write_failure_never_breaks_the_relay(tmp_path: Path, opts: tuple[str, ...], code: int) -> None:
    # RLIMIT_FSIZE makes the capture file "full" after 3000 bytes (EFBIG), like a full disk
    lines = b"".join(b'{"jsonrpc":"2.0","method":"notifications/message","params":{"n":%d}}\n' % i for i in range(300))
    out = tmp_path / "c.jsonl"
    p = run(["record", "-q", "-o", str(out), *opts, "--", sys.executable, "-c", ECHO], input=lines, preexec_fn=_small_fsize)
    assert p.stdout == lines
    assert p.returncode == code
    assert b"capture incomplete" in p.stderr
    cap = read_capture(str(out))
    assert cap.end is None          # the end record could not be written: readers see it


def test_help_lists_record_and_usage_errors_exit_2() -> None:
    p = run(["--help"])
    assert p.returncode == 0 and b"record" in p.stdout
    assert run(["record"]).returncode == 2


@pytest.mark.parametrize(("argv", "name"), [
    (["python", "-u", "/srv/weather_server.py", "--port", "1"], "weather_server"),
    (["python3.11", "-m", "my_pkg.server"], "my_pkg.server"),
    (["npx", "-y", "@modelcontextprotocol/server-everything@1.2.0", "stdio"], "server-everything"),
    (["uv", "run", "--directory", "/x", "srv.py"], "srv"),
    (["/opt/bin/git-mcp"], "git-mcp"),
    (["node"], "node"),
    (["sh", "-c", "exec thing"], "sh"),
    (["we ird/na me!*"], "na-me"),
    ([], "server"),
])
def test_server_name_from_argv(argv: list[str], name: str) -> None:
    from mcptap.paths import server_name

    assert server_name(argv) == name


def test_capture_name_is_utc_and_sortable() -> None:
    from datetime import datetime, timedelta, timezone

    from mcptap.paths import capture_name

    t = datetime(2026, 11, 29, 20, 5, 7, tzinfo=timezone(timedelta(hours=2)))
    assert capture_name(["python", "s.py"], t, 42) == "20261129T180507Z-s-42.jsonl"


def test_refuses_to_overwrite_a_file_that_is_not_a_capture(tmp_path) -> None:
    import subprocess
    import sys

    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    p = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "record", "-o", str(notes), "--", "true"],
                       capture_output=True, timeout=30)
    assert p.returncode == 2 and b"not an mcptap capture" in p.stderr
    assert notes.read_text() == "my notes\n"


def test_http_options_are_rejected_for_a_stdio_command(tmp_path) -> None:
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "record", "--listen", "127.0.0.1:0", "-o", str(tmp_path / "c.jsonl"),
                        "--", "true"], capture_output=True, timeout=30)
    assert p.returncode == 2 and b"--listen applies to the HTTP tap" in p.stderr


@pytest.mark.parametrize("grace", ["nan", "inf", "-1"])
def test_grace_must_be_a_finite_number_of_seconds(grace: str) -> None:
    """click's FloatRange lets NaN through: a NaN timeout left mcptap blocked
    for good after the host closed stdin, deaf to SIGTERM (found by a breaker helper)."""
    p = subprocess.run([*MCPTAP, "record", "--grace", grace, "--", sys.executable, "-c", "pass"], capture_output=True, timeout=60)
    assert p.returncode == 2 and b"--grace" in p.stderr, p.stderr


def test_a_second_record_into_a_live_capture_relays_without_recording(tmp_path: Path) -> None:
    """Two host windows with the same `-o`: the second opened (truncated) the
    file the first was recording into; both then wrote into it, and the first
    session's header was lost (found by a breaker helper). The capture lock
    refuses the second writer: its session still works, unrecorded, and says
    so; with --strict-capture it does not start."""
    out = tmp_path / "same.jsonl"
    first = subprocess.Popen([*MCPTAP, "record", "-q", "-o", str(out), "--", sys.executable, "-c", ECHO],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert first.stdin is not None and first.stdout is not None
    try:
        first.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
        first.stdin.flush()
        assert b'"id":1' in first.stdout.readline()
        size = out.stat().st_size
        second = subprocess.run([*MCPTAP, "record", "-q", "-o", str(out), "--", sys.executable, "-c", ECHO],
                                input=b'{"jsonrpc":"2.0","id":2,"method":"ping"}\n', capture_output=True, timeout=60)
        assert second.returncode == 0 and b'"id":2' in second.stdout
        assert b"another mcptap is recording into it; relaying WITHOUT recording" in second.stderr, second.stderr
        strict = subprocess.run([*MCPTAP, "record", "-q", "--strict-capture", "-o", str(out), "--", sys.executable, "-c", ECHO],
                                input=b"", capture_output=True, timeout=60)
        assert strict.returncode == 74 and b"another mcptap is recording into it" in strict.stderr
        assert out.stat().st_size >= size
    finally:
        first.stdin.close()
        first.wait(timeout=60)
    cap = read_capture(str(out))
    assert cap.end is not None and [r["type"] for r in cap.records].count("header") == 0 and cap.header["transport"] == "stdio"
    # once it ended, the file is an ordinary finished capture: overwriting it is allowed, as before
    assert run(["record", "-q", "-o", str(out), "--", sys.executable, "-c", "pass"]).returncode == 0


def test_the_header_records_the_server_s_working_directory(tmp_path: Path) -> None:
    """``target.cwd`` (docs/capture-format.md) is the directory the server ran
    in: where its relative paths point. It was documented but never written."""
    work = tmp_path / "work dir"
    work.mkdir()
    out = tmp_path / "c.jsonl"
    p = run(["record", "-q", "-o", str(out), "--", sys.executable, "-c", "import os; print(os.getcwd())"], cwd=work)
    assert p.returncode == 0, p.stderr
    cap = read_capture(str(out))
    assert cap.header["target"]["cwd"] == str(work) == p.stdout.decode().strip()


def test_a_working_directory_that_cannot_be_read_is_left_out(tmp_path: Path) -> None:
    """A deleted working directory has no path: ``cwd`` is absent, the capture
    and the relay are as usual."""
    gone = tmp_path / "gone"
    gone.mkdir()
    out = tmp_path / "c.jsonl"
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    p = subprocess.run(["sh", "-c", 'cd "$1" && rmdir "$1" && shift && exec "$@"', "sh", str(gone), *MCPTAP,
                        "record", "-q", "-o", str(out), "--", sys.executable, "-c", ECHO],
                       input=b"x\n", capture_output=True, env=env, timeout=HANG)
    assert (p.returncode, p.stdout) == (0, b"x\n"), p.stderr
    cap = read_capture(str(out))
    assert "cwd" not in cap.header["target"] and cap.end is not None


@pytest.mark.parametrize(("content", "code", "words"), [
    # a shell runs such a file with /bin/sh; exec (and so every host) refuses it
    (b"echo hi\n", 126, [b"no '#!' line", b"Exec format error", b"#!/bin/sh"]),
    (b"#!/bin/sh\r\necho hi\r\n", 127, [b"'#!' interpreter '/bin/sh\\r' was not found", b"CR LF"]),
    (b"#!/no/such/interpreter -x\necho hi\n", 127, [b"'#!' interpreter '/no/such/interpreter' was not found"]),
    (b"\x7fELF\x02\x01\x01" + bytes(40), 126, [b"not a program this system can run", b"Exec format error"]),
])
@pytest.mark.parametrize("via_path", [False, True])
def test_an_executable_that_exec_refuses_is_explained(tmp_path: Path, content: bytes, code: int, words: list[bytes],
                                                       via_path: bool) -> None:
    """An executable file that exec cannot start gets a message naming why (a
    script without its '#!' line, an interpreter that is not there, a binary
    for another machine), not only strerror; exit status as a shell's."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    server = bindir / "my-server"
    server.write_bytes(content)
    server.chmod(0o755)
    out = tmp_path / "c.jsonl"
    cmd = "my-server" if via_path else str(server)
    p = run(["record", "-q", "-o", str(out), "--", cmd], {"PATH": f"{bindir}:{os.environ.get('PATH', '')}"})
    assert p.returncode == code
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"mcptap: cannot run {cmd!r}: ".encode()), p.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])
    cap = read_capture(str(out))
    (failed,) = [r for r in cap.records if r["type"] == "process"]
    assert failed["event"] == "spawn_failed" and failed["exit_code"] == code
    assert failed["findings"][0]["message"] == lines[0].decode()[len("mcptap: "):]
