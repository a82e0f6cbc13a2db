"""End to end: replay and diff of an OAuth step-up session (official SDK peers).

tests/e2e/stepup_peers.py: the SDK's ``OAuthClientProvider`` through ``mcptap record``
gets 401 for its first ``initialize`` (authorises, sends it again) and 403
``insufficient_scope`` for ``admin_op`` (authorises again with ``admin``, sends the
same request, same id, again). Those first sends were answered at HTTP level and
sent again: replayed against the same server, with the token the client ended with,
they must be skipped with a note naming the re-send, not sent (the refused
``initialize`` opened a live session of its own, ``admin_op`` ran twice, exit 1), and
``diff`` of the recording and the replay must see no difference.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from mcptap.capture.reader import read_capture
from peers import free_port, listening

pytestmark = pytest.mark.e2e
PEERS = Path(__file__).parent / "stepup_peers.py"
MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]


async def _run(*args: str) -> subprocess.CompletedProcess[str]:
    p = await trio.run_process(list(args), capture_stdout=True, capture_stderr=True, check=False)
    return subprocess.CompletedProcess(p.args, p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace"))


def _calls(cap: Path, tool: str) -> int:
    return sum(1 for r in read_capture(str(cap)).records if r["type"] == "message" and r.get("dir") == "c2s"
               and r.get("method") == "tools/call" and (r.get("json") or {}).get("params", {}).get("name") == tool)


async def test_step_up_session_replays_each_call_once(tmp_path: Path) -> None:
    as_port, rs_port, tap_port = free_port(), free_port(), free_port()
    cap, new = tmp_path / "stepup.jsonl", tmp_path / "replay.jsonl"
    rs = f"http://127.0.0.1:{rs_port}/mcp"
    async with listening([sys.executable, str(PEERS), "as", str(as_port)], as_port):
        async with listening([sys.executable, str(PEERS), "rs", str(rs_port), f"http://127.0.0.1:{as_port}"], rs_port):
            async with listening([*MCPTAP, "record", "-q", "--upstream", rs, "--listen", f"127.0.0.1:{tap_port}", "-o", str(cap)], tap_port):
                with trio.fail_after(90):
                    client = await _run(sys.executable, str(PEERS), "client", f"http://127.0.0.1:{tap_port}/mcp")
            assert client.returncode == 0, client.stderr[-3000:]
            assert client.stdout.split() == ["authorized", "admin", "done", "7", "authorized"]
            token = json.loads(next(ln for ln in client.stderr.splitlines() if ln.startswith("ALLTOK ")).split(" ", 1)[1])[-1][0]
            assert _calls(cap, "admin_op") == 2          # the refused call and its re-send
            with trio.fail_after(60):
                out = await _run(*MCPTAP, "replay", str(cap), "--url", rs, "-H", f"Authorization: Bearer {token}",
                                 "--allow-side-effects", "-o", str(new), "--no-color", "--format", "json")
    report = json.loads(out.stdout)
    assert out.returncode == 0, out.stdout + out.stderr
    skipped = [(e["label"], e["note"]) for e in report["exchanges"] if e["status"] == "SKIPPED"]
    assert [lab for lab, _ in skipped] == ["initialize", "tools/call admin_op"], skipped
    assert skipped[0][1].startswith("refused 401 in the recording; re-sent as #"), skipped
    assert skipped[1][1].startswith("refused 403 in the recording; re-sent as #"), skipped
    assert report["counts"]["NEW"] == 0 and report["counts"]["MATCH"] == 5, report["counts"]
    assert "sessions" not in report               # the refused initialize is no session of its own
    assert _calls(new, "admin_op") == 1          # the tool ran once

    diff = subprocess.run([*MCPTAP, "diff", str(cap), str(new), "--format", "json"], capture_output=True, text=True)
    assert diff.returncode == 0, diff.stdout + diff.stderr
    d = json.loads(diff.stdout)
    assert d["stats"]["a"]["not_compared"] == 2 and d["stats"]["b"]["not_compared"] == 0
