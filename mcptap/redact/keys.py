"""JSON keys whose values are secrets (pure).

A key is compared with case, ``-``, ``_``, ``.`` and spaces ignored
(``api_key`` = ``apiKey`` = ``API-KEY``). It names a secret when

* its normalised form is in ``SECRET_KEYS`` (``password``, ``token``,
  ``apikey``, ``authorization``, ``cookie``, ``privatekey``, ``clientsecret``,
  ``accesstoken``, ``refreshtoken``…), or ends with one of ``SECRET_ENDINGS``
  (``dbPassword``, ``githubToken``, ``stripeSecretKey``), and
* its last word is not one that names something *about* a secret
  (``tokenType``, ``passwordHint``, ``apiKeyId``, ``secretName``,
  ``tokenExpiresAt``) and it is not a protocol field that only looks like one
  (``progressToken``, ``maxTokens``, ``nextPageToken`` stays redacted: it can
  grant access).
"""

from __future__ import annotations

import re

SECRET_KEYS = frozenset({
    "password", "passwd", "pwd", "passphrase", "pass", "secret", "secrets", "token", "apikey", "apitoken",
    "authorization", "proxyauthorization", "authentication", "auth", "cookie", "cookies", "setcookie",
    "privatekey", "clientsecret", "accesstoken", "refreshtoken", "idtoken", "sessiontoken", "authtoken",
    "bearer", "bearertoken", "credential", "credentials", "creds", "secretkey", "secretaccesskey",
    "accesskey", "apisecret", "signingkey", "encryptionkey", "masterkey", "sessionkey", "sessionsecret",
    "connectionstring", "dsn", "jwt", "otp", "pin", "xapikey",
})
SECRET_ENDINGS = ("password", "passwd", "passphrase", "secret", "token", "apikey", "privatekey", "secretkey",
                  "accesskey", "credentials", "creds", "cookie", "connectionstring")
#: Last words that describe a secret rather than hold it.
ABOUT_WORDS = frozenset({
    "id", "ids", "name", "names", "type", "types", "file", "path", "dir", "env", "var", "url", "uri", "header",
    "length", "len", "size", "count", "limit", "limits", "hint", "hints", "policy", "required", "enabled",
    "expiry", "expires", "expiresat", "expiresin", "at", "ttl", "usage", "prefix", "format", "kind", "set",
    "field", "fields", "label", "description", "scope", "scopes", "endpoint", "location", "source", "provider",
})
#: Protocol fields that look secret-like but are not secrets (normalised).
NOT_SECRET = frozenset({"progresstoken", "maxtokens", "tokens", "totaltokens", "inputtokens", "outputtokens",
                        "tokencount", "cursor", "nextcursor", "passthrough"})

_WORDS = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")
_SEPARATORS = re.compile(r"[\s_.-]+")


def normalise(key: str) -> str:
    """``key`` lower-cased without ``-``, ``_``, ``.`` and spaces."""
    return _SEPARATORS.sub("", key).lower()


def is_secret_key(key: str) -> bool:
    """True when the value under JSON key ``key`` is a secret (see module doc)."""
    norm = normalise(key)
    if not norm or norm in NOT_SECRET:
        return False
    words = [w.lower() for w in _WORDS.split(key) if w]
    if len(words) > 1 and words[-1] in ABOUT_WORDS:
        return False
    return norm in SECRET_KEYS or norm.endswith(SECRET_ENDINGS)
