"""Terminal output shared by every command: one colour palette, the colour
decision (``--color``/``--no-color``, then ``NO_COLOR``, then "is stdout a
terminal"), and line output that survives ``| head`` and unwritable files.

Renderers below the CLI (show, check, diff, replay reports) never emit colour
codes themselves: they take a ``style(text, role) -> str`` callable (or None for
plain text) and name a *role*; this module maps roles to colours.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
import signal
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any, BinaryIO

import click

from mcptap.capture.writer import locked_by_a_writer
from mcptap.cli.errors import Fail, usage
from mcptap.escape import escape_name
from mcptap.transport.signal_latch import handled

Style = Callable[[str, str], str]

#: role -> click.style keywords. Roles: finding severities (error, warn, info),
#: directions (c2s, s2c), emphasis (bold, dim), good news (ok), diff marks
#: (added, removed, changed, breaking) and replay verdicts (their own names).
PALETTE: dict[str, dict[str, Any]] = {
    "error": {"fg": "red", "bold": True}, "warn": {"fg": "yellow"}, "info": {"fg": "cyan"},
    "c2s": {"fg": "blue"}, "s2c": {"fg": "magenta"}, "dim": {"dim": True}, "bold": {"bold": True}, "ok": {"fg": "green"},
    "added": {"fg": "green"}, "removed": {"fg": "red"}, "changed": {"fg": "yellow"}, "breaking": {"fg": "red", "bold": True},
    "MATCH": {"fg": "green"}, "CHANGED": {"fg": "yellow"}, "ERROR-CHANGED": {"fg": "red"}, "MISSING": {"fg": "red"},
    "NEW": {"fg": "magenta"}, "SKIPPED": {"fg": "bright_black"},
}


def use_color(flag: bool | None, stream: IO[Any] | None = None) -> bool:
    """Explicit ``--color``/``--no-color`` wins; else ``NO_COLOR`` (set and
    non-empty, no-color.org) disables; else colour only when ``stream``
    (default stdout) is a terminal."""
    if flag is not None:
        return flag
    if os.environ.get("NO_COLOR"):
        return False
    return (stream or sys.stdout).isatty()


def paint(text: str, role: str) -> str:
    """``text`` in the palette's colour for ``role`` (unknown role: unchanged)."""
    return click.style(text, **PALETTE[role]) if role in PALETTE else text


def styler(flag: bool | None, stream: IO[Any] | None = None) -> Style | None:
    """The ``style(text, role)`` callable renderers take, or None (plain text)."""
    return paint if use_color(flag, stream) else None


@contextlib.contextmanager
def stopped_as_interrupted() -> Iterator[None]:
    """SIGTERM and SIGHUP end the command as Ctrl-C does (KeyboardInterrupt:
    "mcptap: interrupted", exit 130) instead of killing it outright, so its
    ``finally`` blocks remove the temporary file of an output being written
    (``timeout``, a closed terminal). The previous handlers come back after."""
    def interrupted(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    old = {}
    for sig in handled((signal.SIGTERM, signal.SIGHUP)):      # nohup's ignored SIGHUP stays ignored
        try:
            old[sig] = signal.signal(sig, interrupted)
        except (ValueError, OSError):     # not the main thread (tests): the default stays
            pass
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


def replaced_path(output: str) -> str | None:
    """The file a command replaces when it writes OUTPUT: it writes a
    temporary file beside that path and renames it over the path once
    complete (no half-written file if it stops). That is OUTPUT with its
    symlinks resolved (a link's target is replaced, not the link), for a
    regular file or a path that does not exist yet. None: OUTPUT is written in
    place, being a device, FIFO or socket (``-o /dev/null``, a named pipe) or
    an open descriptor (``/dev/stdout``, ``/dev/fd/N``, ``>(…)``): a rename
    would replace the node itself (run as root, ``/dev/null`` became a
    regular file)."""
    real = os.path.realpath(output)
    if real.startswith("/proc/"):
        return None          # a descriptor's link (/dev/fd/N, /dev/stdout): what it names is open already
    if locked_by_a_writer(real):
        # renamed over, a live capture's tap would go on writing into the replaced file: all lost
        raise Fail(f"{escape_name(output)}: another mcptap is recording into it; give another output file")
    try:
        return real if stat.S_ISREG(os.stat(real).st_mode) else None
    except OSError:
        return real          # missing (the usual case) or unreadable: the open says why


def nameless(path: str) -> bool:
    """True when input ``path`` has no name an output's default name may be derived from:
    ``-`` (standard input), or a pipe, device or open descriptor (``<(…)`` is ``/dev/fd/63``,
    a FIFO, ``/dev/stdin``): its base name (``63``) says nothing of the capture, and a
    default derived from it would silently replace the output of another such run. A path
    that cannot be looked at is not nameless (its open says why)."""
    if path == "-" or os.path.realpath(path).startswith(("/proc/", "/dev/")):
        return True
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def temp_beside(target: str, tag: str, mode: int = 0o600) -> tuple[int, str]:
    """Create a new temporary file in TARGET's directory, to be renamed over
    TARGET once complete (same file system: the rename is atomic) or removed
    if the command stops. Its name is short whatever TARGET's:
    ``.mcptap-TAG-<12 hex>.tmp`` (TARGET + ``.tmpPID`` exceeded NAME_MAX, 255
    bytes, for a TARGET name of 248 bytes or more). Created exclusively
    (O_EXCL), ``mode`` as ``os.open`` takes it (the umask applies). Returns
    ``(fd, path)``; raises OSError."""
    where = os.path.dirname(target) or "."
    for _ in range(100):
        path = os.path.join(where, f".mcptap-{tag}-{secrets.token_hex(6)}.tmp")
        try:
            return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode), path
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary file name", where)


