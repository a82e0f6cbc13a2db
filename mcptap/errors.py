"""mcptap's own exceptions (level 0, stdlib only).

Peer misbehaviour is never an exception: it becomes a Finding. These errors are
for mcptap's own failures (bad arguments, unreadable captures, spawn failures).
"""


class McptapError(Exception):
    """Base class of every error mcptap raises on purpose."""


class CaptureReadError(McptapError):
    """A capture file cannot be read: missing, not a capture, unsupported version,
    or a corrupt record before the last line. Message names the file and line."""


class ExportError(McptapError):
    """A capture cannot be exported in the asked format (message says why:
    a stdio capture as HAR, a time OTLP cannot carry)."""


class CaptureWriteError(McptapError):
    """A capture record could not be written (disk full, permissions)."""


class SpawnError(McptapError):
    """The server command could not be started (not found, not executable)."""


class UpstreamError(McptapError):
    """The upstream HTTP server could not be reached (refused, TLS, timeout)."""


class FilterSyntaxError(McptapError):
    """A filter expression could not be parsed; message gives the column.
    ``column``: 1-based position of the offending character; ``expr``: the expression."""

    column: int = 0
    expr: str = ""


class RedactionError(McptapError):
    """Redaction cannot run: a bad rules file or pattern, or the per-user
    redaction key cannot be read or created. Message names the culprit."""
