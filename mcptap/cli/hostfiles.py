"""File handling for ``mcptap wrap`` / ``unwrap``: which file, reading it,
and writing it back safely, with its backup and its sidecar.

* The configuration is read as UTF-8 bytes and written back only when its
  text changed, atomically (a temporary file in the same directory, the
  original's permission bits and, where permitted, owner and group (the
  backup and sidecar get its owner too), ``os.replace`` onto the real path so a
  symlinked dotfile stays a symlink), and only if nobody rewrote it since we
  read it (hosts such as Claude Code rewrite their file while running):
  compared before anything is written and again right before the rename.
  ``opened`` holds the file's lock (mcptap/cli/config_lock.py) from before
  the read until after the write, so two mcptap runs take turns.
* Before the first change mcptap ever makes, the original is copied to
  ``FILE.mcptap-backup`` (never overwritten afterwards).
* The wrap memo lives in ``FILE.mcptap-wrap.json`` (mcptap/hosts/wrap.py);
  it is removed when the last wrapped server is unwrapped. A damaged one
  (not JSON, not a wrap record) stops ``wrap``; ``unwrap`` goes on without it
  (as without a sidecar) and moves it aside to ``FILE.mcptap-wrap.json.damaged``.

Every problem is a ``Fail`` (one line, exit 2) raised before anything is
written.
"""

from __future__ import annotations

import difflib
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from mcptap.cli.config_lock import config_lock
from mcptap.cli.errors import Fail
from mcptap.cli.options import NonEmptyPath
from mcptap.cli.output import temp_beside
from mcptap.escape import escape_controls, escape_name
from mcptap.hosts.dialects import DIALECTS, Dialect, claude_code_local, detect
from mcptap.hosts.errors import ConfigError
from mcptap.hosts.jsonc import escape_surrogates
from mcptap.hosts.locations import HOSTS, default_path
from mcptap.hosts.wrap import Outcome, check_memo

SIDECAR_SUFFIX = ".mcptap-wrap.json"
BACKUP_SUFFIX = ".mcptap-backup"


