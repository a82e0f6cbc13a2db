"""The official-SDK server of tests/e2e/test_serve_replay_signals.py (stdio; ``--http PORT``:
Streamable HTTP on 127.0.0.1). ``echo``; ``gate`` writes ``waiting`` to the file named by
``SIGNAL_MARK``, then answers once the file named by ``SIGNAL_GATE`` exists (so a test knows
the session is in the middle of a request). Each of SIGUSR1, SIGUSR2, SIGALRM, SIGHUP and
SIGQUIT it gets is written there as ``got SIGxxx``; SIGHUP and SIGQUIT then end it (exit 0)."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import anyio
from mcp.server.mcpserver import MCPServer

app = MCPServer(name="signal-server", version="1.0.0")


def _mark(line: str) -> None:
    with open(os.environ["SIGNAL_MARK"], "a") as fp:
        fp.write(line + "\n")


@app.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@app.tool()
async def gate() -> str:
    """Say it waits; answer once the gate file exists."""
    _mark("waiting")
    while not Path(os.environ["SIGNAL_GATE"]).exists():
        await anyio.sleep(0.01)
    return "open"


def _on_signal(signum: int, frame: object) -> None:
    _mark(f"got {signal.Signals(signum).name}")
    if signum in (signal.SIGHUP, signal.SIGQUIT):
        os._exit(0)


if __name__ == "__main__":
    for s in (signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(s, _on_signal)
    if "--http" in sys.argv:
        app.run("streamable-http", host="127.0.0.1", port=int(sys.argv[sys.argv.index("--http") + 1]))
    else:
        app.run("stdio")
