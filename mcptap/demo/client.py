"""The demo MCP client: ``python -m mcptap.demo.client [OPTIONS] -- CMD ARGS…`` (stdlib only).

Spawns CMD as an MCP stdio server (its stderr passes through) and drives a
scripted 2025-11-25 session (spec basic/lifecycle, server/tools, server/resources,
server/prompts, basic/utilities):

    initialize → notifications/initialized → ping → logging/setLevel →
    tools/list → tools/call echo, add, slow_count (with a progressToken), fail →
    resources/list → resources/read → prompts/list → prompts/get →
    close the server's stdin and wait for it to exit

It checks what it gets back (the negotiated revision, results, progress
notifications strictly increasing and before the response, no unknown ids, no
non-JSON output) and prints a short summary to stderr. Exit status: 0 the
session went as the spec says, 1 the server misbehaved, 2 usage error or CMD
could not be started.

:class:`Connection` is usable on its own (tests drive cancellation and error
paths with it): one reader thread parses stdout; ``request()`` sends a request
and returns a :class:`Call` to wait on.
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mcptap import __version__
from mcptap.demo import PROTOCOL_VERSION, SUPPORTED_VERSIONS

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
                    view = view[self.proc.stdin.write(view):]  # type: ignore[union-attr]
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
        for line in self.proc.stdout:  # type: ignore[union-attr]
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
                self.proc.stdin.close()  # type: ignore[union-attr]
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


# -- the scripted session ------------------------------------------------------------------

def run_script(conn: Connection, say: Callable[[str], None], offer: str = PROTOCOL_VERSION) -> list[str]:
    """Drive the demo session on ``conn``; returns the problems found (empty:
    the server behaved). ``offer``: the protocolVersion sent in initialize."""
    problems: list[str] = []

    def check(ok: bool, what: str) -> bool:
        if not ok:
            problems.append(what)
        return ok

    def step(name: str, fn: Callable[[], str]) -> None:
        try:
            say(f"{name} → {fn()}")
        except SessionError as exc:
            problems.append(f"{name}: {exc}")
            say(f"{name} → FAILED: {exc}")

    # Lifecycle: the handshake must succeed before anything else makes sense.
    try:
        init = conn.call("initialize", {"protocolVersion": offer, "capabilities": {},
                                        "clientInfo": {"name": "mcptap-demo-client", "version": __version__}})
    except SessionError as exc:
        return [f"initialize: {exc}"]
    version = init.get("protocolVersion")
    info = init.get("serverInfo")
    info = info if isinstance(info, dict) else {}
    caps = init.get("capabilities")
    caps = caps if isinstance(caps, dict) else {}
    if version not in SUPPORTED_VERSIONS:
        # basic/lifecycle "Version Negotiation": a client that does not support
        # the server's version SHOULD disconnect.
        return [f"initialize: server answered protocolVersion {version!r}, which this client does not support"]
    say(f"initialize → {info.get('name', '?')} {info.get('version', '?')}, protocol {version}"
        + (f" (offered {offer})" if version != offer else ""))
    conn.notify("notifications/initialized")
    check(isinstance(caps.get("tools"), dict) and isinstance(caps.get("resources"), dict)
          and isinstance(caps.get("prompts"), dict), "server did not declare tools, resources and prompts")

    step("ping", lambda: "ok" if check(conn.call("ping") == {}, "ping result is not {}") else "non-empty result")
    if isinstance(caps.get("logging"), dict):
        step("logging/setLevel info", lambda: "ok" if conn.call("logging/setLevel", {"level": "info"}) == {} else "?")

    def tools_list() -> str:
        names = [t.get("name") for t in conn.call("tools/list").get("tools", []) if isinstance(t, dict)]
        check({"echo", "add", "slow_count", "fail"} <= set(names), f"tools/list lacks demo tools: {names}")
        return ", ".join(map(str, names))

    def echo() -> str:
        text = "hello through the tap"
        res = conn.call("tools/call", {"name": "echo", "arguments": {"text": text}})
        got = (res.get("content") or [{}])[0].get("text")
        check(got == text and not res.get("isError"), f"echo returned {res!r}")
        return repr(got)

    def add() -> str:
        res = conn.call("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
        total = (res.get("structuredContent") or {}).get("sum")
        if total is None:  # revisions before 2025-06-18 have no structuredContent
            total = json.loads((res.get("content") or [{}])[0].get("text", "{}")).get("sum")
        check(total == 5 and not res.get("isError"), f"add 2+3 returned {res!r}")
        return f"2 + 3 = {total}"

    def slow_count() -> str:
        call = conn.request("tools/call", {"name": "slow_count", "arguments": {"count": 3, "interval_ms": 50}}, progress=True)
        res = call.result()
        values = [p.get("progress") for p in call.progress]
        check(values == [1, 2, 3], f"slow_count: expected progress 1, 2, 3 before the response, got {values}")
        return f"{len(values)} progress notifications, then {(res.get('content') or [{}])[0].get('text')!r}"

    def fail() -> str:
        res = conn.call("tools/call", {"name": "fail", "arguments": {}})
        check(res.get("isError") is True, f"fail: expected a result with isError true, got {res!r}")
        return f"isError: {(res.get('content') or [{}])[0].get('text')!r}"

    def resources() -> str:
        items = conn.call("resources/list").get("resources", [])
        uris = [r.get("uri") for r in items if isinstance(r, dict)]
        if not check(bool(uris), "resources/list returned no resources"):
            return "none"
        contents = conn.call("resources/read", {"uri": uris[0]}).get("contents", [])
        check(bool(contents) and contents[0].get("uri") == uris[0], f"resources/read {uris[0]}: bad contents {contents!r}")
        return f"{len(uris)} resources; read {uris[0]}: {(contents or [{}])[0].get('text')!r}"

    def prompts() -> str:
        names = [p.get("name") for p in conn.call("prompts/list").get("prompts", []) if isinstance(p, dict)]
        if not check("greet" in names, f"prompts/list lacks greet: {names}"):
            return ", ".join(map(str, names))
        messages = conn.call("prompts/get", {"name": "greet", "arguments": {"name": "mcptap"}}).get("messages", [])
        check(bool(messages), "prompts/get greet returned no messages")
        return f"{', '.join(map(str, names))}; greet: {(messages or [{}])[0].get('content', {}).get('text')!r}"

    step("tools/list", tools_list)
    step("tools/call echo", echo)
    step("tools/call add", add)
    step("tools/call slow_count", slow_count)
    step("tools/call fail", fail)
    step("resources/list + read", resources)
    step("prompts/list + get", prompts)
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mcptap.demo.client",
                                     description="Drive a scripted MCP session against a stdio server.")
    parser.add_argument("--protocol-version", default=PROTOCOL_VERSION, help="protocolVersion to offer in initialize")
    parser.add_argument("-q", "--quiet", action="store_true", help="print only the final line")
    parser.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD ARGS")
    args = parser.parse_args(argv)
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        parser.error("missing the server command (after --)")

    def say(line: str) -> None:
        if not args.quiet:
            print(f"demo-client: {line}", file=sys.stderr, flush=True)

    try:
        conn = Connection(cmd)
    except OSError as exc:
        print(f"demo-client: cannot start {cmd[0]}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    started = time.monotonic()
    try:
        problems = run_script(conn, say, args.protocol_version)
    except SessionError as exc:  # the server went away under us
        problems = [str(exc)]
    code = conn.close()
    problems += conn.problems
    if code != 0:
        problems.append(f"server exited with status {code}")
    say(f"closed the server's stdin; it exited with status {code}")
    summary = (f"sent {conn.sent['requests']} requests and {conn.sent['notifications']} notification(s), "
               f"received {len(conn.notifications)} notification(s), {time.monotonic() - started:.2f} s")
    if problems:
        for p in problems:
            print(f"demo-client: PROBLEM: {p}", file=sys.stderr)
        print(f"demo-client: session FAILED ({len(problems)} problems; {summary})", file=sys.stderr, flush=True)
        return 1
    print(f"demo-client: session OK ({summary})", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
