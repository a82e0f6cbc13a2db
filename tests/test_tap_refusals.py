"""The tap's own refusals (``records.events.TAP_REFUSALS``): one list, read by everything that
tells an exchange the tap refused (its request never reached the server) from a forwarded one.

A new refusal added to the relay goes through that list (the relay answers from it) and every
reader follows; a second list anywhere in the package, or a refusal answered past the list,
fails here."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from mcptap.compare.mask import Masker
from mcptap.diff.side import summarize
from mcptap.records.events import TAP_REFUSALS, TAP_REFUSED
from mcptap.replay.plan import plan_from_path
from mcptap.show.sessions import Sessions

PKG = Path(__file__).resolve().parents[1] / "mcptap"
DATA = Path(__file__).resolve().parent / "data" / "http-host-rejected.jsonl"
HOME = PKG / "records" / "events.py"


def _modules() -> list[tuple[Path, ast.Module]]:
    return [(p, ast.parse(p.read_text(encoding="utf-8"))) for p in sorted(PKG.rglob("*.py"))]


def test_no_module_keeps_its_own_list_of_tap_refusals() -> None:
    """A collection literal naming a refusal (a set, tuple, list or dict key of ``how`` values)
    anywhere but the one list is a second list, which the next refusal would miss
    (compare/resent.py's lacked ``auth_not_fronted``)."""
    found = []
    for path, tree in _modules():
        if path == HOME:
            continue
        for node in ast.walk(tree):
            items: list[ast.expr | None] = []
            if isinstance(node, (ast.Set, ast.Tuple, ast.List)):
                items = list(node.elts)
            elif isinstance(node, ast.Dict):
                items = list(node.keys)
            named = [i.value for i in items if isinstance(i, ast.Constant) and i.value in TAP_REFUSED]
            if named:
                found.append(f"{path.relative_to(PKG.parent)}:{node.lineno}: {named}")
    assert not found, "lists of the tap's refusals outside records/events.py TAP_REFUSALS:\n" + "\n".join(found)


def test_the_relay_refuses_only_through_the_list() -> None:
    """Every refusal the relay answers names a ``how`` of the list (``_tap_refuses``, which looks
    its status up there); ``_refuse`` with a literal ``how`` would bypass it."""
    hows, bypass = set(), []
    for path, tree in _modules():
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if node.func.attr == "_tap_refuses":
                how = node.args[1]
                assert isinstance(how, ast.Constant), f"{path}:{node.lineno}: _tap_refuses with a computed how"
                hows.add(how.value)
            elif node.func.attr == "_refuse" and any(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in node.args):
                bypass.append(f"{path.relative_to(PKG.parent)}:{node.lineno}")
    assert not bypass, f"refusals answered past TAP_REFUSALS: {bypass}"
    assert hows == set(TAP_REFUSALS)


def _capture_refused(tmp_path: Path, how: str) -> str:
    """tests/data/http-host-rejected.jsonl (an initialize refused by the tap, then the same from a
    loopback client, answered) with its refusal's ``how`` set to ``how`` and the refused client named "page"."""
    out = tmp_path / f"{how}.jsonl"
    text = DATA.read_text(encoding="utf-8").replace('"how":"host_rejected"', f'"how":"{how}"')
    out.write_text(text.replace('"clientInfo":{"name":"c"', '"clientInfo":{"name":"page"', 1), encoding="utf-8")
    return str(out)


@pytest.mark.parametrize("how", sorted(TAP_REFUSED))
def test_every_reader_treats_every_refusal_as_never_sent(tmp_path: Path, how: str) -> None:
    path = _capture_refused(tmp_path, how)
    why = f"the tap refused it ({how}): it never reached the server"
    # replay does not send it, diff does not compare it
    assert [(s.method, s.skip) for s in plan_from_path(path).steps] == [("initialize", why), ("initialize", None)]
    assert list(summarize(path, Masker()).dropped.values()) == [why]
    # the report's session header does not take what it claimed
    import orjson

    sessions = Sessions("http")
    for line in Path(path).read_bytes().splitlines()[1:]:
        sessions.feed(orjson.loads(line))
    assert [s["client"]["clientInfo"]["name"] for s in sessions.result()] == ["c"]
