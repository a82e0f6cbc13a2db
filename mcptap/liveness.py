"""Whether a capture is still being written, and which disk-full reserves,
merge files and spill files a killed mcptap or a capture deleted by hand left
behind (level 1: reads ``/proc``, takes ``flock`` probes and signals pid 0).

A capture without an end record is either being recorded or was cut short
(a killed tap). ``ls`` shows which, and ``prune``/``record --keep`` must never
remove the first: a tap that writes into a deleted file loses the whole
session. The writer's pid comes from the reserve file ``CaptureWriter.open``
makes beside each capture (``.NAME.jsonl.reserve``: ``mcptap reserve
pid=N``; a capture named by ``record -o`` has no pid in its name) and from
the file name (``…-PID.jsonl``). A pid alone is not proof: pids are reused,
and a capture recorded in a container names a pid of that container (1, say)
that is alive out here. So where ``/proc`` tells, the capture counts as being
written only while that process holds the file open for writing; a capture
whose named pids do not, is written by no one unless some other process
holds it open for writing (its reserve could not be made: a full disk). Where
the system cannot tell (no ``/proc``, another user's process), a live pid is
taken at its word.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Iterator

from mcptap.capture.spill_format import SUFFIX, in_use, is_spill_file, spill_path
from mcptap.capture.writer import locked_by_a_writer

FILE_PID = re.compile(r"-(\d+)\.jsonl(?:\.gz)?$")
_RESERVE = re.compile(r"^\.(.+)\.reserve$")
_RESERVE_PID = re.compile(rb"^mcptap reserve pid=(\d+)\n")
#: ``serve --extend``'s work files, named by the pid writing them: the merged capture
#: (``.NAME.extending-PID``) and, where ``/proc`` cannot keep it nameless, the new session
#: (``.mcptap-episode-PID-XXXX.part``)
_MERGE = re.compile(r"^\.(.+)\.extending-(\d+)$|^\.mcptap-episode-(\d+)-[^/]*\.part$")
_PROC = "/proc"

FileId = tuple[int, int]        # (st_dev, st_ino)


def alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (``kill(pid, 0)``; another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True                 # alive, owned by someone else
    except (OSError, OverflowError, ValueError):
        return False
    return True


def _writable(pid: int | str, fd: str) -> bool:
    """Whether descriptor ``fd`` of ``pid`` was opened for writing (its fdinfo flags); True when unreadable."""
    try:
        with open(f"{_PROC}/{pid}/fdinfo/{fd}", "rb") as fp:
            for line in fp.read(512).splitlines():
                if line.startswith(b"flags:"):
                    return int(line.split()[1], 8) & os.O_ACCMODE in (os.O_WRONLY, os.O_RDWR)
    except (OSError, ValueError, IndexError):
        pass
    return True


def writes(pid: int, file: FileId) -> bool | None:
    """Whether process ``pid`` holds the file ``file`` open for writing; None
    when this system cannot tell (no ``/proc``, not allowed to look)."""
    where = f"{_PROC}/{pid}/fd"
    try:
        fds = os.listdir(where)
    except FileNotFoundError:
        return False if os.path.isdir(f"{_PROC}/self/fd") else None
    except OSError:
        return None
    for fd, held in _fd_files(where, fds):
        if held == file and _writable(pid, fd):
            return True
    return False


def _fd_files(where: str, fds: Iterable[str]) -> Iterator[tuple[str, FileId]]:
    """Each of a ``/proc/PID/fd`` directory's ``fds`` with the file it names
    (one closed meanwhile, or not ours to look at, left out)."""
    for fd in fds:
        try:
            st = os.stat(f"{where}/{fd}")
        except OSError:
            continue
        yield fd, (st.st_dev, st.st_ino)


class Writers:
    """Every file some process holds open for writing (one pass over
    ``/proc``, taken when first asked; None where there is no ``/proc``)."""

    def __init__(self) -> None:
        self._open: set[FileId] | None = None
        self._taken = False

    def holds(self, file: FileId) -> bool | None:
        if not self._taken:
            self._taken = True
            self._open = _open_for_writing()
        return None if self._open is None else file in self._open


def _open_for_writing() -> set[FileId] | None:
    try:
        pids = [p for p in os.listdir(_PROC) if p.isdigit()]
    except OSError:
        return None
    out: set[FileId] = set()
    for pid in pids:
        where = f"{_PROC}/{pid}/fd"
        try:
            fds = os.listdir(where)
        except OSError:
            continue
        for fd, held in _fd_files(where, fds):
            if held not in out and _writable(pid, fd):
                out.add(held)
    return out


def reserve_path(capture: str) -> str:
    """The reserve file ``CaptureWriter.open`` makes beside ``capture``."""
    parent, base = os.path.split(capture)
    return os.path.join(parent, f".{base}.reserve")


def _reserve_pid(reserve: str) -> int | None:
    try:
        with open(reserve, "rb") as fp:
            tag = _RESERVE_PID.match(fp.read(64))
    except OSError:
        return None
    return int(tag.group(1)) if tag is not None else None


def being_written(capture: str, file: FileId, writers: Writers | None = None) -> bool:
    """Whether a process still writes the capture at path ``capture`` (whose
    ``(st_dev, st_ino)`` is ``file``): a CaptureWriter holds its lock, or its
    reserve's pid or the pid in its name holds it open for writing (or is alive where that cannot be told),
    else any process holds it so (``writers``: a shared snapshot)."""
    if locked_by_a_writer(capture):
        return True             # a CaptureWriter's lock (capture/writer.py): the surest sign
    pids = [p for p in (_reserve_pid(reserve_path(capture)),) if p is not None]
    m = FILE_PID.search(os.path.basename(capture))
    if m is not None:
        pids.append(int(m.group(1)))
    for pid in pids:
        if alive(pid) and writes(pid, file) is not False:
            return True
    return bool((writers or Writers()).holds(file))


def stale_reserves(directory: str | os.PathLike[str]) -> list[str]:
    """The disk-full reserve files (``.NAME.jsonl.reserve``, made beside each
    capture by ``CaptureWriter.open``) in ``directory`` that no running mcptap
    owns: the pid written in the reserve is gone (or, where ``/proc`` tells,
    no longer writes its capture), or (a reserve without one) nothing writes
    its capture any more or it no longer exists. A reserve whose owner may
    still run stays."""
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    out = []
    writers = Writers()
    for n in sorted(names):
        m = _RESERVE.match(n)
        if not m:
            continue
        path = os.path.join(directory, n)
        capture = os.path.join(directory, m.group(1))
        try:
            with open(path, "rb") as fp:
                tag = _RESERVE_PID.match(fp.read(64))
        except OSError:
            continue
        try:
            st = os.stat(capture)
        except OSError:
            st = None
        if tag is None and not m.group(1).endswith(".jsonl"):
            continue            # untagged beside a name mcptap does not give its captures: not ours to judge
        if tag is not None:
            pid = int(tag.group(1))
            stale = not alive(pid) or (st is not None and writes(pid, (st.st_dev, st.st_ino)) is False)
        else:
            stale = st is None or not being_written(capture, (st.st_dev, st.st_ino), writers)
        if stale:
            out.append(os.path.abspath(path))
    return out


def remove_stale_reserves(directory: str | os.PathLike[str]) -> int:
    """Delete :func:`stale_reserves`; how many were removed (never raises)."""
    return _unlink_all(stale_reserves(directory))


def stale_merges(directory: str | os.PathLike[str], capture: str | None = None) -> list[str]:
    """The work files of ``serve --extend`` (``_MERGE``) in ``directory`` whose process is
    gone (a SIGKILLed merge: nothing else stops one, signals wait for it); with ``capture``
    (a file name), of the merged captures only that capture's. Absolute paths; never raises.

    A pid alone is not proof (pids are reused): a work file is in use while a process holds
    its lock (the merge file's, serve/extend.py; the session file's CaptureWriter), or while
    the pid in its name runs and started no later than the file was last written (where
    ``/proc`` tells: a process that took the pid over started after its writer died)."""
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    out = []
    for n in sorted(names):
        m = _MERGE.match(n)
        if m is None or (capture is not None and m.group(1) not in (None, capture)):
            continue
        path = os.path.join(directory, n)
        if not _merging(path, int(m.group(2) or m.group(3))):
            out.append(os.path.abspath(path))
    return out


#: seconds a process start time may seem later than it was (``/proc/stat``'s boot time is whole seconds)
_START_SLACK = 1.0


def _merging(path: str, pid: int) -> bool:
    """Whether the work file at ``path``, named by ``pid``, may still be in use."""
    if locked_by_a_writer(path):
        return True
    if not alive(pid):
        return False
    started = started_at(pid)
    if started is None:
        return True                 # no /proc: a live pid is taken at its word
    try:
        return started <= os.stat(path).st_mtime + _START_SLACK
    except OSError:
        return True                 # gone already: nothing to remove


def started_at(pid: int) -> float | None:
    """When process ``pid`` started, in seconds since the epoch (``/proc/PID/stat``
    field 22, clock ticks after boot, plus ``/proc/stat``'s ``btime``); None where
    this system cannot tell (no ``/proc``, no such process)."""
    try:
        with open(f"{_PROC}/{pid}/stat", "rb") as fp:
            line = fp.read()
        # the command name (field 2) may hold spaces and parentheses: count from its closing one
        ticks = int(line[line.rindex(b")") + 2:].split()[19])
        with open(f"{_PROC}/stat", "rb") as fp:
            boot = next(int(x.split()[1]) for x in fp.read().splitlines() if x.startswith(b"btime "))
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def remove_leftovers(directory: str | os.PathLike[str], capture: str | None = None) -> int:
    """Delete what killed mcptaps left in ``directory``: :func:`stale_reserves` (unless
    ``capture`` names one capture) and :func:`stale_merges`; how many (never raises)."""
    return _unlink_all((stale_reserves(directory) if capture is None else []) + stale_merges(directory, capture))


def orphan_spills(directory: str | os.PathLike[str], named: Iterable[str] = ()) -> list[str]:
    """The stdio tap's spill files (``NAME.spill``, capture/spill_format.py)
    in ``directory`` whose capture is gone (deleted by hand: ``prune`` removes
    a capture's spill file with it, ``recover`` once it took its bytes) and
    that no process uses (``spill_format.in_use``: the relay writing it and
    mcptap reading it back hold a lock; where ``/proc`` tells, no process holds
    it open for writing either, as an older mcptap's tap would; where locks are
    not supported, none is taken to be unused). A spill file
    is some capture's when its name is ``spill_path`` of a file beside it (a
    ``.gz`` too: the capture compressed) or in ``named`` (the names the
    captures' headers give: a renamed capture's, ``recover`` finds it so);
    nothing that is not a spill file (``is_spill_file``) is ever one. Absolute
    paths; never raises."""
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    mine = _claimed(directory, names, named)
    writers = Writers()
    out = []
    for n in sorted(names):
        if not n.endswith(SUFFIX) or n in mine:
            continue
        fd = _lock_unused(os.path.join(directory, n), writers)
        if fd is not None:
            os.close(fd)
            out.append(os.path.abspath(os.path.join(directory, n)))
    return out


def _claimed(directory: str | os.PathLike[str], names: Iterable[str], named: Iterable[str]) -> set[str]:
    """The spill file names some file of ``names`` (in ``directory``) or ``named`` owns."""
    mine = set(named)
    for n in names:
        if n.endswith(SUFFIX):
            continue
        mine.add(os.path.basename(spill_path(os.path.join(directory, n))))
        if n.endswith(".gz"):
            mine.add(os.path.basename(spill_path(os.path.join(directory, n[:-3]))))
    return mine


def _lock_unused(path: str, writers: Writers) -> int | None:
    """A descriptor holding the exclusive lock of ``path`` when it is a regular
    spill file no process uses (nothing starts using it until it is closed);
    else None (used, or not known unused: no locks here)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode) and in_use(fd) is False and writers.holds((st.st_dev, st.st_ino)) is not True \
                and is_spill_file(path):
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def remove_orphan_spills(paths: Iterable[str]) -> list[tuple[str, str | None]]:
    """Delete the :func:`orphan_spills` ``paths``, each checked again under its
    lock (unused, still the file listed, still no capture of its own; one that
    is not any more is left out): (path, None when removed, else the error)
    for the others. Never raises."""
    done: list[tuple[str, str | None]] = []
    for path in paths:
        fd = _lock_unused(path, Writers())
        if fd is None:
            continue
        try:
            directory, name = os.path.split(path)
            st, now = os.fstat(fd), os.lstat(path)
            if (st.st_dev, st.st_ino) == (now.st_dev, now.st_ino) and name not in _claimed(directory, os.listdir(directory), ()):
                os.unlink(path)
                done.append((path, None))
        except OSError as exc:
            done.append((path, exc.strerror or str(exc)))
        finally:
            os.close(fd)
    return done


def _unlink_all(paths: list[str]) -> int:
    """Delete ``paths``; how many went (one already gone or not removable is skipped)."""
    n = 0
    for path in paths:
        try:
            os.unlink(path)
            n += 1
        except OSError:
            pass
    return n
