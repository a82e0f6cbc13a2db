"""Where the per-user redaction key lives (level 1 helper; the only file I/O of
the redaction engine).

The key is 32 random bytes, stored hex-encoded in ``redaction.key`` in the
user config directory (``platformdirs.user_config_dir("mcptap")``; Linux:
``~/.config/mcptap/redaction.key``), created on first use with mode 0600 in a
0700 directory. Overrides, in order:

* ``MCPTAP_REDACT_KEY``: the key itself, hex (at least 32 hex digits) — for
  tests and CI that need placeholders identical across machines;
* ``MCPTAP_CONFIG_DIR``: the directory that holds ``redaction.key``.

Raises :class:`~mcptap.errors.RedactionError` when the key cannot be read or
created, or the override is not hex.
"""

from __future__ import annotations

import os
import secrets
import tempfile
from collections.abc import Mapping
from pathlib import Path

from mcptap.errors import RedactionError
from mcptap.escape import escape_name
from mcptap.redact.keyed import Keyer

ENV_KEY = "MCPTAP_REDACT_KEY"
ENV_CONFIG_DIR = "MCPTAP_CONFIG_DIR"
KEY_FILE = "redaction.key"

_cached: dict[str, Keyer] = {}
_fallback: Keyer | None = None
_fallback_reason: str | None = None


def key_path(env: Mapping[str, str] | None = None) -> Path:
    """The key file's path (not created here)."""
    env = os.environ if env is None else env
    override = env.get(ENV_CONFIG_DIR)
    if override:
        return Path(override).expanduser().absolute() / KEY_FILE
    import platformdirs

    return Path(platformdirs.user_config_dir("mcptap", appauthor=False)).absolute() / KEY_FILE


def _parse(text: str, where: str) -> bytes:
    try:
        key = bytes.fromhex(text.strip())
    except ValueError:
        raise RedactionError(f"{where} is not a hex key") from None
    if len(key) < 16:
        raise RedactionError(f"{where} is too short (at least 32 hex digits)")
    return key


def load_keyer(env: Mapping[str, str] | None = None, strict: bool = True) -> Keyer:
    """The user's Keyer: from ``MCPTAP_REDACT_KEY``, else the key file
    (created with a fresh random key when missing). Cached per source.

    ``strict=False`` (record time: a tap must never fail to start because
    ``~/.config`` is read-only): when the key cannot be read or created, a
    random key for this process only is used instead — placeholders are then
    not stable across captures, but still unconfirmable — and
    ``fallback_reason()`` says why."""
    try:
        return _load(os.environ if env is None else env)
    except RedactionError as exc:
        if strict:
            raise
        global _fallback, _fallback_reason
        if _fallback is None:
            _fallback, _fallback_reason = Keyer(secrets.token_bytes(32)), str(exc)
        return _fallback


def existing_keyer(env: Mapping[str, str] | None = None) -> Keyer | None:
    """The user's Keyer when there is one (``MCPTAP_REDACT_KEY``, else the key file), None when
    neither is there; never creates a key file (``serve`` and ``replay`` only compare keys).

    Raises RedactionError when the one there is cannot be used (``MCPTAP_REDACT_KEY`` not hex
    or too short, the key file unreadable or not a key), as ``load_keyer`` does: taking that for
    "no key" told the user they had none and ignored the key file behind a mistyped variable."""
    env = os.environ if env is None else env
    try:
        present = bool(env.get(ENV_KEY)) or key_path(env).exists()
    except OSError as exc:
        raise RedactionError(f"cannot look for the redaction key: {exc.strerror or exc}") from None
    return _load(env) if present else None


def fallback_reason() -> str | None:
    """Why a process-only key is in use (``load_keyer(strict=False)``), or None."""
    return _fallback_reason


class LazyKeyer(Keyer):
    """A Keyer that loads the user's key (non-strict) on first use, so
    nothing touches the key file until a secret is actually redacted."""

    __slots__ = ("_real",)

    def __init__(self) -> None:
        self._real: Keyer | None = None

    def _k(self) -> Keyer:
        if self._real is None:
            self._real = load_keyer(strict=False)
        return self._real

    def placeholder(self, secret: str) -> str:
        return self._k().placeholder(secret)

    def fingerprint(self) -> str:
        return self._k().fingerprint()


def _load(env: Mapping[str, str]) -> Keyer:
    given = env.get(ENV_KEY)
    if given:
        cache_key = "env:" + given
        if cache_key not in _cached:
            _cached[cache_key] = Keyer(_parse(given, ENV_KEY))
        return _cached[cache_key]
    path = key_path(env)
    cache_key = "file:" + str(path)
    if cache_key in _cached:
        return _cached[cache_key]
    keyer = Keyer(_read_or_create(path))
    _cached[cache_key] = keyer
    return keyer


def _read_or_create(path: Path) -> bytes:
    try:
        return _parse(path.read_text("ascii"), str(path))
    except FileNotFoundError:
        pass
    except (OSError, UnicodeDecodeError) as exc:
        raise RedactionError(f"cannot read the redaction key {escape_name(str(path))}: {getattr(exc, 'strerror', None) or exc}") from None
    # write a complete key file under a temporary name, then link it into place:
    # two mcptaps starting at once never see a half-written key, and both use the winner's
    key = secrets.token_bytes(32)
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".redaction-", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="ascii") as fp:
                fp.write(key.hex() + "\n")
            os.link(tmp, path)
        finally:
            os.unlink(tmp)
    except FileExistsError:
        return _parse(path.read_text("ascii"), str(path))
    except OSError as exc:
        raise RedactionError(f"cannot create the redaction key {escape_name(str(path))}: {exc.strerror or exc}") from None
    return key
