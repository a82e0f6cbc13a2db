"""mcptap diff: alignment, masking, surface changes, findings, latency, CLI."""

from __future__ import annotations

import copy
import itertools
import tempfile
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcptap.cli.diff import command as diff_command
from mcptap.compare.mask import Masker
from mcptap.compare.paths import json_diff
from mcptap.diff.captures import align, diff_captures
from mcptap.diff.render import render_text
from replay.capgen import CAPS, TOOLS, Ex, text_result, write_capture

# -- generated scenarios ----------------------------------------------------------------

names = st.sampled_from(["add", "greet", "search", "wipe"])
small = st.one_of(st.integers(-5, 5), st.text("abc", max_size=3), st.booleans())
args = st.dictionaries(st.sampled_from(["a", "b", "q"]), small, max_size=3)


@st.composite
def exchanges(draw: st.DrawFn) -> Ex:
    kind = draw(st.sampled_from(["call", "read", "prompt", "ping", "error"]))
    if kind == "call":
        return Ex("tools/call", {"name": draw(names), "arguments": draw(args)}, text_result(draw(st.text("xyz", max_size=4))))
    if kind == "read":
        uri = f"file:///{draw(st.text('ab', min_size=1, max_size=2))}"
        return Ex("resources/read", {"uri": uri}, {"contents": [{"uri": uri, "text": draw(st.text("pq", max_size=3))}]})
    if kind == "prompt":
        return Ex("prompts/get", {"name": draw(names)}, {"messages": []})
    if kind == "ping":
        return Ex("ping", None, {})
    return Ex("tools/call", {"name": draw(names), "arguments": draw(args)}, error={"code": draw(st.sampled_from([-32602, -32603])), "message": "bad"})


scenarios = st.lists(exchanges(), min_size=1, max_size=12)
eras = st.sampled_from(["legacy", "modern"])
FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _pair(tmp: str, a: list[Ex], b: list[Ex], **kw: object) -> tuple[str, str]:
    pa, pb = str(Path(tmp) / "a.jsonl"), str(Path(tmp) / "b.jsonl")
    kwa = {k[2:]: v for k, v in kw.items() if k.startswith("a_")}
    kwb = {k[2:]: v for k, v in kw.items() if k.startswith("b_")}
    common = {k: v for k, v in kw.items() if not k.startswith(("a_", "b_"))}
    write_capture(pa, a, **{**common, **kwa})
    write_capture(pb, b, **{**common, **kwb})
    return pa, pb


