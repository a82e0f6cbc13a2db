"""Options of the HTTP tap and their validation (``mcptap record --upstream``):
``HttpTapConfig``, ``check_config`` (one-line McptapError), loopback names,
and the listen address checks the HTTP tap and ``mcptap serve --listen`` share
(``check_listen``, ``listen_failed``)."""

from __future__ import annotations

import errno
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


def _unresolvable(host: str) -> str | None:
    """Why ``host`` names no address (the resolver's words), or None: it is
    an IP address, ``localhost``, or a name that resolves."""
    if host == "localhost":
        return None
    try:
        ipaddress.ip_address(host.strip("[]"))
        return None
    except ValueError:
        pass
    try:
        socket.getaddrinfo(host, None)
    except UnicodeError:
        return "not a valid host name"
    except OSError as exc:
        return str(exc.strerror or exc)
    return None


def check_listen(host: str, port: int, allow_remote: bool) -> None:
    """Validate a ``--listen HOST:PORT`` before binding: the host resolves,
    and is a loopback address unless ``allow_remote``; the port is 0-65535.
    Raises McptapError with a one-line reason naming the real cause."""
    why = _unresolvable(host)
    if why is not None:
        raise McptapError(f"cannot listen on {host!r} (--listen {host}:{port}): the host name does not resolve ({why}); "
                          "give an IP address or a host name that resolves, e.g. --listen 127.0.0.1:8080")
    if not is_loopback(host) and not allow_remote:
        raise McptapError(f"refusing to listen on non-loopback address {host} (--listen {host}:{port}): pass --allow-remote to "
                          "expose it, or listen on 127.0.0.1")
    if not 0 <= port <= 65535:
        raise McptapError(f"cannot listen on port {port} (--listen {host}:{port}): a port is 0-65535 (0: any free port)")


def listen_failed(host: str, port: int, exc: OSError) -> McptapError:
    """The error for a bind of ``host:port`` that failed with ``exc``."""
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    hint = ""
    if exc.errno == errno.EADDRINUSE:
        hint = ": another process listens on that port; pick another one, or port 0 for any free port"
    elif exc.errno == errno.EADDRNOTAVAIL:
        hint = ": no network interface of this machine has that address"
    elif exc.errno == errno.EACCES:
        hint = ": ports below 1024 need privileges; pick a port of 1024 or more, or 0 for any free port"
    return McptapError(f"cannot listen on {where}: {exc.strerror or exc}{hint}")


def check_config(cfg: HttpTapConfig) -> r.Upstream:
    """Validate options; raises McptapError with a one-line reason."""
    try:
        up = r.Upstream.parse(cfg.upstream)
    except ValueError as exc:
        raise McptapError(str(exc)) from None      # the URL it quotes has its secrets hidden
    check_listen(cfg.listen_host, cfg.listen_port, cfg.allow_remote)
    if cfg.cacert is not None:
        try:
            ssl.create_default_context(cafile=cfg.cacert)
        except (OSError, ssl.SSLError) as exc:
            raise McptapError(f"cannot load --cacert {cfg.cacert}: {exc}") from None
    return up
