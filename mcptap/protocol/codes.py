"""The one table of finding codes: severity, one-line meaning, spec source.

Every Finding mcptap emits uses a code from ``CODES`` (its rows:
``code_table.MESSAGE_ROWS``, then ``code_table_transport.TRANSPORT_ROWS``;
the other severities a rule may give: ``OTHER_SEVERITIES`` here); ``docs/findings.md`` is
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
from mcptap.protocol.code_table import ERROR, INFO, MESSAGE_ROWS, WARN
from mcptap.protocol.code_table_transport import TRANSPORT_ROWS


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

CODES: dict[str, Code] = {c: Code(c, s, m, src, OTHER_SEVERITIES.get(c, ())) for c, s, m, src in MESSAGE_ROWS + TRANSPORT_ROWS}

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
