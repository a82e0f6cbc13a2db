"""What every record type shares: the bytes encoding (text or base64), the
findings list, and the checks ``from_json`` uses to refuse a malformed record
with one :class:`~mcptap.errors.CaptureReadError` naming type and seq."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from mcptap.errors import CaptureReadError

#: a record's findings as written: ``({code, severity, message, data?}, …)``
Findings = tuple[dict[str, Any], ...]


def encode_bytes(data: bytes, key: str, rec: dict[str, Any]) -> None:
    """Store ``data`` under ``key`` as text when it is valid UTF-8, else under
    ``key + "_b64"`` (base64)."""
    try:
        rec[key] = data.decode("utf-8")
    except UnicodeDecodeError:
        rec[key + "_b64"] = base64.b64encode(data).decode("ascii")


def decode_bytes(rec: dict[str, Any], key: str) -> bytes | None:
    """Inverse of ``encode_bytes``; None when neither field is present."""
    v: str | None = rec.get(key)
    if v is not None:
        return v.encode("utf-8")
    b = rec.get(key + "_b64")
    if b is not None:
        return base64.b64decode(b)
    return None


def malformed(d: dict[str, Any], why: str) -> CaptureReadError:
    """The error for a record that cannot be read as its type."""
    return CaptureReadError(f"{d.get('type')} record seq {d.get('seq')} is malformed: {why}")


def get_int(d: dict[str, Any], key: str, default: int | None = None) -> int:
    """``d[key]`` as an int (bools refused); ``default`` when absent and given."""
    v = d.get(key, default)
    if not isinstance(v, int) or isinstance(v, bool):
        raise malformed(d, f"{key} {v!r} is not an integer")
    return v


def get_opt_int(d: dict[str, Any], key: str) -> int | None:
    v = d.get(key)
    return None if v is None else get_int(d, key)


def get_str(d: dict[str, Any], key: str, default: str | None = None) -> str:
    v = d.get(key, default)
    if not isinstance(v, str):
        raise malformed(d, f"{key} {v!r} is not a string")
    return v


def get_dir(d: dict[str, Any]) -> str:
    v = d.get("dir")
    if v not in ("c2s", "s2c"):
        raise malformed(d, f"dir {v!r} is not c2s or s2c")
    return str(v)


def get_bytes(d: dict[str, Any], key: str) -> bytes:
    """The bytes stored under ``key`` / ``key_b64`` (required)."""
    text, b64 = d.get(key), d.get(key + "_b64")
    if text is not None:
        if not isinstance(text, str):
            raise malformed(d, f"{key} is a {type(text).__name__}, not a string")
        return text.encode("utf-8")
    try:
        data = None if b64 is None else base64.b64decode(b64, validate=True)
    except (binascii.Error, ValueError, TypeError):
        raise malformed(d, f"{key}_b64 is not base64") from None
    if data is None:
        raise malformed(d, f"no {key} or {key}_b64")
    return data


def get_findings(d: dict[str, Any]) -> Findings:
    fs = d.get("findings", ())
    if not isinstance(fs, (list, tuple)) or not all(isinstance(f, dict) and isinstance(f.get("code"), str) for f in fs):
        raise malformed(d, "findings is not a list of {code, severity, message}")
    return tuple(fs)


def rest(d: dict[str, Any], known: frozenset[str]) -> dict[str, Any]:
    """The keys of ``d`` not in ``known``, in their order."""
    return {k: v for k, v in d.items() if k not in known}


def put_findings(d: dict[str, Any], findings: Findings) -> dict[str, Any]:
    """Append ``findings`` (omitted when empty) and return ``d``."""
    if findings:
        d["findings"] = list(findings)
    return d
