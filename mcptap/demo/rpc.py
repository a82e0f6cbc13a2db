"""The JSON-RPC 2.0 line layer of the demo server (mcptap/demo/server.py; stdlib only).

* :class:`LineSession` — one session over a pair of byte streams: writes one
  message a line (compact UTF-8 JSON) under one lock, and reads one line into
  a request (:meth:`LineSession.handle_request`), a notification
  (:meth:`LineSession.handle_notification`) or an error answer: unparseable
  lines -32700, non-request JSON (an array, a wrong ``jsonrpc``, an id that is
  not a string or integer) -32600, both without ``id`` unless it could be read;
  responses are logged and ignored (the server sends no requests). The MCP
  session (:class:`~mcptap.demo.server.Server`) fills in both handlers.
* :class:`Job` — one request answered from a worker thread: a ``cancelled``
  flag set and tested under the write lock, so once a cancellation has been
  read nothing more is written for it.
* the JSON-RPC error codes the server uses.

Writing never raises: a broken stdout (``BrokenPipeError``/``OSError``) marks
the session ``closed`` and every later write returns False.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeGuard

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND = -32700, -32600, -32601


@dataclass(slots=True)
class Job:
    """One request answered from a worker thread (``slow_count``)."""

    id: str | int
    token: str | int | None
    cancelled: threading.Event = field(default_factory=threading.Event)


def _valid_id(value: Any) -> TypeGuard[str | int]:
    # MCP request ids are strings or integers; never null, booleans or floats.
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


class LineSession:
    """Newline-delimited JSON-RPC 2.0 over a pair of byte streams (module doc).

    ``write``: sends one complete line of bytes to the client (stdout);
    ``log``: writes one human-readable line to stderr.
    """

    def __init__(self, write: Callable[[bytes], None], log: Callable[[str], None]) -> None:
        self._write = write
        self._log = log
        self._lock = threading.Lock()
        self.closed = False                    # stdout is gone

    # -- output ------------------------------------------------------------------------
    def send(self, message: dict[str, Any], job: Job | None = None) -> bool:
        """Write one message; for ``job``, only while it is not cancelled.
        Returns False when nothing was written."""
        line = json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode() + b"\n"
        with self._lock:
            if self.closed or (job is not None and job.cancelled.is_set()):
                return False
            try:
                self._write(line)
            except (BrokenPipeError, OSError):
                self.closed = True
                return False
            return True

    def respond(self, rid: Any, result: dict[str, Any], job: Job | None = None) -> bool:
        return self.send({"jsonrpc": "2.0", "id": rid, "result": result}, job)

    def error(self, rid: Any, code: int, message: str, data: Any = None) -> None:
        err: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            err["data"] = data
        msg: dict[str, Any] = {"jsonrpc": "2.0"}
        if rid is not None:
            msg["id"] = rid
        msg["error"] = err
        self.send(msg)

    def notify(self, method: str, params: dict[str, Any], job: Job | None = None) -> bool:
        return self.send({"jsonrpc": "2.0", "method": method, "params": params}, job)

    # -- input -------------------------------------------------------------------------
    def handle_line(self, line: bytes) -> None:
        """Handle one line read from stdin (never raises on client input)."""
        if not line.strip():
            return
        try:
            msg = json.loads(line)
        except (ValueError, UnicodeDecodeError) as exc:
            self.error(None, PARSE_ERROR, "Parse error", {"detail": str(exc)[:200]})
            return
        if not isinstance(msg, dict):
            # A JSON array is a batch: part of 2025-03-26 only, and not supported here.
            self.error(None, INVALID_REQUEST, "Invalid Request: expected one JSON-RPC object per line")
            return
        rid = msg.get("id")
        method = msg.get("method")
        readable_id = "id" in msg and _valid_id(rid)
        if msg.get("jsonrpc") != "2.0" or ("method" in msg and not isinstance(method, str)):
            self.error(rid if readable_id else None, INVALID_REQUEST, 'Invalid Request: jsonrpc must be "2.0" and method a string')
            return
        if method is None:
            if ("result" in msg or "error" in msg) and "id" in msg:
                self._log(f"ignoring a response (id {rid!r}): this server sends no requests")
            else:
                self.error(rid if readable_id else None, INVALID_REQUEST, "Invalid Request: neither request, notification nor response")
            return
        if "id" not in msg:
            self.handle_notification(method, msg.get("params"))
        elif not _valid_id(rid):
            self.error(None, INVALID_REQUEST, "Invalid Request: id must be a string or an integer")
        else:
            self.handle_request(rid, method, msg.get("params"))

    def handle_notification(self, method: str, params: Any) -> None:
        """A notification (``params`` as sent, maybe absent: None); never answered."""
        raise NotImplementedError

    def handle_request(self, rid: str | int, method: str, params: Any) -> None:
        """A request with a valid id (``params`` as sent, maybe absent: None)."""
        raise NotImplementedError
