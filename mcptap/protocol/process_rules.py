"""How a stdio server's exit is judged (pure): ``process.exit``'s severity.

* error: requests were waiting and the server never answered any: it died at
  startup, before ``initialize``'s answer (a host sees a server that "does not
  work" with no answer to show for it);
* warn: a non-zero exit status, or death by a signal the tap did not send (a
  signal the tap forwarded from the host or sent at shutdown is the host's or
  the spec's doing, lifecycle Shutdown (stdio));
* info otherwise. Pending requests are named: a status 0 with a pending request
  looks clean but is a crashed read loop (cases/B03).
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
        severity = Severity.ERROR
        text += " before answering any request"
    elif (code is not None and code != 0) or (signal is not None and signal not in signalled):
        severity = Severity.WARN
    return finding("process.exit", text, {"code": code, "signal": signal, "pending": len(pending)}, severity=severity)
