"""A secret found under a key (``params.arguments.password``, a user's ``--redact-key``) is
replaced wherever the server repeats it, as the server's argv secrets are: its stderr, the
tool result's text and ``structuredContent`` (``scrub``, ``report`` and ``record --redact``
once kept them in clear there, defeating "Share a capture"). Real peers: the official SDK's
client and server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SERVER = '''
import sys
from mcp.server.mcpserver import MCPServer
app = MCPServer("login")
@app.tool()
def login(user: str, password: str) -> str:
    """Log in"""
    print(f"login attempt {user} with {password}", file=sys.stderr, flush=True)
    return f"failed: wrong password {password} for {user}"
@app.tool()
def reset(user: str) -> str:
    """Reset"""
    return f"reset done for {user}; use Kj8sQ2pLm7 next time"
@app.tool()
def enroll(name: str, ssn: str, pin: str) -> str:
    """Enroll"""
    print(f"enrolled {name}: SSN={ssn}", file=sys.stderr, flush=True)
    return f"enrolled {name} with ssn {ssn}, pin {pin} (abc)"
if __name__ == "__main__":
    app.run()
'''

CLIENT = '''
import sys, anyio
from mcp import Client
from mcp.client import stdio as _stdio
from mcp.client.stdio import StdioServerParameters
_stdio.PROCESS_TERMINATION_TIMEOUT = 60.0
async def main():
    argv = sys.argv[1:]
    async with Client(StdioServerParameters(command=argv[0], args=argv[1:])) as c:
        await c.call_tool("login", {"user": "bob", "password": "Tr0ub4dor&3"})
        await c.call_tool("reset", {"user": "bob"})
        await c.call_tool("login", {"user": "bob", "password": "Kj8sQ2pLm7"})
        await c.call_tool("enroll", {"name": "bob", "ssn": "078-05-1120", "pin": "abc"})
anyio.run(main)
'''

MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MCPTAP_DIR": str(cwd / "captures"), "MCPTAP_REDACT_KEY": "a" * 64}
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc


def _record(tmp_path: Path, name: str, *extra: str) -> str:
    (tmp_path / "srv.py").write_text(SERVER)
    (tmp_path / "cli.py").write_text(CLIENT)
    _run([sys.executable, "cli.py", *MCPTAP, "record", "-q", "-o", name, *extra, "--", sys.executable, "srv.py"], tmp_path)
    return (tmp_path / name).read_text()


def test_scrub_report_and_record_redact_replace_every_repeat(tmp_path: Path) -> None:
    clear = _record(tmp_path, "cap.jsonl")
    assert clear.count("Tr0ub4dor") >= 3 and "078-05-1120" in clear        # argument, stderr, result (text, structured)
    _run([*MCPTAP, "scrub", "cap.jsonl", "-o", "s.jsonl", "--redact-key", "ssn"], tmp_path)
    _run([*MCPTAP, "report", "cap.jsonl", "-o", "r.html", "--redact-key", "ssn"], tmp_path)
    live = _record(tmp_path, "live.jsonl", "--redact", "--redact-key", "ssn")
    for text in ((tmp_path / "s.jsonl").read_text(), (tmp_path / "r.html").read_text(), live):
        assert "Tr0ub4dor" not in text and "078-05-1120" not in text
        assert "«redacted:hmac:" in text
        assert "(abc)" in text              # a 3-character secret is too short to be searched elsewhere
    dry = _run([*MCPTAP, "scrub", "-n", "cap.jsonl"], tmp_path).stdout
    assert "repeated-secret" in dry and "stderr" in dry
    # a value shown secret only by a later request (the reset's result, then a login with it): a
    # scrub or report of the whole file replaces it before too; record --redact cannot look ahead
    assert clear.count("Kj8sQ2pLm7") >= 2
    for text in ((tmp_path / "s.jsonl").read_text(), (tmp_path / "r.html").read_text()):
        assert "Kj8sQ2pLm7" not in text
    piped = subprocess.run([*MCPTAP, "scrub", "-", "-o", "-"], cwd=tmp_path, input=clear, capture_output=True, text=True,
                           timeout=300, env={**os.environ, "MCPTAP_REDACT_KEY": "a" * 64})
    assert piped.returncode == 0 and "Tr0ub4dor" not in piped.stdout     # read once: later repeats only
