"""A chunk or stderr record whose bytes field is the wrong type or not base64 (a hand-edited
or damaged capture) was an "internal error" in every reader (AttributeError / binascii.Error
from check's tallies, show and report); the same damage to a message record's raw_b64 was
already a clean "corrupt record" error. The reader now reports such records as malformed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.test_serve_extend import synthesized

MCPTAP = [sys.executable, "-m", "mcptap.cli.main"]


def _edited(tmp_path: Path, typ: str, field: str, value: object) -> Path:
    src = tmp_path / "src.jsonl"
    synthesized(src)                    # chunk records (a flood stored unframed) and a stderr record
    lines = src.read_bytes().splitlines()
    i = next(k for k, x in enumerate(lines) if json.loads(x)["type"] == typ)
    rec = json.loads(lines[i])
    rec.pop("data", None)
    rec.pop("data_b64", None)
    rec[field] = value
    lines[i] = json.dumps(rec).encode()
    out = tmp_path / "edited.jsonl"
    out.write_bytes(b"\n".join(lines) + b"\n")
    return out


@pytest.mark.parametrize(("typ", "field", "value"), [
    ("chunk", "data", 5), ("chunk", "data_b64", "!!!notb64"), ("chunk", "data_b64", "abc"), ("chunk", "data_b64", []),
    ("stderr", "data_b64", "!!!notb64"), ("stderr", "data", {"a": 1}),
])
@pytest.mark.parametrize("command", [["check"], ["check", "--full"], ["show"], ["report", "-o", "{out}"]])
def test_a_damaged_bytes_field_is_a_malformed_record_not_an_internal_error(tmp_path: Path, typ: str, field: str,
                                                                           value: object, command: list[str]) -> None:
    path = _edited(tmp_path, typ, field, value)
    argv = [a.replace("{out}", str(tmp_path / "r.html")) for a in command]
    p = subprocess.run([*MCPTAP, *argv, str(path)], capture_output=True, text=True, timeout=120)
    said = p.stdout + p.stderr
    assert "internal error" not in said and "Traceback" not in said, said[-2000:]
    assert p.returncode != 0 and f"corrupt {typ} record" in said, said[-2000:]