@FAST
@given(scenarios, eras)
def test_diff_of_a_capture_with_itself_is_empty(exs: list[Ex], era: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        pa, _ = _pair(tmp, exs, exs, era=era)
        r = diff_captures(pa, pa)
        assert r.items == [] and not r.different
        assert r.counts["MATCH"] == len(exs) + 2


@FAST
@given(scenarios, eras, st.integers(1, 10_000), st.integers(1, 50))
def test_same_scenario_with_other_ids_and_timing_has_no_differences(exs: list[Ex], era: str, base: int, step: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        pa, pb = _pair(tmp, exs, exs, era=era, b_id_base=base, b_t_step=step)
        r = diff_captures(pa, pb)
        assert r.items == [], render_text(r)


@FAST
@given(scenarios, st.data(), eras)
def test_planted_result_changes_are_each_reported_with_their_path(exs: list[Ex], data: st.DataObject, era: str) -> None:
    planted = data.draw(st.sets(st.integers(0, len(exs) - 1), min_size=1))
    changed = copy.deepcopy(exs)
    for k in planted:
        changed[k] = Ex(exs[k].method, exs[k].params, {"planted": k, **({"resultType": "complete"} if era == "modern" else {})})
    with tempfile.TemporaryDirectory() as tmp:
        pa, pb = _pair(tmp, exs, changed, era=era)
        r = diff_captures(pa, pb)
        items = [it for it in r.items if it.section == "exchanges"]
        assert r.items == items, render_text(r)
        assert len(items) == len(planted)
        assert r.counts["CHANGED"] + r.counts["ERROR-CHANGED"] == len(planted)
        assert r.counts["MATCH"] == len(exs) + 2 - len(planted)
        # each item points at a planted exchange (request seqs of A's exchanges in order)
        a_seqs = sorted(it.data["a_seq"] for it in items)
        assert len(set(a_seqs)) == len(planted)
        for it in items:
            if it.data["status"] == "CHANGED":
                assert any(p["path"] == "result.planted" for p in it.data["paths"])
            else:
                assert it.data["error_codes"][1] is None         # an error became a result


@FAST
@given(scenarios, st.data())
def test_inserted_and_removed_exchanges_do_not_shift_the_rest(exs: list[Ex], data: st.DataObject) -> None:
    k = data.draw(st.integers(0, len(exs)))
    extra = Ex("tools/call", {"name": "inserted", "arguments": {}}, text_result("new"))
    longer = exs[:k] + [extra] + exs[k:]
    with tempfile.TemporaryDirectory() as tmp:
        pa, pb = _pair(tmp, exs, longer)
        r = diff_captures(pa, pb)
        assert r.counts["NEW"] == 1 and r.counts["MISSING"] == 0 and r.counts["CHANGED"] == 0
        assert [it.subject for it in r.items] == ["tools/call inserted"]
        back = diff_captures(pb, pa)
        assert back.counts["MISSING"] == 1 and back.counts["NEW"] == 0
        assert [(it.kind, it.subject) for it in back.items] == [("removed", "tools/call inserted")]


def test_stray_stdout_lines_are_findings_not_shifted_exchanges(tmp_path: Path) -> None:
    exs = [Ex("tools/call", {"name": "add", "arguments": {"a": i}}, text_result(str(i))) for i in range(5)]
    pa, pb = _pair(str(tmp_path), exs, exs, b_stray={2: b"Server ready\n", 4: b"debug: x\n"})
    r = diff_captures(pa, pb)
    assert r.counts["MATCH"] == 7 and r.counts["NEW"] == r.counts["MISSING"] == 0
    assert [(it.section, it.kind, it.subject) for it in r.items] == [("findings", "new", "framing.non_jsonrpc_line")]
    assert r.stats["b"]["stray_lines"] == 2
    resolved = diff_captures(pb, pa)
    assert [(it.section, it.kind) for it in resolved.items] == [("findings", "resolved")]


def test_error_code_change_is_error_changed(tmp_path: Path) -> None:
    a = [Ex("tools/call", {"name": "add"}, error={"code": -32602, "message": "bad"})]
    b = [Ex("tools/call", {"name": "add"}, error={"code": -32603, "message": "bad"})]
    pa, pb = _pair(str(tmp_path), a, b)
    r = diff_captures(pa, pb)
    assert r.counts["ERROR-CHANGED"] == 1
    (item,) = r.items
    assert item.data["error_codes"] == [-32602, -32603]


def test_surface_changes_are_reported_and_breaking_ones_marked(tmp_path: Path) -> None:
    tools_b = copy.deepcopy(TOOLS)
    tools_b[0]["inputSchema"]["properties"]["c"] = {"type": "integer"}
    tools_b[0]["inputSchema"]["required"].append("c")          # new required input: breaking
    tools_b[0]["inputSchema"]["properties"]["a"]["type"] = "string"   # type change: breaking
    tools_b[0]["description"] = "Adds."                          # not breaking
    del tools_b[1]                                               # removed tool: breaking
    tools_b.append({"name": "new", "inputSchema": {"type": "object"}})
    caps_b = {k: v for k, v in CAPS.items() if k != "completions"}
    pa, pb = _pair(str(tmp_path), [], [], b_tools=tools_b, b_caps=caps_b, b_server_info={"name": "gen", "version": "2"})
    r = diff_captures(pa, pb)
    got = {(it.section, it.kind, it.subject): it for it in r.items}
    assert got[("capabilities", "removed", "server.completions")].breaking
    assert got[("tools", "removed", "wipe")].breaking
    assert not got[("tools", "added", "new")].breaking
    add = got[("tools", "changed", "add")]
    assert add.breaking
    whats = {c["what"]: c["breaking"] for c in add.data["changes"]}
    assert whats == {"description changed": False, "inputSchema.a: type 'integer' -> 'string'": True,
                     "inputSchema.c: required property added": True}
    assert got[("serverInfo", "changed", "version")].data == {"a": "1", "b": "2"}
    # the tools/list and initialize exchanges changed accordingly
    paths = {p["path"] for it in r.items if it.section == "exchanges" for p in it.data.get("paths", [])}
    assert "result.tools[name=wipe]" in paths and "result.capabilities.completions" in paths


def test_revision_change_is_breaking(tmp_path: Path) -> None:
    pa, pb = _pair(str(tmp_path), [], [], a_revision="2025-06-18", b_revision="2025-11-25")
    r = diff_captures(pa, pb)
    (rev,) = [it for it in r.items if it.section == "protocol"]
    assert rev.breaking and rev.data == {"a": "2025-06-18", "b": "2025-11-25"}


def test_latency_shift_beyond_threshold(tmp_path: Path) -> None:
    a = [Ex("tools/call", {"name": "add"}, text_result("1"), latency=2_000) for _ in range(20)]
    b = [Ex("tools/call", {"name": "add"}, text_result("1"), latency=9_000) for _ in range(20)]
    pa, pb = _pair(str(tmp_path), a, b)
    assert diff_captures(pa, pb).items == []                      # off unless asked for
    r = diff_captures(pa, pb, latency_threshold=50)
    (lat,) = r.items
    assert lat.section == "latency" and lat.subject == "tools/call add"
    assert [s["percentile"] for s in lat.data["shifts"]] == [50, 90, 99]
    assert diff_captures(pa, pb, latency_threshold=1000).items == []


def test_ignore_paths_and_volatile_fields(tmp_path: Path) -> None:
    a = [Ex("tools/call", {"name": "now"}, {"content": [], "structuredContent": {"at": "2026-01-01T10:00:00Z", "n": 1, "seed": 5}})]
    b = [Ex("tools/call", {"name": "now"}, {"content": [], "structuredContent": {"at": "2026-03-04T11:12:13.5Z", "n": 1, "seed": 9}})]
    pa, pb = _pair(str(tmp_path), a, b)
    r = diff_captures(pa, pb)
    assert [p["path"] for p in r.items[0].data["paths"]] == ["result.structuredContent.seed"]
    assert diff_captures(pa, pb, ignore=["result.structuredContent.seed"]).items == []
    assert diff_captures(pa, pb, ignore=["tools/call:**.seed"]).items == []
    assert diff_captures(pa, pb, ignore=["prompts/get:**.seed"]).items != []
    for whole in ("result", "tools/call:result", "*"):       # a pattern ending at the member names all of it
        assert diff_captures(pa, pb, ignore=[whole]).items == [], whole
    assert diff_captures(pa, pb, ignore=["prompts/get:result"]).items != []


def test_ignore_a_whole_member() -> None:
    for root, pat in (("result", "result"), ("error", "tools/call:error"), ("params", "params"), ("params", "*")):
        m = Masker([pat])
        assert m.mask({"a": 1}, "tools/call", root) == "<masked>"
        assert m.fingerprint({"a": 1}, "tools/call", root) == m.fingerprint({"b": [2]}, "tools/call", root)
        assert m.mask({"a": 1}, "tools/call", "other") == ({"a": 1} if pat != "*" else "<masked>")
    assert Masker(["tools/call:result"]).mask({"a": 1}, "prompts/get") == {"a": 1}
    assert Masker(["error"]).mask({"a": 1}, "x", "result") == {"a": 1}
    assert Masker(["**"]).mask({"a": 1}, "x", "error") == "<masked>"


def test_json_diff_keys_lists_by_name_and_masker() -> None:
    a = {"tools": [{"name": "x", "v": 1}, {"name": "y"}], "items": [1, 2]}
    b = {"tools": [{"name": "y"}, {"name": "x", "v": 2}, {"name": "z"}], "items": [1]}
    assert [(c.path, c.kind) for c in json_diff(a, b, "result")] == [
        ("result.tools[name=x].v", "changed"), ("result.tools[name=z]", "added"), ("result.tools", "reordered"),
        ("result.items[1]", "removed")]
    m = Masker(["result.a[*].b"])
    assert m.mask({"a": [{"b": 1, "c": 2}], "_meta": {"x": 1}, "id": "123e4567-e89b-12d3-a456-426614174000"}) == \
        {"a": [{"c": 2}], "id": "<masked>"}
    assert m.fingerprint({"a": [{"b": 1}]}) == m.fingerprint({"a": [{"b": 2}]})
    assert Masker().fingerprint({"q": 1, "_meta": {"t": 1}}, "x", "params") == Masker().fingerprint({"q": 1}, "x", "params")
    assert Masker().fingerprint({"q": 1}) != Masker().fingerprint({"q": 2})


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 4), max_size=40), st.lists(st.integers(0, 4), max_size=40))
def test_align_is_an_order_preserving_matching(a: list[int], b: list[int]) -> None:
    pairs = list(align(a, b))
    assert [i for i, _ in pairs if i is not None] == list(range(len(a)))
    assert [j for _, j in pairs if j is not None] == list(range(len(b)))
    assert all(a[i] == b[j] for i, j in pairs if i is not None and j is not None)


