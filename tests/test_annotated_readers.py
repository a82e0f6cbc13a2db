"""diff, replay and serve read kinds, ids and pairs from message records.
They trusted the stored annotations: a hand-written capture without ``pair``
(or one written under older rules) made diff say "no differences" for a
changed result, serve answer with the recorded ids, replay call every
exchange NEW (found by a breaker helper). They now read captures through
``reannotate_views.annotated``: as stored only when written under today's rules."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from mcptap.capture.reader import CaptureStream
from mcptap.protocol.fingerprint import rules_fingerprint
from mcptap.reannotate_views import annotated

MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]
HEADER = {"type": "header", "format": "mcptap-capture", "version": 1, "mcptap": "0.1.0", "started": "2026-01-01T00:00:00.000000Z",
          "transport": "stdio", "target": {"argv": ["x"]}}
CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 1, "b": 2}}}


def hand_written(path: Path, text: str, **header: str) -> Path:
    """A capture as a person writes one: kinds and ids, no pair, no rules fingerprint."""
    recs = [dict(HEADER, **header),
            {"type": "message", "seq": 1, "t_us": 10, "dir": "c2s", "kind": "request", "id": 1, "method": "tools/call", "json": CALL},
            {"type": "message", "seq": 2, "t_us": 20, "dir": "s2c", "kind": "response", "id": 1,
             "json": {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": text}]}}}]
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


def test_records_are_paired_again_unless_written_under_todays_rules(tmp_path: Path) -> None:
    recs = [r for r in annotated(CaptureStream(str(hand_written(tmp_path / "a.jsonl", "3")))) if r["type"] == "message"]
    assert recs[1]["pair"] == 1
    today = hand_written(tmp_path / "t.jsonl", "3", rules=rules_fingerprint())      # trusted as stored
    assert "pair" not in [r for r in annotated(CaptureStream(str(today))) if r["type"] == "message"][1]


def test_diff_sees_a_changed_result_in_hand_written_captures(tmp_path: Path) -> None:
    a, b = hand_written(tmp_path / "a.jsonl", "3"), hand_written(tmp_path / "b.jsonl", "WRONG")
    p = subprocess.run([*MCPTAP, "diff", str(a), str(b)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "'3' -> 'WRONG'" in p.stdout, p.stdout + p.stderr


def test_serve_answers_with_the_live_id(tmp_path: Path) -> None:
    cap = hand_written(tmp_path / "a.jsonl", "3")
    live = dict(CALL, id=7)
    p = subprocess.run([*MCPTAP, "serve", str(cap)], input=json.dumps(live) + "\n", capture_output=True, text=True, timeout=60)
    answer = json.loads(p.stdout.splitlines()[0])
    assert answer["id"] == 7 and answer["result"]["content"][0]["text"] == "3", p.stdout + p.stderr


def test_replay_plans_hand_written_and_stdin_captures_with_their_answers(tmp_path: Path) -> None:
    """The replay CLI planned through reannotate_views.framed (stored pairs
    trusted): a capture without pair had every exchange NEW (found by a
    breaker helper)."""
    from mcptap.replay.findings import plan_and_errors

    plan, _ = plan_and_errors(str(hand_written(tmp_path / "a.jsonl", "3")))
    (step,) = [s for s in plan.steps if s.method == "tools/call"]
    assert step.response is not None and step.response["result"]["content"][0]["text"] == "3"
