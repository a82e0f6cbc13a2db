"""End to end: OAuth through the HTTP tap with the official SDK's pieces.

A local authorization server and an authorization-protected MCP server (both
built from ``mcp.server.auth``, tests/e2e/auth_peers.py, on separate loopback
ports: separate origins) and the SDK's ``OAuthClientProvider`` (dynamic client
registration, authorization code + PKCE, RFC 8707 resource indicators) connecting
through ``mcptap record --upstream``. The resource server accepts only tokens
issued for its own URL, so the session working proves the tap mapped the
client's ``resource`` back; the capture must hold discovery, registration,
authorization and token exchanges as ``http`` records with every credential as
a placeholder, and ``check`` must give no false finding about them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from mcptap.capture.reader import read_capture
from peers import free_port, listening

pytestmark = pytest.mark.e2e
PEERS = Path(__file__).parent / "auth_peers.py"
MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]


async def _run_client(url: str) -> subprocess.CompletedProcess[str]:
    p = await trio.run_process([sys.executable, str(PEERS), "client", url], capture_stdout=True, capture_stderr=True, check=False)
    return subprocess.CompletedProcess(p.args, p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace"))


async def _session_through_tap(tmp_path: Path, *tap_args: str, ports: list[int] | None = None) -> tuple[subprocess.CompletedProcess[str], Path]:
    as_port, rs_port, tap_port = free_port(), free_port(), free_port()
    if ports is not None:
        ports[:] = [as_port, rs_port, tap_port]
    cap = tmp_path / "auth.jsonl"
    async with listening([sys.executable, str(PEERS), "as", str(as_port)], as_port):
        async with listening([sys.executable, str(PEERS), "rs", str(rs_port), f"http://127.0.0.1:{as_port}"], rs_port):
            async with listening([*MCPTAP, "record", "-q", "--upstream", f"http://127.0.0.1:{rs_port}/mcp",
                                  "--listen", f"127.0.0.1:{tap_port}", "-o", str(cap), *tap_args], tap_port):
                with trio.fail_after(90):
                    proc = await _run_client(f"http://127.0.0.1:{tap_port}/mcp")
    return proc, cap


async def test_sdk_oauth_client_through_the_tap(tmp_path: Path) -> None:
    proc, cap = await _session_through_tap(tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "authorized"
    seen = json.loads(proc.stderr.strip().splitlines()[-1])
    text = cap.read_text(encoding="utf-8")
    for name, value in seen.items():
        assert value, name
        assert value not in text, f"{name} reached the capture in clear"

    c = read_capture(str(cap))
    http = [rec for rec in c.records if rec["type"] == "http"]
    kinds = {(rec.get("auth"), rec.get("event")) for rec in http}
    for kind in ("prm", "as_meta", "as"):
        assert (kind, "request") in kinds and (kind, "end") in kinds, kind
    rewrites = {rec["what"] for rec in http if rec.get("event") == "auth_rewrite"}
    assert {"www-authenticate", "prm", "as_meta", "form", "target"} <= rewrites
    # token exchange recorded as HTTP only: no JSON-RPC message carries an OAuth body
    msgs = [rec for rec in c.records if rec["type"] == "message"]
    assert not any("grant_type" in json.dumps(m.get("raw", "")) for m in msgs)
    assert {m.get("method") for m in msgs} >= {"initialize", "tools/call"}

    out = subprocess.run([*MCPTAP, "check", "--full", "--format", "json", str(cap)], capture_output=True, text=True)
    judged = json.loads(out.stdout)["captures"][0]
    loud = {c["code"] for c in judged["codes"] if c["severity"] in ("error", "warn")}
    assert loud == set(), f"false findings on a correct OAuth session: {loud}"
    assert out.returncode == 0
    # the OAuth exchanges themselves carry no finding at all
    assert not [rec for rec in http if rec.get("auth") and rec.get("findings")]


async def test_without_auth_rewrite_the_sdk_client_rejects_the_resource(tmp_path: Path) -> None:
    # what the fronting exists for: RFC 9728 §3.3 makes the client stop
    proc, _ = await _session_through_tap(tmp_path, "--no-auth-rewrite")
    assert proc.returncode != 0
    assert "does not match" in proc.stderr, proc.stderr[-2000:]


async def test_redaction_keeps_the_taps_auth_tags(tmp_path: Path) -> None:
    """``record --redact``, ``scrub`` and ``show`` of the result: the tap's own words on the OAuth
    exchanges' records (``auth``, ``what``, ``how``) are no secrets; the timeline still names them."""
    proc, cap = await _session_through_tap(tmp_path, "--redact")
    assert proc.returncode == 0, proc.stderr[-3000:]
    scrubbed = tmp_path / "scrubbed.jsonl"
    subprocess.run([*MCPTAP, "scrub", str(cap), "-o", str(scrubbed)], check=True, capture_output=True)
    for path in (cap, scrubbed):
        http = [rec for rec in read_capture(str(path)).records if rec["type"] == "http"]
        assert {rec["auth"] for rec in http if "auth" in rec} == {"prm", "as_meta", "as", "mcp"}, path
        assert {"www-authenticate", "prm", "as_meta", "form", "target"} <= {rec["what"] for rec in http if "what" in rec}
        assert {rec["how"] for rec in http if "how" in rec} <= {"complete", "client_closed", "upstream_closed"}
    shown = subprocess.run([*MCPTAP, "show", "--no-color", str(scrubbed)], capture_output=True, text=True, check=True).stdout
    assert "auth  ▸ resource metadata: GET /.well-known/oauth-protected-resource" in shown
    assert "auth  ◂ auth server metadata: 200" in shown and "«redacted" not in shown.split("auth  ▸", 1)[1].split(":", 1)[0]


