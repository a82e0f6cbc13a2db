"""How a stdio server's exit is judged (pure): ``process.exit``'s severity.

* warn: a non-zero exit status, or death by a signal the tap did not send (a
  signal the tap forwarded from the host or sent at shutdown is the host's or
  the spec's doing, lifecycle Shutdown (stdio));
* info otherwise. Pending requests are named: a status 0 with a pending request
  looks clean but is a crashed read loop (cases/B03). A server that dies before
  answering any request is an error for the capture all the same: the requests
  it left waiting are ``lifecycle.eof_with_pending_requests`` (error) when its
  stdout closes, so ``check --fail-on warn`` and ``--fail-on error`` both fail;
  the exit itself is not counted twice (cases/B03 wire-client-crlf: info).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from mcptap.model import Finding, Severity
from mcptap.protocol.codes import finding
from mcptap.protocol.pairing import Pending


def exit_finding(code: int | None, signal: int | None, pending: Sequence[Pending], answered: bool,
                 signalled: Collection[int]) -> Finding:
    """``process.exit`` for an exit with status ``code`` or by ``signal``;
    ``pending``: the client's requests still open; ``answered``: the server
    answered at least one request; ``signalled``: signals the tap delivered."""
    how = f"signal {signal}" if signal is not None else f"status {code}"
    text = f"server exited with {how}"
    if pending:
        text += f" while {len(pending)} request(s) were pending ({', '.join(f'#{p.seq} {p.method}' for p in pending[:5])})"
    severity = Severity.INFO
    if pending and not answered:
        text += " before answering any request"
    if (code is not None and code != 0) or (signal is not None and signal not in signalled):
        severity = Severity.WARN
    return finding("process.exit", text, {"code": code, "signal": signal, "pending": len(pending)}, severity=severity)
