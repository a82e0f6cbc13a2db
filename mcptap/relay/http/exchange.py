"""What one HTTP exchange on a relayed connection carries (pure, sans-IO):
``ExchangeState`` (one request/response in flight), ``RelaySettings`` (what a
connection reads from the ``HttpRelay`` that owns it), ``tap_response`` (the
h11 events of an answer from the tap itself: 400, 403, 404, 502)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import h11

from mcptap.escape import unrepr_bytes
from mcptap.redact.argv import scrub_text
from mcptap.relay.http import auth as oauth
from mcptap.relay.http.conn_auth import AuthExchange
from mcptap.relay.http.endpoint import EndpointRewriter
from mcptap.relay.http.events import Upstream


class RelaySettings(Protocol):
    """What a connection reads from the relay that owns it (``proxy.HttpRelay``),
    read when needed so a changed setting affects the next request/response."""

    upstream: Upstream
    allowed_hosts: frozenset[str] | None
    keep_host: bool
    rewrite_endpoint: bool
    listen_authority: str
    auth: oauth.AuthFront | None
    #: ``record --record-secrets``: refusals quote the peer's Host and target in clear, as the capture keeps them
    record_secrets: bool

    def next_exchange_id(self) -> int: ...

MAX_HEAD = 1 << 20      # h11 max_incomplete_event_size, both sides


@dataclass(slots=True)
class ExchangeState:
    """One request/response exchange in flight on a connection."""
    id: int
    method: bytes
    host_in: str | None
    reused: bool = False
    req_done: bool = False
    resp_started: bool = False
    resp_done: bool = False
    forward: bool = True          # request body still goes upstream
    rewriter: EndpointRewriter | None = None
    rewrites_seen: int = 0
    #: a 502 decided before the client finished sending its request: sent once
    #: the request body is read, so the capture keeps the request (detail, how)
    pending_502: tuple[int, bytes, str, str] | None = None
    #: OAuth fronting of this exchange (``relay/http/conn_auth.py``), None with --no-auth-rewrite
    oauth: AuthExchange | None = None


#: characters of an h11 parse error kept in a 400/502 answer and its record
PEER_ERROR_CHARS = 240


def peer_error(exc: Exception, clear: bool = False) -> str:
    """One line for a peer's unparseable HTTP (``h11.RemoteProtocolError``):
    h11 quotes the refused bytes as a Python repr (``bytearray(b'…')``), given
    here as the escaped bytes alone (``escape.unrepr_bytes``: no raw control
    characters), e.g. a whole illegal header line of up to its 64 KiB head
    limit; the answer and the capture keep ``PEER_ERROR_CHARS`` of it and say
    how much was left out. Such a line may be ``Authorization: Bearer …`` or a
    request line with a secret query value: unless ``clear`` (``record
    --record-secrets``) its secrets are placeholders (``redact.argv.scrub_text``,
    as the record's own header and target fields have them), before the cut,
    so a cut never leaves part of a secret in clear."""
    text = " ".join(unrepr_bytes(str(exc)).split())
    if not clear:
        text = scrub_text(text)
    if len(text) <= PEER_ERROR_CHARS:
        return text
    return f"{text[:PEER_ERROR_CHARS]}... ({len(text) - PEER_ERROR_CHARS} more characters)"


def tap_response(status: int, reason: bytes, text: str) -> list[Any]:
    """The h11 events of a plain-text answer from the tap itself (400, 502):
    head with Content-Length and ``Connection: close``, body, end."""
    body = text.encode("utf-8", "replace")
    return [h11.Response(status_code=status, reason=reason, headers=[
        (b"Content-Type", b"text/plain; charset=utf-8"), (b"Content-Length", str(len(body)).encode()),
        (b"Connection", b"close")]), h11.Data(data=body), h11.EndOfMessage()]
