"""A SIGTERM in mcptap's first moments (Python loading click and the tap, ~0.4 s,
before the capture exists) behaves as a later one.

``record --upstream`` stops on SIGTERM with exit 0 and a complete capture; one
that came while mcptap was still starting killed it (exit 143, no capture). The
signal is sent by the process itself at a known point (the first line of
``cli.main.main``, after ``cli/entry.run`` began and before any command code
ran), so the test does not depend on timing.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from mcptap.capture.reader import read_capture

ROOT = Path(__file__).resolve().parents[2]
CHILD = """
import os, signal, sys
import mcptap.cli.main as m
real = m.main
def main(*a, **k):
    os.kill(os.getpid(), signal.SIGTERM)      # delivered at once: the handler in place now decides
    return real(*a, **k)
m.main = main
sys.argv = ["mcptap"] + sys.argv[1:]
from mcptap.cli.entry import run
run()
"""


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", CHILD, *args], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, PYTHONPATH=str(ROOT)))


def test_record_upstream_stops_cleanly_on_a_sigterm_before_the_capture_exists(tmp_path: Path) -> None:
    out = tmp_path / "c.jsonl"
    p = _run("record", "-o", str(out), "--listen", "127.0.0.1:0", "--upstream", "http://127.0.0.1:9/mcp")
    assert p.returncode == 0, (p.returncode, p.stderr)
    cap = read_capture(str(out))
    assert cap.records and cap.records[-1]["type"] == "end", cap.records


def test_near_miss_another_command_still_ends_by_it(tmp_path: Path) -> None:
    """Any other command: the held SIGTERM takes its default action once the
    command is known (as before, a moment later): exit by the signal."""
    p = _run("ls", "--help")
    assert p.returncode == -signal.SIGTERM, (p.returncode, p.stderr)


def test_a_sigterm_ignored_at_start_stays_ignored(tmp_path: Path) -> None:
    """POSIX: a signal started ignored stays so (``nohup``-like): nothing is held, nothing stops."""
    p = subprocess.run([sys.executable, "-c", "import signal; signal.signal(signal.SIGTERM, signal.SIG_IGN)\n" + CHILD, "ls", "--help"],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert p.returncode == 0, (p.returncode, p.stderr)


def _capture(path: Path) -> Path:
    from scripted import handshake, record

    return record(path, handshake())


def test_serve_stops_cleanly_on_a_sigterm_before_its_capture_exists(tmp_path: Path) -> None:
    """``serve`` over stdio ends on SIGTERM with 143 after its ``-o`` capture is finished (a
    host stopping its server); one while mcptap started used to end it by the signal, no capture."""
    own = tmp_path / "own.jsonl"
    p = _run("serve", str(_capture(tmp_path / "c.jsonl")), "-o", str(own))
    assert p.returncode == 128 + signal.SIGTERM, (p.returncode, p.stderr)
    end = read_capture(str(own)).end
    assert end is not None and end["exit_code"] == 128 + signal.SIGTERM


def test_replay_stops_cleanly_on_a_sigterm_before_its_capture_exists(tmp_path: Path) -> None:
    new = tmp_path / "new.jsonl"
    p = _run("replay", str(_capture(tmp_path / "c.jsonl")), "-o", str(new), "--", sys.executable, "-c", "import time; time.sleep(60)")
    assert p.returncode == 128 + signal.SIGTERM, (p.returncode, p.stderr)
    end = read_capture(str(new)).end
    assert end is not None and end.get("replay_error") == "interrupted (SIGTERM)"
