"""Shape checks against the official wire types (mcp-types)."""

from __future__ import annotations

from mcptap.model import Direction, Frame, Kind, Severity
from mcptap.protocol import shapes
from mcptap.protocol.annotate import Annotator
from mcptap.protocol.jsonparse import parse_json

C2S, S2C = Direction.C2S, Direction.S2C


def test_valid_params_and_results_pass() -> None:
    assert shapes.check(C2S, Kind.REQUEST, "tools/call", {"name": "echo", "arguments": {"x": 1}}, "2025-11-25") == []
    assert shapes.check(S2C, Kind.RESPONSE, "tools/call", {"content": [{"type": "text", "text": "ok"}]}, "2025-11-25") == []


def test_missing_required_param_is_an_error_in_exact_eras() -> None:
    (f,) = shapes.check(C2S, Kind.REQUEST, "tools/call", {"arguments": {}}, "2025-11-25")
    assert f.code == "shape.invalid_params" and f.severity is Severity.ERROR and "name" in f.message


def test_older_revisions_are_checked_against_the_2025_11_25_era_as_warnings() -> None:
    (f,) = shapes.check(S2C, Kind.RESPONSE, "tools/call", {"content": "not a list"}, "2024-11-05")
    assert f.code == "shape.invalid_result" and f.severity is Severity.WARN and "schema era" in f.message


def test_unknown_method_or_revision_is_left_to_other_rules() -> None:
    assert shapes.check(C2S, Kind.REQUEST, "vendor/thing", {}, "2025-11-25") == []
    assert shapes.check(C2S, Kind.REQUEST, "tools/call", {}, None) == []


def test_each_empty_payload_gets_its_own_verdict() -> None:
    """Payload-less messages are validated once per key and cached: ``[]`` params
    (a list, invalid) must not give ``{}`` params (valid) its finding, whichever comes first."""
    for method in ("tools/list", "resources/list"):
        bad = shapes.check(C2S, Kind.REQUEST, method, [], "2025-11-25")
        assert [f.code for f in bad] == ["shape.invalid_params"]
        assert shapes.check(C2S, Kind.REQUEST, method, {}, "2025-11-25") == []
        assert shapes.check(C2S, Kind.REQUEST, method, "", "2025-11-25") != []
        assert shapes.check(C2S, Kind.REQUEST, method, None, "2025-11-25") == []


def _feed(ann: Annotator, d: Direction, raw: bytes, seq: int):
    v, bad = parse_json(raw)
    return ann.feed(Frame(raw, 0, True, v, bad), seq, seq, d)


def test_annotator_applies_shapes_only_when_asked() -> None:
    lines = [
        (C2S,
         b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}\n'),
        (S2C, b'{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}\n'),
        (C2S, b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'),
        (C2S, b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n'),
        (S2C, b'{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"x"}]}}\n'),   # inputSchema missing
    ]
    for on in (False, True):
        ann = Annotator(shapes=on)
        msgs = [_feed(ann, d, raw, i + 1) for i, (d, raw) in enumerate(lines)]
        codes = [c for m in msgs for c in m.codes]
        assert ("shape.invalid_result" in codes) is on, codes
        assert codes.count("shape.invalid_result") == (1 if on else 0)
