"""Every way of starting mcptap goes through ``cli/entry.run``: the console script,
``python -m mcptap``, ``python -m mcptap.cli.main`` and ``python -m mcptap.cli.entry``.
``python -m mcptap.cli.main`` used to call ``main`` directly, so it lacked the early
SIGTERM hold (``mcptap/early_signals.py``) and the reservation of fds 0-2 (started
with fd 1 closed, the capture file took fd 1 and received the server's bytes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcptap.capture.reader import read_capture

ROOT = Path(__file__).resolve().parents[2]
WAYS = {
    "console-script": [str(Path(sys.executable).parent / "mcptap")],
    "-m mcptap": [sys.executable, "-m", "mcptap"],
    "-m mcptap.cli.main": [sys.executable, "-m", "mcptap.cli.main"],
    "-m mcptap.cli.entry": [sys.executable, "-m", "mcptap.cli.entry"],
}
SERVER = "import sys; sys.stdout.write('{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\\n')"
#: sends SIGTERM to the process itself when click is first imported: after the entry's
#: hold began (any way through entry.run), before any command code runs
HOOK = """
import os, signal, sys
class _Once:
    def find_spec(self, name, path=None, target=None):
        if name == "click":
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGTERM)
        return None
sys.meta_path.insert(0, _Once())
"""


@pytest.mark.parametrize("way", list(WAYS))
def test_started_with_stdout_closed_the_capture_is_never_fd_1(tmp_path: Path, way: str) -> None:
    cap = tmp_path / "cap.jsonl"

    def close_stdout() -> None:
        os.close(1)

    p = subprocess.run([*WAYS[way], "record", "-q", "-o", str(cap), "--", sys.executable, "-c", SERVER],
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       preexec_fn=close_stdout, cwd=ROOT, timeout=60)
    assert p.returncode == 0, p.stderr
    lines = cap.read_bytes().splitlines()
    assert all(isinstance(r, dict) and "type" in r for r in map(json.loads, lines)), lines     # no relayed bytes
    capture = read_capture(str(cap))
    assert capture.end is not None
    assert [r["type"] for r in capture.records].count("message") == 1


@pytest.mark.parametrize("way", list(WAYS))
def test_a_sigterm_while_click_loads_is_held_for_record(tmp_path: Path, way: str) -> None:
    """``record --upstream`` stops on it with exit 0 and a complete capture, as for a later one."""
    (tmp_path / "hook").mkdir()
    (tmp_path / "hook" / "sitecustomize.py").write_text(HOOK)
    out = tmp_path / "c.jsonl"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path / "hook"), str(ROOT)]))
    p = subprocess.run([*WAYS[way], "record", "-o", str(out), "--listen", "127.0.0.1:0", "--upstream", "http://127.0.0.1:9/mcp"],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    assert p.returncode == 0, (p.returncode, p.stderr)
    cap = read_capture(str(out))
    assert cap.records and cap.records[-1]["type"] == "end", cap.records