def test_align_large_middle_uses_windowed_resync(monkeypatch: pytest.MonkeyPatch) -> None:
    import mcptap.diff.captures as d

    monkeypatch.setattr(d, "DIFFLIB_LIMIT", 10)
    a = list(itertools.islice(itertools.cycle(range(7)), 500))
    b = a[:100] + [99] + a[100:300] + a[301:]
    pairs = list(align(a, b))
    assert sum(1 for i, j in pairs if i is None) == 1 and sum(1 for i, j in pairs if j is None) == 1
    assert all(a[i] == b[j] for i, j in pairs if i is not None and j is not None)


def test_cli_exit_codes_and_json(tmp_path: Path) -> None:
    exs = [Ex("tools/call", {"name": "add"}, text_result("1"))]
    pa, pb = _pair(str(tmp_path), exs, [Ex("tools/call", {"name": "add"}, text_result("2"))])
    runner = CliRunner()
    same = runner.invoke(diff_command, [pa, pa])
    assert same.exit_code == 0 and "no differences" in same.output
    res = runner.invoke(diff_command, [pa, pb, "--format", "json"])
    assert res.exit_code == 1
    doc = orjson.loads(res.output)
    assert doc["different"] and doc["exchanges"]["CHANGED"] == 1
    assert runner.invoke(diff_command, [pa, str(tmp_path / "missing.jsonl")]).exit_code == 2
    (tmp_path / "junk.jsonl").write_text("not a capture\n")
    bad = runner.invoke(diff_command, [pa, str(tmp_path / "junk.jsonl")])
    assert bad.exit_code == 2 and "not an mcptap capture" in bad.output


