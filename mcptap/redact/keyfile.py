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
from mcptap.redact.keyed import Keyer

ENV_KEY = "MCPTAP_REDACT_KEY"
ENV_CONFIG_DIR = "MCPTAP_CONFIG_DIR"
KEY_FILE = "redaction.key"

_cached: dict[str, Keyer] = {}


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


def load_keyer(env: Mapping[str, str] | None = None) -> Keyer:
    """The user's Keyer: from ``MCPTAP_REDACT_KEY``, else the key file
    (created with a fresh random key when missing). Cached per source."""
    env = os.environ if env is None else env
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
        raise RedactionError(f"cannot read the redaction key {path}: {getattr(exc, 'strerror', None) or exc}") from None
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
        raise RedactionError(f"cannot create the redaction key {path}: {exc.strerror or exc}") from None
    return key
