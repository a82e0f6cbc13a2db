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
  grant access), or
* it is an HTTP extension header's name ending in ``-Key`` (``X-Foo-Key``), or
* it is an environment variable's name ending in ``_KEY`` (``STRIPE_KEY``,
  ``LICENSE_KEY``; upper snake case only, and not ``SORT_KEY``, ``PUBLIC_KEY``,
  ``PRIMARY_KEY``…: ``NOT_SECRET_KEY_WORDS``), or its last word is ``auth`` after
  another (``basicAuth``, ``ANTHROPIC_AUTH``; not ``oauth``, ``authType``), or
* it is such a key followed by words that say it holds the value (``HOLDER_WORDS``:
  ``tokenValue``, ``passwordConfirmation``, ``SECRET_KEY_BASE``, ``authHeader``) or
  by a number (``api_key_2``), or it is the plural of one (``passwords``,
  ``apiKeys``, ``accessTokens``; not ``tokens`` nor ``…Tokens`` in general:
  ``inputTokens`` counts tokens).

The text rule for ``NAME=value`` / ``name: value`` in free text
(``patterns``, ``secret-assignment``), the argv rules (``--name VALUE``,
``NAME=value``, ``Name: value``: ``argv_rules.is_secret_name``), header names
(``headers.is_secret_header``) and URL query names (``argv.scrub_url``, the HTTP
tap's targets) ask this same function: a name that holds a secret in one place
holds one in every other. ``key`` alone,
``publicKey``, ``primaryKey``, ``sort_key``, ``keyName``, ``idempotencyKey``,
``cacheKey`` are ordinary data (map keys, database keys, request ids).

Some keys are secrets only where they are (``context_secrets``): the ``code`` of an
OAuth object, the ``value`` of a ``{name, value}`` pair that names a secret header.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

SECRET_KEYS = frozenset({
    "password", "passwd", "pwd", "passphrase", "pass", "secret", "secrets", "token", "apikey", "apitoken",
    "authorization", "proxyauthorization", "authentication", "auth", "cookie", "cookies", "setcookie",
    "privatekey", "clientsecret", "accesstoken", "refreshtoken", "idtoken", "sessiontoken", "authtoken",
    "bearer", "bearertoken", "credential", "credentials", "creds", "secretkey", "secretaccesskey",
    "accesskey", "apisecret", "signingkey", "encryptionkey", "masterkey", "sessionkey", "sessionsecret",
    "connectionstring", "dsn", "jwt", "otp", "pin", "xapikey", "codeverifier", "clientassertion", "authcode",
    "authorizationcode", "sig", "xamzsignature", "xgoogsignature", "sshkey", "hmackey", "appkey", "authkey",
    "licensekey", "accountkey", "clientkey", "privkey", "servicekey", "dbkey", "sshpass", "pgpass", "mysqlpwd",
})
#: Words before ``pass`` that make it a password (``db_pass``; upper-case env names always do).
PASS_OWNERS = frozenset({"db", "database", "smtp", "mail", "email", "ftp", "sftp", "redis", "mysql", "pg", "postgres",
                         "admin", "root", "user", "ldap", "proxy", "ssh", "vnc", "sql", "mongo", "rabbit", "amqp", "app"})
#: Session ids are credentials (a cookie's ``sessionid=``) though ``…Id`` names are not.
SECRET_IDS = frozenset({"sessionid", "jsessionid", "phpsessid"})
SECRET_ENDINGS = ("password", "passwd", "passphrase", "secret", "token", "apikey", "privatekey", "secretkey",
                  "accesskey", "credentials", "creds", "cookie", "connectionstring", "signingkey", "encryptionkey",
                  "masterkey", "sessionkey", "sessionsecret", "authkey", "sshkey", "hmackey", "appkey", "licensekey",
                  "accountkey", "clientkey", "servicekey", "privkey", "dsn", "authtoken",
                  # as a header name's last word (headers.py: ``X-Upstream-Credential``), and the compound
                  # forms of SECRET_KEYS names (``serviceCredential``, ``MY_SERVICE_CREDENTIAL``, ``pkceCodeVerifier``)
                  "credential", "authorization", "jwt", "bearer", "codeverifier", "clientassertion", "authcode", "authorizationcode",
                  "dbkey", "sshpass", "pgpass", "mysqlpwd")
#: ``<WORD>_KEY`` environment names that are not secrets (database, map and crypto-public keys).
NOT_SECRET_KEY_WORDS = frozenset({"public", "pub", "sort", "primary", "foreign", "partition", "range", "hash", "cache",
                                  "group", "lookup", "index", "routing", "idempotency", "dedup", "unique", "composite",
                                  "map", "row", "object", "shortcut", "hot", "sequence", "order", "join", "s3", "i18n",
                                  "translation", "message", "event", "metric", "label"})
_ENV_KEY = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*_KEY")
#: an HTTP extension header's name ending in ``-Key`` (``X-Foo-Key``: a header line, a header
#: map or list in a tool's arguments)
_HEADER_KEY = re.compile(r"[Xx]-(?:[A-Za-z0-9]+-)*[A-Za-z0-9]+-[Kk][Ee][Yy]")
#: Last words that describe a secret rather than hold it.
ABOUT_WORDS = frozenset({
    "id", "ids", "name", "names", "type", "types", "file", "path", "dir", "env", "var", "url", "uri",
    "length", "len", "size", "count", "limit", "limits", "hint", "hints", "policy", "required", "enabled",
    "expiry", "expires", "expiresat", "expiresin", "at", "ttl", "usage", "prefix", "format", "kind", "set",
    "field", "fields", "label", "description", "scope", "scopes", "endpoint", "location", "source", "provider",
})
#: Last words that say the key holds the secret itself (``tokenValue``, ``authHeader``).
HOLDER_WORDS = frozenset({
    "value", "values", "val", "data", "string", "str", "text", "raw", "plain", "plaintext", "b64", "base64", "hex",
    "bytes", "base", "confirmation", "confirm", "repeat", "again", "header", "headers", "encoded", "encrypted", "hash",
    "hashed", "new", "old", "current", "pem", "der", "jwk",
})
#: Sibling keys (normalised) that make an object an OAuth exchange, whose ``code`` is the authorization code.
OAUTH_SIBLINGS = frozenset({"redirecturi", "codeverifier", "codechallenge", "granttype", "clientid"})
#: Keys that name the member a ``{name, value}`` pair is about (AWS spells them ``Name``, ``Key``).
PAIR_NAMES = ("name", "key", "header", "Name", "Key", "Header", "NAME", "KEY")
#: Keys of a ``{name, value}`` pair's value.
VALUE_KEYS = ("value", "Value", "VALUE")

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
    if norm in SECRET_IDS:
        return True
    words = [w.lower() for w in _WORDS.split(key) if w]
    if len(words) > 1 and words[-1] in ABOUT_WORDS:
        return False
    if _ENV_KEY.fullmatch(key):
        return words[-2] not in NOT_SECRET_KEY_WORDS
    if _HEADER_KEY.fullmatch(key):
        return True
    if norm in SECRET_KEYS or norm.endswith(SECRET_ENDINGS) or len(words) > 1 and words[-1] == "auth":
        return True
    # ``DB_PWD``, ``MYSQL_PWD``; ``DB_PASS``, ``SMTP_PASS``, ``db-pass`` (not ``render_pass``, ``bypass``)
    if len(words) > 1 and (words[-1] == "pwd" or words[-1] == "pass" and (key.isupper() or words[-2] in PASS_OWNERS)):
        return True
    # the secret word followed by a number or by words that say the key holds the value
    while words and words[-1].isdigit():
        words.pop()
    if words:
        words[-1] = words[-1].rstrip("0123456789")
    while len(words) > 1 and words[-1] in HOLDER_WORDS:
        words.pop()
    core = "".join(words)
    if core != norm and core not in NOT_SECRET and (core in SECRET_KEYS or core.endswith(SECRET_ENDINGS)):
        return True
    # a plural: a list or map of secrets (``…tokens`` are counts: inputTokens, cachedTokens)
    one = core[:-1] if core.endswith("s") else ""
    return bool(one) and (one in SECRET_KEYS and one != "token" or not one.endswith("token") and one.endswith(SECRET_ENDINGS))


def context_secrets(obj: dict[str, Any], parent: object, secret: Callable[[str], str | None]) -> dict[str, str]:
    """Members of object ``obj`` (under key ``parent``, None in a list or at the
    top) whose values are secrets because of where they are, with the rule's
    name: ``code`` (a string) of an OAuth object (its parent names oauth or a
    callback, or a sibling is ``redirect_uri``, ``code_verifier``…, or ``state``
    and the code looks issued);
    ``value`` of a ``{name|key|header, value}`` pair (also ``Name``/``Value``…) whose name
    ``secret`` (the caller's key test) calls a secret (a header list as tools take it:
    ``[{"name": "Authorization", "value": …}]``, ECS ``[{"Name": "DB_PASSWORD", "Value": …}]``),
    or the last segment of a path name (AWS SSM ``/prod/db/password``), or whose ``Type`` is
    ``SecureString`` (an SSM parameter)."""
    out: dict[str, str] = {}
    code = obj.get("code")
    if isinstance(code, str):
        up = normalise(parent) if isinstance(parent, str) else ""
        if ("oauth" in up or "callback" in up or any(normalise(k) in OAUTH_SIBLINGS for k in obj if isinstance(k, str))
                # beside ``state`` alone only a code that looks issued (an error's data has short ones: "E_STATE")
                or "state" in obj and len(code) >= 16 and not any(c.isspace() for c in code)
                and not IDENTIFIER_CODE.fullmatch(code)):
            out["code"] = "key:code (OAuth)"
    vkey = next((k for k in VALUE_KEYS if k in obj), None)
    if vkey is not None:
        if obj.get("Type") == "SecureString" or obj.get("type") == "SecureString":
            out[vkey] = "key:SecureString"
        for n in PAIR_NAMES:
            name = obj.get(n)
            if isinstance(name, str) and n.lower() != name.lower() and secret(name.rsplit("/", 1)[-1]) is not None:
                out[vkey] = f"key:{name}"
                break
    return out


@functools.lru_cache(maxsize=4096)
def secret_name(name: str) -> bool:
    """``is_secret_key`` for a name assigned in free text (``NAME=``, ``name:``), cached."""
    return is_secret_key(name)


#: Lower-case text one of which every secret name holds (the text rule runs only on strings
#: that have one; tests/test_redact_keys_text.py checks that every rule above is covered).
SECRET_NEEDLES = ("pass", "pwd", "secret", "key", "token", "sig", "cookie", "sess", "auth", "cred", "dsn", "connection",
                  "jwt", "otp", "pin", "bearer", "verifier", "assertion")


#: Keys whose value maps property names to JSON Schemas (a tool's ``inputSchema``, an
#: elicitation's ``requestedSchema``): a name there is a parameter's, not a secret's.
SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
#: Keywords of a JSON Schema object (a property's schema holds nothing else, ``x-…`` aside).
SCHEMA_KEYWORDS = frozenset({
    "type", "description", "title", "format", "minLength", "maxLength", "pattern", "minimum", "maximum",
    "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "enum", "enumNames", "const", "default", "examples", "example",
    "items", "prefixItems", "contains", "properties", "patternProperties", "additionalProperties", "propertyNames",
    "required", "minItems", "maxItems", "uniqueItems", "minProperties", "maxProperties", "$ref", "$id", "$schema",
    "$comment", "$defs", "definitions", "$anchor", "oneOf", "anyOf", "allOf", "not", "if", "then", "else",
    "dependentRequired", "dependentSchemas", "nullable", "readOnly", "writeOnly", "deprecated", "contentEncoding",
    "contentMediaType", "unevaluatedProperties", "unevaluatedItems",
})
#: Schema keywords whose values are instances of the property (a secret-named one's are redacted).
SCHEMA_INSTANCES = frozenset({"default", "examples", "example", "const", "enum"})


#: JSON Schema's type names.
SCHEMA_TYPES = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})


