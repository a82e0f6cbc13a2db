"""Every finding code, through `mcptap check`'s path (record → re-annotate from
the raw bytes → group): one capture that must raise it and one near miss that
must not. Codes that only a transport can raise are listed in NOT_HERE with
the reason; a new code in the table fails `test_every_code_is_covered` until
it gets a case here or a reason there. Also keeps docs/findings.md in sync."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mcptap.check.report import check_capture
from mcptap.protocol.codes import CODES, markdown
from scripted import META, c2s, err, handshake, note, record, req, res, s2c

ROOT = Path(__file__).resolve().parents[1]
H = handshake()
LOG = note("notifications/message", {"level": "info", "data": "x"})
MODERN = [c2s(req(1, "server/discover", {"_meta": META})),
          s2c(res(1, {"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                      "serverInfo": {"name": "s", "version": "1"}}))]
CALL = {"name": "echo", "arguments": {}}
MCALL = {"name": "echo", "arguments": {}, "_meta": META}
BIG = 1 << 20
TOOLS = [c2s(req(2, "tools/list")),
         s2c(res(2, {"tools": [{"name": "w", "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}},
                                "outputSchema": {"type": "object", "properties": {"t": {"type": "number"}}, "additionalProperties": False}}]}))]
W = {"name": "w", "arguments": {"city": "Oslo"}}
PAGE = {"tools": [{"name": "a", "inputSchema": {"type": "object"}}], "nextCursor": "p2"}

Steps = list[tuple[str, Any]]

#: code -> (trigger steps, near-miss steps)
CASES: dict[str, tuple[Steps, Steps]] = {
    # framing
    "framing.non_jsonrpc_line": (H + [s2c(b"server ready\n")], H + [s2c(LOG)]),
    "framing.empty_line": (H + [s2c(b"\n")], H + [s2c(LOG)]),
    "framing.nesting_too_deep": (H + [s2c(b"[" * 1100 + b"]" * 1100 + b"\n")], H + [s2c(b"[" * 1000 + b"]" * 1000 + b"\n")]),
    "framing.multiline_json": (H + [s2c(b'{\n"jsonrpc": "2.0",\n"method": "notifications/message",\n"params": {"level": "info", "data": "x"}\n}\n')],
                               H + [s2c(note("notifications/message", {"level": "info", "data": "a\nb"}))]),
    "framing.crlf": (H + [s2c(LOG[:-1] + b"\r\n")], H + [s2c(note("notifications/message", {"level": "info", "data": "a\r\n"}))]),
    "framing.bom": (H + [s2c(b"\xef\xbb\xbf" + LOG)], H + [s2c(note("notifications/message", {"level": "info", "data": "\ufeff"}))]),
    "framing.invalid_utf8": (H + [s2c(b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"\xff"}}\n')],
                             H + [s2c('{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"é"}}\n'.encode())]),
    "framing.batch": (H + [c2s(b"[" + req(2, "ping")[:-1] + b"," + req(3, "ping")[:-1] + b"]\n")],
                      H + [c2s(req(2, "tools/call", {"name": "echo", "arguments": {"list": [1, 2]}}))]),
    "framing.initialize_in_batch": ([c2s(b"[" + req(1, "initialize", {"protocolVersion": "2025-03-26", "capabilities": {},
                                                                      "clientInfo": {"name": "t", "version": "1"}})[:-1] + b"]\n")],
                                    handshake("2025-03-26") + [c2s(b"[" + req(2, "ping")[:-1] + b"]\n")]),
    "framing.large_message": (H + [s2c(note("notifications/message", {"level": "info", "data": "x" * BIG}))],
                              H + [s2c(note("notifications/message", {"level": "info", "data": "x" * (BIG - 200)}))]),
    "framing.unterminated_line": (H + [s2c(LOG[:-1]), ("eof", "s2c")], H + [s2c(LOG), ("eof", "s2c")]),
    # JSON-RPC envelope and pairing
    "jsonrpc.invalid_version": (H + [c2s(req(2, "ping", jsonrpc="1.0"))], H + [c2s(req(2, "ping"))]),
    "jsonrpc.invalid_id": (H + [c2s(req(2.5, "ping"))], H + [c2s(req("2.5", "ping"))]),
    "jsonrpc.invalid_message": (H + [c2s(b'{"jsonrpc":"2.0"}\n')], H + [c2s(req(2, "ping"))]),
    "jsonrpc.empty_batch": (handshake("2025-03-26") + [c2s(b"[]\n"), s2c(err(None, -32600, "Invalid Request"))],
                            handshake("2025-03-26") + [c2s(b"[" + req(2, "ping")[:-1] + b"]\n"), s2c(b"[" + res(2)[:-1] + b"]\n")]),
    "jsonrpc.result_and_error": (H + [c2s(req(2, "ping")), s2c(b'{"jsonrpc":"2.0","id":2,"result":{},"error":{"code":-32603,"message":"m"}}\n')],
                                 H + [c2s(req(2, "ping")), s2c(res(2))]),
    "jsonrpc.invalid_error_object": (H + [c2s(req(2, "ping")), s2c(err(2, "bad", "m"))], H + [c2s(req(2, "ping")), s2c(err(2, -32603, "m"))]),
    "jsonrpc.params_not_object": (H + [c2s(req(2, "tools/list", [1]))], H + [c2s(req(2, "tools/list", {}))]),
    "jsonrpc.result_not_object": (H + [c2s(req(2, "ping")), s2c(b'{"jsonrpc":"2.0","id":2,"result":"ok"}\n')],
                                  H + [c2s(req(2, "ping")), s2c(res(2, {"ok": "ok"}))]),
    "jsonrpc.notification_with_id": (H + [s2c(req(9, "notifications/message", {"level": "info", "data": "x"}))], H + [s2c(LOG)]),
    "jsonrpc.id_type_mismatch": (H + [c2s(req(2, "ping")), s2c(res("2"))], H + [c2s(req(2, "ping")), s2c(res(2))]),
    "jsonrpc.error_id_null": (H + [c2s(req(2, "ping")), s2c(err(None, -32603, "crashed"))],
                              H + [c2s(req(2, "ping")), s2c(err(2, -32603, "crashed"))]),
    "jsonrpc.result_id_null": (H + [c2s(req(2, "ping")), s2c(res(None))], H + [c2s(req(2, "ping")), s2c(err(None, -32603, "crashed"))]),
    "jsonrpc.response_for_completed_id": (H + [c2s(req(2, "ping")), s2c(res(2)), s2c(res(2))], H + [c2s(req(2, "ping")), s2c(res(2))]),
    "jsonrpc.duplicate_id_in_flight": (H + [c2s(req(2, "ping")), c2s(req(2, "ping"))], H + [c2s(req(2, "ping")), c2s(req(3, "ping"))]),
    "jsonrpc.ambiguous_pairing": (H + [c2s(req(2, "ping")), c2s(req(2, "ping")), s2c(res(2)), s2c(res(2))],
                                  H + [c2s(req(2, "ping")), c2s(req(3, "ping")), s2c(res(2)), s2c(res(3))]),
    "jsonrpc.unmatched_response": (H + [c2s(req(2, "ping")), s2c(res(99)), s2c(res(2))], H + [c2s(req(2, "ping")), s2c(res(2))]),
    "jsonrpc.unanswered_request": (H + [c2s(req(2, "ping"))], H + [c2s(req(2, "ping")), s2c(res(2))]),
    "jsonrpc.response_after_cancel": (H + [c2s(req(2, "tools/call", CALL)), c2s(note("notifications/cancelled", {"requestId": 2})),
                                           s2c(res(2, {"content": []}))],
                                      H + [c2s(req(2, "tools/call", CALL)), s2c(res(2, {"content": []})),
                                           c2s(note("notifications/cancelled", {"requestId": 2}))]),
    "jsonrpc.nonstandard_error_code": (H + [c2s(req(2, "ping")), s2c(err(2, 0, "m"))], H + [c2s(req(2, "ping")), s2c(err(2, -32001, "m"))]),
    "jsonrpc.id_reused": (H + [c2s(req(2, "ping")), s2c(res(2)), c2s(req(2, "ping")), s2c(res(2))],
                          H + [c2s(req(2, "ping")), s2c(res(2)), c2s(req(3, "ping")), s2c(res(3))]),
    "jsonrpc.id_unsafe_integer": (H + [c2s(req(2 ** 60, "ping")), s2c(res(2 ** 60))], H + [c2s(req(2 ** 53 - 1, "ping")), s2c(res(2 ** 53 - 1))]),
    "jsonrpc.non_finite_number": (H + [c2s(b'{"jsonrpc":"2.0","id":2,"method":"ping","params":{"_meta":{"x":1e400}}}\n'), s2c(res(2))],
                                  H + [c2s(b'{"jsonrpc":"2.0","id":2,"method":"ping","params":{"_meta":{"x":1e300}}}\n'), s2c(res(2))]),
    "jsonrpc.lone_surrogate": (H + [c2s(req(2, "tools/call", CALL)),
                                    s2c(res(2, {"content": []}).replace(b"[]", b'[{"type":"text","text":"\\ud83d"}]'))],
                               H + [c2s(req(2, "tools/call", CALL)),
                                    s2c(res(2, {"content": []}).replace(b"[]", b'[{"type":"text","text":"\\ud83d\\ude00"}]'))]),
    # lifecycle
    "lifecycle.message_before_initialize": ([c2s(req(1, "tools/list"))], [c2s(req(1, "ping"))]),
    "lifecycle.message_before_initialize_response": (H[:1] + [s2c(note("notifications/tools/list_changed"))] + H[1:],
                                                     H[:1] + [s2c(LOG)] + H[1:]),
    "lifecycle.client_request_before_initialize_response": (H[:1] + [c2s(req(2, "tools/list"))] + H[1:], H[:1] + [c2s(req(2, "ping"))] + H[1:]),
    "lifecycle.server_request_before_initialized": (H[:2] + [s2c(req(5, "roots/list"))] + H[2:], H[:2] + [s2c(req(5, "ping"))] + H[2:]),
    "lifecycle.initialized_missing": (H[:2] + [c2s(req(2, "tools/list"))], H + [c2s(req(2, "tools/list"))]),
    "lifecycle.initialized_early": ([H[0], H[2], H[1], c2s(req(2, "tools/list"))], H + [c2s(req(2, "tools/list"))]),
    "lifecycle.reinitialize": (H + H[:1], H),
    "lifecycle.version_not_offered": (handshake()[:1] + handshake("2025-03-26")[1:], H),
    "lifecycle.unknown_protocol_version": (handshake()[:1] + handshake("2099-01-01")[1:], handshake()[:1] + handshake("2025-03-26")[1:]),
    "lifecycle.initialize_failed": (H[:1] + [s2c(err(1, -32602, "unsupported version"))], H),
    "lifecycle.eof_with_pending_requests": (H + [c2s(req(2, "ping")), ("eof", "s2c")], H + [c2s(req(2, "ping")), s2c(res(2)), ("eof", "s2c")]),
    "lifecycle.era_probe": (MODERN, H),
    "lifecycle.meta_missing": (MODERN + [c2s(req(2, "tools/call", CALL))], MODERN + [c2s(req(2, "tools/call", MCALL))]),
    "lifecycle.result_type_missing": (MODERN + [c2s(req(2, "tools/call", MCALL)), s2c(res(2, {"content": []}))],
                                      MODERN + [c2s(req(2, "tools/call", MCALL)), s2c(res(2, {"resultType": "complete", "content": []}))]),
    "lifecycle.result_type_invalid": (MODERN + [c2s(req(2, "tools/call", MCALL)), s2c(res(2, {"resultType": "bogus", "content": []}))],
                                      MODERN + [c2s(req(2, "tools/call", MCALL)), s2c(res(2, {"resultType": "complete", "content": []}))]),
    "lifecycle.input_required_invalid": (MODERN + [c2s(req(2, "tools/call", MCALL)), s2c(res(2, {"resultType": "input_required"}))],
                                         MODERN + [c2s(req(2, "tools/call", MCALL)), s2c(res(2, {"resultType": "input_required", "requestState": "abc"}))]),
    "lifecycle.wrong_era": (MODERN + [s2c(req(7, "roots/list"))], MODERN + [s2c(LOG)]),
    # capabilities and methods
    "capability.not_negotiated": (handshake(server_caps={}) + [c2s(req(2, "tools/list"))], H + [c2s(req(2, "tools/list"))]),
    "capability.unknown_method": (H + [c2s(req(2, "vendor/frobnicate"))], H + [c2s(req(2, "tools/list"))]),
    "capability.wrong_direction": (H + [s2c(req(7, "tools/call", CALL))], H + [c2s(req(7, "tools/call", CALL))]),
    "capability.not_in_revision": (H + [c2s(req(2, "tasks/get", {"taskId": "t1"}))],
                                   handshake("2025-11-25", {"tasks": {"requests": {"tools": {"call": {}}}}, "tools": {}}) + [c2s(req(2, "tools/list"))]),
    "capability.declared_but_unsupported": (H + [c2s(req(2, "logging/setLevel", {"level": "debug"})), s2c(err(2, -32601, "Method not found"))],
                                            handshake(server_caps={"tools": {}}) + [c2s(req(2, "logging/setLevel", {"level": "debug"})),
                                                                                    s2c(err(2, -32601, "Method not found"))]),
    "capability.not_subscribed": (
        handshake(server_caps={"resources": {"subscribe": True}})
        + [c2s(req(2, "resources/subscribe", {"uri": "file:///a"})), s2c(res(2)),
           c2s(req(3, "resources/unsubscribe", {"uri": "file:///a"})), s2c(res(3)),
           s2c(note("notifications/resources/updated", {"uri": "file:///a"}))],
        handshake(server_caps={"resources": {"subscribe": True}})
        + [c2s(req(2, "resources/subscribe", {"uri": "file:///a"})), s2c(res(2)),
           s2c(note("notifications/resources/updated", {"uri": "file:///a"}))]),
    # tool contracts
    "tool.arguments_invalid": (H + TOOLS + [c2s(req(3, "tools/call", {"name": "w", "arguments": {"city": 5}}))],
                               H + TOOLS + [c2s(req(3, "tools/call", {"name": "w", "arguments": {"city": "Oslo"}}))]),
    "tool.structured_content_missing": (H + TOOLS + [c2s(req(3, "tools/call", W)), s2c(res(3, {"content": []}))],
                                        H + TOOLS + [c2s(req(3, "tools/call", W)), s2c(res(3, {"content": [], "isError": True}))]),
    "tool.structured_content_invalid": (H + TOOLS + [c2s(req(3, "tools/call", W)), s2c(res(3, {"content": [], "structuredContent": {"t": 1, "x": 2}}))],
                                        H + TOOLS + [c2s(req(3, "tools/call", W)), s2c(res(3, {"content": [], "structuredContent": {"t": 1}}))]),
    # pagination
    "pagination.cursor_not_advancing": (H + [c2s(req(2, "tools/list")), s2c(res(2, PAGE)), c2s(req(3, "tools/list", {"cursor": "p2"})), s2c(res(3, PAGE))],
                                        H + [c2s(req(2, "tools/list")), s2c(res(2, PAGE)), c2s(req(3, "tools/list", {"cursor": "p2"})),
                                             s2c(res(3, {**PAGE, "tools": [{"name": "b", "inputSchema": {"type": "object"}}]}))]),
    # cancellation and progress
    "cancel.request": (H + [c2s(req(2, "tools/call", CALL)), c2s(note("notifications/cancelled", {"requestId": 2}))],
                       H + [c2s(req(2, "tools/call", CALL)), s2c(res(2, {"content": []})), c2s(note("notifications/cancelled", {"requestId": 2}))]),
    "cancel.after_response": (H + [c2s(req(2, "tools/call", CALL)), s2c(res(2, {"content": []})), c2s(note("notifications/cancelled", {"requestId": 2}))],
                              H + [c2s(req(2, "tools/call", CALL)), c2s(note("notifications/cancelled", {"requestId": 2}))]),
    "cancel.unknown_request": (H + [c2s(note("notifications/cancelled", {"requestId": 77}))],
                               H + [c2s(req(2, "tools/call", CALL)), c2s(note("notifications/cancelled", {"requestId": 2}))]),
    "cancel.initialize_forbidden": (H[:1] + [c2s(note("notifications/cancelled", {"requestId": 1}))] + H[1:],
                                    H + [c2s(req(2, "ping")), c2s(note("notifications/cancelled", {"requestId": 2}))]),
    "progress.after_completion": (H + [c2s(req(2, "tools/call", {**CALL, "_meta": {"progressToken": "t"}})), s2c(res(2, {"content": []})),
                                       s2c(note("notifications/progress", {"progressToken": "t", "progress": 1}))],
                                  H + [c2s(req(2, "tools/call", {**CALL, "_meta": {"progressToken": "t"}})),
                                       s2c(note("notifications/progress", {"progressToken": "t", "progress": 1})), s2c(res(2, {"content": []}))]),
    "progress.unknown_token": (H + [c2s(req(2, "tools/call", {**CALL, "_meta": {"progressToken": "t"}})),
                                    s2c(note("notifications/progress", {"progressToken": "u", "progress": 1}))],
                               H + [c2s(req(2, "tools/call", {**CALL, "_meta": {"progressToken": "t"}})),
                                    s2c(note("notifications/progress", {"progressToken": "t", "progress": 1}))]),
    "progress.not_increasing": (H + [c2s(req(2, "tools/call", {**CALL, "_meta": {"progressToken": "t"}})),
                                     s2c(note("notifications/progress", {"progressToken": "t", "progress": 5})),
                                     s2c(note("notifications/progress", {"progressToken": "t", "progress": 5}))],
                                H + [c2s(req(2, "tools/call", {**CALL, "_meta": {"progressToken": "t"}})),
                                     s2c(note("notifications/progress", {"progressToken": "t", "progress": 5})),
                                     s2c(note("notifications/progress", {"progressToken": "t", "progress": 5.5}))]),
    "progress.duplicate_token": (H + [c2s(req(2, "tools/call", {**CALL, "_meta": {"progressToken": "t"}})),
                                      c2s(req(3, "tools/call", {**CALL, "_meta": {"progressToken": "t"}}))],
                                 H + [c2s(req(2, "tools/call", {**CALL, "_meta": {"progressToken": "t"}})), s2c(res(2, {"content": []})),
                                      c2s(req(3, "tools/call", {**CALL, "_meta": {"progressToken": "t"}}))]),
    # process (recorded by the stdio transport through the recorder)
    "process.exit": (H + [("exit", 0)], H + [("eof", "s2c")]),
    "process.stderr_volume": (H + [("err", b"x" * (300 * 1024) + b"\n")], H + [("err", b"x" * (200 * 1024) + b"\n"), s2c(LOG),
                                                                               ("err", b"x" * (200 * 1024) + b"\n")]),
    "process.stderr_unterminated": (H + [("err", b"50%\r")], H + [("err", b"50%\n")]),
    # the capture itself (mcptap/check/reannotated.py)
    "capture.gap": (H + [("gap", "disk full")], H),
    "capture.answers_in_gap": (H + [c2s(req(2, "tools/list")), ("lost", ("s2c", 100)), s2c(LOG), ("eof", "s2c")],
                               H + [("lost", ("s2c", 100)), s2c(LOG), c2s(req(2, "tools/list")), ("eof", "s2c")]),
    "capture.request_in_gap": (H + [("lost", ("c2s", 100)), c2s(LOG), s2c(res(2, {"tools": []}))],
                               H + [("lost", ("s2c", 100)), s2c(LOG), s2c(res(2, {"tools": []}))]),
}

#: codes this file does not trigger, and why
NOT_HERE: dict[str, str] = {
    "sse.client_closed_mid_event": "HTTP tap: an SSE stream the client closed mid-event (tests/e2e/test_http_client_cut.py)",
    "http.client_closed_mid_response": "HTTP tap: a JSON body the client closed mid-way (tests/e2e/test_http_client_cut.py)",
    "http.client_abandoned_request": "HTTP tap: an exchange the client closed before its answer (tests/e2e/test_http_client_cut.py)",
    "sse.event_too_large": "an SSE event beyond the 128 MiB cap: HTTP tap (tests/protocol/test_sse_cap.py, tests/transport)",
    "http.informational_flood": "an endless run of 1xx responses: HTTP tap (tests/transport/test_http_recorder_flood.py)",
    "jsonrpc.response_to_notification": "not raised by the annotator yet (a response whose id only a notification used is an unmatched response)",
    "lifecycle.request_before_initialized_ack": "HTTP ordering hazard: raised by the HTTP tap (tests/test_cases_http.py)",
    "lifecycle.session_terminated": "HTTP session management: HTTP tap",
    "http.session_used_after_delete": "HTTP session management: HTTP tap (tests/relay/test_session_book.py)",
    "http.session_id_unknown": "HTTP session management: HTTP tap (tests/relay/test_session_book.py)",
    "http.redirect_loop": "HTTP redirect chains: HTTP tap (tests/relay/test_http_observe_paths.py)",
    "lifecycle.new_session": "HTTP session boundary: HTTP tap (tests/relay/test_session_book.py)",
    "process.spawn_failed": "stdio transport (tests/cli/test_show_check.py checks it through `mcptap record` + `check`)",
    "process.stderr_backpressure": "stdio transport with a host that does not drain stderr (tests/transport)",
    "process.no_exit_after_stdin_eof": "stdio transport timing (tests/transport)",
    "process.signal_forwarded": "stdio transport signals (tests/transport)",
    "process.exited_but_stdout_open": "stdio transport with an orphaned grandchild (tests/transport)",
    "process.stdin_closed_by_server": "stdio transport, a server that closes its stdin (tests/transport/test_stdio.py)",
    "process.stdout_closed_by_host": "stdio transport, a host that closes the tap's stdout (tests/transport/test_stdio.py)",
    "capture.truncated": "file damage, not traffic: tests/test_check.py (test_truncated_and_incomplete_captures_are_warnings)",
    "capture.cut_line": "a capture without end record, which CASES cannot write: tests/test_cut_line.py",
    "capture.incomplete": "file damage, not traffic: tests/test_check.py (test_truncated_and_incomplete_captures_are_warnings)",
    "serve.no_recorded_answer": "raised by mcptap serve itself: tests/serve, tests/cli/test_serve_cli.py, tests/e2e/test_serve_sdk.py",
    "capture.digest_mismatch": "an edited capture, not traffic: tests/test_integrity.py",
    "capture.out_of_sequence": "an edited capture, not traffic: tests/test_integrity.py",
    "capture.impossible_time": "an edited capture, not traffic: tests/test_check_scan.py (test_an_impossible_t_us_is_a_capture_finding_at_every_split)",
}
#: code families owned by other modules with their own tests
OTHER_FAMILIES = ("sse.", "http.", "shape.", "pagination.", "jsonrpc.error_code_not_in_revision",
                  "auth.")   # OAuth through the HTTP tap: trigger and near miss in tests/relay/test_http_auth.py


def codes_of(tmp_path: Path, steps: Steps, name: str) -> dict[str, int]:
    rep = check_capture(str(record(tmp_path / f"{name}.jsonl", steps)))
    assert rep.error is None
    return {c: g.count for c, g in rep.groups.items()}


@pytest.mark.parametrize("code", sorted(CASES))
def test_code_is_raised(code: str, tmp_path: Path) -> None:
    trigger, _ = CASES[code]
    got = codes_of(tmp_path, trigger, "trigger")
    assert code in got, f"{code} not raised; got {sorted(got)}"


@pytest.mark.parametrize("code", sorted(CASES))
def test_near_miss_does_not_raise(code: str, tmp_path: Path) -> None:
    _, near = CASES[code]
    got = codes_of(tmp_path, near, "near")
    assert code not in got, f"{code} raised by its near miss; got {sorted(got)}"


def test_every_code_is_covered() -> None:
    missing = [c for c in CODES if c not in CASES and c not in NOT_HERE and not c.startswith(OTHER_FAMILIES)]
    assert not missing, f"finding codes without a trigger/near-miss case or a reason: {missing}"
    stale = [c for c in list(CASES) + list(NOT_HERE) if c not in CODES]
    assert not stale, f"cases for codes that are not in the table: {stale}"


def test_findings_doc_is_generated_from_the_table() -> None:
    doc = (ROOT / "docs" / "findings.md").read_text()
    assert doc == markdown(), "docs/findings.md is stale: run `.venv/bin/python -m mcptap.protocol.codes > docs/findings.md`"
    for code in CODES:
        assert f"| `{code}` |" in doc
