"""The handed contract cases, asserted by name beyond the generic case harness
(tests/test_cases_stdio.py runs every wire of every case):

* cases/B26 (pagination cursor never advances): the loop is reported on the
  repeated page with a growing page count, never as an unknown cursor, and an
  empty-string cursor the server itself returned is a cursor like any other;
* cases/B35 (structuredContent vs outputSchema): a successful result without
  structuredContent, one that breaks the declared schema, and an isError result
  that is exempt.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from casefiles import CASES, wires
from test_cases_stdio import record_wire

BY_NAME = {(w.case, w.name): w for w in wires("stdio")}
pytestmark = pytest.mark.skipif(not BY_NAME, reason=f"handed cases not found at {CASES}")


def _codes(by_seq: dict, seq: int) -> list[tuple[str, str]]:
    return [(f["code"], f["severity"]) for r in by_seq.get(seq, []) for f in r.get("findings", ())]


def test_b26_cursor_loop_is_counted_not_unknown(tmp_path: Path) -> None:
    _, by_seq = record_wire(BY_NAME[("B26", "wire")], tmp_path / "b26.jsonl")
    assert not [c for c in _codes(by_seq, 6) if c[0].startswith("pagination.")]
    assert ("pagination.cursor_not_advancing", "warn") in _codes(by_seq, 7)
    third = [f for r in by_seq[9] for f in r.get("findings", ()) if f["code"] == "pagination.cursor_not_advancing"]
    assert third and third[0]["data"]["pages"] == 3


def test_b26_empty_string_cursor_is_a_cursor(tmp_path: Path) -> None:
    _, by_seq = record_wire(BY_NAME[("B26", "wire-empty-cursor")], tmp_path / "b26e.jsonl")
    assert not [c for c in _codes(by_seq, 6) if c[0].startswith("pagination.")]
    assert ("pagination.cursor_not_advancing", "warn") in _codes(by_seq, 7)


def test_b35_structured_content_against_the_declared_output_schema(tmp_path: Path) -> None:
    _, by_seq = record_wire(BY_NAME[("B35", "wire")], tmp_path / "b35.jsonl")
    assert ("tool.structured_content_missing", "error") in _codes(by_seq, 7)
    assert ("tool.structured_content_invalid", "error") in _codes(by_seq, 9)
    invalid = next(f for r in by_seq[9] for f in r.get("findings", ()) if f["code"] == "tool.structured_content_invalid")
    assert "debug_ms" in invalid["message"]
    assert not [c for c in _codes(by_seq, 11) if c[0].startswith(("tool.", "shape."))]