def _schema_shaped(key: str, value: object) -> bool:
    """True when member ``key`` of an object has the shape a schema keyword's value has."""
    if key == "type":
        return (value in SCHEMA_TYPES if isinstance(value, str)
                else isinstance(value, list) and bool(value) and all(isinstance(t, str) and t in SCHEMA_TYPES for t in value))
    if key == "$ref":
        return isinstance(value, str)
    if key in ("anyOf", "oneOf", "allOf"):
        return isinstance(value, list) and bool(value) and all(isinstance(s, dict | bool) for s in value)
    if key == "properties":
        return isinstance(value, dict) and all(isinstance(s, dict | bool) for s in value.values())
    if key == "items":
        return isinstance(value, dict | bool) or isinstance(value, list) and all(isinstance(s, dict | bool) for s in value)
    return False


def is_schema_property(parent: object, value: object) -> bool:
    """True when ``value``, under a secret-looking name in a map keyed ``parent``, is a
    JSON Schema (``"properties": {"password": {"type": "string", "minLength": 8}}``): the
    name is a parameter's; only instances inside (``SCHEMA_INSTANCES``) are secrets. A
    schema holds only schema keywords (and ``x-…``), or has a keyword whose value has a
    schema's shape (``type`` a type name, ``$ref``, ``anyOf``, ``properties``, ``items``…),
    whatever else it holds (``sensitive``, ``markdownDescription``: walked as any member)."""
    if parent not in SCHEMA_MAPS or not isinstance(value, dict) or not value:
        return False
    if all(isinstance(k, str) and (k in SCHEMA_KEYWORDS or k.startswith("x-")) for k in value):
        return True
    return any(isinstance(k, str) and _schema_shaped(k, v) for k, v in value.items())


