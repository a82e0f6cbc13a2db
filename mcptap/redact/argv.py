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
  ``--api-key=X`` (a DSN, connection string or URL whose own secrets the patterns
  find keeps the rest: ``--dsn "host=db password=…"``), ``-p`` is NOT (short options
  are too ambiguous);
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
  (``sshpass -p PASS``; ``-p 8080`` stays; in a message's list, only after ``sshpass`` or
  ``login``), ``-a PASS`` after ``redis-cli``, and ``-pPASS`` after a MySQL client
  (``MYSQL_CLIENTS``: ``mysql -u root -pPASS``; its ``-p db`` prompts, ``db`` stays);
* the password of ``-u user:pass`` / ``--user user:pass`` / ``-uuser:pass`` /
  ``--user=user:pass`` (curl, wget…; the user stays, ``-u 1000:1000`` too);
* everything the payload patterns find (:mod:`mcptap.redact.patterns`): token
  shapes (GitHub, ``sk-…``, Slack, AWS, JWTs…), PEM keys, ``password=…`` in
  DSNs and ``Password=…;`` in connection strings.

The rules themselves are ``argv_rules.scrub_args`` (also run by the engine on a command
line given as a JSON list inside a message: shapes.py). A name is secret-like by the one
name rule of :mod:`mcptap.redact.keys` (the same as for a JSON key, a header or a query
name): ``--token``, ``--dsn``, ``GITHUB_TOKEN``, ``X-Foo-Key``, ``?session_id=``; not a
name that describes a secret (``--token-file PATH``, ``KEY_ID=…``) nor ordinary data
(``--key``, ``--session``, ``sort_key``).
"""

from __future__ import annotations

import re

from mcptap.redact.argv_rules import Redact, is_secret_name, scrub_args
from mcptap.redact.keyed import PLACEHOLDER as _PLACEHOLDER
from mcptap.redact.keyfile import load_keyer
from mcptap.redact.patterns import QUERY_SECRET_NAMES
from mcptap.redact.scanner import unclosed_end
from mcptap.redact.urlview import form_decode

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>]+")
_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)([^/?#@]*)@")
_QUERY_PARAM = re.compile(r"([?&;])([^=&;#]+)=([^&;#]*)")


def placeholder(secret: str) -> str:
    """The user's keyed stand-in for ``secret``: ``«redacted:hmac:`` + 12 hex + ``»``
    (a process-only key when the user's cannot be read or created: see
    ``keyfile.load_keyer(strict=False)``; never raises)."""
    return load_keyer(strict=False).placeholder(secret)


def _redact(value: str) -> str:
    if not value or _PLACEHOLDER.fullmatch(value):
        return value
    return placeholder(value)


def scrub_url(url: str, redact: Redact = _redact) -> str:
    """Redact the secrets of one URL: user info, secret-like query parameter values, and
    token shapes anywhere in it (a path segment ``/mcp/sk-live-…``, ``/u/ghp_…/mcp``, a
    fragment), also percent-encoded ones. ``redact(secret)`` gives each its stand-in."""
    m = _USERINFO.match(url)
    if m and m.group(2) and (":" in m.group(2) or len(m.group(2)) >= 16):     # a user name alone is no secret
        url = m.group(1) + redact(m.group(2)) + "@" + url[m.end():]

    def query(qm: re.Match[str]) -> str:
        sep, name, value = qm.group(1), qm.group(2), qm.group(3)
        if is_secret_name(name) or name.lower() in QUERY_SECRET_NAMES:
            # the decoded value is the secret: the placeholder it has in a form body or a message
            return f"{sep}{name}={redact(form_decode(value))}" if value else qm.group(0)
        return qm.group(0)

    head, hashmark, frag = url.partition("#")
    if "?" in head:
        path, _, qs = head.partition("?")
        head = path + _QUERY_PARAM.sub(query, "?" + qs)
    return _pattern_secrets(head + hashmark + frag, redact)


def _pattern_secrets(url: str, redact: Redact) -> str:
    """``url`` with what the engine's patterns find in it replaced by ``redact(secret)``:
    token shapes wherever they are written (a path segment: ``/mcp/sk-live-…``), and secrets
    percent-encoded once more (a query value that is itself a URL or query:
    ``?redirect=https%3A%2F%2Fh%2Fcb%3Ftoken%3D…``, ``?next=%2Fhome%3Fpassword%3D…``) where
    they are written, by their decoded text: exactly what ``scrub`` and ``report`` find there,
    with the same placeholder. What ``scrub_url``'s own rules replaced is a placeholder by
    then, which the patterns never take in. Linear in ``url`` (``Scanner.redact``)."""
    from mcptap.redact.default import default_redactor

    out, _ = default_redactor().scanner.redact(url, lambda secret, rule: redact(secret))
    return out


def _scrub_url_in_text(m: re.Match[str]) -> str:
    """A URL found in text, scrubbed; punctuation after it (a closing bracket it does not
    open, a sentence's ``.``/``,``/``;``/``:``/``!``/``?``) stays out of its last value."""
    url = m.group(0)
    end = len(url)
    while True:
        end = unclosed_end(url, 0, end)
        if end > 0 and url[end - 1] in ".,;:!?":
            end -= 1
            continue
        break
    return scrub_url(url[:end]) + url[end:]


def scrub_text(text: str) -> str:
    """Redact URLs (credentials, secret query values), JSON secret keys and
    pattern matches inside free text (one argument, or an option's value)."""
    from mcptap.redact.default import default_redactor

    text = _URL.sub(_scrub_url_in_text, text)
    out, _ = default_redactor().string(text)
    return out


def scrub_argv(argv: list[str] | tuple[str, ...]) -> list[str]:
    """Return a copy of ``argv`` with secrets replaced by placeholders (``argv_rules.scrub_args``
    with the user's key and ``scrub_text``).

    Never raises; ``argv[0]`` (the program) is scrubbed like any argument.
    Arguments after a bare ``--`` are still scrubbed (wrappers such as
    ``npx -y pkg -- --token X`` pass them on).
    """
    return scrub_args(argv, _redact, scrub_text)


def scrub_command_url(url: str) -> str:
    """A URL given on mcptap's own command line (``record --upstream URL``, ``replay --url
    URL``) as a capture shows it: as the same text in a server's argv (``scrub_argv``: user
    info, secret query values, token shapes anywhere in it). Never raises."""
    return scrub_argv([url])[0]