async def test_har_of_the_oauth_session_shows_the_urls_requested_and_every_body(tmp_path: Path) -> None:
    """The HAR of a real SDK OAuth session: each OAuth exchange at the URL the tap requested (the
    authorization server's own origin, no ``/.mcptap/o/<n>`` prefix; the client's URL in
    ``_mcp.clientUrl``), its request body as sent (``resource`` mapped back) and its response body
    as the capture holds it (credentials as placeholders)."""
    ports: list[int] = []
    proc, cap = await _session_through_tap(tmp_path, ports=ports)
    assert proc.returncode == 0, proc.stderr[-3000:]
    as_port, rs_port, tap_port = ports
    out = subprocess.run([*MCPTAP, "export", "-f", "har", str(cap)], capture_output=True, text=True, check=True)
    entries = json.loads(out.stdout)["log"]["entries"]
    by_kind: dict[str, list[dict[str, object]]] = {}
    for e in entries:
        by_kind.setdefault(e["_mcp"].get("auth", "mcp"), []).append(e)
        assert e["request"]["url"].startswith((f"http://127.0.0.1:{as_port}/", f"http://127.0.0.1:{rs_port}/")), e["request"]["url"]
        assert "/.mcptap/" not in e["request"]["url"]
        assert e["_mcp"]["clientUrl"].startswith(f"http://127.0.0.1:{tap_port}/")
    (prm,) = by_kind["prm"]
    assert prm["request"]["url"] == f"http://127.0.0.1:{rs_port}/.well-known/oauth-protected-resource/mcp"
    assert json.loads(prm["response"]["content"]["text"])["authorization_servers"] == [f"http://127.0.0.1:{as_port}/"]
    (meta,) = by_kind["as_meta"]
    assert meta["request"]["url"] == f"http://127.0.0.1:{as_port}/.well-known/oauth-authorization-server"
    assert json.loads(meta["response"]["content"]["text"])["token_endpoint"] == f"http://127.0.0.1:{as_port}/token"
    urls = {e["request"]["url"].split("?")[0]: e for e in by_kind["as"]}
    register, token = urls[f"http://127.0.0.1:{as_port}/register"], urls[f"http://127.0.0.1:{as_port}/token"]
    assert register["_mcp"]["clientUrl"] == f"http://127.0.0.1:{tap_port}/.mcptap/o/1/register"
    assert json.loads(register["response"]["content"]["text"])["client_secret"].startswith("«redacted")
    body = json.loads(token["response"]["content"]["text"])
    assert body["token_type"] == "Bearer" and body["access_token"].startswith("«redacted")
    sent = token["request"]["postData"]["text"]
    assert f"resource=http%3A%2F%2F127.0.0.1%3A{rs_port}%2Fmcp" in sent      # as the tap sent it on
    assert {rw["what"] for rw in token["_mcp"]["rewrites"]} == {"form"}
    for e in (prm, meta, register, token):
        content = e["response"]["content"]
        assert content["size"] == len(content["text"].encode()) > 0 and "comment" not in content
