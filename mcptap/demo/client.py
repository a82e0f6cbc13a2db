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

:class:`~mcptap.demo.connection.Connection` (the stdio connection) is usable
on its own; this module is the scripted session (``run_script``) and ``main``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable

from mcptap import __version__
from mcptap.demo import PROTOCOL_VERSION, SUPPORTED_VERSIONS
from mcptap.demo.connection import Connection, SessionError

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
