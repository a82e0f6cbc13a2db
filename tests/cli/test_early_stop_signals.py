"""Every stop signal in mcptap's first moments (Python loading click and the command,
before the capture exists) behaves as a later one, for ``record``, ``serve`` and ``replay``.

Only SIGTERM used to be held from the start (``mcptap/early_signals.py``): a SIGHUP or
SIGQUIT then killed ``replay`` (exit 129/131, no capture), and ``serve`` and ``record``
alike. The signal is sent by the process itself at a known point (the first line of
``cli.main.main``, after ``cli/entry.run`` began and before any command code ran): a kill
to oneself is delivered before ``os.kill`` returns, so no timing is involved.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from mcptap.capture.reader import read_capture

ROOT = Path(__file__).resolve().parents[2]
CHILD = """
import os, signal, sys
import mcptap.cli.main as m
real = m.main
SIGS = [int(s) for s in os.environ["EARLY_SIGNALS"].split(",")]
def main(*a, **k):
    for s in SIGS:
        os.kill(os.getpid(), s)      # delivered at once: the handler in place now decides
    return real(*a, **k)
m.main = main
sys.argv = ["mcptap"] + sys.argv[1:]
from mcptap.cli.entry import run
run()
"""
STOPS = [signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT]


def _run(sigs: list[int], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", CHILD, *args], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, PYTHONPATH=str(ROOT), EARLY_SIGNALS=",".join(str(int(s)) for s in sigs)))


def _capture(path: Path) -> Path:
    from scripted import handshake, record

    return record(path, handshake())


@pytest.mark.parametrize("sig", STOPS, ids=lambda s: signal.Signals(s).name)
def test_replay_stops_cleanly_on_an_early_stop_signal(tmp_path: Path, sig: int) -> None:
    new = tmp_path / "new.jsonl"
    p = _run([sig], "replay", str(_capture(tmp_path / "c.jsonl")), "-o", str(new), "--", sys.executable, "-c", "import time; time.sleep(60)")
    assert p.returncode == 128 + sig, (p.returncode, p.stderr)
    end = read_capture(str(new)).end
    assert end is not None and end.get("replay_error") == f"interrupted ({signal.Signals(sig).name})", end


@pytest.mark.parametrize("sig", STOPS, ids=lambda s: signal.Signals(s).name)
def test_serve_stdio_stops_cleanly_on_an_early_stop_signal(tmp_path: Path, sig: int) -> None:
    own = tmp_path / "own.jsonl"
    p = _run([sig], "serve", str(_capture(tmp_path / "c.jsonl")), "-o", str(own))
    assert p.returncode == 128 + sig, (p.returncode, p.stderr)
    end = read_capture(str(own)).end
    assert end is not None and end["exit_code"] == 128 + sig


@pytest.mark.parametrize("sig", STOPS, ids=lambda s: signal.Signals(s).name)
def test_serve_listen_stops_cleanly_on_an_early_stop_signal(tmp_path: Path, sig: int) -> None:
    own = tmp_path / "own.jsonl"
    p = _run([sig], "serve", str(_capture(tmp_path / "c.jsonl")), "--listen", "127.0.0.1:0", "-o", str(own))
    assert p.returncode == 0, (p.returncode, p.stderr)
    assert read_capture(str(own)).end is not None


@pytest.mark.parametrize("sig", STOPS, ids=lambda s: signal.Signals(s).name)
def test_record_upstream_stops_cleanly_on_an_early_stop_signal(tmp_path: Path, sig: int) -> None:
    out = tmp_path / "c.jsonl"
    p = _run([sig], "record", "-o", str(out), "--listen", "127.0.0.1:0", "--upstream", "http://127.0.0.1:9/mcp")
    assert p.returncode == 0, (p.returncode, p.stderr)
    cap = read_capture(str(out))
    assert cap.records and cap.records[-1]["type"] == "end", cap.records


@pytest.mark.parametrize("sig", STOPS, ids=lambda s: signal.Signals(s).name)
def test_record_stdio_forwards_an_early_stop_signal_to_its_server(tmp_path: Path, sig: int) -> None:
    """``record -- CMD``: the held signal is forwarded to the server as a later one is (the
    server ends by it), and the capture gets its end record with the server's exit."""
    out = tmp_path / "c.jsonl"
    p = _run([sig], "record", "-o", str(out), "--", sys.executable, "-c", "import time; time.sleep(60)")
    cap = read_capture(str(out))
    assert cap.end is not None, (p.returncode, p.stderr)
    assert any(r.get("type") == "process" and r.get("event") == "signal" and r.get("signal") == signal.Signals(sig).name for r in cap.records), cap.records


def test_two_early_signals_are_taken_in_their_order(tmp_path: Path) -> None:
    """Held signals of different kinds are handed over in arrival order: replay names the first."""
    new = tmp_path / "new.jsonl"
    p = _run([signal.SIGQUIT, signal.SIGHUP], "replay", str(_capture(tmp_path / "c.jsonl")), "-o", str(new), "--",
             sys.executable, "-c", "import time; time.sleep(60)")
    end = read_capture(str(new)).end
    assert end is not None and end.get("replay_error") == "interrupted (SIGQUIT)", (p.returncode, p.stderr, end)


@pytest.mark.parametrize("sig", STOPS + [signal.SIGUSR1], ids=lambda s: signal.Signals(s).name)
def test_near_miss_another_command_still_ends_by_it(sig: int) -> None:
    """Any other command: the held signal takes its default action once the command is known."""
    p = _run([sig], "ls", "--help")
    assert p.returncode == -sig, (p.returncode, p.stderr)
