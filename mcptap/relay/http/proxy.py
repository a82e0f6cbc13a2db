"""The HTTP reverse-proxy core (pure, sans-IO): the facade over all client connections.

Events in, commands out (the mitmproxy shape): the transport feeds bytes read
from client and upstream sockets and executes the returned commands in order
(send to a client, open/send/close an upstream connection, close a client).
The same list carries *facts* (request started, body chunk, response started,
endpoint rewritten, exchange ended, …) that the observer turns into capture
records; the transport passes them on after it has forwarded the bytes.

``HttpRelay`` holds the tap's settings, allocates connection and exchange ids
and routes each event to the connection's ``ConnRelay``; the modules behind it:

* ``relay/http/conn.py``: the per-connection h11 state machine (1:1 upstream
  connection, keep-alive cycles, 400/502 answers, broken-connection mirroring);
* ``relay/http/rewrite.py``: what changes on the way (hop-by-hop fields
  dropped, ``Host`` set to the upstream's authority unless ``keep_host``, the
  legacy HTTP+SSE ``endpoint`` URL pointed back at the tap, RFC 9110 §7.6.1,
  §7.2); everything else (names, case, order, reason phrase, body bytes) is
  passed on unchanged, chunk by chunk, never buffered whole;
* ``relay/http/events.py``: ``Upstream``, the commands and the facts.

When the upstream cannot be reached the client gets a 502 with a one-line
reason; when the upstream closes mid-response the client connection is closed
the same way (no terminating chunk), so the client sees what it would have seen.
"""

from __future__ import annotations

from typing import Any

from mcptap.relay.http import passbody
from mcptap.relay.http.auth import AuthFront
from mcptap.relay.http.conn import ConnRelay
from mcptap.relay.http.events import ClientOpened, Upstream
from mcptap.relay.http.timeouts import timed_out, waiting


class HttpRelay:
    """Proxy core for every client connection of one tap.

    ``upstream``: where to forward; ``keep_host``: forward the client's Host
    unchanged; ``rewrite_endpoint``: rewrite legacy endpoint events naming the
    upstream origin; ``listen_authority``: the tap's ``host:port`` (used when a
    client sent no Host). The settings are read when used, so changing one
    affects the next request/response. All methods return a list of commands
    and facts, in the order they must be executed / observed; none raises on
    peer input. Events for an unknown or closed connection, or for a stale
    upstream ``gen``, return ``[]``.
    """

    def __init__(self, upstream: Upstream, keep_host: bool = False, rewrite_endpoint: bool = True,
                 listen_authority: str = "127.0.0.1", allowed_hosts: frozenset[str] | None = None,
                 auth_rewrite: bool = True, record_secrets: bool = False) -> None:
        self.upstream = upstream
        #: ``--record-secrets``: the tap's refusals quote the Host and target in clear, as the request record keeps them
        self.record_secrets = record_secrets
        #: Host names (lower-case, IPv6 in brackets) the tap serves; None: any.
        #: A loopback tap refuses others with 403 (DNS rebinding protection).
        self.allowed_hosts = allowed_hosts
        self.keep_host = keep_host
        self.rewrite_endpoint = rewrite_endpoint
        self.listen_authority = listen_authority
        #: OAuth fronting (``relay/http/auth.py``); None with ``--no-auth-rewrite``
        self.auth: AuthFront | None = AuthFront(upstream, f"http://{listen_authority}") if auth_rewrite else None
        self._conns: dict[int, ConnRelay] = {}
        self._next_conn = 0
        self._next_ex = 0

    def next_exchange_id(self) -> int:
        """A new exchange id (1, 2, …; unique across this relay's connections)."""
        self._next_ex += 1
        return self._next_ex

    def _done(self, c: ConnRelay) -> None:
        if c.closed:
            self._conns.pop(c.id, None)

    # -- client side ------------------------------------------------------------------
    def client_opened(self, peer: str | None = None) -> tuple[int, list[Any]]:
        """A client connected. Returns (conn id, [ClientOpened])."""
        self._next_conn += 1
        cid = self._next_conn
        self._conns[cid] = ConnRelay(self, cid)
        return cid, [ClientOpened(cid, peer)]

    def client_data(self, conn: int, data: bytes) -> list[Any]:
        """Bytes from the client (``b""``: the client closed its side)."""
        c = self._conns.get(conn)
        out: list[Any] = []
        if c is not None:
            c.client_data(data, out)
            self._done(c)
        return out

    def upstream_body_ahead(self, conn: int, gen: int) -> int:
        """Bytes of response body that the next bytes of upstream connection
        ``gen`` are known to start with (the rest of a chunk or of a
        Content-Length body, ``passbody.ahead``; 0: none or unknown): the
        transport reads a large body in large pieces (``http_io.ReadAhead``)."""
        c = self._conns.get(conn)
        if c is None or c.closed or c.up is None or c.gen != gen or c.ex is None:
            return 0
        return passbody.ahead(c.up)

    def client_body_ahead(self, conn: int) -> int:
        """``upstream_body_ahead`` for the client's request body on ``conn``."""
        c = self._conns.get(conn)
        if c is None or c.closed:
            return 0
        return passbody.ahead(c.client)

    def client_waiting(self, conn: int) -> str:
        """``"idle"``, ``"request"`` or ``"busy"`` (see ``relay/http/timeouts.py``);
        ``"busy"`` for an unknown connection (no timeout applies)."""
        c = self._conns.get(conn)
        return waiting(c) if c is not None else "busy"

    def client_timed_out(self, conn: int, what: str, seconds: float, detail: str | None = None) -> list[Any]:
        """The client connection was ``what`` (idle / request) for ``seconds``:
        close it (408 for a request); ``detail`` replaces the default reason.
        Returns commands and facts."""
        c = self._conns.get(conn)
        out: list[Any] = []
        if c is not None:
            timed_out(c, what, seconds, out, detail)
            self._done(c)
        return out

    def counts(self) -> tuple[int, int]:
        """(client connections, exchanges) seen so far."""
        return self._next_conn, self._next_ex

    # -- upstream side ----------------------------------------------------------------
    def upstream_data(self, conn: int, gen: int, data: bytes) -> list[Any]:
        """Bytes from upstream connection ``gen`` (``b""``: it closed)."""
        c = self._conns.get(conn)
        out: list[Any] = []
        if c is not None:
            c.upstream_data(gen, data, out)
            self._done(c)
        return out

    def upstream_failed(self, conn: int, gen: int, detail: str) -> list[Any]:
        """Upstream connection ``gen`` failed (connect refused, DNS, TLS, reset,
        timeout). ``detail``: one line for the 502 body and the capture."""
        c = self._conns.get(conn)
        out: list[Any] = []
        if c is not None:
            c.upstream_failed(gen, detail, out)
            self._done(c)
        return out

    # -- end ---------------------------------------------------------------------------
    def shutdown(self) -> list[Any]:
        """The tap stops: end every open exchange (``how="tap_stopped"``) and
        close every connection. Returns facts and close commands."""
        out: list[Any] = []
        for c in list(self._conns.values()):
            c.shutdown(out)
            self._done(c)
        return out

    def open_connections(self) -> int:
        return len(self._conns)
