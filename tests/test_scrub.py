"""``mcptap scrub``: a scrubbed capture holds no secret, is still a capture,
and differs from its source only in payload text (mcptap/redact/scrub.py)."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcptap.capture.reader import read_capture
from mcptap.check.reannotated import Reannotated
from mcptap.cli.main import mcptap
from scripted import c2s, handshake, j, note, record, req, res, s2c
from test_redact_engine import PEM, PEM_BODY, SECRETS

PASSWORD = "hunter2-Correct-Horse"
API_KEY = "k-9f8e7d6c5b4a3210"
ALL = [PASSWORD, API_KEY, SECRETS["github"], SECRETS["aws"], SECRETS["jwt"], PEM_BODY]
PH = re.compile(r"«redacted:hmac:([0-9a-f]{12})»")


def run(*args: str, input: bytes | None = None):
    return CliRunner().invoke(mcptap, list(args), input=input, catch_exceptions=False)


def secret_session(path: Path) -> Path:
    def call(i: int, args: dict) -> tuple:
        return c2s(req(i, "tools/call", {"name": "deploy", "arguments": args}))

    steps = handshake() + [
        call(2, {"password": PASSWORD, "apiKey": API_KEY, "repo": "x/y"}),
        s2c(res(2, {"content": [{"type": "text", "text": f"cloned with {SECRETS['github']} as AWS {SECRETS['aws']}"}]})),
        call(3, {"password": PASSWORD, "session": SECRETS["jwt"]}),
        s2c(res(3, {"content": [{"type": "text", "text": PEM}], "structuredContent": {"private_key": PEM}})),
        # a line kept verbatim (CR LF): framing must survive
        c2s(b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"x","arguments":{"password": "' + PASSWORD.encode() + b'"}}}\r\n'),
        s2c(res(4)),
        c2s(b"not json: token=" + API_KEY.encode() + b"\n"),
        ("err", f"debug: Authorization: Bearer {SECRETS['jwt']}\n".encode()),
    ]
    return record(path, steps)


def codes(path: Path) -> list[tuple]:
    """Per record: type, seq, dir, kind, pair and its findings' codes, re-annotated in full."""
    out = []
    for r in Reannotated.open(str(path), reuse=False):
        fs = [f["code"] for f in r.get("findings", ())] + [f["code"] for f in r.get("capture", ())]
        out.append((r["type"], r.get("seq"), r.get("dir"), r.get("kind"), r.get("id"), r.get("method"), r.get("pair"), tuple(sorted(fs))))
    return out


def test_scrubbed_capture_holds_no_secret_and_is_still_a_capture(tmp_path) -> None:
    src = secret_session(tmp_path / "src.jsonl")
    text = src.read_text()
    assert all(s in text or json.dumps(s)[1:-1] in text for s in ALL)         # the source really has them
    r = run("scrub", str(src), "-o", str(tmp_path / "out.jsonl"))
    assert r.exit_code == 0, r.output
    out = (tmp_path / "out.jsonl").read_text()
    for s in ALL:
        assert s not in out and json.dumps(s)[1:-1] not in out
    # the same password in three calls: one placeholder
    cap = read_capture(str(tmp_path / "out.jsonl"))
    msgs = {m.seq: m for m in cap.messages()}
    pw = {msgs[4].value["params"]["arguments"]["password"], msgs[6].value["params"]["arguments"]["password"],
          json.loads(msgs[8].raw)["params"]["arguments"]["password"]}
    assert len(pw) == 1 and PH.fullmatch(pw.pop())
    assert msgs[8].raw.endswith(b"\r\n") and b'"password": "' in msgs[8].raw        # verbatim framing kept
    # nobody can confirm a guess: no placeholder shares an 8-hex window with a secret's plain SHA-256
    for s in ALL:
        digest = hashlib.sha256(s.encode()).hexdigest()
        windows = {digest[i:i + 8] for i in range(len(digest) - 7)}
        assert not any(w in m.group(1) for m in PH.finditer(out) for w in windows)
    # header and end say what happened; digests are over the bytes it holds
    assert cap.header["scrubbed"][0]["rules"]["builtin"] is True and cap.header["scrubbed"][0]["rules"]["library"] == "detect-secrets"
    assert cap.end["original"]["c2s"] == read_capture(str(src)).end["c2s"]
    for d in ("c2s", "s2c"):
        data = b"".join(m.raw for m in cap.messages() if m.direction.value == d)
        assert cap.end[d]["sha256"] == hashlib.sha256(data).hexdigest() and cap.end[d]["bytes"] == len(data)
        offsets = [m.offset for m in cap.messages() if m.direction.value == d]
        sizes = [len(m.raw) for m in cap.messages() if m.direction.value == d]
        assert offsets == [sum(sizes[:i]) for i in range(len(sizes))]
    # show and check read it, with the same findings as the source
    assert codes(tmp_path / "out.jsonl") == codes(src)
    for cmd in (["show"], ["check", "--fail-on", "never"]):
        r = run(*cmd, str(tmp_path / "out.jsonl"))
        assert r.exit_code == 0 and "tools/call" in r.output
        assert not any(s in r.output for s in ALL)
    # diff pairs every exchange, and scrubs the source with the same key as it reads it:
    # no difference, and no secret printed (diff/scrubbed.py)
    r = run("diff", str(src), str(tmp_path / "out.jsonl"))
    assert r.exit_code == 0 and "0 only in A, 0 only in B" in r.output, r.output
    assert not any(s in r.output for s in ALL)