def config_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--host``, ``--config``, ``--dialect``, ``--dry-run`` and ``SERVER...``."""
    opts = [
        click.option("--host", type=click.Choice(list(HOSTS)), default=None,
                     help="Use this host's user configuration file (see docs/hosts.md)."),
        click.option("--config", "config", type=NonEmptyPath(dir_okay=False), default=None,
                     help="Configuration file to change (its dialect is detected from its content); "
                          "not with --host, except claude-code-local (that scope of another ~/.claude.json)."),
        click.option("--dialect", type=click.Choice(list(DIALECTS)), default=None,
                     help="Dialect of --config when detection is not wanted."),
        click.option("--project", type=NonEmptyPath(file_okay=False), default=None,
                     help="Project directory for --host claude-code-local (default: the current directory)."),
        click.option("-n", "--dry-run", is_flag=True, help="Print the change as a unified diff; write nothing."),
        click.argument("servers", nargs=-1, metavar="[SERVER]..."),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


@dataclass
class ConfigFile:
    path: str          # as the user named it
    real: str          # symlinks resolved: what gets replaced
    raw: bytes
    text: str
    dialect: Dialect
    memo: dict[str, Any] | None
    #: why the sidecar could not be used (``load(damaged_ok=True)``); None: it is fine or absent
    damaged: str | None = None
    #: the sidecar's bytes as read (None: there was none)
    memo_raw: bytes | None = None

    @property
    def sidecar(self) -> str:
        return self.real + SIDECAR_SUFFIX

    @property
    def backup(self) -> str:
        return self.real + BACKUP_SUFFIX


def locate(host: str | None, config: str | None) -> str:
    if config is not None:
        return config
    if host is None:
        found = []
        for name in HOSTS:
            if name == "claude-code-local":
                continue
            candidate = default_path(name, sys.platform, str(Path.home()), os.environ)
            if os.path.isfile(candidate):
                found.append(f"--host {name} ({candidate})")
        hint = f"; found here: {', '.join(found)}" if found else ""
        raise click.UsageError(f"give --host NAME or --config FILE{hint}")
    try:
        return default_path(host, sys.platform, str(Path.home()), os.environ)
    except ConfigError as exc:
        raise Fail(str(exc)) from None


@contextmanager
def opened(host: str | None, config: str | None, dialect_name: str | None, need_write: bool,
           project: str | None = None, damaged_ok: bool = False) -> Iterator[ConfigFile]:
    """``load`` the configuration for the ``with`` body; with ``need_write``
    holding its lock (mcptap/cli/config_lock.py) from before it is read until
    the body has written it, so two mcptap runs on one file take turns.
    Raises Fail as ``load`` does."""
    path, real = _where(host, config, dialect_name, project)
    if not need_write or not os.path.isfile(real):
        yield load(host, config, dialect_name, need_write, project, damaged_ok)   # reads only, or fails
        return
    if not _dir_writable(real):
        # checked before the lock file is made: nothing at all is written into such a directory
        raise Fail(f"{escape_name(path)}: its directory is not writable (needed for the atomic rewrite, backup and sidecar)")
    with config_lock(real, path):
        yield load(host, config, dialect_name, need_write, project, damaged_ok)


def _dir_writable(real: str) -> bool:
    """Whether the directory of ``real`` may be written (``_may_write``)."""
    return _may_write(os.path.dirname(real) or ".")


def _may_write(path: str) -> bool:
    """Whether this process may write ``path`` (a file, or a directory's
    entries): the kernel's answer (``os.access`` with the effective ids), so
    group and other bits, ACLs and read-only mounts all count, not the owner
    bit alone; for root, whom that lets write anything on a writable mount,
    also a write bit for someone: a 0444 file or 0555 directory is read-only
    to its users, who would not expect root's mcptap to write there."""
    try:
        if not os.access(path, os.W_OK, effective_ids=os.access in os.supports_effective_ids):
            return False
        return not (hasattr(os, "geteuid") and os.geteuid() == 0) or bool(os.stat(path).st_mode & 0o222)
    except OSError:
        return False


def _where(host: str | None, config: str | None, dialect_name: str | None, project: str | None) -> tuple[str, str]:
    """(the configuration's path as named, symlinks resolved). Raises UsageError, Fail."""
    if project is not None and host != "claude-code-local":
        raise click.UsageError("--project applies to --host claude-code-local")
    # --host names a file and its dialect, --config a file whose dialect is detected (or --dialect):
    # both at once read one file in another host's dialect. The one exception: Claude Code's local
    # scope has no --dialect of its own, so --host claude-code-local --config FILE reads FILE's.
    if host is not None and config is not None and host != "claude-code-local":
        raise click.UsageError("give --host NAME or --config FILE, not both (--dialect NAME sets the dialect of --config)")
    if host is not None and dialect_name is not None:
        raise click.UsageError("--dialect applies to --config FILE (--host NAME has its own)")
    path = locate(host, config)
    return path, os.path.realpath(path)


