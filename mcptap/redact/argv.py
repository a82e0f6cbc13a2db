"""Scrub secrets from a server's argv and from URLs before they reach a capture.

Design principle 8: credentials in argv or URLs never reach a capture in clear.
A secret is replaced by a keyed placeholder ``«redacted:hmac:XXXXXXXXXXXX»``
(:mod:`mcptap.redact.keyed`, the user's key from :mod:`mcptap.redact.keyfile`):
the same secret always gives the same placeholder for one user, so two
captures of the same command still compare equal (diff, replay) and a changed
token shows as a changed placeholder, but nobody without the key can confirm a
guessed secret.

What counts as a secret (case-insensitive, names split into words at ``-``,
``_``, ``.`` and camelCase):

* the value of an option whose name is secret-like: ``--token X``,
  ``--api-key=X``, ``-p`` is NOT (short options are too ambiguous);
* the value of an environment-style assignment ``NAME=value`` with a
  secret-like NAME (``GITHUB_TOKEN=…`` as used with ``env``);
* the value of an HTTP-header-style argument ``Authorization: Bearer …``,
  ``X-Api-Key: …``, ``Cookie: …``;
* URL user info (``https://user:pass@host`` → ``https://«…»@host``) and the
  values of secret-like query parameters (``?access_token=…&sig=…``), in any
  argument, also inside an option value;
* JSON values (``--config '{"apiKey": …}'``): secret keys as in payloads
  (:mod:`mcptap.redact.keys`);
* the value of ``-p`` when it is not a number, a path or ``host:port``
  (``sshpass -p PASS``; ``-p 8080`` stays), and ``-pPASS`` after a MySQL client
  (``MYSQL_CLIENTS``: ``mysql -u root -pPASS``; its ``-p db`` prompts, ``db`` stays);
* the password of ``-u user:pass`` / ``--user user:pass`` / ``-uuser:pass`` /
  ``--user=user:pass`` (curl, wget…; the user stays, ``-u 1000:1000`` too);
* everything the payload patterns find (:mod:`mcptap.redact.patterns`): token
  shapes (GitHub, ``sk-…``, Slack, AWS, JWTs…), PEM keys, ``password=…`` in
  DSNs and ``Password=…;`` in connection strings.

A name is secret-like when one of its words is in ``SECRET_WORDS`` (or ends
in ``token``/``apikey``/…) and its last word is not a word that
names a *reference* to a secret (``--token-file PATH``, ``KEY_ID=…``).
"""

from __future__ import annotations

import os
import re

from mcptap.redact.keyed import PLACEHOLDER as _PLACEHOLDER
from mcptap.redact.keyfile import load_keyer
from mcptap.redact.patterns import QUERY_SECRET_NAMES

SECRET_WORDS = frozenset({
    "token", "secret", "secrets", "password", "passwd", "pwd", "pass", "passphrase",
    "key", "apikey", "auth", "authorization", "authentication", "credential", "credentials", "creds", "cookie", "cookies",
    "sig", "signature", "bearer", "pat", "jwt", "session", "sessionid", "private",
})
#: Word endings/beginnings that make a glued word secret-like (``authtoken``,
#: ``APIKEY``, ``secretvalue``) without catching ``max_tokens`` or ``monkey``.
SECRET_SUFFIXES = ("token", "secret", "password", "passwd", "apikey", "accesskey", "secretkey", "privatekey")
SECRET_PREFIXES = ("apikey", "secret", "password", "passwd")
#: Last words that name where a secret lives, not the secret itself.
REFERENCE_WORDS = frozenset({"file", "path", "dir", "name", "type", "id", "env", "var", "length", "len", "size", "url", "header"})

