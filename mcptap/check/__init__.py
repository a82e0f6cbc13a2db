"""``mcptap check`` (level 3): ``reannotated`` (today's rules over a capture's
raw bytes), ``report`` (findings grouped by code, exit status), ``text``,
``sarif`` and ``junit`` (the report formats; they return strings, never print)."""