def load(host: str | None, config: str | None, dialect_name: str | None, need_write: bool,
         project: str | None = None, damaged_ok: bool = False) -> ConfigFile:
    """Read and check the configuration and its sidecar (``opened`` also
    takes the lock: use that to write). Raises Fail; for a damaged sidecar
    only without ``damaged_ok`` (then ``memo`` is None and ``damaged`` says why)."""
    path, real = _where(host, config, dialect_name, project)
    try:
        with open(real, "rb") as fp:
            raw = fp.read()
    except FileNotFoundError:
        raise Fail(f"{escape_name(path)}: no such file") from None
    except IsADirectoryError:
        raise Fail(f"{escape_name(path)}: is a directory") from None
    except OSError as exc:
        raise Fail(f"{escape_name(path)}: cannot read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Fail(f"{escape_name(path)}: not UTF-8 text (byte {exc.start})") from None
    try:
        if dialect_name is not None:
            dialect = DIALECTS[dialect_name]
        elif host == "claude-code-local":
            # Claude Code keys a project by its working directory as the kernel gives it, symlinks
            # resolved (what getcwd() returns inside a symlinked directory): --project is read so too
            dialect = claude_code_local(os.path.realpath(project or os.getcwd()))
        elif host is not None:
            dialect = HOSTS[host].dialect
        else:
            dialect = detect(text, os.path.basename(real))
        dialect.servers(text)                      # parses: a syntax error stops here
    except ConfigError as exc:
        raise Fail(f"{escape_name(path)}: {exc}") from None
    except RecursionError:
        raise Fail(f"{escape_name(path)}: nested too deeply to read") from None
    if need_write:
        if not _may_write(real):
            raise Fail(f"{escape_name(path)}: the file is read-only")
        if not _dir_writable(real):
            raise Fail(f"{escape_name(path)}: its directory is not writable (needed for the atomic rewrite, backup and sidecar)")
    memo = None
    memo_raw = None
    damaged = None
    sidecar = real + SIDECAR_SUFFIX
    if os.path.exists(sidecar):
        try:
            with open(sidecar, "rb") as fp:
                memo_raw = fp.read()
            memo = check_memo(json.loads(memo_raw.decode("utf-8")))
        except (ValueError, ConfigError, RecursionError) as exc:
            if not damaged_ok:
                raise Fail(f"{escape_name(sidecar)}: damaged wrap record ({exc}); `mcptap unwrap` restores without it") from None
            damaged = str(exc)
        except OSError as exc:
            raise Fail(f"{escape_name(sidecar)}: cannot read: {exc.strerror or exc}") from None
    return ConfigFile(path, real, raw, text, dialect, memo, damaged, memo_raw)


def read_backup(cf: ConfigFile) -> str | None:
    """The text of ``FILE.mcptap-backup`` (the file before mcptap first
    changed it), or None when there is none or it cannot be read as UTF-8."""
    try:
        with open(cf.backup, "rb") as fp:
            return fp.read().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def set_damaged_aside(cf: ConfigFile) -> str:
    """Move a damaged sidecar to ``SIDECAR.damaged`` (kept for the user: it may
    still show an original URL); returns that path. Raises Fail."""
    aside = cf.sidecar + ".damaged"
    try:
        os.replace(cf.sidecar, aside)
    except OSError as exc:
        raise Fail(f"{escape_name(cf.sidecar)}: cannot move aside: {exc.strerror or exc}") from None
    return aside


def diff(cf: ConfigFile, new_text: str) -> str:
    """Unified diff of the configuration before and after (may be empty)."""
    lines = difflib.unified_diff(cf.text.splitlines(keepends=True), new_text.splitlines(keepends=True),
                                 fromfile=cf.path, tofile=f"{cf.path} (mcptap)")
    out = []
    for line in lines:
        # a cloned project's config can carry terminal escapes and bidi overrides: shown as escapes
        # (indentation TABs stay TABs)
        body = "\t".join(escape_controls(part) for part in line.rstrip("\n").split("\t"))
        out.append(body + "\n" if line.endswith("\n") else body + "\n\\ No newline at end of file\n")
    return "".join(out)


class _Changed(Exception):
    """The configuration is no longer the bytes mcptap read."""


CHANGED = "the file changed while mcptap was working on it (a host rewrote it?); nothing written, try again"


def _check_unchanged(cf: ConfigFile) -> None:
    with open(cf.real, "rb") as fp:
        if fp.read() != cf.raw:
            raise _Changed


def _atomic_write(path: str, data: bytes, mode: int, owner: tuple[int, int] | None = None,
                  before_replace: Callable[[], None] | None = None) -> None:
    fd, tmp = temp_beside(path, "wrap")
    try:
        with os.fdopen(fd, "wb") as fp:
            fp.write(data)
            fp.flush()
            if owner is not None and hasattr(os, "fchown"):
                # run as root (sudo) on a user's file: the file stays the user's, or the host
                # running as that user can no longer read its own configuration
                try:
                    os.fchown(fp.fileno(), *owner)
                except PermissionError:
                    pass                        # not root: the file is ours anyway
            os.fchmod(fp.fileno(), mode)
            os.fsync(fp.fileno())
        if before_replace is not None:
            before_replace()            # as late as possible: the fsyncs above take milliseconds
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _memo_bytes(outcome: Outcome) -> bytes:
    # a lone surrogate (from a \\ud800 escape in the configuration) is written as its escape
    return (escape_surrogates(json.dumps(outcome.memo, indent=2, ensure_ascii=False)) + "\n").encode("utf-8")


def check_writable(cf: ConfigFile, outcome: Outcome) -> None:
    """Raises Fail when the new configuration or sidecar cannot be written
    as UTF-8: called before anything is reported or written, so mcptap never
    says it wrapped a server and then fails."""
    try:
        outcome.text.encode("utf-8")
        _memo_bytes(outcome)
    except UnicodeEncodeError as exc:
        raise Fail(f"{escape_name(cf.path)}: the result cannot be written as UTF-8 (character {exc.object[exc.start]!r}); nothing written") from None


def _owner(cf: ConfigFile) -> tuple[int, int] | None:
    try:
        st = os.stat(cf.real)
    except OSError:
        return None
    return st.st_uid, st.st_gid


def _write_memo(cf: ConfigFile, outcome: Outcome) -> None:
    if outcome.memo["servers"]:
        _atomic_write(cf.sidecar, _memo_bytes(outcome), 0o600, _owner(cf))      # it holds the original args, secrets included
    elif os.path.exists(cf.sidecar) and cf.damaged is None:     # a damaged one is moved aside, never lost
        os.unlink(cf.sidecar)


def _undo(cf: ConfigFile, made_backup: str | None, memo_written: bool) -> None:
    """Take back the backup and sidecar this run wrote when the configuration
    itself is refused: it stays as the host left it, and so do they."""
    if memo_written:
        if cf.memo_raw is None:
            if os.path.exists(cf.sidecar):
                os.unlink(cf.sidecar)
        else:
            _atomic_write(cf.sidecar, cf.memo_raw, 0o600, _owner(cf))
    if made_backup is not None:
        os.unlink(made_backup)


def save(cf: ConfigFile, outcome: Outcome, memo_first: bool) -> str | None:
    """Write the new configuration (and backup, sidecar). ``memo_first``
    (wrap): the sidecar is written before the configuration, so a wrapped
    entry never lacks its record; unwrap writes the configuration first.
    Returns the backup path when this run created it. Raises Fail; the
    configuration is then unchanged."""
    try:
        if outcome.text == cf.text:
            if outcome.memo["servers"] != (cf.memo or {}).get("servers", {}):
                _write_memo(cf, outcome)
            return None
        mode = os.stat(cf.real).st_mode & 0o7777
        owner = _owner(cf)
        _check_unchanged(cf)
        made_backup = None
        if not os.path.exists(cf.backup):
            _atomic_write(cf.backup, cf.raw, mode, owner)
            made_backup = cf.backup
        if memo_first:
            _write_memo(cf, outcome)
        try:
            # other mcptap runs wait for our lock, but a host rewrites its file whenever it likes:
            # compared again right before the rename, so its change is never replaced unseen
            _atomic_write(cf.real, outcome.text.encode("utf-8"), mode, owner, before_replace=lambda: _check_unchanged(cf))
        except _Changed:
            _undo(cf, made_backup, memo_first)
            raise
        if not memo_first:
            _write_memo(cf, outcome)
    except _Changed:
        raise Fail(f"{escape_name(cf.path)}: {CHANGED}") from None
    except OSError as exc:
        raise Fail(f"{escape_name(cf.path)}: cannot write: {exc.strerror or exc} ({exc.filename or cf.path})") from None
    return made_backup
