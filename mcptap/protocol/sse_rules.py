"""SSE event findings (``sse.*``) of Streamable HTTP and legacy HTTP+SSE streams (pure).

Sources: WHATWG HTML §9.2 (server-sent events), spec basic/transports
(2024-11-05 "HTTP with SSE" ``endpoint`` event; 2025-03-26 … 2026-07-28
Streamable HTTP). Facts are one parsed ``SSEEvent`` (framing facts), one data
event's parsed payload, or a legacy ``endpoint`` event's data and the URLs
around it; the live observer (relay/http/observe_sse.py) and ``check --full``
(protocol/http_replay.py) call the same functions. The exchange-level HTTP
rules (heads, status, how an exchange ended) are in ``http_rules.py``.
"""

from __future__ import annotations

from typing import Any

from mcptap.model import Finding, Kind
from mcptap.protocol import urls
from mcptap.protocol.codes import finding
from mcptap.protocol.excerpt import cut
from mcptap.protocol.jsonrpc import classify, classify_plain
from mcptap.protocol.sse import SSEEvent

#: characters of an event's data a finding quotes (``sse_canonical``, ``observe_sse``, ``http_replay`` take them)
QUOTE = 40


def sse_findings(ev: SSEEvent) -> list[Finding]:
    """Per-event findings (framing facts; WHATWG rules are all valid SSE)."""
    out: list[Finding] = []
    if ev.priming:
        out.append(finding("sse.priming_event", f"event id {ev.id!r} with empty data (priming): not a message, not an error"))
    if ev.retry is not None:
        out.append(finding("sse.retry", f"retry {ev.retry} ms", {"retry_ms": ev.retry}))
    if ev.comments:
        out.append(finding("sse.comment", f"{len(ev.comments)} comment line(s) ({cut(ev.comments[0], 30)!r}): keep-alive, ignored by clients"))
    if ev.multiline:
        out.append(finding("sse.multiline_data", f"{ev.data_lines} data lines joined with LF"))
    if ev.cr:
        out.append(finding("sse.crlf", "lines end in CR LF or CR (valid SSE; naive parsers split on LF only)"))
    if ev.chunks > 1:
        out.append(finding("sse.event_split_across_chunks", f"event spans {ev.chunks} network chunks"))
    if ev.id_ignored:
        out.append(finding("sse.event_id_ignored", "an id field containing NUL: WHATWG clients ignore it, so a reconnect's "
                                                   "Last-Event-ID cannot name this event"))
    if ev.retry_invalid:
        out.append(finding("sse.retry_ignored", "a retry field that is not all ASCII digits: clients ignore it"))
    if ev.dropped:
        out.append(too_large(ev.end - ev.start))
    if not ev.terminated and not ev.blank:
        out.append(finding("sse.unterminated_event_at_eof", "stream ended inside an event (no blank line): WHATWG clients discard it"
                           + (" — its data would have been a message" if ev.data_lines else "")))
    return out


def too_large(n: int) -> Finding:
    """``sse.event_too_large`` for an event of ``n`` bytes (so far) beyond what the tap holds (``SSEEvent.dropped``)."""
    return finding("sse.event_too_large", f"an event of {n} bytes: longer than the tap holds, so only its size and first "
                   "bytes are recorded (not analysed)", {"bytes": n})


def data_findings(value: Any, quote: str) -> list[Finding]:
    """Findings about a data event's payload, parsed (``value``; ``quote``:
    its first 40 characters), for the live observer and ``check --full``
    alike: JSON that is not a JSON-RPC message."""
    # a well-formed message (the common case) is never INVALID: classify_plain says so without a Classified
    if value is not None and classify_plain(value) is None and classify(value).kind is Kind.INVALID:
        return [finding("sse.data_not_jsonrpc", f"event data is JSON but not a JSON-RPC message ({_quoted(quote)!r}): strict clients fail on it")]
    return []


def endpoint_findings(data: str, stream_url: str, tap_origin: str, upstream_origin: str, rewritten: str | None) -> tuple[list[Finding], str]:
    """The legacy ``endpoint`` event: where a client will POST. ``stream_url``:
    absolute URL of the GET as the client addressed the tap; ``tap_origin``:
    the origin the client talks to (``http://HOST:PORT`` for the tap, the
    server's own for replay); origins compare by ``urls.origin``. Returns
    (findings, resolved URL as the client will use it)."""
    target = rewritten if rewritten is not None else data
    resolved = urls.join(stream_url, target.strip())
    if resolved is None:            # unparseable (http://[::1/x): kept as sent
        resolved = target.strip()
    out = [finding("sse.endpoint_event", f"legacy HTTP+SSE endpoint {data!r} resolves to {resolved}"
                   + (f" (rewritten by the tap to {rewritten})" if rewritten is not None else ""),
                   {"data": data, "resolved": resolved, **({"rewritten": rewritten} if rewritten is not None else {})})]
    if rewritten is not None:
        out.append(finding("sse.endpoint_rewritten",
                           f"endpoint named the upstream origin {upstream_origin}: rewritten to the tap's origin so POSTs are recorded"))
    stream = urls.split(stream_url)
    stream_path = stream.path if stream is not None else ""
    prefix = stream_path.rsplit("/", 1)[0]
    if target.startswith("/") and not target.startswith("//") and prefix and not target.startswith(prefix + "/"):
        out.append(finding("sse.endpoint_prefix_ambiguous", f"root-relative endpoint {target!r} while the stream URL has the path prefix {prefix!r}: "
                           "the POSTs leave the prefix (some clients keep it)"))
    r = urls.split(resolved)
    origin = f"{r.scheme}://{r.netloc}".lower() if r is not None else ""
    here = urls.origin(resolved)
    if here is None or here != urls.origin(tap_origin):
        where = "the upstream's own origin" if here is not None and here == urls.origin(upstream_origin) else f"origin {origin}"
        out.append(finding("sse.endpoint_foreign_origin", f"endpoint on {where}: the host POSTs around the tap and the capture misses its messages"))
    return out, resolved


def _quoted(quote: str) -> str:
    """An event's quote (its data's first ``QUOTE`` characters) as a finding shows it: one of
    that length may have been cut inside a word, whose piece ``excerpt.cut`` drops."""
    return cut(quote, QUOTE - 1) if len(quote) >= QUOTE else quote