def test_scrub_twice_is_scrub_once_and_dry_run_lists(tmp_path) -> None:
    src = secret_session(tmp_path / "src.jsonl")
    run("scrub", str(src), "-o", str(tmp_path / "a.jsonl"))
    run("scrub", str(tmp_path / "a.jsonl"), "-o", str(tmp_path / "b.jsonl"))
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    r = run("scrub", str(src), "--dry-run")
    assert r.exit_code == 0 and not (tmp_path / "c.jsonl").exists()
    lines = r.output.splitlines()
    assert re.search(r"^\s+4\s+params\.arguments\.password\s+key:password\s+«redacted:hmac:[0-9a-f]{12}»$", r.output, re.M)
    assert any("github-token" in ln for ln in lines) and any("pem-private-key" in ln for ln in lines)
    assert not any(s in r.output for s in ALL)


def test_user_rules_and_bad_rules(tmp_path) -> None:
    args = {"ssn": "123-45-6789", "q": "EMP-424242"}
    src = record(tmp_path / "s.jsonl", handshake() + [c2s(req(2, "tools/call", {"name": "q", "arguments": args})), s2c(res(2))])
    rules = tmp_path / "rules.toml"
    rules.write_text('keys = ["ssn"]\n[patterns]\nemployee = \'EMP-\\d{6}\'\n')
    r = run("scrub", str(src), "-o", str(tmp_path / "o.jsonl"), "--redact-rules", str(rules))
    out = (tmp_path / "o.jsonl").read_text()
    assert r.exit_code == 0 and "123-45-6789" not in out and "EMP-424242" not in out
    assert read_capture(str(tmp_path / "o.jsonl")).header["scrubbed"][0]["rules"]["patterns"] == {"employee": r"EMP-\d{6}"}
    (tmp_path / "bad.toml").write_text("keys = [")
    for args in (["--redact-rules", str(tmp_path / "bad.toml")], ["--redact-pattern", "(x"], ["--redact-path", "a[x"]):
        p = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "scrub", str(src), "-o", str(tmp_path / "x.jsonl"), *args],
                           capture_output=True, text=True)
        assert p.returncode == 2 and p.stderr.count("\n") == 1 and p.stderr.startswith("mcptap: ") and "Traceback" not in p.stderr
        assert not (tmp_path / "x.jsonl").exists()


def test_truncated_capture_scrubs_and_stays_truncated(tmp_path) -> None:
    src = secret_session(tmp_path / "src.jsonl")
    data = src.read_bytes()
    lines = data.splitlines(keepends=True)
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(b"".join(lines[:8]) + lines[8][:40])          # killed mid-record, no end
    r = run("scrub", str(cut), "-o", str(tmp_path / "o.jsonl"))
    assert r.exit_code == 0
    cap = read_capture(str(tmp_path / "o.jsonl"))
    assert cap.end is None and cap.records[-1]["type"] == "gap" and cap.records[-1]["truncated"] is True
    r = run("check", str(tmp_path / "o.jsonl"), "--fail-on", "never")
    assert "capture.truncated" in r.output and "capture.incomplete" in r.output


def test_stdin_and_gzip_inputs(tmp_path) -> None:
    src = secret_session(tmp_path / "src.jsonl")
    gz = tmp_path / "src.jsonl.gz"
    gz.write_bytes(gzip.compress(src.read_bytes()))
    want = run("show", str(src)).output.replace(str(src), "X")
    assert run("show", str(gz)).output.replace(str(gz), "X") == want
    assert run("show", "-", input=src.read_bytes()).output.replace("-", "X").splitlines()[1:] == want.replace("-", "X").splitlines()[1:]
    assert run("show", "-", input=gz.read_bytes()).exit_code == 0
    r = run("check", "-", "--fail-on", "never", input=gz.read_bytes())
    assert r.exit_code == 0 and r.output.startswith("-: 10 messages")
    p = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "scrub", "-", "-o", "-"], input=gz.read_bytes(), capture_output=True)
    assert p.returncode == 0 and p.stdout.startswith(b'{"type":"header"') and PASSWORD.encode() not in p.stdout
    assert p.stdout == run_scrub_bytes(src, tmp_path)
    broken = tmp_path / "broken.jsonl.gz"
    broken.write_bytes(b"\x1f\x8b" + b"garbage" * 10)
    p = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "check", str(broken)], capture_output=True, text=True)
    assert p.returncode == 2 and "Traceback" not in p.stderr


