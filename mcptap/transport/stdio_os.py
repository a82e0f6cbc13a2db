"""OS plumbing of the stdio tap (trio, POSIX): the server process and the host's fds.

* ``spawn``: the server in a new session / process group with three pipes, in
  the main thread (``PR_SET_PDEATHSIG`` fires when the *thread* that forked
  exits, and ``trio.lowlevel.open_process`` forks from a worker thread);
* ``server_env``: the environment the host gave mcptap, for the server (Python's
  C-locale coercion undone);
* ``wait_exit``: reap the child through a pidfd (Linux ≥ 5.3), else a thread;
* ``drain``: a server's stderr (any stream) read to its end, chunk by chunk;
* ``host_stream``: a trio stream on a dup of fd 0/1/2. ``trio.lowlevel.FdStream``
  sets O_NONBLOCK on the *open file description*, which is shared with every
  process holding the same pipe end (restored when the stream closes). On a
  terminal that description is shared with the shell and its other jobs, so a
  tty, and fd 2 always, get ``_BlockingFdStream``: blocking I/O in a worker thread.
"""

from __future__ import annotations

import errno
import os
import shlex
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from typing import Any

import trio

CHUNK = 64 * 1024


class _BlockingFdStream(trio.abc.HalfCloseableStream):
    """Blocking I/O on a dup'ed fd in a worker thread: never touches O_NONBLOCK."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        try:
            return await trio.to_thread.run_sync(os.read, self.fd, max_bytes or CHUNK, abandon_on_cancel=True)
        except OSError as exc:
            if exc.errno == errno.EIO:          # terminal hung up
                return b""
            raise trio.BrokenResourceError(str(exc)) from exc

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        view = memoryview(data)
        while view:
            try:
                n = await trio.to_thread.run_sync(os.write, self.fd, view, abandon_on_cancel=True)
            except OSError as exc:
                raise trio.BrokenResourceError(str(exc)) from exc
            view = view[n:]

    async def wait_send_all_might_not_block(self) -> None:
        await trio.lowlevel.checkpoint()

    async def send_eof(self) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)
        await trio.lowlevel.checkpoint()


def host_stream(fd: int, threaded: bool = False) -> trio.abc.Stream:
    dup = os.dup(fd)
    if threaded or os.isatty(fd):
        return _BlockingFdStream(dup)
    return trio.lowlevel.FdStream(dup)


def ensure_std_fds() -> None:
    """Open /dev/null on any of fds 0-2 that is closed, before pipes are made:
    otherwise a pipe could land on fd 0/1/2 and be mistaken for the host's."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)