#: Words that say a secret is absent, required or hidden, not one (``Authorization: required``).
PLAIN_WORDS = frozenset({"required", "optional", "none", "null", "nil", "true", "false", "yes", "no", "undefined", "unset",
                         "not", "set", "empty", "missing", "invalid", "expired", "redacted", "hidden", "masked", "present",
                         "provided", "n/a", "disabled", "enabled", "off", "on", "is", "was", "the", "given", "needed"})
#: A bare value that is code, not a secret: a call or subscript (``get_token()``,
#: ``os.environ['TOKEN']``) or a variable reference (``$TOKEN``, ``${API_KEY}``).
_CODE = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*[(\[]|\$\{?[A-Za-z_]\w*\}?$")
#: An error code or identifier (``E_PASSWORD_TOO_SHORT``, ``auth.invalid_grant``), not an issued OAuth code.
IDENTIFIER_CODE = re.compile(r"(?:[A-Z][A-Z0-9]*|[a-z][a-z0-9]*)(?:[_.:-](?:[A-Z0-9]+|[a-z0-9]+))+")


def plain_value(value: str, bare: bool = True) -> bool:
    """True when an assigned value is no secret by its shape: plain words (``required``,
    ``none set``), or, ``bare`` (unquoted), code (``get_token()``, ``$TOKEN``)."""
    words = value.lower().split()
    return bool(words) and all(w in PLAIN_WORDS for w in words) or bare and _CODE.match(value) is not None
