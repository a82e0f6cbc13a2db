"""The interface the stdio tap calls on its recorder (``mcptap.recorder.Recorder``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

from mcptap.model import Direction, Finding, Message


class TapRecorder(Protocol):
    """What the stdio tap calls on its recorder (``mcptap.recorder.Recorder``),
    typed: the tap names methods, never strings. ``clock``: µs since the
    capture started; the hand-off replaces it while its thread runs."""

    clock: Callable[[], int]

    def stdio_bytes(self, direction: Direction, data: bytes, extra: Iterable[Finding] = (),
                    behind: Callable[[], bool] | None = None) -> list[Message]: ...

    hold_flush: bool

    def flush(self) -> None: ...

    def stored_ends(self) -> tuple[int, int] | None: ...

    def stdio_unframed(self, direction: Direction, data: bytes) -> None: ...

    def lost(self, direction: Direction, nbytes: int, reason: str | None = None) -> None: ...

    def stdio_eof(self, direction: Direction) -> list[Message]: ...

    def stderr(self, data: bytes) -> None: ...

    def process(self, event: str, findings: Iterable[Finding] = (), **fields: Any) -> int: ...

    def exit(self, code: int | None = None, signal: int | None = None, **fields: Any) -> int: ...

    def gap(self, reason: str, direction: Direction | None = None, nbytes: int | None = None) -> int: ...

    def cut(self, reason: str) -> None: ...
