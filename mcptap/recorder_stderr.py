"""The live recorder's stderr path (``Recorder.stderr``), apart so that the
recorder stays one responsibility a module: count, digest, judge and write the
server's stderr chunks as ``stderr`` records."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from mcptap.model import Direction, Finding
from mcptap.protocol.codes import finding
from mcptap.records import Stderr

if TYPE_CHECKING:
    from mcptap.known_secrets import KnownSecrets

#: stderr bytes between two protocol messages above which process.stderr_volume
#: is raised (cases/B24: a host that never reads stderr blocks the server at
#: the 64 KiB pipe buffer; 256 KiB in one interval is worth a look).
STDERR_VOLUME = 256 * 1024


class StderrRecording:
    """Mixed into ``recorder.Recorder`` (which provides the clock, the
    annotator, the sequence and the writer)."""

    known: KnownSecrets | None
    clock: Callable[[], int]
    _stderr_interval: int
    _stderr_volume_flagged: bool
    stderr_open: bool
    stderr_stream: Any
    annotator: Any

    if TYPE_CHECKING:       # provided by Recorder and RecordingState (declared only: the MRO must reach theirs)
        def _next(self) -> int: ...
        def _count(self, findings: Iterable[Finding]) -> None: ...
        def _write(self, rec: dict[str, Any]) -> None: ...
        def _flush(self) -> None: ...
        def _stderr_end(self) -> list[Finding]: ...

    def stderr(self, data: bytes, final: bool = False) -> None:
        """A chunk of server stderr was passed through (``final``: the stream ended, record what ``known`` held back)."""
        if self.known is not None:
            data = self.known.take(data, final)     # the beginning of an argv secret waits for the next read
        if not data:
            return
        t = self.clock()
        s = self.stderr_stream
        s.bytes += len(data)
        s.sha.update(data)
        s.messages += 1
        fs: list[Finding] = []
        self._stderr_interval += len(data)
        if self._stderr_interval >= STDERR_VOLUME and not self._stderr_volume_flagged:
            self._stderr_volume_flagged = True
            pend = [p for p in self.annotator.pending() if p.direction is Direction.C2S]
            during = f" during {pend[0].method} (#{pend[0].seq})" if pend else ""
            fs.append(finding("process.stderr_volume",
                              f"{self._stderr_interval} bytes of stderr since the last protocol message{during} (a host that does not drain stderr blocks the "
                              "server at 64 KiB)",
                              {"bytes": self._stderr_interval}))
        # one line may come in several reads (a write without its newline, then the rest): a read
        # without a newline is judged when the stream ends (RecordingState._stderr_end); only CR
        # progress output (a CR after the last newline) says at once that no newline is coming
        self.stderr_open = not data.endswith(b"\n")
        if self.stderr_open and b"\r" in data[data.rfind(b"\n") + 1:]:
            fs += self._stderr_end()
        self._count(fs)
        self._write(Stderr(self._next(), t, data, _json(fs)).to_json())
        self._flush()


def _json(fs: list[Finding]) -> tuple[dict[str, Any], ...]:
    return tuple(f.to_json() for f in fs)
