"""mcptap diff: cases found by a tester (stdin input, concurrent requests in
another order, changes with no path, counts against the verdict, cut captures)."""

from __future__ import annotations

import gzip
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from mcptap.cli.diff import command as diff_command
from mcptap.compare.verdict import compare_responses
from mcptap.diff.align import align, pair_in_flight
from mcptap.diff.captures import diff_captures
from replay.capgen import C2S, S2C, Ex, Tape, text_result, write_capture
from replay.test_plan import handshake, req, res


def _pair(tmp: Path, a: list[Ex], b: list[Ex]) -> tuple[str, str]:
    pa, pb = str(tmp / "a.jsonl"), str(tmp / "b.jsonl")
    write_capture(pa, a)
    write_capture(pb, b)
    return pa, pb


def test_stdin_capture_that_differs_is_diffed(tmp_path: Path) -> None:
    """Differing exchanges are read twice: stdin (plain or gzip) is spooled
    first, not opened again after its EOF."""
    pa, pb = _pair(tmp_path, [Ex("tools/call", {"name": "add", "arguments": {"a": 1}}, text_result("2"))],
                   [Ex("tools/call", {"name": "add", "arguments": {"a": 1}}, text_result("3"))])
    raw = Path(pa).read_bytes()
    runner = CliRunner()
    for data in (raw, gzip.compress(raw)):
        res = runner.invoke(diff_command, ["-", pb], input=data)
        assert res.exit_code == 1, res.output
        assert "A: -" in res.output and "result.content[0].text: '2' -> '3'" in res.output
        back = runner.invoke(diff_command, [pb, "-", "--format", "json"], input=data)
        assert back.exit_code == 1, back.output
        doc = orjson.loads(back.output)
        assert doc["b"] == "-" and doc["exchanges"]["CHANGED"] == 1
    empty = runner.invoke(diff_command, ["-", pb], input=b"")
    assert empty.exit_code == 2 and "-: empty file" in empty.output


def _concurrent(path: Path, order: list[int], together: bool = True, extra: tuple[int, ...] = ()) -> str:
    """A capture whose client sends ``tools/call add {a:n, b:n}`` for each n
    of ``order`` (all before any answer when ``together``), answered n+n."""
    t = Tape(str(path))
    handshake(t)
    calls = [(10 + k, n) for k, n in enumerate([*order, *extra])]
    for rid, n in calls:
        t.send(C2S, req(rid, "tools/call", {"name": "add", "arguments": {"a": n, "b": n}}))
        if not together:
            t.send(S2C, res(rid, text_result(str(n + n))))
    if together:
        for rid, n in calls:
            t.send(S2C, res(rid, text_result(str(n + n))))
    t.close()
    return str(path)


def test_concurrent_requests_sent_in_another_order_match(tmp_path: Path) -> None:
    pa = _concurrent(tmp_path / "a.jsonl", [0, 1, 2])
    pb = _concurrent(tmp_path / "b.jsonl", [2, 1, 0])
    rep = diff_captures(pa, pb)
    assert rep.items == [] and rep.counts["MATCH"] == 5, [i.detail for i in rep.items]
    # a genuine extra call is still reported, with its arguments
    pc = _concurrent(tmp_path / "c.jsonl", [2, 1, 0], extra=(5,))
    rep = diff_captures(pa, pc)
    assert [i.detail for i in rep.items] == ['tools/call add {"a":5,"b":5}: only in B (#9)'], [i.detail for i in rep.items]
    assert rep.counts["MATCH"] == 5 and rep.counts["NEW"] == 1


@pytest.mark.parametrize("a_together, b_together", [(True, False), (False, True)])
def test_requests_in_flight_together_on_one_side_only_match(tmp_path: Path, a_together: bool, b_together: bool) -> None:
    """One client sent the calls together, the other one by one in another
    order: the concurrent side's order means nothing, so no difference."""
    pa = _concurrent(tmp_path / "a.jsonl", [0, 1, 2], a_together)
    for order in ([2, 1, 0], [1, 2, 0], [0, 2, 1]):
        pb = _concurrent(tmp_path / "b.jsonl", order, b_together)
        rep = diff_captures(pa, pb)
        assert rep.items == [], (order, [i.detail for i in rep.items])
    pb = _concurrent(tmp_path / "b.jsonl", [2, 1, 0], b_together, extra=(5,))
    rep = diff_captures(pa, pb)
    assert [i.detail.split(": only in B")[0] for i in rep.items] == ['tools/call add {"a":5,"b":5}'], [i.detail for i in rep.items]
    pb = _concurrent(tmp_path / "b.jsonl", [2, 1, 3], b_together)       # one call's arguments changed
    rep = diff_captures(pa, pb)
    assert [i.kind for i in rep.items] == ["changed"] and "params.arguments.a: 0 -> 3" in rep.items[0].detail


