"""What the taps hold in memory: the stdio relay process shares mcptap's pages (its cyclic
collector must not write to them), and the taps import nothing they do not run."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mcptap.transport import http_trim, relay_child
from mcptap.transport.spill import SpillFile


def test_the_relay_process_starts_with_the_pre_fork_objects_frozen_and_mcptaps_collector_unchanged(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the relay's first collection of the objects it inherited writes to the header of
    # every one of them: each page holding one is then copied (copy on write) and held
    # twice. Frozen at the fork, they stay out of its collections; mcptap's own collector
    # (the parent) is left as it was.
    real_fork = os.fork
    at_fork: list[int] = []

    def fork() -> int:
        at_fork.append(gc.get_freeze_count())
        return real_fork()

    monkeypatch.setattr(os, "fork", fork)
    # and the heap's free pages go back first: a free page resident at the fork is copied by
    # whichever process reuses it, and the other keeps the original, unused
    trims: list[tuple[int, int]] = []
    monkeypatch.setattr(http_trim, "_TRIM", lambda pad: trims.append((os.getpid(), gc.get_freeze_count())) or 1)
    host_in_r, host_in_w = os.pipe()
    host_out_r, host_out_w = os.pipe()
    child_in_r, child_in_w = os.pipe()
    child_out_r, child_out_w = os.pipe()
    before = gc.get_freeze_count()
    spill = SpillFile(None, str(tmp_path))
    pid, copy_r, ctl_w, status_r, through_w = relay_child.start_relay(host_in_r, host_out_w, child_in_w, child_out_r,
                                                                       lambda: time.monotonic_ns() // 1000, spill)
    try:
        assert at_fork and at_fork[0] > 0
        assert gc.get_freeze_count() == before == 0
        assert trims == [(os.getpid(), 0)]
    finally:
        # the relay inherited this process's ends of the pipes too: they never end, it is killed
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        for fd in (host_in_r, host_out_w, child_in_w, child_out_r, host_in_w, child_out_w, ctl_w, through_w, copy_r,
                   status_r, host_out_r, child_in_r):
            os.close(fd)
        spill.close()


# imported only where a rare path runs (a float literal of the exact JSON parse): each would be
# resident in every tap's processes, idle or not
NOT_IN_THE_TAPS = ("decimal", "_decimal")


def test_record_imports_none_of_what_it_never_runs(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-X", "importtime", "-m", "mcptap.cli.main", "record", "-q", "-o",
                          str(tmp_path / "c.jsonl"), "--", sys.executable, "-c", "pass"],
                         capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert run.returncode == 0, run.stderr
    imported = {line.rpartition("|")[2].strip() for line in run.stderr.splitlines() if line.startswith("import time:")}
    assert "mcptap.transport.stdio" in imported
    assert imported.isdisjoint(NOT_IN_THE_TAPS)


def test_the_http_tap_imports_none_of_what_it_never_runs(tmp_path: Path) -> None:
    # both of its processes (the recorder process's own imports included: it shares stderr)
    tap = subprocess.Popen([sys.executable, "-X", "importtime", "-m", "mcptap.cli.main", "record", "-o",
                            str(tmp_path / "c.jsonl"), "--upstream", "http://127.0.0.1:9/mcp"],
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert tap.stderr is not None
    lines = []
    try:
        for line in tap.stderr:          # until it listens (its URL on stderr)
            lines.append(line)
            if line.startswith("mcptap: recording to"):
                break
        else:
            pytest.fail("the tap ended before it listened: " + "".join(lines))
    finally:
        tap.send_signal(signal.SIGINT)
        lines += tap.communicate(timeout=120)[1].splitlines(keepends=True)
    order = [line.rpartition("|")[2].strip() for line in lines if line.startswith("import time:")]
    imported = set(order)
    assert "mcptap.transport.http" in imported
    assert imported.isdisjoint(NOT_IN_THE_TAPS + ("mcptap.transport.stdio", "mcptap.transport.relay_child"))
    # what the relay imports to listen (the host name codec of getaddrinfo) is imported before
    # the recorder process forks (its module the last imported before): imported after, it was
    # written into the pages both processes still shared, copying them
    assert order.index("encodings.idna") < order.index("mcptap.transport.http_recorder_child")


# records each mallopt call (process id, parameter, value) on stderr, then makes it
_SEEN_MALLOPT = ("import os, sys, mcptap.transport.http_trim as t; real = t._MALLOPT; "
                 "t._MALLOPT = real and (lambda p, v: (os.write(2, b'mallopt %d %d %d\\n' % (os.getpid(), p, v)), real(p, v))[1]); "
                 "from mcptap.cli.main import main; sys.argv[0] = 'mcptap'; main()")


def test_the_stdio_tap_maps_its_large_blocks_before_the_relay_forks(tmp_path: Path) -> None:
    # after a flood the copies and records its processes freed stayed in their heaps
    # (http_trim.map_large_blocks): set once in mcptap, before the fork, the relay inherits it
    if http_trim._MALLOPT is None:
        pytest.skip("mallopt is glibc's")
    tap = subprocess.Popen([sys.executable, "-c", _SEEN_MALLOPT, "record", "-q", "-o", str(tmp_path / "c.jsonl"), "--",
                            sys.executable, "-c", "import os; os.write(1, b'{}\\n' * 100000)"],
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = tap.communicate(timeout=120)
    assert tap.returncode == 0, err
    assert out == b"{}\n" * 100000
    calls = [line.split()[1:] for line in err.decode().splitlines() if line.startswith("mallopt ")]
    assert [list(map(int, c)) for c in calls] == [[tap.pid, -3, http_trim.MMAP_THRESHOLD]]


def test_a_python_without_ctypes_still_records(monkeypatch) -> None:
    # http_trim looked glibc up through ctypes and caught only OSError/AttributeError: on a Python
    # built without _ctypes, `record` failed to load (ImportError, exit 2) (found by a breaker helper)
    import builtins

    from mcptap.transport import http_trim

    real = builtins.__import__

    def no_ctypes(name: str, *args, **kwargs):  # type: ignore[no-untyped-def]
        if name == "ctypes":
            raise ImportError("No module named '_ctypes'")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ctypes)
    assert http_trim._load("mallopt") is None
