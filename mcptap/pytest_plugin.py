"""pytest plugin (entry point ``pytest11``): captures as test doubles.

The fixture ``mcptap_mock`` gives a test a mock MCP server made from a capture::

    def test_client(mcptap_mock):
        argv = mcptap_mock("tests/captures/weather.jsonl")                    # stdio: the server command
        url = mcptap_mock("tests/captures/weather.jsonl", transport="http")   # HTTP: started, stopped at teardown

``mcptap_mock(path, transport="stdio", *, server=None, record_mode=None,
strict=False, latency=None, speed=None) -> list[str] | str``:

* ``transport="stdio"`` returns the argv (list of str) of ``mcptap serve PATH``
  for the client to spawn; ``"http"`` starts ``mcptap serve PATH --listen
  127.0.0.1:0`` and returns its URL (str), terminated at teardown;
* ``server``: the real server, used when the record mode says to record —
  stdio: its argv (the returned argv is then ``mcptap record -o PATH -- SERVER``,
  so the client's session through the tap becomes the capture); HTTP: its URL
  (the returned URL is an ``mcptap record --upstream`` tap in front of it);
* ``record_mode`` (as in VCR.py), else the ``mcptap`` marker's
  (``@pytest.mark.mcptap(record_mode="none")``), else ``--mcptap-record-mode``
  (default ``once``):

  - ``once``: serve the capture when it exists, record it when it does not (a
    capture with no server message counts as missing: a recording whose test
    failed before any traffic is removed at teardown, and recorded again next
    run; one that failed midway is kept as far as it went);
  - ``new_episodes``: serve the capture; requests it has no answer for are
    forwarded to ``server`` (stdio) and the answers added to the capture. A
    capture that answers every request needs no ``server``; a request it has
    no answer for fails the test (at teardown, naming the methods) when there
    is no server to ask, and always over HTTP, whose captures cannot be
    extended request by request (re-record with ``all`` from ``server``);
    a missing capture is recorded from ``server`` as ``once`` does; when the
    real server answered requests but the capture was not extended (the merge
    failed, or the mock was killed before it was done) the test fails at
    teardown rather than pass with the capture unchanged;
  - ``none``: always serve; a missing capture fails the test;
  - ``all``: always record afresh from ``server``.

``strict``, ``latency`` ("recorded") and ``speed`` are ``mcptap serve``'s
``--strict``, ``--latency`` and ``--speed``. A failure to start the mock fails
the test with mcptap's one-line error.
"""

from __future__ import annotations

import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

