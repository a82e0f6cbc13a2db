"""The argv rules (argv.py's module doc), given how to redact a secret and how to scrub
free text (pure): ``scrub_args``. Shared by the tap's argv scrubbing (argv.py, the user's
placeholders) and by the engine for a command line inside a message (shapes.py)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable

from mcptap.redact.keys import secret_name

_OPTION = re.compile(r"^(--?[A-Za-z][A-Za-z0-9_.-]*)(=(.*))?$", re.S)
_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_.-]*)=(.*)$", re.S)
_HEADER = re.compile(r"^([A-Za-z][A-Za-z0-9-]*):[ \t]*(.+)$", re.S)
#: ``-p VALUE`` is a port, a path or an address unless VALUE looks otherwise.
_HARMLESS_P = re.compile(r"^(?:\d+|[./~].*|[A-Za-z0-9.-]*:\d+|[A-Za-z]:[\\/].*)$")
#: Programs whose ``-p`` takes the password attached (``-pPASS``).
MYSQL_CLIENTS = frozenset({"mysql", "mysqldump", "mysqladmin", "mysqlimport", "mysqlshow", "mysqlcheck", "mysqlpump",
                           "mysqlslap", "mariadb", "mariadb-dump", "mariadb-admin", "mariadb-import", "mariadb-check"})
_USER_OPTION = re.compile(r"^(-u|--user)(=?)(.*)$", re.S)
#: Programs after which ``-p`` is a password when argv is a message's list of strings (``strict``):
#: ``sshpass -p PASS``, ``docker login -p PASS`` (``mkdir -p build`` stays).
P_PASSWORD_WORDS = frozenset({"sshpass", "login"})
#: Programs whose ``-a`` is the password (``redis-cli -a PASS``).
A_PASSWORD_PROGRAMS = frozenset({"redis-cli"})
#: A replacement for a secret, and a scrubber for free text (an argument, an option's value).
Redact = Callable[[str], str]


def _user_password(value: str, redact: Redact, text: Redact) -> str:
    """``user:pass`` with the password redacted (a numeric group, ``1000:1000``, stays)."""
    user, colon, pw = value.partition(":")
    if "://" in value:         # ``sqlmap -u URL``: a URL's credentials are the URL rule's
        return _scrub_value(value, redact, text)
    if not colon or not pw or pw.isdigit():
        return value
    return f"{user}:{redact(pw)}"


def is_secret_name(name: str) -> bool:
    """True when an option/variable/header/query name holds a secret (``--api-key``,
    ``GITHUB_TOKEN``, ``X-Auth-Token``, ``clientSecret``, ``?session_id=``): the one name rule,
    ``keys.secret_name``, the same as for a JSON key or a ``NAME=`` in text, so a name that is a
    secret in one place is a secret in every other (``--dsn``, ``?sessionId=``, ``X-Foo-Key:``
    as ``{"dsn": …}``, ``{"sessionId": …}``, ``{"X-Foo-Key": …}``)."""
    return secret_name(name)


def scrub_args(argv: list[str] | tuple[str, ...], redact: Redact, text: Redact, strict: bool = False) -> list[str]:
    """Return a copy of ``argv`` with secrets replaced by ``redact(secret)``, free text in
    arguments scrubbed by ``text`` (argv.py: the user's placeholders and ``scrub_text``).

    Never raises; ``argv[0]`` (the program) is scrubbed like any argument.
    Arguments after a bare ``--`` are still scrubbed (wrappers such as
    ``npx -y pkg -- --token X`` pass them on). ``strict`` (a command line inside a
    message): ``-p VALUE`` is a password only after ``P_PASSWORD_WORDS``.
    """
    scrub = text
    out: list[str] = []
    redact_next = False
    short_p = False
    user_next = False
    mysql = False
    p_password = not strict
    a_password = False
    for arg in argv:
        base = os.path.basename(arg).lower().removesuffix(".exe")
        mysql = mysql or base in MYSQL_CLIENTS
        p_password = p_password or base in P_PASSWORD_WORDS
        a_password = a_password or base in A_PASSWORD_PROGRAMS
        if user_next:
            user_next = False
            if not arg.startswith("-"):
                out.append(_user_password(arg, redact, scrub))
                continue
        um = _USER_OPTION.match(arg)
        if um:
            if not um.group(3):
                user_next = not um.group(2)
                out.append(arg)
            else:
                out.append(um.group(1) + um.group(2) + _user_password(um.group(3), redact, scrub))
            continue
        if mysql and arg.startswith("-p") and len(arg) > 2 and not arg.startswith("--"):
            out.append("-p" + redact(arg[2:]))
            continue
        if short_p:
            short_p = False
            if arg and not arg.startswith("-") and not _HARMLESS_P.match(arg):
                out.append(redact(arg))
                continue
        if arg == "-p" and not mysql and p_password or arg == "-a" and a_password:
            short_p = True     # a MySQL client's -p alone prompts: the next word is the database
            out.append(arg)
            continue
        if redact_next:
            redact_next = False
            if not arg.startswith("-"):
                out.append(_secret_value(arg, redact, scrub))
                continue
        om = _OPTION.match(arg)
        if om:
            name, has_value, value = om.group(1), om.group(2), om.group(3)
            if is_secret_name(name.lstrip("-")) and name.startswith("--"):
                if has_value is not None:
                    out.append(f"{name}={_secret_value(value, redact, scrub)}")
                else:
                    out.append(arg)
                    redact_next = True
                continue
            if has_value is not None:
                out.append(f"{name}={_scrub_value(value, redact, scrub)}")
                continue
            out.append(arg)
            continue
        out.append(_scrub_value(arg, redact, scrub))
    return out


def _secret_value(value: str, redact: Redact, text: Redact) -> str:
    """The value of an option named like a secret: all of it, unless it is a DSN, a
    connection string or a URL whose own secrets the patterns find (``--dsn "host=db
    password=…"``, ``--conn "Server=x;Password=…"``): then only those, so what it connects
    to stays readable."""
    if "=" in value or "://" in value:
        scrubbed = text(value)
        if scrubbed != value:
            return scrubbed
    return redact(value)


def _scrub_value(arg: str, redact: Redact, text: Redact) -> str:
    am = _ASSIGN.match(arg)
    if am and "://" not in am.group(1):
        name, value = am.group(1), am.group(2)
        if is_secret_name(name):
            return f"{name}={redact(value)}"
        return f"{name}={text(value)}"
    hm = _HEADER.match(arg)
    if hm and not arg[hm.end(1):].startswith("://"):
        name, value = hm.group(1), hm.group(2)
        if is_secret_name(name):
            return arg[: hm.start(2)] + _redact_header_value(value, redact)
    return text(arg)


def _redact_header_value(value: str, redact: Redact) -> str:
    # keep the auth scheme so "Bearer" vs "Basic" stays visible
    scheme, sep, rest = value.partition(" ")
    if sep and rest and scheme.lower() in ("bearer", "basic", "token", "digest"):
        return f"{scheme} {redact(rest)}"
    return redact(value)
