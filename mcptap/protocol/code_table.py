"""The finding codes of the messages themselves (pure, level 1): framing,
JSON-RPC, lifecycle, capabilities, tool contracts, shapes, cancellation and
progress. Rows ``(code, default severity, meaning, spec source)``, in the order
docs/findings.md lists them; ``protocol/codes.py`` makes them ``CODES``. The
transports' codes are in ``protocol/code_table_transport.py``.
"""

from __future__ import annotations

from mcptap.model import Severity

ERROR, WARN, INFO = Severity.ERROR, Severity.WARN, Severity.INFO

T = "basic/transports"
AUTH = "basic/authorization"
LC = "basic/lifecycle"
BI = "basic/index"
CN = "basic/utilities/cancellation"
PR = "basic/utilities/progress"
JR = "JSON-RPC 2.0 §5"

MESSAGE_ROWS: list[tuple[str, Severity, str, str]] = [
    # framing (stdio)
    ("framing.nesting_too_deep", WARN, "stdio line that is JSON nested deeper than 1024 levels: relayed, not analysed (most JSON parsers refuse it)",
     "mcptap; RFC 8259 §9 (implementations may limit nesting)"),
    ("framing.non_jsonrpc_line", ERROR, "stdio line that is not JSON, or JSON that is not a JSON-RPC object",
     T + " stdio: server MUST NOT write non-MCP output to stdout"),
    ("framing.empty_line", WARN, "blank or whitespace-only stdio line", T + " stdio"),
    ("framing.multiline_json", ERROR, "one JSON message spread over several stdio lines (embedded newlines)",
     T + " stdio: messages MUST NOT contain embedded newlines"),
    ("framing.crlf", WARN, "stdio line terminated by CR LF", T + " stdio"),
    ("framing.bom", WARN, "UTF-8 byte order mark in front of a message", T + " stdio (2025-03-26+: MUST be UTF-8)"),
    ("framing.invalid_utf8", ERROR, "bytes that are not valid UTF-8 (offsets in the finding)", T + " stdio (2025-03-26+: MUST be UTF-8)"),
    ("framing.batch", ERROR, "top-level JSON array (legal only in 2025-03-26)", BI + " Batching (2025-03-26); removed 2025-06-18 changelog"),
    ("framing.initialize_in_batch", ERROR, "initialize inside a JSON-RPC batch", "2025-03-26 " + LC),
    ("framing.large_message", WARN, "message above a size threshold (default 1 MiB): interop hazard, never a relay limit", "interop (cases/B05)"),
    ("framing.unterminated_line", WARN, "stream ended with bytes after the last newline", T + " stdio"),
    # JSON-RPC envelope and pairing
    ("jsonrpc.invalid_version", ERROR, "jsonrpc member missing or not exactly \"2.0\"", JR),
    ("jsonrpc.invalid_id", ERROR, "request id that is not a string or an integer (null, bool, float, object)",
     BI + " Requests: id MUST be string or integer, not null"),
    ("jsonrpc.invalid_message", ERROR, "JSON object that is neither request, notification nor response", JR),
    ("jsonrpc.empty_batch", ERROR, "empty JSON array: no batch but an invalid request (answered by -32600 with id null), "
     "and an answer a receiver MUST NOT return", "JSON-RPC 2.0 §6 Batch"),
    ("jsonrpc.result_and_error", ERROR, "response with both result and error, or neither", BI + " Responses"),
    ("jsonrpc.invalid_error_object", ERROR, "error member without integer code or string message", BI + " Responses"),
    ("jsonrpc.params_not_object", ERROR, "params present but not a JSON object", BI + " (MCP params are objects)"),
    ("jsonrpc.result_not_object", ERROR, "result that is not a JSON object", BI + " Responses"),
    ("jsonrpc.notification_with_id", ERROR, "notification method sent with an id (receivers will answer it)", BI + " Notifications"),
    ("jsonrpc.id_type_mismatch", ERROR, "response id equal in digits but not in JSON type to the request id", JR + ": id MUST be the same as the request's"),
    ("jsonrpc.error_id_null", ERROR, "error response with id null/absent (legit only after unparseable input)",
     BI + " Responses (2025-11-25: id optional only for malformed requests)"),
    ("jsonrpc.result_id_null", ERROR, "result (success response) with id null/absent: answers no request",
     JR + ": a response's id MUST be its request's; null only when the request's id could not be read (errors)"),
    ("jsonrpc.response_for_completed_id", ERROR, "second response for an id that was already answered", BI + " Responses"),
    ("jsonrpc.duplicate_id_in_flight", ERROR, "request id reused while an earlier request with that id is pending", BI + " Requests: id MUST NOT be reused"),
    ("jsonrpc.ambiguous_pairing", WARN, "response could belong to more than one pending request", "mcptap pairing"),
    ("jsonrpc.unmatched_response", ERROR, "response whose id matches no request the tap saw", BI + " Responses"),
    ("jsonrpc.unanswered_request", ERROR, "request never answered by end of stream/session", BI + " Requests: receiver MUST respond"),
    ("jsonrpc.response_after_cancel", WARN, "response to a request the sender had cancelled", CN + ": receiver SHOULD NOT respond"),
    ("jsonrpc.response_to_notification", ERROR, "response whose id matches only a notification", BI + " Notifications: receiver MUST NOT respond"),
    ("jsonrpc.nonstandard_error_code", INFO, "error code outside JSON-RPC/MCP conventions (e.g. 0)", JR + " error codes; MCP basic/index error codes"),
    ("jsonrpc.error_code_not_in_revision", WARN, "MCP error code used under a revision that does not define it (e.g. -32042 before 2025-11-25)",
     BI + " error codes (per revision)"),
    ("pagination.unknown_cursor", WARN, "paginated request with a cursor the server never returned in this session",
     "server/utilities/pagination: cursors are opaque, session-scoped"),
    ("pagination.cursor_not_advancing", WARN,
     "paginated result that answers a cursor with the same page and the same nextCursor again (a client that follows it never "
     "ends)", "server/utilities/pagination: a missing nextCursor ends the results; 2026-07-28: \"\" is a cursor"),
    ("jsonrpc.id_unsafe_integer", WARN, "integer id outside ±(2^53−1): peers that read JSON numbers as doubles change it",
     BI + " Requests; RFC 8259 §6 (interoperable integers)"),
    ("jsonrpc.lone_surrogate", WARN, "a lone UTF-16 surrogate escape (\\ud83d): JSON grammar, not Unicode; strict parsers refuse the message", "RFC 8259 §8.2"),
    ("jsonrpc.non_finite_number", WARN, "number beyond any double (e.g. 1e400): many parsers fail or read it as infinity", "RFC 8259 §6"),
    ("jsonrpc.id_reused", WARN, "id reused after completion within one session (e.g. transport-level retry)", BI + " Requests (legacy: unique per session)"),
    # lifecycle
    ("lifecycle.message_before_initialize", ERROR, "message other than initialize/ping before the session was initialized",
     LC + " Initialization MUST be the first interaction"),
    ("lifecycle.message_before_initialize_response", WARN, "server message before it answered initialize", LC + " Initialization"),
    ("lifecycle.client_request_before_initialize_response", WARN, "client request other than ping before the initialize response",
     LC + " Initialization: client SHOULD NOT"),
    ("lifecycle.server_request_before_initialized", WARN, "server request (other than ping) before notifications/initialized",
     LC + " Initialization: server SHOULD NOT"),
    ("lifecycle.request_before_initialized_ack", INFO, "client request before its initialized notification was acknowledged (HTTP ordering hazard)",
     LC + " + " + T + " Streamable HTTP"),
    ("lifecycle.initialized_early", WARN, "client sent notifications/initialized before the initialize response",
     LC + " Initialization: client MUST send initialized after successful initialization"),
    ("lifecycle.initialized_missing", WARN, "client operated without sending notifications/initialized", LC + " Initialization: client MUST send initialized"),
    ("lifecycle.reinitialize", ERROR, "second initialize on an initialized session", LC),
    ("lifecycle.version_not_offered", WARN, "server answered initialize with a protocolVersion the client did not request (counter-offer)",
     LC + " Version Negotiation"),
    ("lifecycle.unknown_protocol_version", WARN, "protocol revision that mcptap does not know", BI + " versioning"),
    ("lifecycle.initialize_failed", WARN, "initialize answered with an error", LC + " Error handling"),
    ("lifecycle.eof_with_pending_requests", ERROR, "stream closed while requests are pending (list them)", LC + " Shutdown"),
    ("lifecycle.session_terminated", WARN, "server ended the session (404 on a known session id, etc.)", T + " Session Management"),
    ("lifecycle.new_session", INFO, "a new session starts: capture segment boundary", LC),
    ("lifecycle.era_probe", INFO, "2026-07-28 dual-era probe (server/discover) before initialize", "2026-07-28 basic/versioning"),
    ("lifecycle.meta_missing", ERROR, "2026-07-28 request without the required _meta protocolVersion / clientCapabilities", "2026-07-28 basic/index _meta"),
    ("lifecycle.result_type_missing", WARN, "2026-07-28 result without resultType (read as complete)", "2026-07-28 basic/index ResultType"),
    ("lifecycle.result_type_invalid", ERROR, "2026-07-28 result with an unknown resultType, or input_required on a method that may not return it",
     "2026-07-28 basic/patterns/mrtr"),
    ("lifecycle.input_required_invalid", ERROR,
     "2026-07-28 InputRequiredResult with neither inputRequests nor requestState, or an embedded input request that is not "
     "one", "2026-07-28 basic/patterns/mrtr"),
    ("lifecycle.wrong_era", ERROR,
     "message that does not exist in the session's era (e.g. initialize in a 2026-07-28 request, a response on 2026-07-28 stdio from the "
     "client)", "2026-07-28 changelog"),
    # capabilities and methods
    ("capability.not_negotiated", ERROR, "message that needs a capability the other side did not declare",
     "server/* and client/* capability pages; " + LC + " Capability Negotiation"),
    ("capability.unknown_method", WARN, "method not defined by the negotiated revision", "schema/<revision>"),
    ("capability.wrong_direction", ERROR, "method sent by the side that may not send it (e.g. a server sending tools/call)",
     "schema/<revision> ClientRequest/ServerRequest unions"),
    ("capability.not_in_revision", WARN, "method that exists in other revisions, not in the negotiated one", "schema/<revision>"),
    ("capability.declared_but_unsupported", WARN, "method whose capability the receiver declared, answered -32601 or with a non-JSON-RPC HTTP error",
     LC + " Operation: parties MUST respect the negotiated capabilities"),
    ("capability.not_subscribed", WARN, "notifications/resources/updated for a URI the client never subscribed to, or unsubscribed from; "
     "2026-07-28: a subscription notification outside an open subscriptions/listen that asked for it",
     "server/resources Subscriptions; 2026-07-28 basic/patterns/subscriptions"),
    # tool contracts (tools/list schemas)
    ("tool.arguments_invalid", WARN, "tools/call arguments that do not match the tool's inputSchema",
     "2025-06-18+ server/tools: inputSchema (JSON Schema, 2020-12 unless $schema)"),
    ("tool.structured_content_missing", ERROR, "successful result of a tool with an outputSchema, without structuredContent",
     "2025-06-18+ server/tools Output Schema: servers MUST provide structured results"),
    ("tool.structured_content_invalid", ERROR, "structuredContent that does not conform to the tool's outputSchema",
     "2025-06-18+ server/tools Output Schema: MUST conform"),
    # shapes (official wire types, mcp-types)
    ("shape.invalid_params", ERROR, "request/notification params that do not match the revision's schema",
     "schema/<revision> (via the official mcp-types wire models)"),
    ("shape.invalid_result", ERROR, "result that does not match the revision's schema for its method",
     "schema/<revision> (via the official mcp-types wire models)"),
    # cancellation and progress
    ("cancel.request", INFO, "notifications/cancelled for a pending request", CN),
    ("cancel.after_response", INFO, "cancel for a request that was already answered (allowed race)", CN + " Timing considerations"),
    ("cancel.unknown_request", INFO, "cancel for an id never issued in that direction", CN + ": SHOULD be ignored"),
    ("cancel.initialize_forbidden", ERROR, "cancel that targets initialize", CN + ": initialize MUST NOT be cancelled"),
    ("progress.after_completion", ERROR, "progress for a request already answered", PR),
    ("progress.unknown_token", ERROR, "progress token not provided by any active request", PR),
    ("progress.not_increasing", ERROR, "progress value did not increase", PR + ": progress MUST increase"),
    ("progress.duplicate_token", ERROR, "progress token already used by another active request", PR + ": tokens MUST be unique across active requests"),
]
