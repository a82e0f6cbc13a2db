"""replay and diff write the same change the same way (compare/paths.py):
values on both sides, the same added/removed marks."""

from __future__ import annotations

from mcptap.cli.replay import _line
from mcptap.compare.paths import describe, describe_change, json_diff, short
from mcptap.compare.verdict import CHANGED, Verdict
from mcptap.replay.compare import ExchangeResult


def test_one_change_one_rendering() -> None:
    a = {"content": [{"type": "text", "text": "1"}], "gone": True}
    b = {"content": [{"type": "text", "text": "2"}], "new": [1, 2]}
    changes = json_diff(a, b, "result")
    assert [describe_change(c) for c in changes] == [
        "result.content[0].text: '1' -> '2'", "-result.gone: true", "+result.new: [1,2]"]
    line = _line(ExchangeResult("tools/call add", CHANGED, 0, 5, Verdict(CHANGED, changes)))
    assert line.endswith(describe(changes, 3))                     # replay's report line
    assert describe(changes, 2).endswith(" …") and short("x" * 100).endswith("…") and short(None) == "absent"


def test_diff_items_use_the_same_rendering(tmp_path) -> None:
    from mcptap.diff.captures import diff_captures
    from replay.capgen import Ex, text_result, write_capture

    pa, pb = str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")
    write_capture(pa, [Ex("tools/call", {"name": "add"}, text_result("1"))])
    write_capture(pb, [Ex("tools/call", {"name": "add"}, text_result("2"))])
    items = [i for i in diff_captures(pa, pb).items if i.section == "exchanges"]
    assert len(items) == 1 and "result.content[0].text: '1' -> '2'" in items[0].detail
