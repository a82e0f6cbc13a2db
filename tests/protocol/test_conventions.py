"""Error codes per revision, pagination cursors, task-bound progress tokens."""

from __future__ import annotations

from mcptap.model import Direction, Frame, Severity
from mcptap.protocol import conventions
from mcptap.protocol.annotate import Annotator
from mcptap.protocol.jsonparse import parse_json

C2S, S2C = Direction.C2S, Direction.S2C


def test_error_codes_follow_the_revision_table() -> None:
    assert conventions.error_code(-32042, "2025-11-25") == []
    (f,) = conventions.error_code(-32042, "2025-06-18")
    assert f.code == "jsonrpc.error_code_not_in_revision" and f.severity is Severity.WARN
    (f,) = conventions.error_code(-32021, "2025-11-25")
    assert "2026-07-28" in f.message
    assert conventions.error_code(-32021, "draft") == []
    (f,) = conventions.error_code(-32002, "2026-07-28")
    assert f.severity is Severity.INFO and "-32602" in f.message
    assert conventions.error_code(-32602, "2024-11-05") == []
    assert conventions.error_code(12345, "2025-11-25") == []


def run(lines: list[tuple[Direction, str]], **kw) -> list[list[str]]:
    ann = Annotator(**kw)
    out = []
    for i, (d, text) in enumerate(lines, 1):
        raw = text.encode() + b"\n"
        v, bad = parse_json(raw)
        out.append(ann.feed(Frame(raw, 0, True, v, bad), i, i * 10, d).codes)
    return out


HANDSHAKE = [
    (C2S, '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}'),
    (S2C,
     '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"tasks":{"requests":{"tools":{"call":{}}}}},"serverInfo":{"name":"s","version":"1"}}}'),
    (C2S, '{"jsonrpc":"2.0","method":"notifications/initialized"}'),
]


def test_cursor_must_come_from_next_cursor() -> None:
    codes = run(HANDSHAKE + [
        (C2S, '{"jsonrpc":"2.0","id":2,"method":"tools/list"}'),
        (S2C, '{"jsonrpc":"2.0","id":2,"result":{"tools":[],"nextCursor":"page2"}}'),
        (C2S, '{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":"page2"}}'),   # near miss: fine
        (C2S, '{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"cursor":"forged"}}'),
    ])
    assert "pagination.unknown_cursor" not in codes[5]
    assert codes[6] == ["pagination.unknown_cursor"]


def test_task_progress_token_lives_until_the_task_is_terminal() -> None:
    codes = run(HANDSHAKE + [
        (C2S, '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","task":{},"_meta":{"progressToken":"t1"}}}'),
        (S2C, '{"jsonrpc":"2.0","id":2,"result":{"task":{"taskId":"T","status":"working"}}}'),
        (S2C, '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t1","progress":1}}'),  # still valid
        (S2C, '{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"T","status":"completed"}}'),
        (S2C, '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t1","progress":2}}'),
    ])
    assert "progress.after_completion" not in codes[5]
    assert "progress.after_completion" in codes[7]


def test_plain_request_progress_after_response_is_flagged() -> None:
    codes = run(HANDSHAKE + [
        (C2S, '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":5}}}'),
        (S2C, '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":5,"progress":1}}'),
        (S2C, '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":5,"progress":1}}'),
        (S2C, '{"jsonrpc":"2.0","id":2,"result":{"content":[]}}'),
        (S2C, '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":5,"progress":3}}'),
        (S2C, '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":6,"progress":3}}'),
    ])
    assert codes[4] == [] and codes[5] == ["progress.not_increasing"]
    assert codes[7] == ["progress.after_completion"] and codes[8] == ["progress.unknown_token"]


def test_cancelled_request_left_unanswered_is_not_lost() -> None:
    from mcptap.protocol.annotate import Annotator as A

    ann = A()
    lines = HANDSHAKE + [
        (C2S, '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow"}}'),
        (C2S, '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow"}}'),
        (C2S, '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}'),
    ]
    for i, (d, text) in enumerate(lines, 1):
        raw = text.encode() + b"\n"
        v, bad = parse_json(raw)
        ann.feed(Frame(raw, 0, True, v, bad), i, i, d)
    (f,) = ann.eof(S2C, 100)
    assert f.code == "lifecycle.eof_with_pending_requests" and [p["id"] for p in f.data["pending"]] == [3]
    assert [p.id for p in ann.pending()] == [3]
