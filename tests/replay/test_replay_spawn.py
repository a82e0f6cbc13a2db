"""`mcptap replay CAPTURE -- CMD` starts the server as `record` does: its
capture says where (header target.cwd), and a command exec refuses is
explained as `record` explains it (a script without its '#!' line). A server
replay had to end itself (SIGTERM after --grace) is said so, not "exited with
status 143"."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from scripted import c2s, handshake, record, req, res, s2c

ROOT = Path(__file__).resolve().parents[2]

ECHO = """
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if "id" in m and "method" in m:
        r = {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "e", "version": "1"}} if m["method"] == "initialize" else {}
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}), flush=True)
"""


def _replay(tmp_path: Path, *cmd: str, grace: float = 2.0) -> tuple[subprocess.CompletedProcess[str], Path]:
    cap = record(tmp_path / "cap.jsonl", handshake() + [c2s(req(2, "ping")), s2c(res(2)), ("exit", 0)])
    new = tmp_path / "new.jsonl"
    p = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "replay", str(cap), "--timeout", "20", "--grace", str(grace),
                        "-o", str(new), "--", *cmd],
                       capture_output=True, text=True, cwd=tmp_path, timeout=120, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    return p, new


def test_the_replay_capture_says_where_the_server_ran(tmp_path: Path) -> None:
    (tmp_path / "echo.py").write_text(ECHO)
    p, new = _replay(tmp_path, sys.executable, "echo.py")
    assert p.returncode in (0, 1) and "new capture:" in p.stdout, p.stderr        # 1: CHANGED (another server)
    # the banner names the session's era by its handshake ("legacy" is the 2024-11-05 HTTP+SSE transport in the docs)
    assert "(initialize handshake, 2025-06-18)" in p.stdout.splitlines()[0] and "legacy" not in p.stdout, p.stdout
    header = json.loads(new.read_text().splitlines()[0])
    assert header["target"]["cwd"] == str(tmp_path.resolve()), header


def test_a_script_without_its_shebang_is_explained(tmp_path: Path) -> None:
    script = tmp_path / "server.sh"
    script.write_text("echo hi\n")
    script.chmod(0o755)
    p, _ = _replay(tmp_path, str(script))
    assert p.returncode == 2, p.stderr
    assert "no '#!' line" in p.stderr and "Exec format error" in p.stderr, p.stderr


STUBBORN = ECHO + """
import os, time
if os.environ.get("EXIT"):
    sys.exit(int(os.environ["EXIT"]))
time.sleep(60)                      # outlives its stdin: replay ends it with SIGTERM
"""


def test_a_server_replay_ended_itself_is_said_so_not_a_failing_status(tmp_path: Path) -> None:
    (tmp_path / "stubborn.py").write_text(STUBBORN)
    p, _ = _replay(tmp_path, sys.executable, "stubborn.py", grace=0.5)
    assert "ended by replay (signal 15, SIGTERM)" in p.stdout and "status 143" not in p.stdout, p.stdout
    p, _ = _replay(tmp_path, "/usr/bin/env", "EXIT=3", sys.executable, "stubborn.py")
    assert "server exited with status 3 " in p.stdout and "ended by replay" not in p.stdout, p.stdout
