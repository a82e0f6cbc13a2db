"""The ``mcptap`` command group (``main``; the console script enters through
``mcptap.cli.entry:run``, which covers Ctrl-C while this module imports).
``python -m mcptap.cli.main`` goes through that same entry too, before this module
imports anything (``entry.run`` then loads it again, as ``mcptap.cli.main``).

Each command lives in its own module ``mcptap/cli/<name>.py`` and exposes
``command`` (a ``click.Command``); this module adds it to the group. A command
module that does not exist (yet) is skipped; one that exists but fails to
import is replaced by a stub that reports the import error when invoked, so
one broken command never takes the whole CLI (and ``mcptap record``) down.
Command modules must not import this module (it may run as ``__main__``).

Exit codes: 0 ok, 1 differences/findings (diff, check), 2 usage or mcptap
error; ``record`` exits with the server's own status (see record.py).
"""

from __future__ import annotations

if __name__ == "__main__":
    # run as a script: through the console script's entry, before click loads, so it has the
    # early SIGTERM hold and fds 0-2 held open as the console script has (cli/entry.py)
    from mcptap.cli.entry import run

    run()
    raise SystemExit(0)

import importlib
import os
import sys
from typing import Any, NoReturn

import click

from mcptap import __version__, early_signals
from mcptap.cli.errors import Unexpected, first_error, interrupted, say, unexpected, usage_line
from mcptap.cli.interrupt import EXIT_INTERRUPTED, ending_at_once, interrupted_line
from mcptap.escape import escape_os

#: Command modules, in help order.
COMMAND_MODULES = ("record", "show", "check", "scrub", "report", "replay", "serve", "diff", "export", "demo", "ls", "prune", "wrap", "unwrap",
                   "recover")


def _interrupted() -> click.exceptions.Exit:
    """Ctrl-C while a command ran: said here, as click would catch the
    KeyboardInterrupt and write a blank line (for a terminal's ``^C``) first."""
    sys.stderr.write(interrupted_line())
    return click.exceptions.Exit(EXIT_INTERRUPTED)


def _reraise(exc: BaseException) -> NoReturn:
    """Raise a command's exception as it should leave click: a real interrupt
    (Ctrl-C, also inside trio's exception groups) as the ``interrupted`` exit 130;
    an EOFError or an exception group of other errors as ``Unexpected`` (an
    internal error, never "interrupted"); anything else as it is."""
    if interrupted(exc):
        raise _interrupted() from None
    if unexpected(exc):
        raise Unexpected(exc) from exc
    raise exc


class _LazyGroup(click.Group):
    """The command group, importing a command's module when it is first
    needed: ``mcptap check`` imports what check needs, not the HTTP tap or
    trio (process start counts in every command). Anything that reads
    ``commands`` (help listing, completion, tests) gets every command."""

    _commands: dict[str, click.Command]
    _all = False

    @property  # type: ignore[override]
    def commands(self) -> dict[str, click.Command]:
        if not self._all:
            self._all = True
            for name in COMMAND_MODULES:
                if name not in self._commands:
                    _load_command(self, name)
        return self._commands

    @commands.setter
    def commands(self, value: dict[str, click.Command]) -> None:
        self._commands = dict(value)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self._commands and cmd_name in COMMAND_MODULES:
            _load_command(self, cmd_name)
        return self._commands.get(cmd_name)

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        name, cmd, rest = super().resolve_command(ctx, args)
        if name not in ("record", "serve", "replay"):
            early_signals.release()     # their SignalLatch takes the signals held since start; other commands end by them
        return name, cmd, rest

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        self._commands[name or cmd.name or ""] = cmd

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except (KeyboardInterrupt, EOFError, BaseExceptionGroup) as exc:
            _reraise(exc)

    def invoke(self, ctx: click.Context) -> object:
        # `mcptap export … | head`: click would turn the BrokenPipeError into a silent
        # exit status 1; the reader leaving is not an error of ours (as for show)
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            _silence_stdout()
            raise click.exceptions.Exit(0) from None
        except click.UsageError as exc:
            # click's parser raises some errors of a command's own arguments with no context
            # (`mcptap show -o`: "Option '-o' requires an argument"), so the hint would point
            # at `mcptap --help` instead of the command's help, where the option is described
            if exc.ctx is None and ctx.invoked_subcommand is not None:
                cmd = self.get_command(ctx, ctx.invoked_subcommand)
                if cmd is not None:
                    exc.ctx = click.Context(cmd, info_name=ctx.invoked_subcommand, parent=ctx)
            raise
        except (KeyboardInterrupt, EOFError, BaseExceptionGroup) as exc:
            _reraise(exc)