def test_pair_in_flight_changes_nothing_without_concurrency() -> None:
    a, b = [1, 2, 3, 4], [4, 2, 3, 1]
    pairs = list(align(a, b))
    again = list(pair_in_flight(iter(pairs), a, b, lambda i: False, lambda j: False, lambda i: 0, lambda j: 0))
    assert again == pairs


def test_sequential_requests_in_another_order_still_differ(tmp_path: Path) -> None:
    """Order matters when each request was sent after the previous answer."""
    pa = _concurrent(tmp_path / "a.jsonl", [0, 1, 2], together=False)
    pb = _concurrent(tmp_path / "b.jsonl", [2, 1, 0], together=False)
    assert diff_captures(pa, pb).items != []


json_values = st.recursive(st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from([0.0, 1.0, 2.5]) | st.sampled_from(["x", "y"]),
                           lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.sampled_from(["name", "r", "s"]), kids, max_size=3)
                           | st.lists(st.fixed_dictionaries({"name": st.sampled_from(["x", "y", "z"]), "v": kids}), max_size=3,
                                      unique_by=lambda d: d["name"]),
                           max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(json_values, json_values)
def test_a_changed_verdict_always_names_a_path(a: object, b: object) -> None:
    """The verdict and the paths use one equality: CHANGED iff some path."""
    v = compare_responses({"result": a}, {"result": b}, "tools/call")
    assert (v.status == "CHANGED") == bool(v.paths), (a, b, v)
    assert v.status in ("MATCH", "CHANGED")


def _results(tmp: Path, ra: object, rb: object, method: str = "tools/call") -> tuple[str, str]:
    params = {"name": "rank", "arguments": {}} if method == "tools/call" else None
    return _pair(tmp, [Ex(method, params, ra)], [Ex(method, params, rb)])


def test_name_keyed_list_in_another_order_is_said_to_be_reordered(tmp_path: Path) -> None:
    ranking = [{"name": "x"}, {"name": "y"}]
    pa, pb = _results(tmp_path, {"ranking": ranking}, {"ranking": ranking[::-1]})
    res = CliRunner().invoke(diff_command, [pa, pb])
    assert res.exit_code == 1
    assert '~ tools/call rank: result.ranking: order changed: ["x","y"] -> ["y","x"]' in res.output, res.output
    tools = [{"name": n, "inputSchema": {"type": "object"}} for n in ("p", "q")]
    pa, pb = _results(tmp_path, {"tools": tools}, {"tools": tools[::-1]}, "tools/list")
    items = [i.detail for i in diff_captures(pa, pb).items if i.section == "exchanges"]
    assert items == ['tools/list: result.tools: order changed: ["p","q"] -> ["q","p"]'], items


def test_counts_follow_the_full_compare(tmp_path: Path) -> None:
    """3 and 3.0 hash apart in the summaries but are one JSON number: a match,
    in the counts too; true and 1 are not."""
    pa, pb = _results(tmp_path, {"r": 3}, {"r": 3.0})
    rep = diff_captures(pa, pb)
    assert rep.items == [] and rep.counts["CHANGED"] == 0 and rep.counts["MATCH"] == 3, rep.counts
    res = CliRunner().invoke(diff_command, [pa, pb, "--format", "json"])
    doc = orjson.loads(res.output)
    assert res.exit_code == 0 and doc["exchanges"]["CHANGED"] == 0 and not doc["different"]
    pa, pb = _results(tmp_path, {"r": True}, {"r": 1})
    rep = diff_captures(pa, pb)
    assert [i.detail for i in rep.items] == ["tools/call rank: result.r: true -> 1"] and rep.counts["CHANGED"] == 1
    # a request whose arguments differ only as 3 vs 3.0 is the same request
    pa, pb = _pair(tmp_path, [Ex("tools/call", {"name": "add", "arguments": {"a": 3}}, text_result("3"))],
                   [Ex("tools/call", {"name": "add", "arguments": {"a": 3.0}}, text_result("3"))])
    rep = diff_captures(pa, pb)
    assert rep.items == [] and rep.counts["CHANGED"] == 0, ([i.detail for i in rep.items], rep.counts)


def test_text_summary_says_a_capture_was_cut(tmp_path: Path) -> None:
    pa, pb = _pair(tmp_path, [Ex("ping", None, {})], [Ex("ping", None, {})])
    data = Path(pa).read_bytes()
    Path(pa).write_bytes(data[: data.rstrip(b"\n").rfind(b"\n") + 1] + b'{"type":"end","se')   # cut inside the end record
    res = CliRunner().invoke(diff_command, [pa, pb])
    assert "note: A is cut short" in res.output, res.output
    assert "note: B" not in res.output
