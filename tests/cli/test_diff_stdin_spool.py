"""``mcptap diff - B``: the copy of standard input never outlives the command,
whether it ends normally, with an error, or is stopped by SIGTERM, SIGINT or
SIGHUP while copying or while diffing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcptap.cli import diff as diff_cli
from replay.capgen import Ex, text_result, write_capture

ROOT = Path(__file__).resolve().parents[2]


def _captures(tmp: Path) -> tuple[Path, Path]:
    pa, pb = tmp / "a.jsonl", tmp / "b.jsonl"
    write_capture(str(pa), [Ex("tools/call", {"name": "add", "arguments": {"a": 1}}, text_result("2"))])
    write_capture(str(pb), [Ex("tools/call", {"name": "add", "arguments": {"a": 1}}, text_result("3"))])
    return pa, pb


def _holds_spool(pid: int, tmpdir: Path) -> bool:
    """True once the process has a file under ``tmpdir`` open (the spool)."""
    fds = Path(f"/proc/{pid}/fd")
    try:
        links = [os.readlink(fds / n) for n in os.listdir(fds)]
    except OSError:
        return False
    return any(link.startswith(str(tmpdir)) for link in links) or any(tmpdir.iterdir())


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to see the spool open")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_while_stdin_is_copied_leaves_no_temporary_file(tmp_path: Path, sig: signal.Signals) -> None:
    pa, pb = _captures(tmp_path)
    spools = tmp_path / "tmp"
    spools.mkdir()
    env = {**os.environ, "TMPDIR": str(spools), "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "mcptap", "diff", "-", str(pb)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        assert proc.stdin is not None
        proc.stdin.write(pa.read_bytes()[:40])      # half a header: the copy waits for more
        proc.stdin.flush()
        deadline = time.monotonic() + 30
        while not _holds_spool(proc.pid, spools):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the spool never appeared"
            time.sleep(0.05)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert list(spools.iterdir()) == []
    assert proc.returncode == 130, err
    assert b"mcptap: interrupted" in err and out == b""


@pytest.mark.parametrize("fd_links", [True, False], ids=["unnamed", "named"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_while_diffing_leaves_no_temporary_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         fd_links: bool, sig: signal.Signals) -> None:
    """Stopped after the copy, while the captures are compared; also where
    there is no /proc (the spool is then a named file removed on the way out)."""
    pa, pb = _captures(tmp_path)
    spools = tmp_path / "tmp"
    spools.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spools))
    if not fd_links:
        monkeypatch.setattr(diff_cli, "_FD_LINKS", str(tmp_path / "no-such-dir"))
    seen: list[str | None] = []

    def stopped(a, b, *, sources, **kw):
        seen.append(sources[0])
        assert sources[0] is not None and Path(sources[0]).read_bytes() == pa.read_bytes()
        os.kill(os.getpid(), sig)
        raise AssertionError("not reached")

    def unhandled(signum, frame):
        # what the default action would do (end the process at once, no finally), minus killing pytest
        raise SystemExit(f"signal {signum} not handled by diff")

    monkeypatch.setattr(diff_cli, "diff_captures", stopped)
    old = signal.signal(sig, unhandled)
    try:
        res = CliRunner().invoke(diff_cli.command, ["-", str(pb)], input=pa.read_bytes())
        assert signal.getsignal(sig) is unhandled            # handlers restored
    finally:
        signal.signal(sig, old)
    assert res.exit_code == 1 and "Aborted!" in res.output, res.output    # click's own runner: Ctrl-C is Abort
    assert seen and list(spools.iterdir()) == []


def test_the_spool_is_removed_after_a_normal_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pa, pb = _captures(tmp_path)
    spools = tmp_path / "tmp"
    spools.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spools))
    for fd_links in (diff_cli._FD_LINKS, str(tmp_path / "no-such-dir")):
        monkeypatch.setattr(diff_cli, "_FD_LINKS", fd_links)
        res = CliRunner().invoke(diff_cli.command, ["-", str(pb)], input=pa.read_bytes())
        assert res.exit_code == 1 and "'2' -> '3'" in res.output, res.output
        assert list(spools.iterdir()) == []
