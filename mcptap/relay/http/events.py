"""Values exchanged between the HTTP proxy core and its transport (pure, no h11).

``Upstream`` names the target; *commands* tell the transport what I/O to do
(``SendClient``, ``CloseClient``, ``OpenUpstream``, ``SendUpstream``,
``CloseUpstream``); *facts* tell the observer what happened (``RequestStarted``
… ``ConnClosed``). ``relay/http/proxy.py`` produces them, ``transport/http.py``
executes the commands, ``relay/http/observe.py`` records the facts.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

from mcptap.redact import scrub_command_url, scrub_text

Headers = list[tuple[bytes, bytes]]

# -- target ---------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Upstream:
    """Where the tap forwards to. ``scheme``: "http" or "https"; ``path``: the
    URL's path (informational: request targets keep the client's path);
    ``query``: the URL's query, added to each request's (``target``);
    ``basic``: the URL's user info as an ``Authorization`` value (``Basic …``,
    b"" without), sent when the client sends none on requests for the MCP
    endpoint's resources, not on OAuth discovery or authorization-server ones
    (never recorded, never in repr; docs/http-tap.md)."""

    scheme: str
    host: str
    port: int
    path: str = "/"
    query: str = ""
    basic: bytes = field(default=b"", repr=False, compare=False)
    #: ``host[:port]`` as a Host field names it (the port left out when it is the scheme's default; an
    #: IPv6 literal in brackets): fixed by the fields above, so made once (it is read on every request)
    authority: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.scheme == "https" else 80
        object.__setattr__(self, "authority", host if self.port == default else f"{host}:{self.port}")

    def authorize(self, headers: Headers, target: bytes) -> None:
        """Append ``basic`` to request ``headers`` unless they carry an
        Authorization of their own or origin-form ``target`` is a
        ``/.well-known/`` document (RFC 8615: metadata about the origin, not the
        resource the credentials were given for; OAuth discovery is
        unauthenticated). The caller sends none to authorization-server exchanges."""
        if self.basic and not target.startswith(b"/.well-known/") \
                and not any(n.lower() == b"authorization" for n, _ in headers):
            headers.append((b"authorization", self.basic))

    def target(self, target: bytes) -> bytes:
        """The origin-form request ``target`` with the upstream's query merged in:
        unchanged when the client's query already starts with it (a client given
        the full URL), else the upstream's parameters first, then the client's."""
        if not self.query:
            return target
        path, _, query = target.partition(b"?")
        mine = self.query.encode("latin-1")
        if query == mine or query.startswith(mine + b"&"):
            return target
        return path + b"?" + mine + (b"&" + query if query else b"")

    @classmethod
    def parse(cls, url: str) -> Upstream:
        """Parse ``http[s]://host[:port][/path]``. Raises ValueError with a
        one-line reason (quoting the URL with its secrets hidden: ``scrub_command_url``).
        A query is kept (``query``), user info becomes ``basic``."""
        shown = scrub_command_url(url)
        try:
            u = urlsplit(url)
            port = u.port
        except ValueError as exc:
            raise ValueError(f"invalid upstream URL {shown!r}: {scrub_text(str(exc))}") from None
        if u.scheme not in ("http", "https"):
            raise ValueError(f"upstream URL must start with http:// or https:// (got {shown!r})")
        if not u.hostname:
            raise ValueError(f"upstream URL has no host: {shown!r}")
        host = u.hostname
        if not host.isascii():
            # the Host header and TLS SNI need the ASCII (IDNA) form of the name
            try:
                host = host.encode("idna").decode("ascii")
            except UnicodeError:
                raise ValueError(f"upstream host {u.hostname!r} is not a valid international domain name") from None
        basic = b""
        if u.username is not None or u.password is not None:
            pair = f"{unquote(u.username or '')}:{unquote(u.password or '')}".encode()
            basic = b"Basic " + base64.b64encode(pair)
        return cls(u.scheme, host, port or (443 if u.scheme == "https" else 80), u.path or "/", u.query, basic)

    @property
    def origin(self) -> str:
        return f"{self.scheme}://{self.authority}"


def same_origin(url: str, up: Upstream) -> bool:
    """True when absolute ``url`` has the upstream's scheme, host and port."""
    try:
        u = urlsplit(url)
        port = u.port or (443 if u.scheme == "https" else 80 if u.scheme == "http" else None)
    except ValueError:
        return False
    return u.scheme.lower() == up.scheme and (u.hostname or "").lower() == up.host.lower() and port == up.port


# -- commands (I/O for the transport) ---------------------------------------------
#
# Commands and facts are values (nothing changes one once made) but not frozen
# dataclasses: a frozen dataclass's __init__ sets each field through
# object.__setattr__, ~6x the cost of a plain one (RequestStarted 9.8 vs 1.7 us
# on the reference machine); the relay makes ~10 per keep-alive round trip and
# the recorder process as many again when it decodes them (fact_codec).


