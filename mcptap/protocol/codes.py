"""The one table of finding codes: severity, one-line meaning, spec source.

Every Finding mcptap emits uses a code from ``CODES``; ``docs/findings.md`` is
generated from this table (``python -m mcptap.protocol.codes > docs/findings.md``)
and a test keeps the two in sync. Severities (cases/FORMAT-bug-cases.md):
error = breaks a MUST of the negotiated revision or breaks real peers;
warn = SHOULD or interoperability hazard; info = context. A rule may raise or
lower the default for a revision (e.g. ``framing.batch`` is legal in 2025-03-26).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcptap.model import Finding, Severity

ERROR, WARN, INFO = Severity.ERROR, Severity.WARN, Severity.INFO

T = "basic/transports"
AUTH = "basic/authorization"
LC = "basic/lifecycle"
BI = "basic/index"
CN = "basic/utilities/cancellation"
PR = "basic/utilities/progress"
JR = "JSON-RPC 2.0 §5"


@dataclass(frozen=True, slots=True)
class Code:
    """One finding code: ``code`` (family.name), default ``severity``,
    ``meaning`` (one line), ``source`` (spec page, relative to a revision) and
    ``also``: the other severities a rule may give it, each with when."""

    code: str
    severity: Severity
    meaning: str
    source: str
    also: tuple[tuple[Severity, str], ...] = ()

    def allows(self, severity: Severity) -> bool:
        return severity is self.severity or any(s is severity for s, _ in self.also)


_TABLE: list[tuple[str, Severity, str, str]] = [
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
    # SSE
    ("sse.priming_event", INFO, "event with an id and empty data (2025-11-25 priming)", "2025-11-25 " + T + " Streamable HTTP"),
    ("sse.retry", INFO, "retry field seen", "WHATWG HTML server-sent events"),
    ("sse.comment", INFO, "comment line(s), e.g. keep-alive", "WHATWG HTML server-sent events"),
    ("sse.multiline_data", INFO, "event with several data: lines", "WHATWG HTML server-sent events"),
    ("sse.crlf", INFO, "SSE lines ended with CR LF or CR", "WHATWG HTML server-sent events"),
    ("sse.event_split_across_chunks", INFO, "event spanning several network chunks", "WHATWG HTML server-sent events"),
    ("sse.data_not_jsonrpc", ERROR, "data payload that is not a JSON-RPC message", T + " Streamable HTTP"),
    ("sse.unterminated_event_at_eof", WARN, "stream ended inside an event (no blank line)", "WHATWG HTML server-sent events"),
    ("sse.event_id_ignored", WARN, "an id field containing NUL, which clients ignore: resuming with Last-Event-ID cannot "
     "name that event", "WHATWG HTML §9.2.6 (id field)"),
    ("sse.event_too_large", WARN, "an event longer than the tap holds (128 MiB): recorded as its size and first bytes, not analysed",
     "mcptap limit (bounded memory)"),
    ("sse.retry_ignored", INFO, "a retry field that is not all ASCII digits, which clients ignore", "WHATWG HTML §9.2.6 (retry field)"),
    ("sse.connection_closed_mid_stream", ERROR, "connection closed before the response arrived", T + " Streamable HTTP"),
    ("sse.stream_closed_without_response", ERROR, "response stream for a request ended without its response",
     T + " Streamable HTTP: SHOULD NOT close before the response"),
    ("sse.client_closed_mid_event", INFO, "the client closed the stream inside an event (e.g. at its own event size limit): the part "
     "received is not judged as the server's data", "WHATWG HTML server-sent events (an unfinished event is discarded)"),
    ("http.client_closed_mid_response", INFO, "the client closed the connection inside a JSON response body (e.g. at its own size "
     "limit): the part received is not judged as the server's message", "RFC 9112 §6.3 (an incomplete message)"),
    ("http.client_abandoned_request", WARN, "the client closed its connection (or its HTTP+SSE stream) before the response to a "
     "request it had not cancelled: before 2026-07-28 a disconnect is not a cancellation, and the answer reaches no one",
     T + " Streamable HTTP (2025-03-26 … 2025-11-25: disconnect is not cancellation; cancel with notifications/cancelled)"),
    ("sse.compressed_stream", WARN, "Content-Encoding on text/event-stream", "interop"),
    ("sse.endpoint_event", INFO, "legacy HTTP+SSE endpoint event (and its resolved URL)", "2024-11-05 " + T + " HTTP with SSE"),
    ("sse.endpoint_prefix_ambiguous", INFO, "root-relative endpoint while the stream URL has a path prefix", "2024-11-05 " + T + " HTTP with SSE"),
    ("sse.endpoint_foreign_origin", WARN, "endpoint URL on an origin other than the tap's: traffic will bypass the tap", "2024-11-05 " + T + " HTTP with SSE"),
    ("sse.endpoint_rewritten", INFO, "tap rewrote an endpoint naming the upstream origin to its own origin (original and new value in the finding)",
     "2024-11-05 " + T + " HTTP with SSE; mcptap"),
    # HTTP
    ("http.informational_flood", WARN, "more 1xx informational responses before the final one than the tap records "
     "(the rest are counted)", "RFC 9110 §15.2 (a client must accept them; an endless run never ends the exchange)"),
    ("http.ack_status_not_202", WARN, "notification/response POST answered with a status other than 202", T + " Streamable HTTP: MUST return 202 Accepted"),
    ("http.ack_body_not_empty", WARN, "body on a notification/response acknowledgement", T + " Streamable HTTP"),
    ("http.ack_content_type_unexpected", INFO, "Content-Type on a body-less acknowledgement", T + " Streamable HTTP"),
    ("http.session_rejected_not_404", ERROR, "known session id rejected with something other than 404", T + " Session Management"),
    ("http.session_used_after_delete", WARN, "a request on a session the client itself ended with DELETE (404 is right)", T + " Session Management"),
    ("http.session_id_unknown", WARN, "a request on a session id the server never assigned in the capture (404 is right)", T + " Session Management"),
    ("http.error_body", INFO, "JSON body of an HTTP error status that is an HTTP/OAuth error object, not a JSON-RPC message",
     T + " Streamable HTTP; basic/authorization; RFC 6750 §3"),
    ("http.request_refused", INFO, "request whose POST got a complete HTTP error status without a JSON-RPC response (refused at HTTP level, not unanswered)",
     T + " Streamable HTTP: MUST return an HTTP error status"),
    ("http.redirected", INFO, "request whose POST got a redirect (3xx) without a JSON-RPC response: answered at HTTP level, not unanswered; "
     "the finding names the Location", "RFC 9110 §15.4; " + T + " Streamable HTTP"),
    ("http.redirect_loop", WARN, "a request redirected again from a URL it was already redirected from: a client following redirects "
     "loops until its hop limit and the request is never answered", "RFC 9110 §15.4 (clients SHOULD detect infinite redirection)"),
    ("http.session_id_missing", ERROR, "request without the Mcp-Session-Id that the initialize response assigned",
     T + " Session Management: clients MUST include it on all subsequent requests"),
    ("http.session_id_reissued", WARN, "initialize on a live session answered with a different Mcp-Session-Id: two sessions for one client",
     T + " Session Management"),
    ("http.get_stream_refused_not_405", WARN, "GET stream refused with a status other than 405", T + " Listening for messages"),
    ("http.get_retried_after_405", WARN, "client re-issues GET after a 405", T + " Listening for messages"),
    ("http.get_accept_missing_event_stream", WARN, "GET whose Accept does not name text/event-stream", T + " Listening for messages"),
    ("http.post_content_type_not_json", ERROR, "JSON-RPC POST whose Content-Type is not application/json (missing, a form type, "
     "application/json-rpc, …): SDK servers refuse it (400 or 415); a form type is what a web page can POST cross-site without a CORS preflight",
     T + " Sending messages (the body is a JSON-RPC message); WHATWG Fetch (CORS-safelisted Content-Type)"),
    ("http.post_accept_incomplete", WARN, "POST whose Accept does not name both application/json and text/event-stream", T + " Sending messages"),
    ("http.stream_resumed", INFO, "GET with Last-Event-ID continuing an earlier stream", T + " Resumability"),
    ("http.resume_without_last_event_id", WARN, "reconnect after a mid-stream close without Last-Event-ID", T + " Resumability"),
    ("http.media_type_rejected", ERROR, "server rejected a valid media type (parameters/case)", "RFC 9110 §8.3.1"),
    ("http.unexpected_content_type", ERROR, "request answered with a content type other than JSON or SSE", T + " Sending messages"),
    ("http.content_type_params", INFO, "Content-Type with parameters or unusual case (informational)", "RFC 9110 §8.3.1"),
    ("http.connection_drops_field", WARN, "Connection names a field MCP needs (a session id, the version, credentials): every proxy "
     "removes it, so the receiver never got it", "RFC 9110 §7.6.1"),
    ("http.protocol_version_rejected_at_initialize", ERROR, "initialize refused because of the version header", "2025-06-18 " + T + " Protocol Version Header"),
    ("http.protocol_version_header_mismatch", ERROR, "MCP-Protocol-Version differs from the negotiated version (or from _meta in 2026-07-28)",
     "2025-06-18 " + T + " Protocol Version Header"),
    ("http.protocol_version_header_missing", ERROR, "header missing where required", "2025-06-18 " + T + " Protocol Version Header"),
    ("http.legacy_post_not_found", WARN, "POST to the legacy endpoint failed", "2024-11-05 " + T + " HTTP with SSE"),
    ("http.content_encoding", INFO, "compressed body (decoded for analysis when it decodes)", "RFC 9110 §8.4"),
    ("http.undecodable_encoding", WARN, "encoding the tap cannot decode (stored raw)", "RFC 9110 §8.4"),
    ("http.content_decoding_failed", WARN, "body does not decode as its Content-Encoding says (corrupt, unfinished, not encoded, "
     "or bytes after the end of its compressed data): those bytes stored raw, not analysed", "RFC 9110 §8.4, RFC 1952"),
    ("http.content_too_large_to_decode", WARN, "body that decodes to, or uncompressed is, more than mcptap holds of a body "
     "(128 MiB): stored as relayed, not analysed", "RFC 9110 §8.4"),
    ("http.content_decompression_bomb", WARN, "compressed body that inflates to more than 100 times its compressed size "
     "(beyond 16 MiB): a decompression bomb, stored as relayed (compressed), not analysed", "RFC 9110 §8.4"),
    ("http.unread_request_answered", INFO, "a response matching no request in the capture, in an exchange whose request body mcptap "
     "could not decode (not judged unmatched)", "RFC 9110 §8.4"),
    ("http.answer_undecoded", INFO, "requests answered in a body mcptap could not decode: not analysed, not judged unanswered",
     "RFC 9110 §8.4"),
    ("http.response_body_cut", ERROR, "upstream closed the connection inside a response body that is not an event stream "
     "(a chunked body without its last chunk)", "RFC 9112 §7.1"),
    ("http.content_length_with_transfer_encoding", ERROR, "response with both Content-Length and Transfer-Encoding (a sender MUST NOT "
     "send both; Transfer-Encoding wins, the tap forwards it without Content-Length)", "RFC 9112 §6.1"),
    ("http.body_shorter_than_content_length", ERROR, "body ended before the declared length", "RFC 9112 §6.3"),
    ("http.request_body_incomplete", WARN, "client went away before sending the declared request body (the upstream got part of it)",
     "RFC 9112 §6.3"),
    ("http.conn_closed_idle", INFO, "connection closed while idle", "RFC 9112 §9.6"),
    ("http.request_lost_on_closed_connection", ERROR, "request written to a connection that the peer had closed", "RFC 9112 §9.6"),
    ("http.host_rejected", WARN, "request whose Host is not a loopback name refused by a loopback tap (DNS rebinding protection)",
     T + " Security Warning; mcptap"),
    ("http.client_invalid_http", ERROR, "the client sent bytes that are not HTTP/1.1 (a request line, header field or chunk "
     "size h11 refuses): the tap answered 400 where it could and closed the connection", "RFC 9112 §2.2, §3, §5, §7.1"),
    ("http.request_rejected", ERROR,
     "request an intermediary must not forward (both Content-Length and Transfer-Encoding, several or invalid Host, Host with userinfo, "
     "CONNECT, a target that is not origin-form, http(s) absolute-form or '*'): the tap answered 400 and closed",
     "RFC 9112 §3.2, §6.1, §6.3; RFC 9110 §4.2.4, §9.3.6"),
    ("http.client_timeout", WARN,
     "a request was not received whole within the tap's request timeout (slow or stalled client): the tap answered 408 and closed",
     "RFC 9110 §15.5.9; mcptap"),
    ("http.upstream_failed", ERROR, "upstream unreachable (refused, TLS, timeout): the client got 502", "mcptap"),
    ("http.origin_rejected", WARN, "request with an Origin header rejected, or a non-loopback Origin accepted", T + " Security Warning: MUST validate Origin"),
    # authorization (HTTP; the tap's OAuth fronting, relay/http/auth.py)
    ("auth.challenge_missing", ERROR, "401 response without a WWW-Authenticate challenge",
     AUTH + " (2025-06-18+): servers MUST use WWW-Authenticate on 401; RFC 9728 §5.1"),
    ("auth.scope_missing", WARN, "403 insufficient_scope challenge without a scope parameter", AUTH + " Scope Challenge Handling (2025-11-25); RFC 6750 §3.1"),
    ("auth.resource_mismatch", ERROR, "protected resource metadata whose resource is not the URL it is served for",
     "RFC 9728 §3.3: clients MUST reject it; " + AUTH),
    ("auth.metadata_invalid", ERROR, "protected resource or authorization server metadata that is not a JSON object with its required members",
     "RFC 9728 §2, RFC 8414 §2"),
    ("auth.redirect_loop", WARN, "an OAuth endpoint redirecting a request to itself", "RFC 9110 §15.4 (clients SHOULD detect infinite redirection); " + AUTH),
    ("auth.root_relative_refused", WARN, "a page of a fronted authorization server requested a root-relative URL (its Referer names the "
     "page): the tap refused it (404) rather than send it to the MCP upstream; that server's pages need URLs relative to its own path",
     "mcptap (OAuth fronting under /.mcptap/o/<n>); RFC 6265 §5.1.4"),
    ("auth.metadata_host_refused", WARN, "a loopback upstream's metadata names a non-loopback host: not fronted by the tap", "mcptap (no open proxy); " + AUTH),
    # process (stdio)
    ("process.spawn_failed", ERROR, "server command could not be started", "mcptap"),
    ("process.exit", INFO, "server process exit (code or signal, time since stdin EOF)", LC + " Shutdown (stdio)"),
    ("process.stderr_volume", INFO, "large stderr output (bytes per request / per interval)", T + " stdio: stderr MAY carry logs"),
    ("process.stderr_unterminated", INFO, "stderr ended mid-line, or CR progress output (no newline coming)", T + " stdio"),
    ("process.stderr_backpressure", WARN, "host stopped draining the tap's stderr; tap is buffering/dropping", "mcptap"),
    ("process.no_exit_after_stdin_eof", WARN, "server still alive N s after stdin EOF", LC + " Shutdown (stdio): server SHOULD exit"),
    ("process.signal_forwarded", INFO, "tap forwarded a signal to the server's process group", "mcptap"),
    ("process.stdin_closed_by_server", WARN, "the server closed its stdin while the host still wrote: the bytes in flight "
     "were not delivered (the host gets EPIPE once the pipe is full)", T + " stdio"),
    ("process.stdout_closed_by_host", WARN, "the host closed the tap's stdout while the server still wrote: the bytes in "
     "flight were not delivered (the server gets EPIPE/SIGPIPE)", T + " stdio"),
    ("process.exited_but_stdout_open", WARN, "direct child exited but stdout still open (orphaned descendant)", "mcptap"),
    # serve (the mock server's own capture)
    ("serve.no_recorded_answer", WARN,
     "mcptap serve had no recorded answer for a client request and answered with an error (-32601 unknown method, -32602 other params)", "mcptap serve"),
    ("capture.gap", ERROR, "part of the traffic could not be recorded (see the gap record)", "mcptap capture format"),
    ("capture.answers_in_gap", INFO, "requests left open while a recording gap covered their answers' direction: their answers may be in the "
     "gap, so they are not judged unanswered", "mcptap capture format"),
    ("capture.request_in_gap", INFO, "response matching no request after a recording gap covered the requester's direction: its request may "
     "be in the gap, so it is not judged unmatched (each id once, and no more answers than the gap's bytes can hold requests)",
     "mcptap capture format"),
    ("capture.truncated", WARN, "capture's last line is cut mid-record (mcptap killed while writing); the partial record is ignored", "mcptap capture format"),
    ("capture.incomplete", WARN, "capture has no end record (mcptap was killed, is still recording, or could not write)", "mcptap capture format"),
    ("capture.cut_line", WARN, "capture without end record stops in the middle of a peer's line (recorded as chunk records): "
     "that line is reported, not judged as a message", "mcptap capture format"),
    ("capture.digest_mismatch", ERROR,
     "the message records do not hold what the end record says was relayed (count, bytes or SHA-256): the capture was edited or records were "
     "removed", "mcptap capture format"),
    ("capture.out_of_sequence", ERROR,
     "record sequence numbers go backwards, repeat, or skip without a gap record: records were reordered, duplicated or removed", "mcptap capture format"),
    ("capture.impossible_time", ERROR,
     "a record's t_us cannot be a monotonic time since the capture started: negative, beyond 100 years, or a message record's more than "
     "60 s before an earlier message record's: the record was edited or damaged", "mcptap capture format"),
]

#: The only severities a rule may give a code besides its default, and when
#: (the docs show them; ``finding`` refuses any other).
OTHER_SEVERITIES: dict[str, tuple[tuple[Severity, str], ...]] = {
    "framing.batch": ((INFO, "negotiated 2025-03-26, where batches are legal"),),
    "jsonrpc.error_id_null": ((INFO, "-32700/-32600 answering input that could not be read: the correct rejection"),),
    "jsonrpc.unanswered_request": ((INFO, "the capture was cut short: the answer may simply not have been recorded"),),
    "jsonrpc.response_after_cancel": ((ERROR, "2026-07-28: the server MUST NOT send anything after a cancellation"),),
    "jsonrpc.error_code_not_in_revision": ((INFO, "-32002 on a revision where resource-not-found is -32602 (clients SHOULD still accept it)"),),
    "capability.not_negotiated": ((WARN, "revisions where capabilities are SHOULD (2024-11-05, 2025-03-26, unknown), or a SHOULD-level conditional gate"),),
    "capability.not_in_revision": ((ERROR, "a request that was removed before the negotiated revision"),),
    "sse.connection_closed_mid_stream": ((INFO, "the stream had event ids: resumable with Last-Event-ID"),),
    "http.client_abandoned_request": ((INFO, "the stream had event ids: the client may resume it with Last-Event-ID"),),
    "sse.stream_closed_without_response": ((INFO, "the server ended it after an event id: resumable with Last-Event-ID (2025-11-25 polling)"),),
    "capability.unknown_method": ((INFO, "mcptap's own rule error, reported instead of losing the message"),),
    "shape.invalid_params": ((WARN, "revisions without exact wire types, checked against the 2025-11-25 schema era"),),
    "shape.invalid_result": ((WARN, "revisions without exact wire types, checked against the 2025-11-25 schema era"),),
    "process.exit": ((WARN, "a non-zero exit status, or a signal the tap did not send"),),
}

CODES: dict[str, Code] = {c: Code(c, s, m, src, OTHER_SEVERITIES.get(c, ())) for c, s, m, src in _TABLE}

#: Codes the transports decide (HTTP exchange facts, SSE framing, process
#: events): re-annotation keeps them as recorded, since a capture holds their
#: evidence only partly. Everything else is recomputed from the message bytes.
TRANSPORT_FAMILIES = ("http.", "sse.", "process.", "capture.", "serve.")
TRANSPORT_CODES = frozenset({"lifecycle.request_before_initialized_ack", "lifecycle.session_terminated"})


#: codes of those families that the annotator derives from the message itself (re-annotation derives them again)
MESSAGE_MADE = frozenset({"http.error_body", "capture.request_in_gap"})


def transport_made(code: str) -> bool:
    return (code.startswith(TRANSPORT_FAMILIES) or code in TRANSPORT_CODES) and code not in MESSAGE_MADE


def finding(code: str, message: str, data: dict[str, Any] | None = None, severity: Severity | None = None) -> Finding:
    """Build a Finding with the table's default severity (or ``severity``,
    which must be the default or one of the code's ``also``). Raises KeyError
    for a code that is not in the table and ValueError for a severity the
    table does not give it (bugs in mcptap)."""
    c = CODES[code]
    if severity is None:
        return Finding(code, c.severity, message, data)
    if not c.allows(severity):
        raise ValueError(f"{code} may not be {severity.value} (codes.py OTHER_SEVERITIES)")
    return Finding(code, severity, message, data)


def markdown() -> str:
    """docs/findings.md, generated from the table."""
    lines = [
        "# Finding codes",
        "",
        "Generated from `mcptap/protocol/codes.py` (`python -m mcptap.protocol.codes > docs/findings.md`); do not edit by hand.",
        "",
        "Severity: **error** breaks a MUST of the negotiated revision or breaks real peers; "
        "**warn** is a SHOULD or an interoperability hazard; **info** is context. A rule gives a code "
        "another severity only where the table says so (\"also\"), and the finding's message says why.",
        "",
        "| code | severity | meaning | spec source |",
        "|---|---|---|---|",
    ]
    for c in CODES.values():
        sev = c.severity.value + "".join(f"; also **{s.value}**: {why}" for s, why in c.also)
        lines.append(f"| `{c.code}` | {sev} | {c.meaning} | {c.source} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # pragma: no cover
    import sys

    sys.stdout.write(markdown())


def closed_finding(event: str, undelivered: int, recorded: bool) -> Finding:
    """The finding of a stdio pipe the reader closed on the writer
    (``event``: ``stdin_closed_by_server`` or ``stdout_closed_by_host``):
    ``undelivered`` bytes written and not delivered; ``recorded``: whether the
    capture holds them anyway."""
    who, writer = ("server", "host") if event == "stdin_closed_by_server" else ("host", "server")
    held = "the capture holds them" if recorded else "the capture does not hold them"
    return finding(f"process.{event}", f"the {who} closed its end while the {writer} still wrote: {undelivered} bytes the {writer} "
                                       f"wrote were not delivered ({held})", {"undelivered_bytes": undelivered})