_WORD_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")
_OPTION = re.compile(r"^(--?[A-Za-z][A-Za-z0-9_.-]*)(=(.*))?$", re.S)
_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_.-]*)=(.*)$", re.S)
_HEADER = re.compile(r"^([A-Za-z][A-Za-z0-9-]*):[ \t]*(.+)$", re.S)
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>]+")
_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)([^/?#@]*)@")
_QUERY_PARAM = re.compile(r"([?&;])([^=&;#]+)=([^&;#]*)")
#: ``-p VALUE`` is a port, a path or an address unless VALUE looks otherwise.
_HARMLESS_P = re.compile(r"^(?:\d+|[./~].*|[A-Za-z0-9.-]*:\d+|[A-Za-z]:[\\/].*)$")
#: Programs whose ``-p`` takes the password attached (``-pPASS``).
MYSQL_CLIENTS = frozenset({"mysql", "mysqldump", "mysqladmin", "mysqlimport", "mysqlshow", "mysqlcheck", "mysqlpump",
                           "mysqlslap", "mariadb", "mariadb-dump", "mariadb-admin", "mariadb-import", "mariadb-check"})
_USER_OPTION = re.compile(r"^(-u|--user)(=?)(.*)$", re.S)


def _user_password(value: str) -> str:
    """``user:pass`` with the password redacted (a numeric group, ``1000:1000``, stays)."""
    user, colon, pw = value.partition(":")
    if "://" in value:         # ``sqlmap -u URL``: a URL's credentials are the URL rule's
        return _scrub_value(value)
    if not colon or not pw or pw.isdigit():
        return value
    return f"{user}:{_redact(pw)}"


def placeholder(secret: str) -> str:
    """The user's keyed stand-in for ``secret``: ``«redacted:hmac:`` + 12 hex + ``»``
    (a process-only key when the user's cannot be read or created: see
    ``keyfile.load_keyer(strict=False)``; never raises)."""
    return load_keyer(strict=False).placeholder(secret)


def _redact(value: str) -> str:
    if not value or _PLACEHOLDER.fullmatch(value):
        return value
    return placeholder(value)


def is_secret_name(name: str) -> bool:
    """True when an option/variable/header/query name looks like it holds a
    secret (``--api-key``, ``GITHUB_TOKEN``, ``X-Auth-Token``, ``clientSecret``)."""
    words = [w.lower() for w in _WORD_SPLIT.split(name) if w]
    if not words or words[-1] in REFERENCE_WORDS:
        return False
    return any(w in SECRET_WORDS or w.endswith(SECRET_SUFFIXES) or w.startswith(SECRET_PREFIXES) for w in words)


def scrub_url(url: str) -> str:
    """Redact user info and secret-like query parameter values of one URL."""
    m = _USERINFO.match(url)
    if m and m.group(2) and (":" in m.group(2) or len(m.group(2)) >= 16):     # a user name alone is no secret
        url = m.group(1) + _redact(m.group(2)) + "@" + url[m.end():]

    def query(qm: re.Match[str]) -> str:
        sep, name, value = qm.group(1), qm.group(2), qm.group(3)
        if is_secret_name(name) or name.lower() in QUERY_SECRET_NAMES:
            return f"{sep}{name}={_redact(value)}"
        return qm.group(0)

    head, hashmark, frag = url.partition("#")
    if "?" in head:
        path, _, qs = head.partition("?")
        head = path + _QUERY_PARAM.sub(query, "?" + qs)
    return head + hashmark + frag


def scrub_text(text: str) -> str:
    """Redact URLs (credentials, secret query values), JSON secret keys and
    pattern matches inside free text (one argument, or an option's value)."""
    from mcptap.redact.default import default_redactor

    text = _URL.sub(lambda m: scrub_url(m.group(0)), text)
    out, _ = default_redactor().string(text)
    return out


def scrub_argv(argv: list[str] | tuple[str, ...]) -> list[str]:
    """Return a copy of ``argv`` with secrets replaced by placeholders.

    Never raises; ``argv[0]`` (the program) is scrubbed like any argument.
    Arguments after a bare ``--`` are still scrubbed (wrappers such as
    ``npx -y pkg -- --token X`` pass them on).
    """
    out: list[str] = []
    redact_next = False
    short_p = False
    user_next = False
    mysql = False
    for arg in argv:
        mysql = mysql or os.path.basename(arg).lower().removesuffix(".exe") in MYSQL_CLIENTS
        if user_next:
            user_next = False
            if not arg.startswith("-"):
                out.append(_user_password(arg))
                continue
        um = _USER_OPTION.match(arg)
        if um:
            if not um.group(3):
                user_next = not um.group(2)
                out.append(arg)
            else:
                out.append(um.group(1) + um.group(2) + _user_password(um.group(3)))
            continue
        if mysql and arg.startswith("-p") and len(arg) > 2 and not arg.startswith("--"):
            out.append("-p" + _redact(arg[2:]))
            continue
        if short_p:
            short_p = False
            if arg and not arg.startswith("-") and not _HARMLESS_P.match(arg):
                out.append(_redact(arg))
                continue
        if arg == "-p" and not mysql:      # a MySQL client's -p alone prompts: the next word is the database
            short_p = True
            out.append(arg)
            continue
        if redact_next:
            redact_next = False
            if not arg.startswith("-"):
                out.append(_redact(arg))
                continue
        om = _OPTION.match(arg)
        if om:
            name, has_value, value = om.group(1), om.group(2), om.group(3)
            if is_secret_name(name.lstrip("-")) and name.startswith("--"):
                if has_value is not None:
                    out.append(f"{name}={_redact(value)}")
                else:
                    out.append(arg)
                    redact_next = True
                continue
            if has_value is not None:
                out.append(f"{name}={_scrub_value(value)}")
                continue
            out.append(arg)
            continue
        out.append(_scrub_value(arg))
    return out


def _scrub_value(arg: str) -> str:
    am = _ASSIGN.match(arg)
    if am and "://" not in am.group(1):
        name, value = am.group(1), am.group(2)
        if is_secret_name(name):
            return f"{name}={_redact(value)}"
        return f"{name}={scrub_text(value)}"
    hm = _HEADER.match(arg)
    if hm and not arg[hm.end(1):].startswith("://"):
        name, value = hm.group(1), hm.group(2)
        if is_secret_name(name):
            return arg[: hm.start(2)] + _redact_header_value(value)
    return scrub_text(arg)


def _redact_header_value(value: str) -> str:
    # keep the auth scheme so "Bearer" vs "Basic" stays visible
    scheme, sep, rest = value.partition(" ")
    if sep and rest and scheme.lower() in ("bearer", "basic", "token", "digest"):
        return f"{scheme} {_redact(rest)}"
    return _redact(value)