def _child_setup(parent: int) -> Callable[[], None] | None:
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    prctl = ctypes.CDLL(None, use_errno=True).prctl

    def setup() -> None:  # runs in the child between fork and exec
        # PR_SET_PDEATHSIG: mcptap killed (a host's SIGKILL after its SIGTERM, which mcptap passed
        # on) kills the server, as the host's SIGKILL would have killed it run directly; with
        # SIGTERM a server that ignores it outlived mcptap for good, in a session of its own
        prctl(1, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent:                  # parent already gone
            os.kill(os.getpid(), signal.SIGKILL)

    return setup


#: The values PEP 538's C-locale coercion writes into LC_CTYPE (CPython's ``_TARGET_LOCALES``).
_COERCED = frozenset({b"C.UTF-8", b"C.utf8", b"UTF-8"})


def server_env(exec_environ: bytes | None = None) -> dict[bytes, bytes] | None:
    """The environment to start the server with: ours, except an LC_CTYPE that
    CPython's C-locale coercion (PEP 538) set in our process before any of
    mcptap's code ran. Started without a locale (hosts filter the environment),
    the interpreter sets ``LC_CTYPE=C.UTF-8`` with setenv; inherited, it ran the
    tapped server in another locale than the host runs it directly. The kernel's
    copy of our environment as exec'd (``/proc/self/environ``; setenv does not
    touch it) tells whether the host gave that LC_CTYPE: if it gave another
    value (e.g. ``C``, which coercion overwrites) the server gets that one, if
    none, none. ``exec_environ`` stands in for the /proc file (NUL-separated
    ``NAME=value`` entries) in tests. Returns None (inherit ours unchanged)
    where nothing was coerced or the exec'd environment cannot be read."""
    current = os.environb.get(b"LC_CTYPE")
    if current not in _COERCED:
        return None
    if exec_environ is None:
        try:
            with open("/proc/self/environ", "rb") as fp:
                exec_environ = fp.read()
        except OSError:                             # not Linux, or no /proc
            return None
    given = None
    for entry in exec_environ.split(b"\0"):
        name, eq, value = entry.partition(b"=")
        if eq and name == b"LC_CTYPE":
            given = value                           # the first one, as getenv and os.environ read it
            break
    if given == current:
        return None
    env = dict(os.environb)
    if given is None:
        del env[b"LC_CTYPE"]
    else:
        env[b"LC_CTYPE"] = given
    return env


def spawn(argv: Sequence[str]) -> tuple[subprocess.Popen[bytes], int, int, int]:
    """Start ``argv`` in a new session with three pipes.

    Returns ``(popen, stdin_w, stdout_r, stderr_r)`` (our ends, close-on-exec).
    Raises OSError from exec (ENOENT, EACCES, ENOEXEC, ...). Runs in the main
    thread on purpose: PDEATHSIG fires when the *thread* that forked exits.
    """
    pipes = [os.pipe() for _ in range(3)]          # non-inheritable (PEP 446)
    (in_r, in_w), (out_r, out_w), (err_r, err_w) = pipes
    try:
        popen = subprocess.Popen(
            list(argv), stdin=in_r, stdout=out_w, stderr=err_w, start_new_session=True,
            close_fds=True, preexec_fn=_child_setup(os.getpid()), env=server_env(),
        )
    except BaseException:
        for fd in (in_w, out_r, err_r):
            os.close(fd)
        raise
    finally:
        for fd in (in_r, out_w, err_w):
            os.close(fd)
    return popen, in_w, out_r, err_r


def server_cwd() -> str | None:
    """The working directory ``spawn`` starts the server in (ours: it passes
    none), as an absolute path; None when it has none (deleted: ENOENT)."""
    try:
        return os.getcwd()
    except OSError:
        return None


def _resolve(cmd: str) -> str | None:
    """The file exec ran for ``cmd`` (a path, or the first match on PATH as
    ``subprocess`` searches it); None if there is none."""
    if os.sep in cmd:
        return cmd if os.path.isfile(cmd) else None
    return shutil.which(cmd)


def spawn_problem(cmd: str, exc: OSError) -> str:
    """Why exec refused ``cmd`` (argv[0]), in one line for mcptap's message:
    strerror, with the cause named where the file shows it: a script without
    a ``#!`` line or a binary for another machine (ENOEXEC: a shell would run
    such a script with /bin/sh, exec and every host refuse it), a ``#!``
    interpreter that is not there (ENOENT for a file that exists; a CR LF
    line end leaves a CR in its name). Reads at most 256 bytes of the file."""
    reason = exc.strerror or str(exc)
    if exc.errno not in (errno.ENOEXEC, errno.ENOENT):
        return reason
    path = _resolve(cmd)
    try:
        with open(path or "", "rb") as fp:
            head = fp.read(256)
    except OSError:
        return reason
    if head.startswith(b"#!"):
        words = head[2:].split(b"\n", 1)[0].lstrip(b" \t").split(b" ", 1)
        interp = os.fsdecode(words[0])
        if exc.errno == errno.ENOENT:
            crlf = "; its line ends in CR LF: save the file with LF line ends" if interp.endswith("\r") else ""
            return f"its '#!' interpreter {interp!r} was not found ({reason}{crlf})"
        return f"its '#!' line does not name a program the system can run ({interp!r}; {reason})"
    if exc.errno == errno.ENOENT:
        return f"{reason} (the file exists: a program whose loader or libraries are missing?)"
    if head.startswith(b"\x7fELF") or b"\0" in head:
        return f"not a program this system can run: another CPU architecture or a damaged file ({reason})"
    run = f", or run that: mcptap record -- sh {shlex.quote(cmd)}" if cmd.isprintable() else ""
    return (f"a script with no '#!' line, which exec cannot start ({reason}): make its first line name "
            f"the interpreter, e.g. '#!/bin/sh'{run}")


def spawn_exit_code(exc: OSError) -> int:
    """127 when the command does not exist, 126 otherwise (like a shell)."""
    return 127 if exc.errno == errno.ENOENT else 126


async def wait_exit(popen: subprocess.Popen[bytes]) -> int:
    """Wait for the child to end and reap it. Returns its exit code, or -N
    when it was killed by signal N (``os.waitstatus_to_exitcode``)."""
    pid = popen.pid
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = -1
    try:
        if pidfd >= 0:
            await trio.lowlevel.wait_readable(pidfd)
            _, status = os.waitpid(pid, 0)
        else:
            _, status = await trio.to_thread.run_sync(os.waitpid, pid, 0, abandon_on_cancel=True)
    finally:
        if pidfd >= 0:
            os.close(pidfd)
    code = os.waitstatus_to_exitcode(status)
    popen.returncode = code                 # keep Popen from reaping a reused pid
    return code


async def drain(stream: trio.abc.ReceiveStream, each: Callable[[bytes | bytearray], None]) -> None:
    """Read ``stream`` to its end, or until it breaks, calling ``each(chunk)``
    per read (at most ``CHUNK`` bytes); closes it. Never raises an I/O error."""
    async with stream:
        while True:
            try:
                chunk = await stream.receive_some(CHUNK)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                return
            if not chunk:
                return
            each(chunk)


async def quiet_close(stream: Any) -> None:
    try:
        with trio.CancelScope(shield=True):
            await stream.aclose()
    except (OSError, trio.TrioInternalError, trio.BrokenResourceError, trio.ClosedResourceError):
        pass


def signame(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return str(signum)


def kill(pid: int) -> None:
    """SIGKILL ``pid`` (gone already: nothing)."""
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def reap(pid: int) -> None:
    """Wait for child ``pid`` to end (blocking)."""
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def poke(fd: int) -> None:
    """Write one byte to the non-blocking pipe ``fd`` (a request to the relay
    process); a full or closed pipe is ignored."""
    try:
        os.write(fd, b"?")
    except OSError:
        pass


def close_fd(fd: int) -> None:
    """Close ``fd`` if it is one (>= 0); errors ignored."""
    if fd >= 0:
        try:
            os.close(fd)
        except OSError:
            pass


async def read_status(fd: int, stdin_eof: Callable[[], None], stdout_closed: Callable[[], None]) -> None:
    """Read the relay process's status pipe (``relay_child.start_relay``),
    which runs ahead of the copy stream: ``i`` host stdin ended (the grace
    timer starts now), ``o`` the server's stdout ended or the host closed ours.
    Returns at EOF (the relay is gone); closes ``fd``."""
    stream = trio.lowlevel.FdStream(fd)
    try:
        while True:
            try:
                data = await stream.receive_some(16)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                data = b""
            if not data:
                return
            if b"i" in data:
                stdin_eof()
            if b"o" in data:
                stdout_closed()
    finally:
        await quiet_close(stream)
