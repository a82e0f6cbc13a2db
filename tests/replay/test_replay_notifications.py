"""replay compares the server's notifications as diff does: a method the
recording has that the live server never sends (or a new one) is reported
and fails the replay, as ``mcptap diff`` of the two captures reports it.
Progress a skipped call made is not expected live. Against the official SDK
(client and server, tests/replay/sdk_notifier.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SERVER = [sys.executable, str(Path(__file__).parent / "sdk_notifier.py")]
ENV = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}

CLIENT = """
import sys, anyio
from mcp import ClientSession, StdioServerParameters, stdio_client
async def progress(p, t, m):
    pass
async def main(out, tools, server):
    params = StdioServerParameters(command=sys.executable, args=["-m", "mcptap.cli.main", "record", "-q", "-o", out, "--", *server])
    async with stdio_client(params) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            await s.list_tools()
            for t in tools.split(","):
                await s.call_tool(t, {}, progress_callback=progress)
anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3:])
"""


def _record(tmp_path: Path, tools: str, build: str) -> Path:
    (tmp_path / "client.py").write_text(CLIENT)
    out = tmp_path / f"{tools.replace(',', '-')}-{build}.jsonl"
    subprocess.run([sys.executable, "client.py", str(out), tools, *SERVER, build], cwd=tmp_path, env=ENV, check=True, timeout=120)
    return out


def _mcptap(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcptap.cli.main", *args], capture_output=True, text=True, cwd=tmp_path, env=ENV, timeout=120)


def _replay(tmp_path: Path, cap: Path, build: str) -> tuple[int, dict[str, Any], Path]:
    new = tmp_path / f"replayed-{build}.jsonl"
    p = _mcptap(tmp_path, "replay", str(cap), "--format", "json", "-o", str(new), "--", *SERVER, build)
    assert p.returncode in (0, 1), p.stderr
    return p.returncode, json.loads(p.stdout), new


def test_notifications_the_live_server_no_longer_sends_fail_the_replay_as_in_diff(tmp_path: Path) -> None:
    cap = _record(tmp_path, "work", "loud")
    code, report, new = _replay(tmp_path, cap, "quiet")
    assert report["counts"]["MATCH"] == 3 and report["counts"]["CHANGED"] == 0, report
    assert [(n["kind"], n["subject"]) for n in report["notifications"]] == [
        ("removed", "notifications/message"), ("removed", "notifications/progress")], report
    assert "sent in the recording (2), never in the live session" in report["notifications"][1]["detail"]
    assert code == 1
    diff = _mcptap(tmp_path, "diff", str(cap), str(new), "--format", "json")
    assert diff.returncode == 1
    assert sorted(it["subject"] for it in json.loads(diff.stdout)["items"] if it["section"] == "notifications") == \
        ["notifications/message", "notifications/progress"]
    text = _mcptap(tmp_path, "replay", str(cap), "-o", str(tmp_path / "t.jsonl"), "--", *SERVER, "quiet")
    assert text.returncode == 1 and "notifications:\n  - s2c notifications/message: sent in the recording (1)" in text.stdout, text.stdout
    assert "3 match, 2 notification difference(s) (" in text.stdout, text.stdout
    code, report, _ = _replay(tmp_path, cap, "loud")                 # the same server: nothing to report
    assert code == 0 and report["notifications"] == [], report


def test_progress_of_a_skipped_call_is_not_expected_live(tmp_path: Path) -> None:
    cap = _record(tmp_path, "work,wipe", "quiet")                   # only wipe reported progress
    code, report, _ = _replay(tmp_path, cap, "quiet")
    assert [r["status"] for r in report["exchanges"]][-1] == "SKIPPED"
    assert code == 0 and report["notifications"] == [], report
