"""Where captures go and what they are called (level 0 helper; no I/O but mkdir).

Default directory: ``platformdirs.user_data_dir("mcptap") / "captures"``
(Linux: ``~/.local/share/mcptap/captures``); the ``MCPTAP_DIR`` environment
variable overrides it (captures go directly into ``$MCPTAP_DIR``). The path is
absolute, so ``mcptap record`` works from any cwd (hosts often start servers
from ``/``).

File names: ``YYYYMMDDTHHMMSSZ-<server-name>-<pid>.jsonl`` (UTC, mcptap's pid):
they sort by start time and two taps started in the same second do not collide.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

ENV_DIR = "MCPTAP_DIR"

#: Launchers whose first operand, not their own name, names the server.
LAUNCHERS = frozenset({
    "python", "python3", "pypy", "pypy3", "node", "nodejs", "deno", "bun", "bunx", "npx", "pnpx",
    "uv", "uvx", "pipx", "poetry", "pdm", "hatch", "sh", "bash", "zsh", "dash", "env", "exec",
    "ruby", "perl", "java", "dotnet", "go", "cargo", "docker", "podman", "npm", "pnpm", "yarn",
})
#: Launcher sub-commands that are not the server ("uv run x", "npm exec x").
LAUNCHER_VERBS = frozenset({"run", "exec", "x", "dlx", "tool", "start"})
#: Options of launchers that take a value (skip both).
_VALUED_OPTS = frozenset({"-p", "--package", "--from", "--with", "-c", "--python", "--directory", "--project", "-e", "--env", "-w", "--workdir", "--name"})
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_SCRIPT_EXT = re.compile(r"\.(py|js|mjs|cjs|ts|mts|rb|pl|sh|jar|exe)$", re.I)


def capture_dir(env: Mapping[str, str] | None = None) -> Path:
    """The directory new captures go to (absolute; not created here)."""
    env = os.environ if env is None else env
    override = env.get(ENV_DIR)
    if override:
        return Path(override).expanduser().absolute()
    import platformdirs

    return Path(platformdirs.user_data_dir("mcptap", appauthor=False)).absolute() / "captures"


def _base(word: str) -> str:
    name = word.rstrip("/").rsplit("/", 1)[-1]
    if not name.startswith("@") and "@" in name:
        name = name.split("@", 1)[0]        # npx pkg@1.2.3
    return _SCRIPT_EXT.sub("", name)


def server_name(argv: Sequence[str]) -> str:
    """A short file-name-safe name for the server started by ``argv``.

    ``python -u server.py`` → ``server``; ``npx -y @modelcontextprotocol/server-everything``
    → ``server-everything``; ``python -m my_server`` → ``my_server``;
    ``uv run x.py`` → ``x``; ``/opt/bin/srv`` → ``srv``. Falls back to ``server``.
    """
    name = ""
    if argv:
        name = _base(argv[0])
        if name.lower().rstrip("0123456789.") in LAUNCHERS or name.lower() in LAUNCHERS:
            rest = list(argv[1:])
            i = 0
            while i < len(rest):
                word = rest[i]
                if word in ("-m", "--module") and i + 1 < len(rest):
                    name = rest[i + 1]
                    break
                if word in _VALUED_OPTS:
                    i += 2
                    continue
                if word.startswith("-") or "=" in word or word.lower() in LAUNCHER_VERBS:
                    i += 1
                    continue
                name = _base(word)
                break
    name = _UNSAFE.sub("-", name).strip("-.")[:40]
    return name or "server"


def safe_name(name: str) -> str:
    """``name`` (e.g. a host's server key, ``--name``) as a file-name-safe
    word: runs of other characters than ``A-Za-z0-9._-`` become ``-``, at most
    40 characters; ``server`` when nothing is left."""
    return _UNSAFE.sub("-", name).strip("-.")[:40] or "server"


def capture_name(argv: Sequence[str], now: datetime, pid: int, name: str | None = None) -> str:
    """``YYYYMMDDTHHMMSSZ-<server-name>-<pid>.jsonl`` for a start time ``now``
    (aware or naive-UTC datetime); ``name`` (made safe) replaces the name
    guessed from ``argv``."""
    if now.tzinfo is not None:
        now = now.astimezone(UTC)
    word = safe_name(name) if name else server_name(argv)
    return f"{now:%Y%m%dT%H%M%SZ}-{word}-{pid}.jsonl"


def default_capture_path(argv: Sequence[str], now: datetime | None = None, pid: int | None = None,
                         env: Mapping[str, str] | None = None, *, directory: str | os.PathLike[str] | None = None,
                         name: str | None = None) -> Path:
    """Absolute path for a new capture of ``argv`` in ``directory`` (default:
    ``capture_dir(env)``), named by ``name`` when given; creates the directory
    (mode 0700) if needed. Raises OSError if it cannot be created."""
    where = Path(directory).expanduser().absolute() if directory is not None else capture_dir(env)
    where.mkdir(mode=0o700, parents=True, exist_ok=True)
    return where / capture_name(argv, now or datetime.now(UTC), os.getpid() if pid is None else pid, name)
