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


def _text(s: str) -> dict:
    return {"content": [{"type": "text", "text": s}]}


def test_json_in_text_is_compared_inside() -> None:
    # a tool's JSON-in-text result that changed near its end: the path names the member that changed
    pad = "x" * 300
    a = _text('{"status": "ok", "padding": "' + pad + '", "version": "1.0"}')
    b = _text('{"status":"ok","padding":"' + pad + '","version":"2.0","new":1}')
    changes = json_diff(a, b, "result")
    assert [describe_change(c) for c in changes] == [
        "result.content[0].text(json).version: '1.0' -> '2.0'", "+result.content[0].text(json).new: 1"]
    # the same JSON written differently (spacing, key order) is no change: values compare as JSON
    assert json_diff(_text('{"a": 1, "b": 2}'), _text('{"b":2,"a":1}'), "result") == []
    # text that is not a JSON object or array is a plain string change
    assert [x.path for x in json_diff(_text("[not json"), _text("[not json!"), "result")] == ["result.content[0].text"]


def test_a_long_changed_string_shows_where_it_differs() -> None:
    a, b = "log line " + "y" * 300 + " end A", "log line " + "y" * 300 + " end B"
    (c,) = json_diff({"t": a}, {"t": b})
    text = describe_change(c)
    assert text.endswith("(from character 314)") and "end A" in text and "end B" in text, text
    j = c.to_json()
    assert j["at"] == 314 and j["a"].endswith("end A") and j["b"].endswith("end B") and j["a"].startswith("…")
    assert len(j["a"]) <= 202
    # a difference at the start: no leading ellipsis, the head shown
    (c,) = json_diff({"t": "A" + "z" * 300}, {"t": "B" + "z" * 300})
    assert c.to_json()["a"].startswith("Az") and c.to_json()["at"] == 0
    assert "'Az" in describe_change(c) and "'Bz" in describe_change(c)


def test_first_difference() -> None:
    from mcptap.compare.paths import first_difference

    assert first_difference("", "") == 0 and first_difference("abc", "abc") == 3
    assert first_difference("abc", "abd") == 2 and first_difference("ab", "abc") == 2 and first_difference("x", "y") == 0
