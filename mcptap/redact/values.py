"""Whether a value found by a pattern looks like a credential (pure).

The patterns (patterns.py) find a place where a secret may stand: after ``Bearer``, after
``Authorization:``, after a secret's name (``password=``). What stands there in prose and in
code is often no secret: ``The token validation failed``, ``Basic authentication is
supported``, ``Cookie: this site uses cookies``, ``const token = await getToken()``,
``apiKey = process.env.API_KEY``, ``password: string``, ``secret_key: [u8; 32]``,
``password: ${{ secrets.DB_PASSWORD }}``, ``password: must be at least 8 characters``. These
tests tell them apart by shape. Every value they reject either is short or holds no ``=`` and no
``:`` (so that no assignment hides inside it), which keeps the scan linear (scanner.py).
"""

from __future__ import annotations

import base64
import binascii
import re

from mcptap.redact.keys import PLAIN_WORDS, normalise, plain_value

#: Keywords and type names that stand where a value would in code (``token = await …``,
#: ``password: string``).
CODE_WORDS = frozenset({
    "await", "async", "new", "function", "lambda", "self", "this", "const", "let", "var", "return", "yield", "typeof",
    "string", "str", "int", "integer", "number", "bool", "boolean", "bytes", "any", "unknown", "object", "void", "never",
    "char", "float", "double", "long", "uint", "u8", "usize", "vec", "option", "secretstr", "readonly", "mut",
})
#: Authorization schemes: ``token: Bearer`` names the scheme, not a credential.
SCHEMES = frozenset({"bearer", "basic", "token", "digest", "negotiate"})
#: Names that also name a method or a kind (``auth: github``, ``auth: oauth``): after these a
#: lower-case word is the method.
METHOD_NAMES = frozenset({"auth", "authentication", "authmethod"})
#: Names of credential headers: after them a bare value is one only when it looks issued.
HEADER_NAMES = frozenset({"authorization", "proxyauthorization"})
COOKIE_NAMES = frozenset({"cookie", "cookies", "setcookie"})

#: an attribute path (``process.env.API_KEY``, ``args.password``, ``settings.API_KEY)``): names of
#: letters only (a token's parts have digits: ``ya29.a0AfH6…``)
_PATH = re.compile(r"[A-Za-z_$][A-Za-z_$]*(?:\.[A-Za-z_$][A-Za-z_$]*)+[)\]]*")
#: a template's opening (``${{ secrets.X }}``, ``{{ .Values.x }}``) or a whole one without spaces
_TEMPLATE = re.compile(r"\$?\{\{(?:[^{}\s]*\}\})?|\{%")
#: an array type (``[u8; 32]``: the value stops at ``;``), a parameter's type or a name before a
#: closing bracket (``token: Token)``, ``secret=secret)``)
_TYPE = re.compile(r"\[[A-Za-z_]\w*|[A-Za-z_]+[)\]>]+:?")
#: a lower-case word, and a next one: prose (``password: must be at least 8 characters``)
_WORD = re.compile(r"[A-Za-z][a-z]+(?:-[a-z]+)*")
_NEXT_WORD = re.compile(r"[ \t]+[a-z]")
#: words of an identifier or of prose: ``validation``, ``AuthenticationRequired``, ``XMLHttp``
_IDENT_WORDS = re.compile(r"(?:[A-Z]?[a-z]{2,}|[A-Z]{2,}(?![a-z]))+")
_PARTS = re.compile(r"[._~+/:-]+")


def credential_like(value: str) -> bool:
    """True when ``value`` (one token, no spaces) looks issued rather than written: letters
    and digits both, or mixed case that is not words run together (``dXNlcjpwYXNz`` yes,
    ``AuthenticationRequired`` no), or 32 characters or more; never a plain word."""
    core = value.rstrip("=")
    if not core or core.lower() in PLAIN_WORDS or core.lower() in CODE_WORDS:
        return False
    if any(c.isdigit() for c in core) and any(c.isalpha() for c in core):
        return True
    if all(_IDENT_WORDS.fullmatch(p) for p in _PARTS.split(core) if p):
        return False
    return any(c.isupper() for c in core) and any(c.islower() for c in core) or len(core) >= 32


def basic_credential(value: str) -> bool:
    """True when ``value`` is HTTP Basic's base64 of ``user:password``."""
    if len(value) < 4 or len(value) % 4:
        return False
    try:
        raw = base64.b64decode(value, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return False
    return ":" in raw and raw.isprintable()


def scheme_credential(value: str) -> bool:
    """A credential after ``Bearer``/``Basic``/``token`` or in an ``Authorization:`` line."""
    return basic_credential(value) or credential_like(value)


def cookie_value(value: str) -> bool:
    """A ``Cookie:``/``Set-Cookie:`` line's value is one: it starts with a ``name=`` pair
    (``Cookie: this site uses cookies`` is prose), or is a single credential-like token."""
    if plain_value(value, False):
        return False
    first = value.split(None, 1)[0] if value.strip() else ""
    name, eq, _ = first.partition("=")
    return bool(eq and name) or first == value and credential_like(value)


def assigned_secret(name: str, value: str, bare: bool, sep: str, after: str) -> bool:
    """True when ``value``, assigned to secret name ``name`` (``sep``: ``=`` or ``:``; ``after``:
    the text after the value), is a secret; False for plain words and code (module doc)."""
    if plain_value(value, bare) or value.lower() in SCHEMES:
        return False
    if not bare:
        return True
    core = value.rstrip(")]>?:")
    if (core.lower() in CODE_WORDS or _PATH.fullmatch(value) or _TEMPLATE.fullmatch(value) or _TYPE.fullmatch(value)
            or normalise(core) == normalise(name)):
        return False
    norm = normalise(name)
    if norm in HEADER_NAMES:                             # ``Authorization: Requires admin privileges``
        return scheme_credential(value)
    if norm in COOKIE_NAMES:                             # ``cookie: accepted``
        return cookie_value(value)
    if _WORD.fullmatch(value):
        if _NEXT_WORD.match(after):                      # prose: ``secret: stored in vault``
            return False
        if ":" in sep and norm in METHOD_NAMES and len(value) < 20:     # ``auth: github``
            return False
    return True