@dataclass(slots=True)
class SendClient:
    conn: int
    data: bytes


@dataclass(slots=True)
class CloseClient:
    """Close the client connection (after sending what was queued). ``abort``:
    the response is incomplete (the client must see a broken connection)."""
    conn: int
    abort: bool = False


@dataclass(slots=True)
class OpenUpstream:
    """Connect upstream connection ``gen`` for client connection ``conn``; then
    call ``upstream_data(conn, gen, …)`` / ``upstream_failed(conn, gen, …)``.
    SendUpstream commands for it may follow before the connect completes.
    ``upstream``: where to connect (None: the tap's upstream; an authorization
    server the upstream's metadata named, see ``relay/http/auth.py``)."""
    conn: int
    gen: int
    upstream: Upstream | None = None


@dataclass(slots=True)
class SendUpstream:
    conn: int
    gen: int
    data: bytes


@dataclass(slots=True)
class CloseUpstream:
    conn: int
    gen: int
    abort: bool = False


# -- facts (for the observer) ---------------------------------------------------------

@dataclass(slots=True)
class RequestStarted:
    """A request head from the client. ``headers``: as received (raw case);
    ``host_rewritten``: the Host value sent upstream differs; ``auth``: "" for
    MCP traffic, else the OAuth exchange kind (``relay/http/auth.py``: "prm",
    "as_meta", "as") — such exchanges are recorded as HTTP, never as JSON-RPC;
    ``refused``: "" for a request the tap forwards, else the ``how`` of the tap's
    own refusal (``records.events.TAP_REFUSALS``), decided on this head: the
    request never reaches the server."""
    exchange: int
    conn: int
    method: str
    target: str
    http_version: str
    headers: Headers
    reused: bool
    host_rewritten: bool
    auth: str = ""
    refused: str = ""


@dataclass(slots=True)
class RequestBody:
    exchange: int
    conn: int
    data: bytes


@dataclass(slots=True)
class RequestEnded:
    exchange: int
    conn: int


@dataclass(slots=True)
class ResponseStarted:
    """A response head from the upstream (``informational``: 1xx), or with
    ``tap`` one the tap sent the client itself (the ``100 Continue`` for a
    request it holds, ``relay/http/conn_auth.py``): the capture says what the
    client received, and from whom."""
    exchange: int
    conn: int
    status: int
    reason: str
    headers: Headers
    informational: bool = False
    tap: bool = False


@dataclass(slots=True)
class ResponseBody:
    """One body chunk as received from the upstream (transfer framing removed,
    content coding kept; before any endpoint rewrite)."""
    exchange: int
    conn: int
    data: bytes


@dataclass(slots=True)
class EndpointRewritten:
    exchange: int
    conn: int
    original: str
    rewritten: str


@dataclass(slots=True)
class AuthRewritten:
    """The tap changed an OAuth value on the way (``relay/http/auth.py``).
    ``what``: "target", "form", "www-authenticate", "location", "prm",
    "as_meta", "upstream"; ``original``/``rewritten``: the values (str; whole
    documents for metadata); ``notes``: (code, message) findings about the peer."""
    exchange: int
    conn: int
    what: str
    original: str
    rewritten: str
    notes: tuple[tuple[str, str], ...] = ()


@dataclass(slots=True)
class ResponseEnded:
    """The exchange is over. ``how``: "complete", "upstream_closed" (EOF before
    or during the response), "upstream_failed" (connect/TLS/IO error: the client
    got a 502 if nothing was sent yet), "bad_response" (unparseable upstream
    response: 502), "client_closed" (the client went away first), "tap_stopped",
    "client_timeout" (408), or a refusal of the tap's own, which never forwarded the
    request: a key of ``records.events.TAP_REFUSALS`` ("host_rejected" 403,
    "request_rejected" 400, "auth_not_fronted" 404).
    ``detail``: one line; ``reused``: the upstream connection had served an
    earlier exchange; ``sent_502``: the tap answered instead of the upstream."""
    exchange: int
    conn: int
    how: str
    detail: str = ""
    reused: bool = False
    sent_502: bool = False
    response_started: bool = True


@dataclass(slots=True)
class ConnClosed:
    """A connection closed outside an exchange. ``side``: "client",
    "upstream" or "tap" (the tap closed it: idle or request timeout);
    ``idle``: no exchange was in progress."""
    conn: int
    side: str
    idle: bool = True
    detail: str = ""


@dataclass(slots=True)
class ClientOpened:
    conn: int
    peer: str | None = None
