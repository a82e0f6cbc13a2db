"""Scrub secrets from a server's argv before it reaches a capture (pure).

Design principle 8: credentials in argv or URLs never reach a capture in clear.
A secret is replaced by ``«redacted:sha256:XXXXXXXX»``, the first 8 hex digits of
the SHA-256 of the secret: the same secret always gives the same placeholder, so
two captures of the same command still compare equal (diff, replay), and a
changed token shows as a changed placeholder. 32 bits of an unsalted hash let
someone who already holds a candidate secret confirm it; they do not reveal it.

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
* well-known token shapes anywhere (GitHub ``ghp_…``/``github_pat_…``, OpenAI-style
  ``sk-…``, Slack ``xox?-…``, AWS ``AKIA…``, JWTs ``eyJ….….…``).

A name is secret-like when one of its words is in ``SECRET_WORDS`` (or ends
in ``token``/``apikey``/…) and its last word is not a word that
names a *reference* to a secret (``--token-file PATH``, ``KEY_ID=…``).
"""

from __future__ import annotations

import hashlib
import re

SECRET_WORDS = frozenset({
    "token", "secret", "secrets", "password", "passwd", "pwd", "pass", "passphrase",
    "key", "apikey", "auth", "authorization", "credential", "credentials", "cookie", "cookies",
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
_TOKEN_SHAPES = re.compile(
    r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|sk-[A-Za-z0-9_-]{20,}"
    r"|xox[abposr]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*)"
)
_PLACEHOLDER = re.compile(r"«redacted:sha256:[0-9a-f]{8}»")


def placeholder(secret: str) -> str:
    """The stable stand-in for ``secret``: ``«redacted:sha256:`` + 8 hex + ``»``."""
    return "«redacted:sha256:" + hashlib.sha256(secret.encode("utf-8", "surrogateescape")).hexdigest()[:8] + "»"


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
    if m and m.group(2):
        url = m.group(1) + _redact(m.group(2)) + "@" + url[m.end():]

    def query(qm: re.Match[str]) -> str:
        sep, name, value = qm.group(1), qm.group(2), qm.group(3)
        if is_secret_name(name) or name.lower() in ("code", "key", "sig", "x-amz-signature", "x-goog-signature"):
            return f"{sep}{name}={_redact(value)}"
        return qm.group(0)

    head, hashmark, frag = url.partition("#")
    if "?" in head:
        path, _, qs = head.partition("?")
        head = path + _QUERY_PARAM.sub(query, "?" + qs)
    return head + hashmark + frag


def scrub_text(text: str) -> str:
    """Redact URLs (credentials, secret query values) and token shapes inside
    free text (one argument, or an option's value)."""
    text = _URL.sub(lambda m: scrub_url(m.group(0)), text)
    return _TOKEN_SHAPES.sub(lambda m: _redact(m.group(0)), text)


def scrub_argv(argv: list[str] | tuple[str, ...]) -> list[str]:
    """Return a copy of ``argv`` with secrets replaced by placeholders.

    Never raises; ``argv[0]`` (the program) is scrubbed like any argument.
    Arguments after a bare ``--`` are still scrubbed (wrappers such as
    ``npx -y pkg -- --token X`` pass them on).
    """
    out: list[str] = []
    redact_next = False
    for arg in argv:
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