_EXAMPLES = ("\b\nExamples:\n  mcptap demo\n  mcptap record -o cap.jsonl -- python server.py\n"
             "  mcptap show cap.jsonl\n  mcptap check --fail-on warn cap.jsonl")


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]}, epilog=_EXAMPLES)
@click.version_option(__version__, prog_name="mcptap")
def mcptap() -> None:
    """mcptap: a transparent recording proxy (tap) for the Model Context Protocol."""


def _broken(name: str, error: str) -> click.Command:
    @click.command(name, context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
                   help=f"(unavailable: {error})", add_help_option=False)
    def stub() -> None:
        click.echo(f"mcptap: the {name} command failed to load: {escape_os(error)}", err=True)
        sys.exit(2)

    return stub


def _load_command(group: click.Group, name: str) -> None:
    """Add command ``name`` from its module ``mcptap.cli.<name>`` (a missing
    module: nothing; one that fails to import: a stub saying why)."""
    modname = f"mcptap.cli.{name}"
    try:
        with ending_at_once():      # a KeyboardInterrupt in an import can be lost (import lock callbacks)
            module = importlib.import_module(modname)
    except ModuleNotFoundError as exc:
        if exc.name == modname:
            return
        group.add_command(_broken(name, f"{type(exc).__name__}: {exc}"), name)
        return
    except Exception as exc:  # noqa: BLE001 - keep the other commands usable
        group.add_command(_broken(name, f"{type(exc).__name__}: {exc}"), name)
        return
    command = getattr(module, "command", None)
    if isinstance(command, click.Command):
        group.add_command(command, command.name or name)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush into a
    closed pipe stays quiet."""
    try:
        sys.stdout = open(os.devnull, "w")
    except OSError:
        pass


def main(argv: list[str] | None = None) -> None:
    """Console entry point. An McptapError that escapes a command (a bug in
    its error handling, or a capture that turns out corrupt half-way) is still
    one line on stderr and exit status 2, never a traceback."""
    from mcptap.errors import McptapError

    try:
        try:
            # standalone_mode=False: click returns ctx.exit()'s code instead of exiting,
            # so output errors can be reported here as one line
            rc = mcptap.main(args=argv, prog_name="mcptap", standalone_mode=False)
        finally:
            if sys.stdout is not None:      # started with standard output closed (>&-)
                sys.stdout.flush()
        if isinstance(rc, int) and not isinstance(rc, bool):
            sys.exit(rc)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.exceptions.NoArgsIsHelpError as exc:
        exc.show()                          # bare `mcptap`: the help is the message
        sys.exit(exc.exit_code)
    except click.UsageError as exc:
        click.echo(usage_line(exc), err=True)
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except (click.Abort, KeyboardInterrupt):
        sys.stderr.write(interrupted_line())
        sys.exit(EXIT_INTERRUPTED)
    except McptapError as exc:
        say(str(exc))
        sys.exit(2)
    except BrokenPipeError:
        # `mcptap show … | head`: the reader left; not an error of ours
        _silence_stdout()
        sys.exit(0)
    except OSError as exc:
        # our own output could not be written (disk full, closed terminal)
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        click.echo(f"mcptap: cannot write output: {escape_os(str(exc.strerror or exc))}", err=True)
        sys.exit(2)
    except Exception as exc:            # the last line of defence: one line, never a traceback
        # a bug of ours, most often met with a hand-edited capture whose field types the
        # reader does not check; MCPTAP_DEBUG=1 gives the traceback for a bug report
        if os.environ.get("MCPTAP_DEBUG"):
            if isinstance(exc, Unexpected):
                raise exc.original from None
            raise
        shown = first_error(exc)
        if sys.stdout is None and isinstance(exc, AttributeError):
            # started with standard output closed (>&-): Python has no sys.stdout to write to
            click.echo("mcptap: cannot write output: standard output is closed", err=True)
            sys.exit(2)
        args = sys.argv[1:] if argv is None else argv
        # wrap and unwrap read a host's configuration, never a capture
        what = "configuration" if any(a in ("wrap", "unwrap") for a in args[:1]) else "capture"
        click.echo(escape_os(f"mcptap: internal error: {type(shown).__name__}: {shown} (a damaged or hand-edited {what}? "
                                   "MCPTAP_DEBUG=1 shows the traceback for a bug report)"), err=True)
        sys.exit(2)

