"""CLI error reporting: one line on stderr, exit status 2 (mcptap's own error)."""

from __future__ import annotations

from typing import IO, Any

import click

from mcptap.escape import escape_controls


class Fail(click.ClickException):
    """A user-facing failure of mcptap itself (unwritable output, unreadable
    capture…): printed as ``mcptap: MESSAGE``, exit status 2."""

    exit_code = 2

    def show(self, file: IO[Any] | None = None) -> None:
        say(self.format_message())


def say(message: str) -> None:
    """One ``mcptap: MESSAGE`` line on stderr, MESSAGE made safe for the
    terminal (escape.escape_controls): a file name's control characters
    (``e\\x1b[31m.jsonl``) and bytes that are not UTF-8 (``n\\xff.jsonl``)
    are shown as escapes, never acted on and never a UnicodeEncodeError."""
    click.echo(f"mcptap: {escape_controls(message)}", err=True)


def interrupted(exc: BaseException) -> bool:
    """True for a KeyboardInterrupt (Ctrl-C), also as trio delivers it from
    inside a nursery: wrapped in (nested) exception groups."""
    if isinstance(exc, KeyboardInterrupt):
        return True
    if isinstance(exc, BaseExceptionGroup):
        return all(interrupted(e) for e in exc.exceptions)
    return False