def test_empty_capability_object_gaining_keys_is_not_a_drop() -> None:
    from mcptap.diff.surface import _caps

    out = []
    _caps({"prompts": {}, "tools": {"listChanged": True}}, {"prompts": {"listChanged": False}, "tools": {}}, "server", out)
    texts = [(i.kind, i.subject, i.breaking) for i in out]
    assert ("removed", "server.prompts", True) not in texts
    assert ("added", "server.prompts.listChanged", False) in texts
    assert ("removed", "server.tools.listChanged", True) in texts


def test_surface_values_are_printed_as_json_not_python() -> None:
    """Capability booleans, versions, enums and annotations read as JSON (``false -> true``,
    ``["a", "b"]``), as the rest of diff's output does, never Python's ``False`` / ``['a']``."""
    from mcptap.diff.surface import Surface, _annotations, _caps, compare_surface

    out = []
    _caps({"tools": {"listChanged": False}}, {"tools": {"listChanged": True}}, "server", out)
    assert [i.detail for i in out] == ["server capability tools.listChanged: false -> true"]
    notes: list = []
    _annotations({"readOnlyHint": True}, {"readOnlyHint": None}, notes)
    assert notes[0][0] == "annotations.readOnlyHint: true -> absent"
    a, b = Surface(), Surface()
    a.supported_versions, b.supported_versions = ["2025-06-18"], ["2025-11-25"]
    text = " ".join(i.detail for i in compare_surface(a, b))
    assert '["2025-06-18"] -> ["2025-11-25"]' in text and "True" not in text and "['" not in text


def test_same_call_with_changed_arguments_is_reported_as_changed(tmp_path) -> None:
    """Not "only in A" + "only in B": the tools/call of the same tool is paired
    and the changed argument is named by its path."""
    from mcptap.diff.captures import diff_captures
    from scripted import c2s, handshake, record, req, res, s2c

    for name, text in (("a.jsonl", "one"), ("b.jsonl", "two")):
        record(tmp_path / name, handshake("2025-11-25", {"tools": {}}) + [
            c2s(req(2, "tools/call", {"name": "echo", "arguments": {"text": text}})),
            s2c(res(2, {"content": [{"type": "text", "text": text}]}))])
    rep = diff_captures(str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"))
    ex = [i for i in rep.items if i.section == "exchanges"]
    assert [i.kind for i in ex] == ["changed"], [i.detail for i in ex]
    assert "params.arguments.text" in ex[0].detail and "result.content[0].text" in ex[0].detail
    assert rep.counts["CHANGED"] == 1 and rep.counts["MISSING"] == rep.counts["NEW"] == 0
