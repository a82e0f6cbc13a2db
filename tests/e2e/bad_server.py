"""A misbehaving stdio MCP server (raw JSON-RPC), planted faults only:

1. a banner line on stdout before any JSON-RPC  -> framing.non_jsonrpc_line
2. notifications/tools/list_changed although it declared tools without
   listChanged                                   -> capability.not_negotiated
3. a roots/list request before notifications/initialized (the client has no
   roots capability)                             -> lifecycle.server_request_before_initialized
                                                    + capability.not_negotiated
4. two pings with the same id in flight          -> jsonrpc.duplicate_id_in_flight
                                                    (+ jsonrpc.ambiguous_pairing on the first answer)
Everything else is correct, so the client session still works.

The answer to tools/call waits until the client has answered both pings and
roots/list (it answers them in tasks of their own, maybe after its next
request): once a client's call returns, the tap has seen every answer, so a
test can end the session then, with no sleep.
"""

import json
import sys


def send(obj) -> None:
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def main() -> None:
    sys.stdout.write("bad-server 0.1 starting (debug mode)\n")
    sys.stdout.flush()
    tools = [{"name": "echo", "description": "echo", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}]
    owed = {"r1": 1, 7: 2}          # answers the client owes us: roots/list, both pings
    held = []                       # tools/call answers waiting for them
    for line in sys.stdin:
        msg = json.loads(line)
        method, mid = msg.get("method"), msg.get("id")
        if method is None and owed.get(mid):
            owed[mid] -= 1
            if not any(owed.values()):
                for answer in held:
                    send(answer)
                held = []
        if method == "initialize":
            # one write: the tap must see roots/list before the client's initialized
            # (two writes race with the client's answer across the two pipes)
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": mid, "result": {
                "protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                "serverInfo": {"name": "bad", "version": "0.1"}}}, separators=(",", ":")) + "\n"
                + json.dumps({"jsonrpc": "2.0", "id": "r1", "method": "roots/list"}, separators=(",", ":")) + "\n")
            sys.stdout.flush()
        elif method == "notifications/initialized":
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            # both pings written before the client can answer the first
            sys.stdout.write('{"jsonrpc":"2.0","id":7,"method":"ping"}\n{"jsonrpc":"2.0","id":7,"method":"ping"}\n')
            sys.stdout.flush()
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": mid, "result": {"tools": tools}})
        elif method == "tools/call":
            answer = {"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": msg["params"]["arguments"]["text"]}]}}
            if any(owed.values()):
                held.append(answer)
            else:
                send(answer)
        elif mid is not None and method is not None:
            send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "method not found"}})


if __name__ == "__main__":
    main()
