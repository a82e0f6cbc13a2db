"""The server gets exactly the environment the host gave mcptap.

Started without a locale (hosts filter the environment: the SDK's stdio_client
passes only HOME, LOGNAME, PATH, SHELL, TERM, USER), CPython's C-locale
coercion (PEP 538) sets ``LC_CTYPE=C.UTF-8`` in mcptap's own process before its
code runs; the server inherited it and ran in another locale than the host runs
it directly (a ``get-env`` tool answered differently through the tap). A host's
``LC_CTYPE=C`` was overwritten the same way. Every place mcptap starts a server
goes through ``stdio_os.spawn``: record and replay are run here as the host
would run them, with the server a shell that prints its LC_CTYPE.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcptap.capture.reader import read_capture
from mcptap.transport.stdio_os import server_env

ROOT = Path(__file__).resolve().parents[2]
SHOW_LOCALE = 'printf "%s\\n" "LC_CTYPE=${LC_CTYPE-unset}"; cat >/dev/null'
PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'


def _host_env(**extra: str) -> dict[str, str]:
    """What a host passes: no locale variable at all (plus ``extra``)."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/"),
           "PYTHONPATH": str(ROOT), "MCPTAP_REDACT_KEY": os.environ["MCPTAP_REDACT_KEY"]}
    env.update(extra)
    return env


def _locale_lines(capture: Path) -> list[str]:
    cap = read_capture(str(capture))
    return [r["raw"].strip() for r in cap.records if r["type"] == "message" and r["dir"] == "s2c"]


needs_proc = pytest.mark.skipif(not os.path.exists("/proc/self/environ"), reason="reads /proc/self/environ")


@needs_proc
@pytest.mark.parametrize(("given", "seen"), [({}, "LC_CTYPE=unset"), ({"LC_CTYPE": "C"}, "LC_CTYPE=C"),
                                             ({"LC_CTYPE": "C.UTF-8"}, "LC_CTYPE=C.UTF-8")])
def test_record_and_replay_start_the_server_in_the_hosts_locale(tmp_path: Path, given: dict[str, str], seen: str) -> None:
    env = _host_env(**given)
    first, second = tmp_path / "rec.jsonl", tmp_path / "replay.jsonl"
    direct = subprocess.run(["/bin/sh", "-c", SHOW_LOCALE], input=b"", env=env, capture_output=True, timeout=30)
    assert direct.stdout.decode().strip() == seen
    rec = subprocess.run([sys.executable, "-m", "mcptap", "record", "-q", "-o", str(first), "--", "/bin/sh", "-c",
                          SHOW_LOCALE], input=PING, env=env, capture_output=True, timeout=60)
    assert rec.stdout == direct.stdout, rec.stderr
    assert _locale_lines(first) == [seen]
    rep = subprocess.run([sys.executable, "-m", "mcptap", "replay", "-o", str(second), str(first), "--", "/bin/sh", "-c",
                          SHOW_LOCALE], stdin=subprocess.DEVNULL, env=env, capture_output=True, timeout=60)
    assert rep.returncode == 0, rep.stderr
    assert _locale_lines(second) == [seen]


def test_server_env_undoes_only_a_coerced_lc_ctype(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LC_CTYPE", "C.UTF-8")
    env = server_env(b"HOME=/h\0PATH=/bin\0")               # exec'd without LC_CTYPE: dropped
    assert env is not None and b"LC_CTYPE" not in env and env[b"PATH"] == os.environb[b"PATH"]
    env = server_env(b"LC_CTYPE=POSIX\0PATH=/bin\0")        # exec'd with another value: that one
    assert env is not None and env[b"LC_CTYPE"] == b"POSIX"
    assert server_env(b"LC_CTYPE=C.UTF-8\0") is None       # the host's own: kept
    monkeypatch.setenv("LC_CTYPE", "de_DE.UTF-8")           # not a coercion target: never touched
    assert server_env(b"PATH=/bin\0") is None
    monkeypatch.delenv("LC_CTYPE")
    assert server_env(b"LC_CTYPE=C\0") is None
