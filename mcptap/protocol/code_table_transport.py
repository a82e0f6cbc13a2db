"""The finding codes of the transports and of mcptap itself (pure, level 1):
SSE, HTTP, authorization, process, serve and capture. Rows ``(code, default
severity, meaning, spec source)``, in the order docs/findings.md lists them,
after ``code_table.MESSAGE_ROWS``; ``protocol/codes.py`` makes them ``CODES``.
"""

from __future__ import annotations

from mcptap.model import Severity
from mcptap.protocol.code_table import AUTH, ERROR, INFO, LC, WARN, T

TRANSPORT_ROWS: list[tuple[str, Severity, str, str]] = [
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
    ("http.legacy_post_body_message", WARN, "JSON-RPC message in the body of a legacy endpoint POST's response: the transport "
     "carries server messages on the SSE stream only, so a client never reads it (kept as a response_body, not judged as one)",
     "2024-11-05 " + T + " HTTP with SSE"),
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