def write_private(output: str, write: Callable[[BinaryIO], None], tag: str) -> None:
    """Write the file OUTPUT with ``write(fp)`` (a binary file), owner-only
    (0600, as captures are: whatever mcptap writes from a capture may hold
    bearer tokens recorded with --record-secrets, and tool arguments and
    results always). A regular file or a new path is written to a temporary
    file beside it (``temp_beside``) renamed over it once complete, so an
    existing file's looser mode does not survive and a failed write leaves no
    half file; a device or FIFO (``replaced_path`` None) is written in place.
    Raises OSError (and Fail: a live capture named as OUTPUT)."""
    target = replaced_path(output)
    if target is None:
        with whole_then_copied(output) as fp:
            write(fp)
        return
    fd, tmp = temp_beside(target, tag)
    try:
        with os.fdopen(fd, "wb") as fp:
            write(fp)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


#: errors of a disk that is full (or a quota or file size limit reached)
_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


@contextlib.contextmanager
def whole_then_copied(output: str) -> Iterator[BinaryIO]:
    """A temporary file (owner-only, unlinked) to write an output into that
    cannot be replaced by a rename: ``-`` (standard output) or a path
    ``replaced_path`` writes in place (a device, FIFO or open descriptor).
    Copied to the output only when the block ends without an exception, so a
    command that refuses part-way (a corrupt record, a chunk record it cannot
    re-frame, Ctrl-C) leaves nothing on it: a consumer never sees a partial
    file (a reader waiting on a FIFO sees it end empty). The price: no output until the whole is written, and a temporary
    copy of it in ``$TMPDIR``. Raises OSError (the copy; ``BrokenPipeError``
    when standard output's reader left) and Fail (no temporary file, or the
    temporary copy's disk full: the message names ``$TMPDIR``)."""
    try:
        spool = tempfile.TemporaryFile(prefix="mcptap-output-")
    except OSError as exc:
        raise Fail(f"cannot write {escape_name(output)}: no temporary file to write it into first: {exc.strerror or exc}") from None
    with spool:
        try:
            yield spool
        except BaseException as exc:
            if output != "-":
                _ended_empty(output)
            if isinstance(exc, OSError) and exc.errno in _FULL:
                # the only file written in the block is the temporary copy: naming the output
                # would send the user looking at the wrong disk
                raise Fail(f"cannot write {escape_name(output)}: its temporary copy in {tempfile.gettempdir()} ran out of "
                           f"space ({exc.strerror or exc}); set TMPDIR to a directory with room") from None
            raise
        spool.flush()
        spool.seek(0)
        if output == "-":
            shutil.copyfileobj(spool, sys.stdout.buffer, 1 << 20)
            sys.stdout.buffer.flush()
        else:
            with open(output, "wb") as dest:
                shutil.copyfileobj(spool, dest, 1 << 20)


def _ended_empty(output: str) -> None:
    """A reader already waiting on the FIFO ``output`` sees it end (empty) rather than
    wait for good; one not there yet is not waited for (O_NONBLOCK: ENXIO)."""
    with contextlib.suppress(OSError):
        os.close(os.open(output, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC))


def refuse_input_as_output(inputs: Iterable[str], output: str | None) -> None:
    """A usage error (``errors.usage``, exit 2) when ``output`` is the same file as one of
    ``inputs``: opening it for writing would destroy the capture being read.
    ``-`` (stdin/stdout) and paths that do not exist never match."""
    if output is None or output == "-":
        return
    for path in inputs:
        if path == "-":
            continue
        try:
            same = os.path.samefile(path, output)
        except OSError:
            continue
        if same:
            usage(f"-o {escape_name(output)}: the output is the input {escape_name(path)}; write to another file")


def output_lines(lines: Iterable[str], path: str | None = None, flush_each: bool = False) -> None:
    """Write lines (newline added) to ``path`` (owner-only: ``write_private``) or stdout, in batches. A closed
    pipe (``| head``) ends the output quietly; an unwritable ``path`` is a
    one-line error (exit 2)."""
    if path is not None:
        def write(fp: BinaryIO) -> None:
            for line in lines:
                fp.write(line.encode("utf-8", "replace") + b"\n")

        try:
            write_private(path, write, "output")
        except OSError as exc:
            raise Fail(f"cannot write {escape_name(path)}: {exc.strerror or exc}") from None
        return
    out = sys.stdout.buffer      # bytes: UTF-8 whatever the locale says
    batch: list[str] = []
    try:
        for line in lines:
            batch.append(line)
            if flush_each or len(batch) >= 1024:
                out.write(("\n".join(batch) + "\n").encode("utf-8", "replace"))
                batch.clear()
                if flush_each:
                    out.flush()
        if batch:
            out.write(("\n".join(batch) + "\n").encode("utf-8", "replace"))
        out.flush()
    except BrokenPipeError:
        # stdout went away: point it at /dev/null so the interpreter's final flush is quiet
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, out.fileno())
        raise SystemExit(0) from None
