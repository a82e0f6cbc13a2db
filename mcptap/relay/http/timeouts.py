"""Client timeouts of one HTTP connection (pure, sans-IO, h11): what a
connection waits for, and what the tap does when the client is too slow.

The transport asks :func:`waiting` before each read and applies its idle
timeout (``"idle"``: no request in progress) or its request timeout
(``"request"``: a request head or body is being received and no response has
begun, measured from the request's first byte, so a client dribbling one byte
at a time (slowloris) cannot hold the connection); ``"busy"`` connections (a
response in progress, e.g. a long SSE stream) have none. :func:`timed_out`
closes an idle connection quietly and answers a late request 408.
"""

from __future__ import annotations

from typing import Any

import h11

from mcptap.relay.http.conn import ConnRelay
from mcptap.relay.http.events import CloseUpstream, ConnClosed, ResponseEnded
from mcptap.relay.http.exchange import tap_response


def waiting(c: ConnRelay) -> str:
    """What the client side waits for: ``"idle"`` (no request in progress),
    ``"request"`` (a request is being received and no response has begun:
    the header/request timeout applies) or ``"busy"`` (a response is in
    progress; a client may rightly send nothing for as long as it lasts)."""
    ex = c.ex
    if c.closed:
        return "busy"
    if ex is None or (ex.req_done and ex.resp_done):
        return "request" if c.client.trailing_data[0] else "idle"
    if not ex.req_done and not ex.resp_started:
        return "request"
    return "busy"


def timed_out(c: ConnRelay, what: str, seconds: float, out: list[Any], detail: str | None = None) -> None:
    """The client sent nothing useful for ``seconds``: an idle connection
    is closed quietly; a request not received whole in time (slowloris)
    gets 408 and a close (RFC 9110 §15.5.9), its exchange ending
    ``client_timeout``. ``detail``: the reason recorded instead of the default."""
    if c.closed:
        return
    ex = c.ex
    if what == "idle":
        if c.up is not None:
            out.append(CloseUpstream(c.id, c.gen))
            c.up = None
        out.append(ConnClosed(c.id, "tap", idle=True, detail=detail or f"idle for {seconds:g} s: closed by the tap"))
        c._close_client(out, abort=False)
        return
    detail = detail or f"request not received whole within {seconds:g} s: the tap answered 408"
    busy = False
    if ex is not None and not ex.resp_done:
        busy = ex.resp_done = True
        out.append(ResponseEnded(ex.id, c.id, "client_timeout", detail, ex.reused, response_started=ex.resp_started))
    if c.up is not None:
        out.append(CloseUpstream(c.id, c.gen, abort=busy))
        c.up = None
    if c.client.our_state in (h11.IDLE, h11.SEND_RESPONSE):
        for ev in tap_response(408, b"Request Timeout", f"mcptap: {detail}\n"):
            c._send_client(ev, out)
    out.append(ConnClosed(c.id, "tap", idle=not busy, detail=detail))
    c._close_client(out, abort=False)
