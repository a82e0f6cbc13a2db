"""Options of the HTTP tap and their validation (``mcptap record --upstream``):
``HttpTapConfig``, ``check_config`` (one-line McptapError), loopback names."""

from __future__ import annotations

import ipaddress
import socket
import ssl
from dataclasses import dataclass

from mcptap.errors import McptapError
from mcptap.relay.http import events as r


@dataclass(slots=True)
class HttpTapConfig:
    """Options of ``mcptap record --upstream URL``.

    ``listen_host``/``listen_port``: where to listen (port 0: any free port);
    ``allow_remote``: permit a non-loopback listen address; ``keep_host``:
    forward the client's Host header; ``rewrite_endpoint``: rewrite legacy
    endpoint events that name the upstream origin; ``cacert``: PEM file of CA
    certificates for an https upstream (default: system trust store);
    ``record_secrets``: store credentials in clear; ``connect_timeout``: s;
    ``auth_rewrite``: front OAuth discovery and token exchanges so clients see
    one coherent resource (``relay/http/auth.py``; ``--no-auth-rewrite``).
    ``idle_timeout``: s a client connection may sit without a request in
    progress before the tap closes it; ``request_timeout``: s from a
    request's first byte until it is received whole (else 408), not applied
    while a response is in progress (SSE streams); ``max_connections``:
    client connections served at once (None: derived from the file
    descriptor limit); more get ``503`` and are closed.
    """

    upstream: str
    listen_host: str = "127.0.0.1"
    listen_port: int = 0
    allow_remote: bool = False
    keep_host: bool = False
    rewrite_endpoint: bool = True
    cacert: str | None = None
    record_secrets: bool = False
    connect_timeout: float = 10.0
    auth_rewrite: bool = True
    idle_timeout: float = 300.0
    request_timeout: float = 30.0
    max_connections: int | None = None


#: Host header names a loopback tap answers to (plus its own listen address).
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "[::1]"})


def bracket(host: str) -> str:
    return f"[{host.lower()}]" if ":" in host and not host.startswith("[") else host.lower()


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _resolvable(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        ipaddress.ip_address(host.strip("[]"))
        return True
    except ValueError:
        pass
    try:
        socket.getaddrinfo(host, None)
    except (OSError, UnicodeError):
        return False
    return True


def check_config(cfg: HttpTapConfig) -> r.Upstream:
    """Validate options; raises McptapError with a one-line reason."""
    try:
        up = r.Upstream.parse(cfg.upstream)
    except ValueError as exc:
        raise McptapError(str(exc)) from None
    if not _resolvable(cfg.listen_host):
        raise McptapError(f"cannot listen on {cfg.listen_host!r}: not an IP address or a host name that resolves "
                          "(expected --listen HOST:PORT, e.g. 127.0.0.1:8080)")
    if not is_loopback(cfg.listen_host) and not cfg.allow_remote:
        raise McptapError(f"refusing to listen on non-loopback address {cfg.listen_host} (pass --allow-remote to expose the tap)")
    if not 0 <= cfg.listen_port <= 65535:
        raise McptapError(f"invalid listen port {cfg.listen_port}")
    if cfg.cacert is not None:
        try:
            ssl.create_default_context(cafile=cfg.cacert)
        except (OSError, ssl.SSLError) as exc:
            raise McptapError(f"cannot load --cacert {cfg.cacert}: {exc}") from None
    return up