def run_scrub_bytes(src: Path, tmp_path: Path) -> bytes:
    run("scrub", str(src), "-o", str(tmp_path / "via-file.jsonl"))
    return (tmp_path / "via-file.jsonl").read_bytes()


POOL = [
    c2s(req(2, "tools/call", {"name": "a", "arguments": {"password": PASSWORD}})),
    c2s(req(3, "tools/call", {"name": "b", "arguments": {"text": f"use {SECRETS['github']}"}})),
    c2s(req(4, "ping")),
    c2s(note("notifications/progress", {"progressToken": "tok-aaaaaaa", "progress": 1})),
    s2c(res(2, {"content": [{"type": "text", "text": f"jwt {SECRETS['jwt']}"}]})),
    s2c(res(3, {"content": [{"type": "text", "text": json.dumps({"apiKey": API_KEY})}]})),
    s2c(res(4)),
    s2c(res(99)),
    c2s(b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"c","arguments":{"token": "' + API_KEY.encode() + b'"}}}\r\n'),
    s2c(j({"jsonrpc": "2.0", "id": 5, "error": {"code": -32000, "message": f"bad password={PASSWORD}"}})),
    c2s(b"garbage token=" + API_KEY.encode() + b"\n"),
    s2c(b"\xff\xfe password=" + PASSWORD.encode() + b"\n"),
    ("err", f"Authorization: Bearer {SECRETS['jwt']}\n".encode()),
    c2s(j([{"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"arguments": {"secret": "s3cr3t-in-batch"}}}])),
]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(POOL), max_size=12), st.booleans())
def test_scrub_changes_only_payload_text(tmp_path, steps, end) -> None:
    n = len(list(tmp_path.iterdir()))
    src = record(tmp_path / f"p{n}.jsonl", handshake() + steps, end=end)
    a, b = tmp_path / f"p{n}a.jsonl", tmp_path / f"p{n}b.jsonl"
    assert run("scrub", str(src), "-o", str(a)).exit_code == 0
    assert run("scrub", str(a), "-o", str(b)).exit_code == 0
    assert a.read_bytes() == b.read_bytes()                         # scrub(scrub(x)) == scrub(x)
    assert codes(a) == codes(src)                                   # count, order, pairing, findings
    text = a.read_text()
    assert PASSWORD not in text and API_KEY not in text and SECRETS["jwt"] not in text and "s3cr3t-in-batch" not in text


def test_record_redact_forwards_originals_and_records_scrubbed(tmp_path) -> None:
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"arguments": {"password": PASSWORD}}}).encode() + b"\n"
    out = tmp_path / "r.jsonl"
    p = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "record", "--redact", "--redact-key", "region", "-q", "-o", str(out),
                        "--", "cat"], input=line, capture_output=True, timeout=60)
    assert p.returncode == 0 and p.stdout == line            # the relay is untouched
    text = out.read_text()
    assert PASSWORD not in text and "«redacted:hmac:" in text
    cap = read_capture(str(out))
    assert cap.header["scrubbed"][0]["rules"]["keys"] == ["region"]
    assert cap.end["original"]["c2s"]["sha256"] == hashlib.sha256(line).hexdigest()
    assert cap.end["c2s"]["sha256"] == hashlib.sha256(b"".join(m.raw for m in cap.messages() if m.direction.value == "c2s")).hexdigest()
    p = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "record", "--redact-key", "x", "-q", "--", "cat"],
                       input="", capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "needs --redact" in p.stderr


def test_record_never_fails_for_want_of_a_key_file(tmp_path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    env = {k: v for k, v in os.environ.items() if k != "MCPTAP_REDACT_KEY"}
    env["MCPTAP_CONFIG_DIR"] = str(blocker / "cfg")          # cannot be created
    out = tmp_path / "k.jsonl"
    p = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "record", "-q", "-o", str(out), "--", "sh", "-c", "cat", "sh", "--token", PASSWORD],
                       input=b"{}\n", capture_output=True, env=env, timeout=60)
    assert p.returncode == 0 and p.stdout == b"{}\n"
    assert b"for this run only" in p.stderr and PASSWORD not in out.read_text()
    p = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "scrub", str(out), "-o", str(tmp_path / "s.jsonl")],
                       capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 2 and p.stderr.startswith("mcptap: cannot read the redaction key") and p.stderr.count("\n") == 1
    env.pop("MCPTAP_CONFIG_DIR")
    env["MCPTAP_CONFIG_DIR"] = str(tmp_path / "fresh")
    p = subprocess.run([sys.executable, "-m", "mcptap.cli.main", "record", "-q", "-o", str(out), "--", "sh", "-c", "cat", "sh", "plain"],
                       input=b"", capture_output=True, env=env, timeout=60)
    assert p.returncode == 0 and not (tmp_path / "fresh").exists()    # nothing secret: no key file written
