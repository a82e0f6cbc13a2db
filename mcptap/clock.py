"""The wall and monotonic clocks, read in one place for everything below the
transports (level 1). The pure core never reads a clock: time arrives with the
events (``t_us``). The live recorder takes its clock as an argument; only when
none is given does it use :func:`monotonic_us_clock` from here, and the header's
start time comes from :func:`utc_timestamp`. tests/test_layering.py allows clock
and file access below level 4 only in the modules it lists (this one included)."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime


def monotonic_us_clock() -> Callable[[], int]:
    """A clock returning µs since its creation (int, monotonic)."""
    t0 = time.monotonic_ns()
    return lambda: (time.monotonic_ns() - t0) // 1000


def utc_timestamp() -> str:
    """Now, UTC, ISO 8601 with microseconds and a ``Z`` (a capture's ``started``)."""
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
