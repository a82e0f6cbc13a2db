"""CLI error reporting: one line on stderr, exit status 2 (mcptap's own error).

Only a real interrupt (Ctrl-C: KeyboardInterrupt, alone or all a trio exception
group holds) is ``mcptap: interrupted`` and exit status 130 (cli/interrupt.py); any
other exception a command did not expect is ``mcptap: internal error: TYPE: …``
and exit status 2 (cli/main.py), an ``EOFError`` too, which click would otherwise
turn into its Abort and so into "interrupted" (``Unexpected``)."""

from __future__ import annotations

from typing import IO, Any, NoReturn

import click

from mcptap.escape import escape_os


class Fail(click.ClickException):
    """A user-facing failure of mcptap itself (unwritable output, unreadable
    capture…): printed as ``mcptap: MESSAGE``, exit status 2."""

    exit_code = 2

    def show(self, file: IO[Any] | None = None) -> None:
        say(self.format_message())


def say(message: str) -> None:
    """One ``mcptap: MESSAGE`` line on stderr, MESSAGE made safe for the
    terminal (escape.escape_os: MESSAGE is mcptap's, about files; peer text in it
    comes escaped already): a file name's control characters (``e\\x1b[31m.jsonl``)
    and bytes that are not UTF-8 (``n\\xff.jsonl``) are shown as escapes, never acted on and never a UnicodeEncodeError."""
    click.echo(f"mcptap: {escape_os(message)}", err=True)


def usage_line(exc: click.UsageError) -> str:
    """A usage error as one ``mcptap: COMMAND: MESSAGE (see 'mcptap COMMAND --help')``
    line, instead of click's three-line Usage/Try/Error block: a host's log or a
    CI step shows one line per failure, and it names where to look."""
    ctx = exc.ctx if exc.ctx is not None else click.get_current_context(silent=True)
    path = ctx.command_path if ctx is not None else "mcptap"
    command = path.split(" ", 1)[1] + ": " if " " in path else ""
    message = escape_os(" ".join(exc.format_message().split()))    # click's "Choose from:\n\t…" as one line
    return f"mcptap: {command}{message} (see '{path} --help')"


def say_usage(exc: click.UsageError) -> None:
    """``usage_line(exc)`` on stderr: a usage error a command finds itself
    (a ``--listen`` value), worded as click's own are."""
    click.echo(usage_line(exc), err=True)


def usage(message: str) -> NoReturn:
    """Raise a usage error of the running command (arguments that cannot go
    together, an option's value that cannot be used): shown as every usage
    error is, ``mcptap: COMMAND: MESSAGE (see 'mcptap COMMAND --help')``
    (``usage_line``), exit status 2. The one way a command says so itself."""
    raise click.UsageError(message, click.get_current_context(silent=True))


def interrupted(exc: BaseException) -> bool:
    """True for a KeyboardInterrupt (Ctrl-C), also as trio delivers it from
    inside a nursery: wrapped in (nested) exception groups."""
    if isinstance(exc, KeyboardInterrupt):
        return True
    if isinstance(exc, BaseExceptionGroup):
        return all(interrupted(e) for e in exc.exceptions)
    return False


class Unexpected(Exception):
    """An exception a command did not expect, carried past click to the CLI's
    last handler (cli/main.py: "internal error", exit status 2): click's
    ``main`` turns an ``EOFError`` into ``click.Abort`` (reported as an
    interrupt), and a ``BaseExceptionGroup`` is no ``Exception`` (a traceback).
    ``original``: what was raised."""

    def __init__(self, original: BaseException) -> None:
        super().__init__(str(original))
        self.original = original


def first_error(exc: BaseException) -> BaseException:
    """The exception an internal-error line names: ``exc``, or for an exception
    group (trio's nurseries) its first member that is no KeyboardInterrupt, nested."""
    if isinstance(exc, Unexpected):
        return first_error(exc.original)
    if isinstance(exc, BaseExceptionGroup):
        for e in exc.exceptions:
            if not isinstance(e, KeyboardInterrupt):
                return first_error(e)
    return exc


def unexpected(exc: BaseException) -> bool:
    """True for what click would misreport (``Unexpected``): an ``EOFError``, or a
    ``BaseExceptionGroup`` that is not all interrupts (``interrupted``) nor an ``Exception``."""
    if isinstance(exc, EOFError):
        return True
    return isinstance(exc, BaseExceptionGroup) and not isinstance(exc, Exception) and not interrupted(exc)
