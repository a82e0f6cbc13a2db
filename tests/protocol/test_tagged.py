"""protocol/tagged.py: a wire model's variant with ``type``-discriminated unions
accepts exactly what the model accepts (so shapes.check's verdicts and
wording stay the model's own), and is what shapes.check uses for tools/call results."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcptap.model import Direction, Kind
from mcptap.protocol import shape_verdict, shapes, tagged

pytestmark = pytest.mark.skipif(not shapes.available(), reason="mcp-types not installed")

TYPES = ["text", "image", "audio", "resource_link", "resource", "other", "TEXT", 1, None]
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=False, width=16), st.text(max_size=4),
                    st.sampled_from(["text/plain", "file:///a.txt", "aGVsbG8=", "user", "assistant"]))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.sampled_from(
    ["uri", "text", "blob", "mimeType", "audience", "priority", "name"]), inner, max_size=3), max_leaves=6)
BLOCK_KEYS = ["text", "data", "mimeType", "uri", "name", "title", "description", "size", "resource", "annotations", "_meta", "icons"]


@st.composite
def blocks(draw: Any) -> Any:
    if draw(st.integers(0, 9)) == 0:
        return draw(VALUES)                     # not even an object
    block = {k: draw(VALUES) for k in draw(st.lists(st.sampled_from(BLOCK_KEYS), max_size=4, unique=True))}
    if draw(st.booleans()):
        block["text"] = draw(st.text(max_size=6))
    if draw(st.integers(0, 4)):
        block["type"] = draw(st.sampled_from(TYPES))
    return block


@st.composite
def results(draw: Any) -> Any:
    r: dict[str, Any] = {}
    if draw(st.integers(0, 6)):
        r["content"] = draw(st.lists(blocks(), max_size=3)) if draw(st.integers(0, 6)) else draw(VALUES)
    for k in ("isError", "structuredContent", "_meta", "extra"):
        if draw(st.integers(0, 3)) == 0:
            r[k] = draw(VALUES)
    return r


MODELS = {}
for _key, _model in sorted(shapes.surface("SERVER_RESULTS").items()):
    if _key[0] == "tools/call":
        MODELS[_key] = _model


def _accepts(validate: Any, body: Any) -> bool:
    try:
        validate(body)
    except Exception:  # noqa: BLE001 - any refusal
        return False
    return True


def test_tools_call_results_have_a_tagged_variant() -> None:
    assert any(tagged.tagged_variant(m) is not None for m in MODELS.values())
    assert tagged.tagged_variant(dict) is None


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(results())
def test_the_tagged_variant_accepts_exactly_what_the_model_accepts(body: Any) -> None:
    for model in {id(m): m for m in MODELS.values()}.values():
        variant = tagged.tagged_variant(model)
        if variant is None:
            continue
        own = model.__pydantic_validator__.validate_python
        assert _accepts(variant.__pydantic_validator__.validate_python, body) == _accepts(own, body), body


def test_shape_findings_are_the_models_own() -> None:
    """An invalid block: the finding is worded by the model's own validator (smart union errors)."""
    bad = {"content": [{"type": "text", "text": "ok"}, {"type": "image", "data": 3}]}
    fs = shapes.check(Direction.S2C, Kind.RESPONSE, "tools/call", bad, "2025-11-25")
    own = shape_verdict.messages(_error(MODELS[("tools/call", "2025-11-25")], bad))
    assert fs and fs[0].data == {"errors": list(own)}
    assert shapes.check(Direction.S2C, Kind.RESPONSE, "tools/call", {"content": [{"type": "text", "text": "ok"}]}, "2025-11-25") == []


def _error(model: Any, body: Any) -> Any:
    try:
        model.__pydantic_validator__.validate_python(body, by_name=False)
    except Exception as exc:  # noqa: BLE001
        return exc
    raise AssertionError("valid")
