"""Compatibility re-export: the Recorder lives in ``mcptap.recorder`` (level 1,
pure apart from the injected clock) so that ``check`` can re-run it."""

from mcptap.recorder import STDERR_VOLUME, Recorder, monotonic_us_clock  # noqa: F401
