"""Every file mcptap writes from a capture is owner-only (0600), as captures
are: an export (HAR with --record-secrets tokens; tool arguments and results
always), a check report, an HTML report, a scrubbed or served capture. An
existing file's looser mode does not survive being replaced."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLEAN = str(ROOT / "captures" / "clean-2025-06-18.jsonl")
FAULTY = str(ROOT / "captures" / "faulty-server.jsonl")
HTTP = str(ROOT / "tests" / "data" / "false-finding-http400-probe.jsonl")

COMMANDS = {
    "export-messages": ["export", CLEAN, "-f", "messages", "-o", "{out}"],
    "export-otlp-json": ["export", CLEAN, "-f", "otlp-json", "-o", "{out}"],
    "export-har": ["export", HTTP, "-f", "har", "-o", "{out}"],
    "check-o": ["check", FAULTY, "-o", "{out}"],
    "check-o-json": ["check", FAULTY, "--format", "json", "-o", "{out}"],
    "report": ["report", CLEAN, "-o", "{out}"],
    "scrub": ["scrub", CLEAN, "-o", "{out}"],
    "serve-o": ["serve", CLEAN, "-o", "{out}"],
    "record-o": ["record", "-q", "-o", "{out}", "--", sys.executable, "-c", "pass"],
}


@pytest.mark.parametrize("existing", [False, True], ids=["new", "replacing-0644"])
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_written_file_is_owner_only(tmp_path: Path, name: str, existing: bool) -> None:
    out = tmp_path / "out.file"
    if existing:
        out.write_bytes(b"")
        out.chmod(0o644)
    args = [a.replace("{out}", str(out)) for a in COMMANDS[name]]
    r = subprocess.run([sys.executable, "-m", "mcptap.cli.main", *args], input=b"", capture_output=True, timeout=120,
                       preexec_fn=lambda: os.umask(0o022), cwd=tmp_path)
    assert out.exists() and out.stat().st_size > 0, (r.returncode, r.stderr)
    assert stat.S_IMODE(out.stat().st_mode) == 0o600, (name, oct(out.stat().st_mode))
    assert [p.name for p in tmp_path.iterdir()] == ["out.file"]          # no temporary file left beside it
