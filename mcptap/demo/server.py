"""The demo MCP server: ``python -m mcptap.demo.server`` (stdlib only).

Transport (spec 2025-11-25 basic/transports "stdio"): newline-delimited
JSON-RPC 2.0 on stdin/stdout, one UTF-8 message per line without embedded
newlines; nothing but MCP messages on stdout; log lines on stderr. The server
exits with status 0 when its stdin reaches EOF (basic/lifecycle "Shutdown").

Lifecycle (basic/lifecycle): ``initialize`` must come first (other requests but
``ping`` get -32600 until then); the server echoes the client's protocolVersion
when it is one of ``SUPPORTED_VERSIONS`` (2024-11-05 … 2025-11-25) and
counter-offers 2025-11-25 otherwise. Fields a negotiated revision does not
define (``title``, ``outputSchema``, ``structuredContent``, ``instructions``,
progress ``message``) are left out for that revision.

Capabilities: ``tools`` (listChanged), ``resources``, ``prompts``, ``logging``.

* tools: ``echo {text}``, ``add {a, b}`` (structured output), ``slow_count
  {count, interval_ms}`` (``notifications/progress`` when the request carries
  ``_meta.progressToken``; stops silently on ``notifications/cancelled``),
  ``fail {message?}`` (a result with ``isError: true``). Unknown tool: -32602;
  bad arguments: a tool error result (2025-11-25 server/tools "Error Handling").
* resources: ``demo://greeting`` (text), ``demo://about.json`` (JSON), the
  template ``demo://echo/{text}``; unknown URI: -32002 with ``data.uri``.
* prompts: ``greet {name, style?}``; unknown prompt or missing argument: -32602.
* logging: ``logging/setLevel``; once a level is set, ``slow_count`` logs
  through ``notifications/message``.
* ``ping`` answers ``{}``; unknown methods -32601; unparseable lines -32700 and
  non-request JSON -32600, both without ``id`` (2025-11-25 schema: the id of an
  error response may be omitted only when it could not be read). Notifications
  are never answered.

The descriptors and the pure tool/resource/prompt answers live in
:mod:`mcptap.demo.catalogue`, the JSON-RPC line layer (writing under one lock,
reading a line into a request, a notification or an error answer) in
:mod:`mcptap.demo.rpc`; this module owns the MCP session, the dispatch and
the threads (the names of both stay importable from here).

Concurrency: the main thread reads stdin and answers requests inline, except
``slow_count``, which runs in a worker thread so ``ping`` and cancellation stay
responsive. Every write holds one lock; a request's ``cancelled`` flag is set
and tested under that lock, so once a cancellation has been read nothing more
is written for that request (basic/utilities/cancellation).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import Any

from mcptap import __version__
from mcptap.demo import PROTOCOL_VERSION, SUPPORTED_VERSIONS
from mcptap.demo.catalogue import (
    INVALID_PARAMS,
    NAME,
    PROMPTS,
    RESOURCE_NOT_FOUND,
    RESOURCES,
    TEMPLATE_PREFIX,
    TEMPLATES,
    TOOLS,
    RpcError,
    ToolError,
    add,
    echo,
    for_revision,
    get_prompt,
    read_resource,
    since,
    slow_count_args,
    text_content,
)
from mcptap.demo.rpc import INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR, Job, LineSession, _valid_id

__all__ = ["INVALID_PARAMS", "INVALID_REQUEST", "LOG_LEVELS", "METHOD_NOT_FOUND", "NAME", "PARSE_ERROR", "PROMPTS",
           "RESOURCES", "RESOURCE_NOT_FOUND", "TEMPLATES", "TEMPLATE_PREFIX", "TOOLS", "Job", "RpcError", "Server",
           "ToolError", "main", "since"]

LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


class Server(LineSession):
    """One MCP session over a pair of byte streams.

    ``write``: sends one complete line of bytes to the client (stdout);
    ``log``: writes one human-readable line to stderr.
    """

    def __init__(self, write: Callable[[bytes], None], log: Callable[[str], None]) -> None:
        super().__init__(write, log)
        self._jobs: dict[tuple[bool, Any], Job] = {}
        self.revision: str | None = None       # negotiated in initialize
        self.initialized = False               # notifications/initialized received
        self.log_level: str | None = None      # set by logging/setLevel

    # -- MCP logging ---------------------------------------------------------------------
    def log_message(self, level: str, data: Any, job: Job | None = None) -> None:
        """``notifications/message`` at ``level``, if the client asked for it."""
        if self.log_level is not None and LOG_LEVELS.index(level) >= LOG_LEVELS.index(self.log_level):
            self.notify("notifications/message", {"level": level, "logger": "demo", "data": data}, job)

    # -- dispatch -------------------------------------------------------------------------
    def handle_notification(self, method: str, params: Any) -> None:
        if method == "notifications/initialized":
            self.initialized = True
        elif method == "notifications/cancelled" and isinstance(params, dict):
            rid = params.get("requestId")
            with self._lock:
                job = self._jobs.pop((isinstance(rid, str), rid), None) if _valid_id(rid) else None
                if job is not None:
                    job.cancelled.set()
            if job is not None:
                self._log(f"request {rid!r} cancelled ({params.get('reason') or 'no reason given'})")
        # Anything else (roots/list_changed, unknown notifications) needs no action;
        # notifications are never answered.

    def handle_request(self, rid: str | int, method: str, params: Any) -> None:
        handler = self.HANDLERS.get(method)
        if handler is None:
            self.error(rid, METHOD_NOT_FOUND, f"Method not found: {method}")
            return
        if params is None:
            params = {}
        if not isinstance(params, dict):
            self.error(rid, INVALID_PARAMS, "Invalid params: params must be an object")
            return
        if self.revision is None and method not in ("initialize", "ping"):
            self.error(rid, INVALID_REQUEST, f"Invalid Request: {method} before initialize")
            return
        try:
            result = handler(self, rid, params)
        except RpcError as exc:
            self.error(rid, exc.code, exc.message, exc.data)
            return
        if result is not None:  # None: a worker thread answers
            self.respond(rid, result)

    def close(self) -> None:
        """stdin reached EOF: abandon work in flight (nobody will read it)."""
        with self._lock:
            for job in self._jobs.values():
                job.cancelled.set()
            self._jobs.clear()

    # -- lifecycle ---------------------------------------------------------------------
    def _initialize(self, rid: Any, params: dict[str, Any]) -> dict[str, Any]:
        if self.revision is not None:
            raise RpcError(INVALID_REQUEST, "Invalid Request: the session is already initialized")
        offered = params.get("protocolVersion")
        if not isinstance(offered, str):
            raise RpcError(INVALID_PARAMS, "Invalid params: protocolVersion must be a string")
        self.revision = offered if offered in SUPPORTED_VERSIONS else PROTOCOL_VERSION
        client = params.get("clientInfo")
        client = client if isinstance(client, dict) else {}
        self._log(f"initialize from {client.get('name', '?')} {client.get('version', '')}: "
                  f"offered {offered}, answering {self.revision}")
        info: dict[str, Any] = {"name": NAME, "version": __version__}
        if since(self.revision, "2025-06-18"):
            info["title"] = "mcptap demo server"
        result: dict[str, Any] = {
            "protocolVersion": self.revision,
            "capabilities": {"logging": {}, "prompts": {}, "resources": {}, "tools": {"listChanged": True}},
            "serverInfo": info,
        }
        if since(self.revision, "2025-03-26"):
            result["instructions"] = "A demo server: try the echo, add, slow_count and fail tools."
        return result

    def _ping(self, rid: Any, params: dict[str, Any]) -> dict[str, Any]:
        return {}

    def _set_level(self, rid: Any, params: dict[str, Any]) -> dict[str, Any]:
        level = params.get("level")
        if level not in LOG_LEVELS:
            raise RpcError(INVALID_PARAMS, f"Invalid params: level must be one of {', '.join(LOG_LEVELS)}")
        self.log_level = level
        return {}

    # -- listing -----------------------------------------------------------------------
    def _page(self, params: dict[str, Any], key: str, items: list[dict[str, Any]]) -> dict[str, Any]:
        # Everything fits on one page, so this server never issues a cursor and
        # any cursor a client sends is invalid (server/utilities/pagination).
        if params.get("cursor") is not None:
            raise RpcError(INVALID_PARAMS, "Invalid params: unknown cursor")
        return {key: [for_revision(item, self.revision) for item in items]}

    def _tools_list(self, rid: Any, params: dict[str, Any]) -> dict[str, Any]:
        return self._page(params, "tools", TOOLS)

    def _resources_list(self, rid: Any, params: dict[str, Any]) -> dict[str, Any]:
        return self._page(params, "resources", [meta for meta, _ in RESOURCES.values()])

    def _templates_list(self, rid: Any, params: dict[str, Any]) -> dict[str, Any]:
        return self._page(params, "resourceTemplates", TEMPLATES)

    def _prompts_list(self, rid: Any, params: dict[str, Any]) -> dict[str, Any]:
        return self._page(params, "prompts", PROMPTS)

    # -- resources and prompts -----------------------------------------------------------
    def _resources_read(self, rid: Any, params: dict[str, Any]) -> dict[str, Any]:
        return read_resource(params)

    def _prompts_get(self, rid: Any, params: dict[str, Any]) -> dict[str, Any]:
        return get_prompt(params)

    # -- tools ---------------------------------------------------------------------------
    def _tools_call(self, rid: Any, params: dict[str, Any]) -> dict[str, Any] | None:
        name = params.get("name")
        args = params.get("arguments")
        if args is None:
            args = {}
        if name not in ("echo", "add", "slow_count", "fail"):
            raise RpcError(INVALID_PARAMS, f"Invalid params: unknown tool {name!r}")
        if not isinstance(args, dict):
            raise RpcError(INVALID_PARAMS, "Invalid params: arguments must be an object")
        try:
            if name == "slow_count":
                self._start_slow_count(rid, params, args)
                return None
            if name == "echo":
                return echo(args)
            if name == "add":
                return add(args, self.revision)
            raise ToolError(args.get("message") or "the fail tool always fails (as designed)")
        except ToolError as exc:
            return {"content": [text_content(str(exc))], "isError": True}

    def _start_slow_count(self, rid: Any, params: dict[str, Any], args: dict[str, Any]) -> None:
        count, interval = slow_count_args(args)
        meta = params.get("_meta")
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        job = Job(rid, token if _valid_id(token) else None)
        with self._lock:
            self._jobs[(isinstance(rid, str), rid)] = job
        threading.Thread(target=self._slow_count, args=(job, count, interval / 1000), daemon=True,
                         name=f"slow_count-{rid}").start()
        return None

    def _slow_count(self, job: Job, count: int, interval: float) -> None:
        try:
            self.log_message("info", f"slow_count: counting to {count}", job)
            for i in range(1, count + 1):
                if job.cancelled.wait(interval):
                    return
                if job.token is not None:
                    params: dict[str, Any] = {"progressToken": job.token, "progress": i, "total": count}
                    if since(self.revision, "2025-03-26"):
                        params["message"] = f"counted {i} of {count}"
                    self.notify("notifications/progress", params, job)
            self.respond(job.id, {"content": [text_content(f"counted to {count}")]}, job)
        finally:
            with self._lock:
                if self._jobs.get((isinstance(job.id, str), job.id)) is job:
                    del self._jobs[(isinstance(job.id, str), job.id)]

    HANDLERS: dict[str, Callable[[Server, Any, dict[str, Any]], dict[str, Any] | None]] = {
        "initialize": _initialize,
        "ping": _ping,
        "logging/setLevel": _set_level,
        "tools/list": _tools_list,
        "tools/call": _tools_call,
        "resources/list": _resources_list,
        "resources/templates/list": _templates_list,
        "resources/read": _resources_read,
        "prompts/list": _prompts_list,
        "prompts/get": _prompts_get,
    }


def _write_fd(fd: int) -> Callable[[bytes], None]:
    def write(data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    return write


def main() -> int:
    """Serve one session on stdin/stdout; returns the exit status (0)."""
    def log(line: str) -> None:
        try:
            sys.stderr.write(f"demo-server: {line}\n")
            sys.stderr.flush()
        except OSError:
            pass

    # Raw fd writes: no buffer to flush at exit, so a closed pipe cannot turn
    # into a traceback on the way out.
    server = Server(_write_fd(sys.stdout.fileno()), log)
    log(f"ready (pid {os.getpid()}, protocol {PROTOCOL_VERSION})")
    try:
        for line in sys.stdin.buffer:
            server.handle_line(line)
    except KeyboardInterrupt:
        server.close()
        return 130
    server.close()
    log("stdin closed: exiting")
    return 0


if __name__ == "__main__":
    sys.exit(main())
