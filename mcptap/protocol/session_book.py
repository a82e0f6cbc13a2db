"""Streamable HTTP session bookkeeping across exchanges (pure).

Source: spec basic/transports, Session Management (2025-03-26 … 2025-11-25):
a server MAY assign a session id in the ``Mcp-Session-Id`` header of the
response carrying the ``initialize`` result; the client MUST then send it on
all subsequent HTTP requests (POST, GET, DELETE); a server that ended a
session answers its id with 404, after which the client starts a new session
with a fresh ``initialize``. 2026-07-28 has no sessions: requests carrying a
2026-07-28 ``_meta`` protocol version are never judged here.

``SessionBook`` remembers which ids the server assigned, on which endpoint
path, which ended, and which the client ended itself (a DELETE the server
accepted). A 404 on a session id is judged by who ended it: the server
(``lifecycle.session_terminated``), the client (it used the id after its own
DELETE: ``http.session_used_after_delete``), or no one (the server never
assigned it in the capture: ``http.session_id_unknown``). Inputs are ``http_rules.Exchange`` facts; outputs are
findings. Memory is bounded (``LIMIT`` sessions).
"""

from __future__ import annotations

from collections import OrderedDict

from mcptap.model import Finding
from mcptap.protocol import rules
from mcptap.protocol.codes import finding
from mcptap.protocol.http_fields import header
from mcptap.protocol.http_rules import Exchange

LIMIT = 4096


def _path(target: str) -> str:
    return target.split("?", 1)[0]


class SessionBook:
    """Session ids one tap has seen assigned (see module doc)."""

    def __init__(self) -> None:
        self._live: OrderedDict[str, str] = OrderedDict()      # session id -> endpoint path
        self._paths: dict[str, int] = {}                       # endpoint path -> ids assigned there
        self._ended: OrderedDict[str, None] = OrderedDict()
        self._deleted: OrderedDict[str, None] = OrderedDict()   # ended by the client's DELETE
        self._mcp_paths: dict[str, None] = {}                  # paths that received JSON-RPC POSTs

    def _remember(self, sid: str, path: str) -> None:
        self._ended.pop(sid, None)          # a server that gives an ended id to a new session: live again
        self._deleted.pop(sid, None)
        self._live[sid] = path
        self._live.move_to_end(sid)
        self._paths[path] = self._paths.get(path, 0) + 1
        if len(self._live) > LIMIT:
            self._live.popitem(last=False)

    def on_request(self, ex: Exchange) -> list[Finding]:
        """A request whose body (for a POST) is known: ``http.session_id_missing``
        when it carries no session id on an endpoint where the server assigned
        one, unless it starts a session (``initialize``) or is 2026-07-28."""
        if ex.method == "POST" and ex.body_kinds and len(self._mcp_paths) < 64:
            self._mcp_paths[_path(ex.target)] = None
        if ex.session is not None or ex.legacy or ex.method not in ("POST", "GET", "DELETE"):
            return []
        if ex.is_initialize or (ex.meta_version is not None and rules.is_modern(ex.meta_version)):
            return []
        if "server/discover" in ex.methods:
            return []
        path = _path(ex.target)
        if not self._paths.get(path):
            return []
        what = ex.methods[0] if ex.methods else ex.method
        return [finding("http.session_id_missing",
                        f"{ex.method} {path} ({what}) without Mcp-Session-Id, although the server assigned one at initialize: "
                        "the client MUST send it on every later request")]

    def on_response(self, ex: Exchange, req_session: str | None) -> tuple[list[Finding], str | None]:
        """A final response head; ``req_session``: the session id the request
        carried. Returns (findings, the session id the response assigns when
        it differs from ``req_session``, else None)."""
        sid = header(ex.resp_headers, "mcp-session-id")
        status = ex.status or 0
        out: list[Finding] = []
        if req_session is not None and status == 404 and not ex.legacy:
            out.append(self._not_found(req_session))
        elif req_session is not None and ex.method == "DELETE" and 200 <= status < 300 and not ex.legacy:
            self._live.pop(req_session, None)
            _bounded_add(self._deleted, req_session)
        if sid is None or sid == req_session or not (200 <= status < 300) or ex.legacy:
            return out, None
        path = _path(ex.target)
        if req_session is not None and ex.is_initialize and req_session in self._live:
            out.append(finding("http.session_id_reissued",
                               f"initialize on the live session {req_session} answered with a new Mcp-Session-Id {sid}: "
                               "two sessions for one client (a duplicate initialize MUST be rejected, reference SDKs answer 400)",
                               {"session": req_session, "assigned": sid}))
        elif ex.is_initialize and self._paths.get(path):
            out.append(finding("lifecycle.new_session", f"initialize answered with session {sid}: a new session on {path}", {"session": sid}))
        if ex.is_initialize:
            self._remember(sid, path)
        return out, sid

    def _not_found(self, sid: str) -> Finding:
        """The finding of a 404 answering session ``sid``, by who ended it."""
        if sid in self._deleted:
            return finding("http.session_used_after_delete", f"404 for session {sid}, which the client itself ended with DELETE: "
                           "the server answered right; the client MUST start a new session with initialize", {"session": sid})
        known = sid in self._live or sid in self._ended
        self._live.pop(sid, None)
        _bounded_add(self._ended, sid)
        if known or not self._paths:        # none assigned in the capture: the tap may have started mid-session
            return finding("lifecycle.session_terminated", f"404 for session {sid}: the server ended the session; the client MUST "
                           "start over with initialize")
        return finding("http.session_id_unknown", f"404 for session {sid}, which the server never assigned in this capture: "
                       "the client sent an id it was not given (the server answered right)", {"session": sid})

    def is_mcp_path(self, target: str, endpoint: str | None) -> bool:
        """Whether ``target`` is the MCP endpoint: it received JSON-RPC POSTs,
        or it is the upstream URL's path ``endpoint``; with neither known, any
        path is (nothing tells otherwise)."""
        path = _path(target)
        if path in self._mcp_paths or (endpoint is not None and path == endpoint):
            return True
        return not self._mcp_paths and endpoint is None

    def live(self, sid: str | None) -> bool:
        """Whether the server assigned ``sid`` and has not ended it."""
        return sid is not None and sid in self._live

    def assigned_any(self) -> bool:
        return bool(self._paths)

    def end(self, sid: str) -> None:
        """Session ``sid`` was rejected: it no longer counts as live."""
        self._live.pop(sid, None)
        _bounded_add(self._ended, sid)

    def ended(self, sid: str | None) -> bool:
        """Whether the server ended session ``sid`` (answered it with 404)."""
        return sid is not None and sid in self._ended


def _bounded_add(ids: OrderedDict[str, None], sid: str) -> None:
    ids[sid] = None
    ids.move_to_end(sid)
    if len(ids) > LIMIT:
        ids.popitem(last=False)
