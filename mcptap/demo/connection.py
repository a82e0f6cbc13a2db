"""The demo client's connection to a stdio MCP server (stdlib only).

:class:`Connection` spawns the server and runs one reader thread that parses
its stdout; ``request()`` sends a request and returns a :class:`Call` to wait
on; progress, cancellation and server requests are tracked per call. Used by
:mod:`mcptap.demo.client` (the scripted session) and by tests that drive
cancellation and error paths directly.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import threading
from dataclasses import dataclass, field
from typing import Any

TIMEOUT = 10.0      # s to wait for any one response
EXIT_WAIT = 2.0     # s between closing stdin, SIGTERM and SIGKILL (basic/lifecycle "Shutdown")


class SessionError(Exception):
    """The server broke the script: an error response where a result was due,
    a timeout, or a malformed answer."""


class RpcError(SessionError):
    """An error response: ``code``, ``message``, ``data``."""

    def __init__(self, code: Any, message: Any, data: Any = None) -> None:
        super().__init__(f"error {code}: {message}")
        self.code, self.message, self.data = code, message, data


@dataclass(slots=True)
class Call:
    """One request in flight: ``response`` is set (and ``done`` fires) when its
    answer arrives; ``progress`` collects its ``notifications/progress`` params."""

    id: int
    method: str
    token: str | None = None
    done: threading.Event = field(default_factory=threading.Event)
    response: dict[str, Any] | None = None
    progress: list[dict[str, Any]] = field(default_factory=list)

    def result(self, timeout: float = TIMEOUT) -> dict[str, Any]:
        """The result object; raises RpcError for an error response and
        SessionError on timeout or a malformed response."""
        if not self.done.wait(timeout):
            raise SessionError(f"{self.method} (id {self.id}): no response within {timeout:g} s")
        resp = self.response
        if resp is None:
            raise SessionError(f"{self.method} (id {self.id}): the server closed its stdout without answering")
        if "error" in resp:
            err = resp["error"] if isinstance(resp["error"], dict) else {}
            raise RpcError(err.get("code"), err.get("message"), err.get("data"))
        result = resp.get("result")
        if not isinstance(result, dict):
            raise SessionError(f"{self.method} (id {self.id}): result is not an object: {result!r}")
        return result


class Connection:
    """A JSON-RPC connection to an MCP server child process over stdio.

    ``argv``: the server command. Raises OSError if it cannot be started.
    ``problems`` collects protocol violations the reader saw (strings).
    """

    def __init__(self, argv: list[str]) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        assert self.proc.stdin is not None and self.proc.stdout is not None   # both are PIPEs
        self._stdin, self._stdout = self.proc.stdin, self.proc.stdout
        self.problems: list[str] = []
        self.notifications: list[dict[str, Any]] = []   # every notification, in order
        self.sent = {"requests": 0, "notifications": 0}
        self._ids = itertools.count(1)
        self._calls: dict[int, Call] = {}
        self._tokens: dict[str, Call] = {}
        self._cancelled: dict[int, Call] = {}
        self.eof = False                                 # the server closed its stdout
        self.late_responses: list[dict[str, Any]] = []   # answers to requests we had cancelled
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, name="demo-client-reader", daemon=True)
        self._reader.start()

    # -- sending -----------------------------------------------------------------------
    def _send(self, message: dict[str, Any]) -> None:
        line = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        with self._lock:
            try:
                view = memoryview(line)
                while view:  # unbuffered pipe: a write may be partial
                    view = view[self._stdin.write(view):]
            except (BrokenPipeError, OSError, ValueError) as exc:
                raise SessionError(f"cannot write to the server: {exc}") from None

    def request(self, method: str, params: dict[str, Any] | None = None, progress: bool = False) -> Call:
        """Send a request (with a fresh ``_meta.progressToken`` if ``progress``)."""
        call = Call(next(self._ids), method)
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": call.id, "method": method}
        if progress:
            call.token = f"progress-{call.id}"
            params = {**(params or {}), "_meta": {"progressToken": call.token}}
        if params is not None:
            msg["params"] = params
        # Registered before sending (the answer may beat this thread back); eof is
        # tested after registering, so a reader that ends later still wakes the call.
        self._calls[call.id] = call
        if call.token is not None:
            self._tokens[call.token] = call
        try:
            if self.eof:
                raise SessionError("the server has closed its stdout")
            self._send(msg)
        except SessionError:
            self._calls.pop(call.id, None)
            self._drop_token(call)
            raise
        self.sent["requests"] += 1
        return call

    def call(self, method: str, params: dict[str, Any] | None = None, timeout: float = TIMEOUT) -> dict[str, Any]:
        """Send a request and wait for its result (raises RpcError / SessionError)."""
        return self.request(method, params).result(timeout)

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self.sent["notifications"] += 1
        self._send(msg)

    def cancel(self, call: Call, reason: str = "cancelled by the demo client") -> None:
        """``notifications/cancelled`` for ``call`` (basic/utilities/cancellation):
        the call stops waiting, and a response that crosses the cancellation on
        the wire is ignored, as the sender SHOULD."""
        if self._calls.pop(call.id, None) is None:
            return  # already answered: nothing to cancel
        # Its token stays known: progress already on the wire is an allowed race too.
        self._cancelled[call.id] = call
        self.notify("notifications/cancelled", {"requestId": call.id, "reason": reason})

    # -- receiving (reader thread) -------------------------------------------------------
    def _read(self) -> None:
        for line in self._stdout:
            try:
                msg = json.loads(line)
            except (ValueError, UnicodeDecodeError):
                self.problems.append(f"server wrote a non-JSON line to stdout: {line[:80]!r}")
                continue
            try:
                if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
                    self.problems.append(f"server wrote something that is not a JSON-RPC 2.0 message: {line[:80]!r}")
                elif "method" in msg:
                    if "id" in msg:
                        self._server_request(msg)
                    else:
                        self._notification(msg)
                else:
                    self._response(msg)
            except Exception as exc:  # noqa: BLE001 - a malformed message must not kill the reader
                self.problems.append(f"cannot handle {line[:80]!r}: {type(exc).__name__}: {exc}")
        # stdout closed: nothing pending can be answered any more; wake the waiters.
        self.eof = True
        for rid in list(self._calls):
            self._calls.pop(rid).done.set()

    def _drop_token(self, call: Call) -> None:
        if call.token is not None:
            self._tokens.pop(call.token, None)

    def _response(self, msg: dict[str, Any]) -> None:
        rid = msg.get("id")
        ours = isinstance(rid, int) and not isinstance(rid, bool)  # we only send integer ids
        call = self._calls.pop(rid, None) if isinstance(rid, int) and ours else None
        if call is None and isinstance(rid, int) and ours and rid in self._cancelled:
            late = self._cancelled.pop(rid)  # answer crossed our cancellation: allowed race
            self._drop_token(late)
            self.late_responses.append(msg)
            return
        if call is None:
            self.problems.append(f"response with unknown id {rid!r}: {json.dumps(msg)[:120]}")
            return
        if ("result" in msg) == ("error" in msg):
            self.problems.append(f"response to {call.method} (id {call.id}) must carry exactly one of result and error")
        self._drop_token(call)
        call.response = msg
        call.done.set()

    def _notification(self, msg: dict[str, Any]) -> None:
        self.notifications.append(msg)
        params = msg.get("params")
        params = params if isinstance(params, dict) else {}
        if msg["method"] != "notifications/progress":
            return
        token = params.get("progressToken")
        call = self._tokens.get(token) if isinstance(token, str) else None
        if call is None:
            self.problems.append(f"progress for a token of no active request: {params.get('progressToken')!r}")
            return
        last = call.progress[-1].get("progress") if call.progress else None
        value = params.get("progress")
        if not isinstance(value, (int, float)) or (last is not None and value <= last):
            self.problems.append(f"progress {value!r} after {last!r} for {call.method}: MUST increase")
        call.progress.append(params)

    def _server_request(self, msg: dict[str, Any]) -> None:
        # This client declares no capabilities, so the only request it serves is ping.
        if msg["method"] == "ping":
            self._send({"jsonrpc": "2.0", "id": msg["id"], "result": {}})
        else:
            self._send({"jsonrpc": "2.0", "id": msg["id"],
                        "error": {"code": -32601, "message": f"Method not found: {msg['method']}"}})

    # -- shutdown ------------------------------------------------------------------------
    def close(self, wait: float = EXIT_WAIT) -> int:
        """Close the server's stdin and wait; then SIGTERM and wait; then
        SIGKILL (basic/lifecycle "Shutdown", stdio). Returns the exit status
        (negative: killed by that signal). Having to signal is a problem; a
        request still unanswered raises from its ``Call.result()``."""
        with self._lock:
            try:
                self._stdin.close()
            except OSError:
                pass
        try:
            code = self.proc.wait(wait)
        except subprocess.TimeoutExpired:
            self.problems.append(f"server still running {wait:g} s after its stdin was closed: SIGTERM")
            self.proc.terminate()
            try:
                code = self.proc.wait(wait)
            except subprocess.TimeoutExpired:
                self.problems.append(f"server still running {wait:g} s after SIGTERM: SIGKILL")
                self.proc.kill()
                code = self.proc.wait()
        self._reader.join(wait)
        return code
