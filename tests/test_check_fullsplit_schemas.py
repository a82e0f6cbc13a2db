"""check --full's two processes (check/fullsplit.py) on a capture whose tools
declare schemas. The annotator's contracts keep compiled jsonschema validators
(protocol/contracts.py ``_Schemas``), which hold local functions pickle refuses:
``split_state.snapshot`` returned None and the second process could not send
its annotator, so once a capture held a ``tools/list`` result with an
``inputSchema`` (most real sessions) the second half was never taken
(breaker's F3). The cache is now pickled empty (it is rebuilt from the schemas,
which are compared and carried): the split is taken, the report the same."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import orjson
import pytest

from fullsplit_helpers import every_capture_big
from mcptap.check import parallel
from mcptap.check.report import check_capture
from mcptap.protocol.contracts import Contracts
from scripted import c2s, handshake, record, req, res, s2c
from test_check_fullsplit import traffic
from test_check_scan import _shape

INPUT = {"type": "object", "properties": {"text": {"type": "string", "pattern": "^m[0-9]+$"}, "n": {"type": "integer", "maximum": 300}},
         "required": ["text"]}
OUTPUT = {"type": "object", "properties": {"echoed": {"type": "string"}}, "required": ["echoed"]}
ASKED = {"type": "object", "properties": {"name": {"type": "string", "minLength": 1}}, "required": ["name"]}


@pytest.fixture
def split(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every capture is 'big' (as tests/test_check_fullsplit.py's fixture), with a warm-up long enough
    for the answered progress tokens the window holds (lines with findings are longer); the list of
    the second process's stops taken (one per split taken)."""
    return every_capture_big(monkeypatch, warm=40000)


def _with_schemas(n: int) -> list[tuple[str, Any]]:
    steps = traffic(n)
    at = len(handshake())
    steps[at:at] = [
        c2s(req(2, "tools/list")),
        # (echo's arguments judged on every call, a few invalid: n > 300; the other schemas are state, compared and carried)
        s2c(res(2, {"tools": [{"name": "echo", "inputSchema": INPUT},
                              {"name": "wait", "inputSchema": {"$ref": "#/$defs/a", "$defs": {"a": {"type": "object"}}}, "outputSchema": OUTPUT}]})),
        s2c(req("e1", "elicitation/create", {"message": "your name?", "requestedSchema": ASKED})),
        c2s(res("e1", {"action": "accept", "content": {"name": "x"}})),
    ]
    return steps


def test_a_capture_with_tool_schemas_takes_the_second_half(tmp_path: Path, split: list[int]) -> None:
    path = record(tmp_path / "schemas.jsonl", _with_schemas(300))
    for keep in (1, 3):
        want = _shape(check_capture(str(path), keep, reuse=False))
        one = _shape(parallel.check_capture(str(path), keep, reuse=False, workers=1))
        assert _shape(parallel.check_capture(str(path), keep, reuse=False, workers=2)) == one == want
    assert len(split) == 2 and all(at > 0 for at in split)
    assert b"tool.arguments_invalid" in orjson.dumps(want[0])      # (the schema judged calls in the second half)


def test_contracts_pickled_judge_as_before() -> None:
    """The validators are rebuilt from the schemas after pickling (the second process's annotator is sent so)."""
    c = Contracts()
    c.result("s", "tools/list", {}, {"tools": [{"name": "echo", "inputSchema": INPUT}]}, "2025-06-18")
    bad = {"name": "echo", "arguments": {"text": "no", "n": 500}}
    before = c.request("s", "tools/call", bad, True)
    assert before and before[0].code == "tool.arguments_invalid"
    again = pickle.loads(pickle.dumps(c))
    assert [f.message for f in again.request("s", "tools/call", bad, True)] == [f.message for f in before]
