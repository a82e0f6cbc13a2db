"""``mcptap serve CAPTURE --listen HOST:PORT``: the mock over HTTP (trio + h11, level 4).

    server = HttpMock(core, rec, host="127.0.0.1", port=0, say=print)
    url = await nursery.start(server.serve)      # raises McptapError (port busy, non-loopback)

Streamable HTTP (any revision) unless the capture is the legacy HTTP+SSE
transport. What the recording shows is what the client gets:

* POST with requests: the answer as one JSON body, or as an SSE stream that
  carries the server's messages sent because of them (progress, logs,
  sampling / elicitation / roots requests) before the response, as the
  recorded exchange did (a capture from stdio: SSE when anything precedes the
  response); the recorded HTTP status;
* POST with only notifications or answers: ``202 Accepted``;
* sessions: when the recorded server assigned ``Mcp-Session-Id``, the mock
  mints a fresh one at each ``initialize`` and requires it afterwards (400
  without, 404 for an unknown one; ``DELETE`` ends it); otherwise all traffic
  is one stateless session;
* GET: an SSE stream for server messages not tied to a request when the
  recorded server offered one, else the recorded refusal (405);
* legacy HTTP+SSE: ``GET`` on the recorded SSE path opens a session whose
  ``endpoint`` event names the recorded POST path with a fresh
  ``session_id``; POSTs there get ``202`` and every answer travels on the SSE stream.

A recorded server line that is not a JSON-RPC message (a stdio server's banner) has no
byte stream to go in: it is left out, with a ``serve`` note in the mock's capture.

A loopback mock answers only loopback ``Host`` and ``Origin`` names (DNS
rebinding), and any mock only JSON POSTs (serve/http_guard.py). With a
Recorder, the mock's own traffic is recorded as an HTTP capture (``http``
request/response records and a ``message`` record per JSON-RPC payload).
How it answers each request is serve/http_requests.py, its ways of answering serve/http_send.py;
the legacy transport serve/http_legacy.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import h11
import trio

from mcptap.model import Direction
from mcptap.recorder import Recorder
from mcptap.relay.http.credentials import headers_json, record_target
from mcptap.serve.core import ServeCore
from mcptap.serve.http_conn import IO_ERRORS, TOO_LARGE, TOO_SLOW, Conn, Limit, accept_loop
from mcptap.serve.http_guard import refusal
from mcptap.serve.http_requests import Requests
from mcptap.serve.http_send import OpenExchange
from mcptap.serve.http_streams import MockSession, unsent_line
from mcptap.serve.live import Out
from mcptap.serve.script_http import refusal_key
from mcptap.transport.http_config import LOOPBACK_NAMES, check_listen, listen_failed

C2S, S2C = Direction.C2S, Direction.S2C
#: seconds a server message with no stream may wait for the client's GET stream before the mock says so
UNSENT_AFTER_S = 5.0


class HttpMock(Requests):
    """The HTTP mock (see module docstring). ``rec``: Recorder or None."""

    def __init__(self, core: ServeCore, rec: Recorder | None = None, host: str = "127.0.0.1", port: int = 0, allow_remote: bool = False,
                 say: Callable[[str], None] | None = None, idle_timeout: float = 300.0, request_timeout: float = 30.0,
                 max_connections: int | None = None) -> None:
        check_listen(host, port, allow_remote)
        self.core = core
        core.stream_ends = True                 # a POST's event stream ends where the recorded one did
        self.script = core.script
        self.rec = rec
        self.host, self.port = host, port
        self.allow_remote = allow_remote
        self.say = say or (lambda line: None)
        self.timeouts = (idle_timeout, request_timeout)       # s: as the tap's --idle-timeout / --request-timeout
        self.limit = Limit.saying(self.say, max_connections)
        self.sessions: dict[str, MockSession] = {}
        self.stateless = MockSession(core.open(), on_backlog=self._backlogged, get_stream=self.script.get_stream)
        self.url: str | None = None
        self._conns = 0
        self._exchanges = 0
        self._told_raw = False
        self._turns: dict[str, int] = {}         # request kind -> its recorded answers given (Answering._turn)
        self.open_exchanges: dict[int, OpenExchange] = {}
        #: requests whose answering failed by a fault of the mock's own (said; the exit status is 1)
        self.internal_errors = 0
        #: notifications not sent after the first of their method in their session, by method:
        #: said once at the end (``unsent_summary``), not a line each (a flood of logs is thousands)
        self._unsent_seen: set[tuple[str | None, str]] = set()
        self.unsent_more: dict[str, int] = {}
        self.nursery: trio.Nursery

    async def bind(self) -> str:
        """Open the listening socket (before serving, so a busy port is an
        error of its own). Returns the URL. Raises McptapError."""
        try:
            self._listeners = await trio.open_tcp_listeners(self.port, host=self.host)
        except OSError as exc:
            raise listen_failed(self.host, self.port, exc) from None
        port = self._listeners[0].socket.getsockname()[1]
        host = f"[{self.host}]" if ":" in self.host else self.host
        self.authority = f"{host}:{port}"
        path = self.script.sse_path if self.script.legacy_sse else self.script.post_path
        self.url = f"http://{self.authority}{path}"
        self._hosts = LOOPBACK_NAMES | {host.lower()}
        return self.url

    async def serve(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Listen (``bind`` first if not done) and serve until cancelled;
        ``task_status.started(url)``."""
        if self.url is None:
            await self.bind()
        async with trio.open_nursery() as nursery:
            self.nursery = nursery
            for listener in self._listeners:
                nursery.start_soon(accept_loop, listener, self._handle, nursery, self.limit)
            for line in self.script.auth_notes:
                self.say(line)
            task_status.started(self.url)

    # -- connections --------------------------------------------------------------------
    async def _handle(self, stream: trio.abc.Stream) -> None:
        self._conns += 1
        c = Conn(stream, self._conns, *self.timeouts, seen=self._seen)
        side, detail = "client", ""          # who closed it, as the tap's conn_close record says
        try:
            while True:
                got = await c.next_request()
                if not isinstance(got, tuple):
                    if got == TOO_LARGE:
                        side, detail = "tap", "request body too large: answered 413"
                        await self._plain(c, 413, b"request body too large")
                    elif got == TOO_SLOW:
                        side, detail = "tap", "request not received whole in time: answered 408"
                        await c.answer_slow(self.limit.notices)
                    elif c.idled:
                        side = "tap"                 # the mock's idle timeout
                    return
                c.busy = True
                await self._request(c, *got)
                c.busy = False
                if c.h11.our_state is h11.DONE and c.h11.their_state is h11.DONE:
                    c.h11.start_next_cycle()
                else:
                    break
        except IO_ERRORS:
            pass
        except trio.Cancelled:
            side = "tap"                             # the mock stops
            raise
        except Exception as exc:    # noqa: BLE001 - one request's failure must not take every other client's server down
            # (a bug of ours answering one request once ended the whole mock: every later request was refused)
            self.internal_errors += 1
            line = f"internal error answering a request on connection {c.id}: {type(exc).__name__}: {exc} (that connection is closed)"
            side, detail = "tap", line
            self.say(line)
            if self.rec is not None:
                self.rec.note("serve", message=line)
        finally:
            if not c.closed_as_recorded:
                self._conn_closed(c, side, detail)
            try:
                await stream.aclose()
            except IO_ERRORS:
                pass

    def _conn_closed(self, c: Conn, side: str, detail: str) -> None:
        """The ``conn_close`` record the tap writes for a client connection (relay/http/observe.py):
        ``side`` "client" or "tap" (the mock closed it), ``idle``: no request was being answered."""
        fields: dict[str, Any] = {"event": "conn_close", "conn": c.id, "side": side, "idle": not c.busy}
        self._record_http(**fields, **({"detail": detail} if detail else {}))

    def _seen(self, direction: Direction, data: bytes) -> None:
        # every byte read and written, as the tap's end record counts what it forwarded (the CLI sets ``rec`` late)
        if self.rec is not None:
            self.rec.forwarded(direction, data)

    def _header(self, req: h11.Request, name: bytes) -> str | None:
        for n, v in req.headers:
            if n == name:
                return v.decode("latin-1")
        return None

    async def _request(self, c: Conn, req: h11.Request, body: bytes) -> None:
        self._exchanges += 1
        ex = self._exchanges
        method = req.method.decode("ascii", "replace")
        target = req.target.decode("latin-1")
        host = (self._header(req, b"host") or "").lower()
        if self.rec is not None:
            # credentials as keyed placeholders, as the tap records them (the client under test may send real ones)
            # and the session id it carries, as the tap records it (what the session rules judge)
            sid = self._header(req, b"mcp-session-id") or self._legacy_session(method, target)
            self._record_http(event="request", exchange=ex, conn=c.id, method=method, target=record_target(target),
                              headers=headers_json(list(req.headers)), **({"session": sid} if sid is not None else {}))
            self._exchange_opened(ex, c.id, len(body), sid)
        if not self.allow_remote and host.rpartition(":")[0] not in self._hosts and host not in self._hosts:
            await self._plain(c, 403, b"mcptap serve: Host not allowed", ex)
            return
        c.origin = f"http://{host or self.authority}"      # the mock's own origin, as this client reached it
        if await self._oauth(c, ex, method, urlsplit(target).path):
            return                                   # (a token request is a form POST: answered before the JSON rule)
        refused = refusal(method, self._header(req, b"origin"), self._header(req, b"content-type"), self._hosts,
                          check_origin=not self.allow_remote)
        if refused is not None:
            await self._plain(c, refused[0], refused[1], ex, ctype=refused[2] or "text/plain")
            return
        path = urlsplit(target).path
        if self.script.legacy_sse:
            if method == "GET" and path == self.script.sse_path:
                answer = self._turn(refusal_key("get", target))
                if answer is not None and not answer.stream or answer is None and not self.script.get_stream:
                    await self._refused_as_recorded(c, ex, answer, "get", 405)     # the recorded server refused its SSE stream (a 401)
                else:
                    await self._legacy_stream(c, ex, answer)
            elif method == "POST":
                await self._legacy_post(c, ex, target, body)
            else:
                await self._plain(c, 405 if method != "GET" else 404, b"", ex)
            return
        if method == "POST":
            await self._post(c, ex, req, body)
        elif method == "GET":
            await self._get(c, ex, req)
        elif method == "DELETE":
            await self._delete(c, ex, req, target)
        else:
            await self._plain(c, 405, b"", ex)

    def _backlogged(self, ms: MockSession, out: Out) -> None:
        self.nursery.start_soon(self._unsent, ms, out)

    async def _unsent(self, ms: MockSession, out: Out) -> None:
        """A server message that belongs to no open client request and found no GET stream:
        said on stderr and in the mock's capture (a ``serve`` note), so a client waiting for
        it (a tool that needs its answer) is not left to hang unexplained."""
        if self.script.get_stream:
            await trio.sleep(UNSENT_AFTER_S)          # an SDK client opens its GET stream right after initialized
        if ms.closed or not any(o is out for o in ms.backlog):
            return
        v = out.value if isinstance(out.value, dict) else {}
        line = unsent_line(v, ms.key, UNSENT_AFTER_S if self.script.get_stream else None, self.script.first_status("get", 405))
        method = v.get("method")
        if "id" in v or not isinstance(method, str):
            self.say(line)                  # a server request or an answer: each is one a client may wait for
        elif (ms.sid, method) not in self._unsent_seen:
            self._unsent_seen.add((ms.sid, method))
            self.say(line)
        else:
            self.unsent_more[method] = self.unsent_more.get(method, 0) + 1
        if self.rec is not None:
            self.rec.note("serve", message=line, session=ms.key, unsent=v.get("method"))