MODES = ("once", "new_episodes", "none", "all")
_MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mcptap")
    group.addoption("--mcptap-record-mode", choices=MODES, default=None,
                    help="mcptap_mock record mode (once, new_episodes, none, all; default once)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "mcptap(record_mode=...): record mode of the mcptap_mock fixture in this test")


def _first_line(proc: subprocess.Popen[bytes], pattern: str, timeout: float = 30.0) -> str:
    """Read proc's stderr until a line matching ``pattern`` (group 1 returned)."""
    assert proc.stderr is not None
    buf = b""
    deadline = time.monotonic() + timeout
    fd = proc.stderr.fileno()
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            buf += chunk
            m = re.search(pattern.encode(), buf)
            if m:
                return m.group(1).decode()
        elif proc.poll() is not None:
            break
    proc.kill()
    text = buf.decode("utf-8", "replace").strip() or f"exited with status {proc.wait()}"
    pytest.fail(f"mcptap did not start: {text}", pytrace=False)


def tap_url(listening: str, upstream: str) -> str:
    """The URL clients use through a tap: the origin of the URL it prints (``mcptap: listening on
    URL``, whose path hides the upstream path's secrets) and the path of ``upstream``."""
    origin = "/".join(listening.split("/", 3)[:3])
    return origin + (urlsplit(upstream).path or "/")


class MockFactory:
    """What ``mcptap_mock`` returns: call it (see module docstring)."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self._procs: list[subprocess.Popen[bytes]] = []
        #: (the mock's own session, the capture it served, why nothing new can be recorded):
        #: new_episodes without a way to extend, judged at teardown
        self._judge: list[tuple[Path, Path, str]] = []
        #: (the mock's own session, the capture it extends, its episode count before): new_episodes
        #: with a server, judged at teardown (the real server asked, and the capture not extended?)
        self._extends: list[tuple[Path, Path, int]] = []
        self._tmp: str | None = None
        #: captures this test records: one the server said nothing in is not kept (see ``discard_silent``)
        self._recorded: list[Path] = []

    def __call__(self, path: str | os.PathLike[str], transport: str = "stdio", *, server: Sequence[str] | str | None = None,
                 record_mode: str | None = None, strict: bool = False, latency: str | None = None,
                 speed: float | None = None) -> list[str] | str:
        mode = record_mode or self.mode
        if mode not in MODES:
            raise ValueError(f"record_mode {mode!r}: expected one of {', '.join(MODES)}")
        if transport not in ("stdio", "http"):
            raise ValueError(f"transport {transport!r}: expected 'stdio' or 'http'")
        cap = Path(path)
        argv = list(server) if server is not None and not isinstance(server, str) else None
        url = server if isinstance(server, str) else None
        # a capture the server never said anything in (its recording run failed before any
        # traffic) cannot answer anything: counted as missing, so ``once`` records it again
        exists = cap.is_file() and cap.stat().st_size > 0 and _server_spoke(cap)
        missing = ("does not exist" if not cap.is_file() or cap.stat().st_size == 0 else
                   "holds no server messages (its recording ended before any traffic)")
        record = mode == "all" or (mode in ("once", "new_episodes") and not exists)
        if record:
            if server is None:
                why = missing if not exists else f"is to be recorded afresh (record mode {mode})"
                pytest.fail(f"mcptap_mock: capture {cap} {why}, and no server= to record from", pytrace=False)
        elif not exists:
            pytest.fail(f"mcptap_mock: capture {cap} {missing} (record mode {mode})", pytrace=False)
        if record:
            cap.parent.mkdir(parents=True, exist_ok=True)
            self._recorded.append(cap)
            if transport == "stdio":
                if argv is None:
                    raise ValueError("server= for a stdio mock is the server's argv (a list)")
                return [*_MCPTAP, "record", "--quiet", "-o", str(cap), "--", *argv]
            if url is None:
                raise ValueError("server= for an HTTP mock is the server's URL")
            listen = self._start([*_MCPTAP, "record", "--upstream", url, "--listen", "127.0.0.1:0", "-o", str(cap), "--quiet"],
                                 r"listening on (\S+)")
            return tap_url(listen, url)
        args = [str(cap)]
        if strict:
            args.append("--strict")
        if latency is not None:
            args += ["--latency", latency]
        if speed is not None:
            args += ["--speed", str(speed)]
        if mode == "new_episodes" and transport == "stdio" and argv is not None:
            own = self._session_file()
            self._extends.append((own, cap, _episodes(cap)))
            args += ["-o", str(own), "--extend", "--", *argv]      # what the capture cannot answer, the real server does
        elif mode == "new_episodes":
            # replay only: the mock records its own session, so teardown can tell whether
            # anything new was asked (then the test fails: nothing can record it here)
            if transport == "stdio" and server is not None:
                raise ValueError("server= for a stdio mock is the server's argv (a list)")
            why = ("and no server= to record from" if server is None else
                   f"and an HTTP capture cannot be extended request by request: re-record it (record_mode='all') from {server}")
            own = self._session_file()
            self._judge.append((own, cap, why))
            args += ["-o", str(own)]
        if transport == "stdio":
            return [*_MCPTAP, "serve", "--quiet", *args]
        return self._start([*_MCPTAP, "serve", "--listen", "127.0.0.1:0", *args], r"serving .* on (\S+)")

    def _session_file(self) -> Path:
        if self._tmp is None:
            self._tmp = tempfile.mkdtemp(prefix="mcptap-mock-")
        return Path(self._tmp) / f"session-{len(self._judge) + len(self._extends) + 1}.jsonl"

    def unanswered(self) -> list[str]:
        """One line per served capture (new_episodes, replay only) that had no
        answer for a request of the test's client: the capture, the methods, why."""
        from mcptap.capture.reader import CaptureStream
        from mcptap.errors import CaptureReadError

        out = []
        for own, cap, why in self._judge:
            methods: list[str] = []
            try:
                stream = CaptureStream(str(own))
                for rec in stream:
                    for f in rec.get("findings", ()) if rec.get("type") == "message" else ():
                        if f.get("code") == "serve.no_recorded_answer":
                            methods.append(str((f.get("data") or {}).get("method")))
                stream.close()
            except CaptureReadError:
                continue            # the mock never started (its own error failed the test already)
            if methods:
                out.append(f"mcptap_mock: capture {cap} has no answer for {', '.join(sorted(set(methods)))} "
                           f"(record mode new_episodes), {why}")
        return out

    def not_extended(self) -> list[str]:
        """One line per capture served with ``--extend`` whose real server was started (so
        it answered something) while the capture's episode count stayed as it was."""
        from mcptap.capture.reader import CaptureStream
        from mcptap.errors import CaptureReadError

        out = []
        for own, cap, before in self._extends:
            try:
                stream = CaptureStream(str(own))
                asked = any(r.get("type") == "process" and r.get("event") == "spawn" for r in stream)
                stream.close()
            except CaptureReadError:
                continue            # the mock never started (its own error failed the test already)
            if asked and _episodes(cap) <= before:
                out.append(f"mcptap_mock: the real server answered requests, but capture {cap} was not extended with them "
                           "(record mode new_episodes; the mock's stderr says why)")
        return out

    def discard_silent(self) -> None:
        """Remove each capture this test recorded that is complete (its end record written,
        so its recorder is done) and holds no server message: a test that failed before any
        traffic leaves nothing a later run would have to serve (VCR.py does not save an unused
        cassette either). A capture still being written is left alone."""
        from mcptap.capture.reader import CaptureStream
        from mcptap.errors import CaptureReadError

        for cap in self._recorded:
            try:
                stream = CaptureStream(str(cap))
                spoke = any(_is_server_message(r) for r in stream)
                stream.close()
            except (CaptureReadError, OSError):
                continue
            if not spoke and stream.end is not None:
                for f in (cap, *cap.parent.glob(cap.name + ".spill*")):
                    f.unlink(missing_ok=True)
        self._recorded.clear()

    def _start(self, argv: list[str], pattern: str) -> str:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self._procs.append(proc)
        return _first_line(proc, pattern)

    def close(self) -> None:
        """Stop the HTTP mocks and taps this test started (SIGTERM, then SIGKILL)."""
        for proc in self._procs:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            if proc.stderr is not None:
                proc.stderr.close()
        self._procs.clear()

    def cleanup(self) -> None:
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None


def _is_server_message(rec: dict[str, Any]) -> bool:
    return rec.get("type") == "message" and rec.get("dir") == "s2c"


def _server_spoke(cap: Path) -> bool:
    """Whether the capture holds a server message; True when it cannot be read (serving it
    then fails with mcptap's own error rather than it being silently recorded over)."""
    from mcptap.capture.reader import CaptureStream
    from mcptap.errors import CaptureReadError

    try:
        stream = CaptureStream(str(cap))
        spoke = any(_is_server_message(r) for r in stream)
        stream.close()
    except (CaptureReadError, OSError):
        return True
    return spoke


def _episodes(cap: Path) -> int:
    """The capture's ``episodes`` count (its header), 0 when it has none or cannot be read."""
    from mcptap.capture.reader import CaptureStream
    from mcptap.errors import CaptureReadError

    try:
        stream = CaptureStream(str(cap))
    except CaptureReadError:
        return 0
    stream.close()
    n = stream.header.get("episodes")
    return n if isinstance(n, int) and not isinstance(n, bool) else 0


def _mode(request: pytest.FixtureRequest) -> str:
    marker = request.node.get_closest_marker("mcptap")
    if marker is not None and marker.kwargs.get("record_mode"):
        return str(marker.kwargs["record_mode"])
    return request.config.getoption("--mcptap-record-mode") or "once"


@pytest.fixture
def mcptap_mock(request: pytest.FixtureRequest) -> Iterator[Callable[..., Any]]:
    """A factory of mock MCP servers from captures (see mcptap.pytest_plugin)."""
    factory = MockFactory(_mode(request))
    try:
        yield factory
    finally:
        factory.close()
        factory.discard_silent()
    try:
        problems = factory.unanswered() + factory.not_extended()
    finally:
        factory.cleanup()
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)
