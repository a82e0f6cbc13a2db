"""String patterns: where secrets hide inside free text (pure).

Two sources, scanned as one combined regular expression (one pass a string):

* **library**: the token shapes of detect-secrets (Yelp, PyPI ``detect-secrets``)
  whose patterns match the token itself: AWS access key ids, GitHub, GitLab,
  Slack, Stripe, SendGrid, Twilio, Mailchimp, PyPI, npm, OpenAI, Discord,
  Telegram, Square, Azure storage keys, IBM/Cloudant/SoftLayer credentials and
  basic-auth URLs. Its JWT pattern (lazy, leaves the signature) and private-key
  pattern (matches the header line only) do not fit redaction and are
  replaced by ours. When detect-secrets cannot be imported the built-ins
  still run and ``library_error()`` says why.
* **built-in**: PEM private-key blocks (the body between the BEGIN/END lines),
  JWTs, GitHub tokens of any length, ``sk-``-style API keys, Google API keys,
  Slack tokens, prefixed token families (``whsec_``, ``GOCSPX-``, ``ya29.``, ``npm_``, ``dapi``,
  ``dop_v1_``, ``shpat_``, ``hvs.``, ``lin_api_``, age keys), PuTTY private lines,
  bearer/basic credentials, URL userinfo, ``Authorization:`` /
  ``Cookie:`` / ``Set-Cookie:`` header lines, OAuth and signature query values
  (``?code=…``), and assignments such as ``password=…``/``Password=…;`` in
  connection strings and DSNs (a quoted value whole).

Which part of a match is the secret is explicit (``scanner.Scanner``): a built-in
pattern names it, ``(?P<secret>…)`` (alternatives ``secret2``, ``secret3``…: the first
that took part; its other groups are ``name``, checked by ``CHECKS``, and ``_…``, a quote or
an indentation matched again further on), so ``Bearer «…»`` and ``password=«…»`` keep their context; a
detect-secrets pattern is replaced whole (its groups are often the token's
*prefix*: ``(glpat|gldt|…)-…``, ``(ghp|gho|…)_…``), except the audited ones whose
group 1 is the value (``LIBRARY_VALUE_GROUP``); a user pattern's ``secret`` group, else
its first group that took part (rules.py). A span that touches an
existing placeholder is left alone (scrubbing is idempotent).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from mcptap.redact.keys import SECRET_NEEDLES, plain_value, secret_name
from mcptap.redact.values import assigned_secret, cookie_value, credential_like, scheme_credential

#: an assigned name (``NAME=``, ``name:``, ``"name":``): a secret one when ``keys.is_secret_key``
#: says so, as for a JSON key (``AWS_SECRET_ACCESS_KEY``, ``db.password``, ``my-api-key``,
#: ``STRIPE_KEY``; not ``sort_key``, ``passwordHint``)
_NAME = r"(?P<name>[A-Za-z_][A-Za-z0-9_.-]{0,80})(?<![.-])"

#: query parameters whose values are secrets though their names are not secret-like
#: (the OAuth authorization code and PKCE verifier, signed URLs' ``key``/``sig``); also
#: redacted by the tap in request targets (``argv.scrub_url``)
QUERY_SECRET_NAMES = ("code", "code_verifier", "code-verifier", "auth_code", "authorization_code", "device_code",
                      "client_assertion", "assertion", "key", "sig", "x-amz-signature", "x-goog-signature")

#: a quote written as an escape in JSON, JS or Python text (``\u0027``, ``\x22``; escaped once more: ``\\u0027``)
ESCAPED_QUOTE = r"\\{1,3}(?:u00(?:22|27)|x2[27])"
#: an assigned value: quoted (all of it, up to the closing quote, on one line; ``\"`` inside a
#: ``"…"`` value is part of it: ``password="hun\"ter2"``), quoted with escaped quotes (JSON inside a
#: JSON string or a log: ``{\"password\": \"…\"}``, ``{\\\"password\\\": …}``: up to the same escaped
#: quote, 1, 3 or 7 backslashes; a longer run before a quote, or a run before anything else, is inside it) or bare
#: (a bare value that is a call or subscript, ``get_token()``, is code, not a secret: ruled out here, in
#: the regex, so that a run of such assignments costs one pass: ``password=a(password=a(…``).
#: Every repetition is bounded (the scan stays linear: tests/test_redact_linear.py).
_VALUE = r"""(?:"(?P<secret>(?:[^"\\\r\n«»]|\\[^\r\n«»]){1,1024})"|'(?P<secret2>(?:[^'\\\r\n«»]|\\[^\r\n«»]){1,1024})'""" \
         + "".join(fr"""|\\{{{n}}}{q}(?!(?i:bearer|basic|token|digest|negotiate)[ \t])"""
                   fr'(?P<secret{g}>(?:[^{q}\\\r\n«»]|\\{{1,16}}(?![\\{q}])|\\{{{n + 1},16}}{q}){{1,1024}})\\{{{n}}}{q}'
                   for q, g, n in (('"', 4, 1), ('"', 5, 3), ('"', 6, 7), ("'", 7, 1), ("'", 8, 3), ("'", 9, 7))) + \
         r"""|(?P<_esc>""" + ESCAPED_QUOTE + r""")(?P<secret10>(?:(?!(?P=_esc))[^\r\n«»]){1,1024})(?P=_esc)""" \
         r"""|["']?""" \
         r"""(?![A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*[(\[]|\\{1,16}["'])(?P<secret3>[^\s"';,&<>«»]{3,}))"""
#: the MySQL clients, which take ``-pPASSWORD``
MYSQL_PROGRAMS = r"\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlshow|mysqlcheck|mariadb(?:-dump|-admin)?)\b"
#: programs whose ``-p`` takes the password as the next word (``sshpass -p PASS``, ``docker login -u bob -p PASS``)
P_PASSWORD_PROGRAMS = r"\b(?:sshpass|(?:docker|podman|buildah|skopeo|nerdctl|oras|helm[ \t]+registry)[ \t]+login)\b"
#: a ``-p``/``-a`` password (the next word: not a number, a path or ``host:port``)
_NEXT_WORD_PASSWORD = r"[ \t]+(?![./~]|[\w.-]*:?\d+(?![^\s\"']))(?P<secret>[^\s\"'«»-][^\s\"'«»]*)"


def _sql_quoted(a: int, b: int) -> str:
    """A quoted SQL string (``'…'``, a quote doubled inside; or ``"…"``) as groups ``secret<a>``/``secret<b>``."""
    return fr"""(?:'(?P<secret{a}>(?:[^'\r\n«»]|''){{1,1024}})'|"(?P<secret{b}>[^"\r\n«»]{{1,1024}})")"""


#: a password set by SQL: ``CREATE USER bob WITH PASSWORD '…'``, ``CREATE ROLE app LOGIN PASSWORD '…'``,
#: ``ALTER ROLE app PASSWORD '…'``, ``… IDENTIFIED [WITH plugin] BY '…'`` (Oracle: ``IDENTIFIED BY pw``),
#: ``SET PASSWORD [FOR u] = [PASSWORD(]'…'``
SQL_PASSWORD = (r"(?i:\b(?:(?:with|login|nologin|encrypted|unencrypted|superuser|createdb|createrole|inherit|replication)"
                r"[ \t]+(?:(?:un)?encrypted[ \t]+)?password|(?:user|role)[ \t]+[\w\"'@.%-]{1,128}[ \t]+password)[ \t]+)"
                + _sql_quoted(1, 2).replace("secret1", "secret", 1)
                + r"|(?i:\bidentified(?:[ \t]+with[ \t]+[\w-]{1,64})?[ \t]+by(?:[ \t]+password)?[ \t]+)" + _sql_quoted(3, 4)
                + r"|\bIDENTIFIED[ \t]+BY[ \t]+(?!VALUES\b|PASSWORD\b)(?P<secret5>[^\s;'\"«»]{1,256})"
                + r"|(?i:\bset[ \t]+password\b[^=;\r\n'\"]{0,200}=[ \t]*(?:password[ \t]*\([ \t]*)?)" + _sql_quoted(6, 7))
#: the part of ``secret-assignment`` before its value (HEADS)
ASSIGNED = r"(?<![A-Za-z0-9_.-])" + _NAME + r"(?:\\{0,7}[\"']|" + ESCAPED_QUOTE + r")?[ \t]*(?:=|:)"

#: the rule of a user key's assignment in text (``key_assignment``)
USER_KEY_RULE = "user-key-assignment"


def key_assignment(keys: Iterable[str]) -> str:
    """The regex of ``NAME=VALUE`` / ``NAME: VALUE`` / ``"NAME": "VALUE"`` in text for the user's
    secret keys (``--redact-key``, normalised: ``keys.normalise``), as ``secret-assignment`` finds
    the built-in names: a key matches in any case, with ``-``, ``_`` or ``.`` between its
    letters (``ssn``: ``SSN=…``; ``employeeid``: ``employee_id: …``, ``"employeeId": "…"``)."""
    names = "|".join("[-_.]?".join(re.escape(c) for c in k) for k in sorted(keys, key=len, reverse=True))
    return (r"(?<![A-Za-z0-9_.-])(?P<name>(?i:" + names + r"))(?![A-Za-z0-9_])(?:\\{0,7}[\"']|" + ESCAPED_QUOTE
            + r")?[ \t]*(?:=|:)[ \t]*" + _VALUE)


#: the part of ``connection-string`` before its value (HEADS): a ``Name=`` pair
CONNECTION_PAIR = r"(?<![\w.-])(?P<name>[A-Za-z][A-Za-z0-9_.-]{0,40})[ \t]*="
#: the part of ``yaml-block`` before its indicator's options (HEADS): ``name: |`` / ``- name: >``
YAML_BLOCK_KEY = r"(?m:^)(?P<_ind>[ \t]*)(?:-[ \t]+)?(?P<name>[A-Za-z_][A-Za-z0-9_.-]{0,80})[\"']?[ \t]*:[ \t]*[|>]"

#: (name, regex) of the built-in patterns; the secret is the ``secret…`` group that took part
#: in the match (the whole match without one).
BUILTIN: tuple[tuple[str, str], ...] = (
    ("pem-private-key", r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----(?P<secret>(?:(?!-----END)[\s\S]){1,65536})"),
    ("jwt", r"\beyJ[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]*"),
    ("github-token", r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"),
    ("api-key-sk", r"\bsk-(?:[A-Za-z0-9]+-){0,3}[A-Za-z0-9_-]{20,}"),
    ("google-api-key", r"\bAIza[0-9A-Za-z_-]{35}"),
    ("slack-token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    ("stripe-key", r"\b(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}"),
    ("huggingface-token", r"\bhf_[A-Za-z0-9]{30,}\b"),
    # prefixed token families (shapes as their issuers document them; gitleaks' rules agree): Stripe/Svix
    # webhook signing secrets, Google OAuth client secrets and access tokens, npm, Databricks,
    # DigitalOcean, Shopify, HashiCorp Vault, Linear, age secret keys (bech32)
    ("webhook-secret", r"\bwhsec_[A-Za-z0-9+/]{24,}={0,2}"),
    ("google-oauth-client-secret", r"\bGOCSPX-[A-Za-z0-9_-]{24,}"),
    ("google-oauth-access-token", r"\bya29\.[A-Za-z0-9_-]{20,}"),
    ("npm-token", r"\bnpm_[A-Za-z0-9]{36,}"),
    ("databricks-token", r"\bdapi[a-h0-9]{32,}(?:-\d+)?"),
    ("digitalocean-token", r"\bdo[opr]_v1_[a-f0-9]{64,}"),
    ("shopify-token", r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32,}"),
    ("vault-token", r"\bhv[sbr]\.[A-Za-z0-9_-]{24,}"),
    ("linear-api-key", r"\blin_api_[A-Za-z0-9]{40,}"),
    ("age-secret-key", r"\bAGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    # a PuTTY private key file (.ppk): the base64 lines after ``Private-Lines: N`` (the rest stays)
    # (each a whole line of base64: ``Private-MAC:`` after them is not one)
    ("putty-private-key", r"\bPrivate-Lines:[ \t]*\d{1,5}[ \t]*\r?\n(?P<secret>[ \t]*[A-Za-z0-9+/=]{4,256}+(?![^\r\n])"
                          r"(?:\r?\n[ \t]*[A-Za-z0-9+/=]{4,256}+(?![^\r\n])){0,4095})"),
    # an XML element named like a secret: ``<password>…</password>`` (the name is checked: CHECKS)
    ("xml-element", r"<(?P<name>[A-Za-z_][\w.-]{0,80})>(?P<secret>[^<>«»]{1,1024})</(?P=name)>"),
    ("aws-access-key-id", r"\b(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}\b"),
    ("bearer", r"(?i:\b(?:bearer|basic|token)[ \t]+)(?P<secret>[A-Za-z0-9._~+/-]{8,}=*)"),
    ("url-userinfo", r"\b[A-Za-z][A-Za-z0-9+.-]{0,20}://(?P<secret>[^/?#@\s\"'<>«»]{1,256})@"),
    # a header line in a log: ``Authorization: <credential>`` with or without a scheme (the
    # scheme stays), ``Cookie:`` whole, ``Set-Cookie:`` up to its attributes
    ("auth-header", r"(?i:(?<![A-Za-z0-9_-])(?:proxy-)?authori[sz]ation[\"']?[ \t]*:[ \t]*[\"']?"
                    r"(?:(?:bearer|basic|token|digest|negotiate)[ \t]+)?(?!(?:bearer|basic|token|digest|negotiate)\b))"
                    r"(?P<secret>[^\s\"'<>«»,;=]{6,})(?![^\s\"'<>«»,;])"),
    ("cookie-header", r"(?i:(?<![A-Za-z0-9_-])(?<!set-)cookie[\"']?[ \t]*:[ \t]*[\"']?)(?P<secret>[^\r\n\"'<>«»]*[^\s\"'<>«»;])"),
    ("set-cookie-header", r"(?i:(?<![A-Za-z0-9_-])set-cookie[\"']?[ \t]*:[ \t]*[\"']?)(?P<secret>[^\r\n\"'<>«»;]*[^\s\"'<>«»;])"),
    # config file formats tools return as text (the name is checked: CHECKS): a connection string's
    # ``Password=two words;`` or ODBC ``Pwd={a;b}}c}`` (a pair after ``;`` or before ``; Name=``: its value runs
    # to the ``;``; before secret-assignment, which stops at a space), ``.netrc`` (``machine H login U password
    # P``), ``.pgpass`` lines (``host:port:db:user:password``), PHP ``define('DB_PASSWORD', '…')``, XML
    # settings (``<add key="ApiSecret" value="…"/>``, ``<property name="password" value="…"/>``) and a
    # YAML block scalar under a secret key (``password: |`` and its more indented lines)
    ("connection-string", CONNECTION_PAIR + r"[ \t]*"
                          r"(?P<secret>\{(?:[^}\r\n«»]|\}\}){1,1024}\}|[^\s;\"'{«»](?:[^;\r\n\"'«»]{0,1022}[^\s;\"'«»])?)"
                          r"(?=[ \t]*(?:;|$|[\"'<\r\n]))"),
    ("netrc-password", r"(?:(?<![\w-])machine[ \t]+(?:localhost|[\w-]{0,63}[.:][^\s«»]{1,255})|(?m:^)[ \t]*default)"
                       r"(?:\s+(?:login|account|port)[ \t]+[^\s«»]{1,256}){0,3}"
                       r"\s+password[ \t]+(?:\"(?P<secret>[^\"\r\n«»]{1,1024})\"|(?P<secret2>[^\s\"«»][^\s«»]{0,1023}))"),
    # (a port number or ``*``; a database and a user name, not a path: ``x.y:80:GET:/index:200`` is a log line;
    # a clock time is no port and database: ``server:12:30:45:ready``, CHECKS)
    ("pgpass-line", r"(?m:^[ \t]*(?:\*|(?=[\w.-]{0,252}[A-Za-z.])[\w.-]{1,253}+|\[[0-9A-Fa-f:.]{2,64}\]):"
                    r"(?P<_port>[1-9]\d{0,4}|\*):(?P<_db>(?:[^:\s\\/«»]|\\.){1,256}):"
                    r"(?:[^:\s\\/«»]|\\.){1,256}:(?P<secret>(?:[^\s\\«»]|\\.){1,1024})[ \t]*\r?$)"),
    ("php-define", r"(?i:\bdefine[ \t]*\([ \t]*)(?P<_q>[\"'])(?P<name>[A-Za-z_][A-Za-z0-9_]{0,80})(?P=_q)[ \t]*,[ \t]*"
                   r"(?:'(?P<secret>(?:[^'\\\r\n«»]|\\[^\r\n«»]){1,1024})'|\"(?P<secret2>(?:[^\"\\\r\n«»]|\\[^\r\n«»]){1,1024})\")"),
    ("xml-setting", r"<[A-Za-z][\w:.-]{0,40}[ \t\r\n]+(?:[^<>«»]{0,256}?[ \t\r\n])?(?:key|name)[ \t]*=[ \t]*"
                    r"(?P<_q>[\"'])(?P<name>[A-Za-z_][\w.:-]{0,80})(?P=_q)[ \t\r\n]+(?:[^<>«»]{0,256}?[ \t\r\n])?value[ \t]*=[ \t]*"
                    r"(?:\"(?P<secret>[^\"<>«»]{1,1024})\"|'(?P<secret2>[^'<>«»]{1,1024})')"),
    ("yaml-block", YAML_BLOCK_KEY + r"[+-]?[1-9]?[+-]?[ \t]*(?:\#[^\r\n]*)?\r?\n(?:[ \t]*\r?\n)*(?P=_ind)[ \t]+"
                   r"(?P<secret>[^\s«»][^\r\n«»]*(?:\r?\n(?:[ \t]*\r?\n)*(?P=_ind)[ \t]+[^\s«»][^\r\n«»]*)*)"),
    # a quoted value is taken whole, up to its closing quote (``password="correct horse battery"``)
    # (an auth scheme after the name is the auth-header's or bearer's: ``Authorization: Bearer …``)
    ("secret-assignment", ASSIGNED + r"[ \t]*"
                          r"(?!(?i:bearer|basic|token|digest|negotiate)[ \t])" + _VALUE),
    # a command line in a log or a tool's argument: ``curl -u user:pass``, ``--user user:pass``
    # (the user stays; a numeric group, ``docker -u 1000:1000``, too); ``mysql … -pPASS``
    ("cli-user-password", r"(?<![\w-])(?:-u[ \t]*|--user[ \t=][ \t]*)[\"']?[^\s:\"'«»]{1,256}:(?!//|\d+(?![^\s\"']))"
                          r"(?P<secret>[^\s\"'«»]{4,})"),
    ("mysql-password", MYSQL_PROGRAMS + r"[^\r\n|;&]*?[ \t]-p(?P<secret>[^\s\"'«»-][^\s\"'«»]*)"),
    # a long option named like a secret: ``--password=PASS``, ``--api-key PASS`` (the name is checked: CHECKS);
    # ``sshpass -p PASS``, ``docker login … -p PASS``, ``redis-cli -a PASS``; ``aws configure set NAME VALUE``
    ("cli-secret-option", r"(?<![\w-])--(?P<name>[A-Za-z][A-Za-z0-9_.-]{0,80})(?<![.-])(?:=|[ \t]+)"
                          r"(?:\"(?P<secret>[^\"\r\n«»]{1,1024})\"|'(?P<secret2>[^'\r\n«»]{1,1024})'"
                          r"|(?P<secret3>[^\s\"'«»-][^\s\"'«»]*))"),
    ("cli-p-password", P_PASSWORD_PROGRAMS + r"[^\r\n|;&]*?[ \t]-p" + _NEXT_WORD_PASSWORD),
    ("redis-cli-password", r"\bredis-cli\b[^\r\n|;&]*?[ \t]-a" + _NEXT_WORD_PASSWORD),
    ("sql-password", SQL_PASSWORD),
    ("config-set", r"(?<![\w-])(?:configure|config)[ \t]+set[ \t]+" + _NAME + r"[ \t]+"
                   r"(?:\"(?P<secret>[^\"\r\n«»]{1,1024})\"|'(?P<secret2>[^'\r\n«»]{1,1024})'|(?P<secret3>[^\s\"'«»]+))"),
    # a URL's query or fragment, or a form body (``?code=…&state=``, a token request's
    # ``code_verifier=``): as the HTTP tap redacts them in request targets (argv.scrub_url)
    ("query-param", r"(?i:(?:(?<=[?&#;])|^)(?:" + "|".join(re.escape(n) for n in QUERY_SECRET_NAMES) + r")=)(?P<secret>[^\s&#\"'<>«»]+)"),
)

#: detect-secrets plugins whose patterns fit redaction: (module, class).
LIBRARY_PLUGINS: tuple[tuple[str, str], ...] = (
    ("aws", "AWSKeyDetector"), ("azure_storage_key", "AzureStorageKeyDetector"), ("basic_auth", "BasicAuthDetector"),
    ("cloudant", "CloudantDetector"), ("discord", "DiscordBotTokenDetector"), ("github_token", "GitHubTokenDetector"),
    ("gitlab_token", "GitLabTokenDetector"), ("ibm_cloud_iam", "IbmCloudIamDetector"), ("ibm_cos_hmac", "IbmCosHmacDetector"),
    ("mailchimp", "MailchimpDetector"), ("npm", "NpmDetector"), ("openai", "OpenAIDetector"), ("pypi_token", "PypiTokenDetector"),
    ("sendgrid", "SendGridDetector"), ("slack", "SlackDetector"), ("softlayer", "SoftlayerDetector"),
    ("square_oauth", "SquareOAuthDetector"), ("stripe", "StripeDetector"), ("telegram_token", "TelegramBotTokenDetector"),
    ("twilio", "TwilioKeyDetector"),
)

#: Pattern name -> a test a match must pass (``secret-assignment``: its name is a secret key's).
#: Values of plain words (``Authorization: required``), prose (``The token validation failed``) or
#: code (``token = get_token()``, ``password: string``) are not secrets (values.py); URL user info
#: without a password is a user name unless it is long (a token as the user).
CHECKS: dict[str, Callable[[re.Match[str]], bool]] = {
    "secret-assignment": lambda m: secret_name(m.group("name")) and _assigned(m),
    USER_KEY_RULE: lambda m: _assigned(m),
    "xml-element": lambda m: secret_name(m.group("name")) and not plain_value(m.group("secret"), False),
    "bearer": lambda m: scheme_credential(m.group("secret")),
    "auth-header": lambda m: not plain_value(m.group("secret"), False) and scheme_credential(m.group("secret")),
    "cookie-header": lambda m: cookie_value(m.group("secret")),
    "set-cookie-header": lambda m: cookie_value(m.group("secret")),
    "url-userinfo": lambda m: ":" in m.group("secret") or len(m.group("secret")) >= 16,
    "query-param": lambda m: not m.group("secret").isalpha() or not m.group("secret").islower(),
    "cli-secret-option": lambda m: secret_name(m.group("name")) and _option_value(m),
    "config-set": lambda m: secret_name(m.group("name")) and _assigned(m),
    "connection-string": lambda m: secret_name(m.group("name")) and not plain_value(m.group("secret"), False)
    and (" " in m.group("secret") or m.group("secret")[0] == "{") and _in_connection_string(m),
    "netrc-password": lambda m: not plain_value(m.group(m.lastgroup or 0), False),
    "pgpass-line": lambda m: _pgpass_fields(m) and not plain_value(m.group("secret"), False),
    "php-define": lambda m: secret_name(m.group("name")) or m.group("name").upper().endswith("_SALT"),
    "xml-setting": lambda m: secret_name(m.group("name")) and not plain_value(m.group(m.lastgroup or 0), False),
    "yaml-block": lambda m: secret_name(m.group("name")),
}


_NEXT_PAIR = re.compile(r"[ \t]*;[ \t]*[A-Za-z][\w .-]{0,40}=")
#: minutes after an hour (``12:30``), with seconds' fraction (``45.123``): a clock time, not a database
_CLOCK_MINUTES = re.compile(r"[0-5]\d(?:[.,]\d+)?")


def _pgpass_fields(m: re.Match[str]) -> bool:
    """A ``.pgpass`` line's port is a TCP port (1–65535) or ``*``, and its port and database are
    not the hour and minutes of a clock time (``server:12:30:45:ready``, ``2026-12-06T12:30:45:…``)."""
    port = m.group("_port")
    if port == "*":
        return True
    return int(port) <= 65535 and not (len(port) <= 2 and _CLOCK_MINUTES.fullmatch(m.group("_db")))


def _in_connection_string(m: re.Match[str]) -> bool:
    """A ``Name=value`` pair of a ``;``-separated connection string: a ``Name=…;`` pair before it
    or a ``; Name=`` after it (``Reset it; password = the one you chose.`` is prose)."""
    text, start = m.string, m.start("name")
    before = text[max(0, start - 256):start].rstrip(" \t")
    if before.endswith(";") and "=" in before[:-1].rsplit(";", 1)[-1]:
        return True
    return _NEXT_PAIR.match(text, m.end()) is not None


def _option_value(m: re.Match[str]) -> bool:
    """``--name=VALUE`` as an assignment; ``--name VALUE`` only a credential-like word (``use --token to…``)."""
    if "=" in m.string[m.end("name"):m.start(m.lastgroup or 0)] or m.lastgroup != "secret3":
        return _assigned(m)
    return credential_like(m.group("secret3"))


def _assigned(m: re.Match[str]) -> bool:
    g = m.lastgroup or 0
    text = m.string
    return assigned_secret(m.group("name"), m.group(g), g == "secret3", text[m.end("name"):m.start(g)],
                           text[m.end():m.end() + 40])


#: Lower-case literal text a built-in pattern cannot match without (a cheap
#: test before the regex runs).
NEEDLES: dict[str, tuple[str, ...]] = {
    "pem-private-key": ("private key",), "jwt": ("eyj",), "github-token": ("gh", "github_pat_"), "api-key-sk": ("sk-",),
    "google-api-key": ("aiza",), "slack-token": ("xox",), "stripe-key": ("_live_", "_test_"),
    "aws-access-key-id": ("a3t", "abia", "acca", "akia", "asia"), "bearer": ("bearer", "basic", "token"), "url-userinfo": ("@",),
    "secret-assignment": SECRET_NEEDLES, "xml-element": ("</",), "huggingface-token": ("hf_",),
    "webhook-secret": ("whsec_",), "google-oauth-client-secret": ("gocspx-",), "google-oauth-access-token": ("ya29.",),
    "npm-token": ("npm_",), "databricks-token": ("dapi",), "digitalocean-token": ("_v1_",), "shopify-token": ("shp",),
    "vault-token": ("hvs.", "hvb.", "hvr."), "linear-api-key": ("lin_api_",), "age-secret-key": ("age-secret-key-1",),
    "putty-private-key": ("private-lines:",),
    "cli-user-password": ("-u",), "mysql-password": ("mysql", "mariadb"),
    "cli-secret-option": ("--",), "cli-p-password": ("sshpass", "login"), "redis-cli-password": ("redis-cli",),
    "config-set": ("config",), "sql-password": ("password", "identified"),
    "connection-string": (";",), "netrc-password": ("password",), "pgpass-line": (":",), "php-define": ("define",),
    "xml-setting": ("value",), "yaml-block": ("|", ">"),
    "auth-header": ("authori",), "cookie-header": ("cookie",), "set-cookie-header": ("set-cookie",),
    "query-param": ("code=", "code_verifier=", "code-verifier=", "assertion=", "key=", "sig=", "signature="),
    # detect-secrets plugins (by secret type)
    "ds:aws-access-key": ("a3t", "abia", "acca", "akia", "asia", "aws"), "ds:azure-storage-account-access-key": ("accountkey=",),
    "ds:basic-auth-credentials": ("@",), "ds:cloudant-credentials": ("cl",), "ds:discord-bot-token": (".",),
    "ds:github-token": ("gh",), "ds:gitlab-token": ("gl", "gr1348941"), "ds:ibm-cloud-iam-key": ("key", "pwd", "pass", "token"),
    "ds:ibm-cos-hmac-credentials": ("secret",), "ds:mailchimp-access-key": ("-us",), "ds:npm-tokens": ("_authtoken",),
    "ds:openai-token": ("t3blbkfj",), "ds:pypi-token": ("pypi-",), "ds:sendgrid-api-key": ("sg.",),
    "ds:slack-token": ("xox", "hooks.slack.com"), "ds:softlayer-credentials": ("key", "pwd", "pass", "token", "softlayer"),
    "ds:square-oauth-secret": ("sq0csp-",), "ds:stripe-access-key": ("k_live_",), "ds:telegram-bot-token": (":",),
    "ds:twilio-api-key": ("ac", "sk"),
}

#: detect-secrets types whose patterns' group 1 is the secret value, not a prefix (audited for
#: ``ds_table.VERSION``: ``aws…key = "(…)"``, ``://user:(…)@``, ``cloudant_key = (…)``…). Only
#: those regexes exactly as the table has them use the group (``library_value_groups``);
#: every other library regex, and any of another library version, is replaced whole.
LIBRARY_VALUE_GROUP = frozenset({"ds:aws-access-key", "ds:basic-auth-credentials", "ds:cloudant-credentials",
                                 "ds:ibm-cloud-iam-key", "ds:ibm-cos-hmac-credentials", "ds:npm-tokens",
                                 "ds:softlayer-credentials"})

_library: list[tuple[str, str]] | None = None
_library_error: str | None = None


def _inline(rx: re.Pattern[str]) -> str:
    """A compiled pattern as text that keeps its flags inside an alternation."""
    flags = "".join(f for f, bit in (("i", re.I), ("s", re.S), ("x", re.X), ("m", re.M)) if rx.flags & bit)
    return f"(?{flags}:{rx.pattern})" if flags else rx.pattern


def installed_library_version() -> str | None:
    """The installed detect-secrets' version, read from its ``__version__.py``
    without importing the package (its ``__init__`` imports the whole scanner);
    None when it is not installed or the file is not where 1.5 has it."""
    import importlib.util
    import os

    try:
        spec = importlib.util.find_spec("detect_secrets")
        if spec is None or spec.origin is None or spec.loader is None or not hasattr(spec.loader, "get_data"):
            return None
        text = spec.loader.get_data(os.path.join(os.path.dirname(spec.origin), "__version__.py")).decode()
    except (ImportError, OSError, ValueError):
        return None
    m = re.search(r"""^VERSION\s*=\s*['"]([^'"]+)['"]""", text, re.M)
    return m.group(1) if m else None


def load_library_patterns() -> list[tuple[str, str]]:
    """(name, regex) pairs from the detect-secrets plugins themselves (imports
    the library); empty when it cannot be imported (see ``library_error``)."""
    global _library_error
    import importlib

    out: list[tuple[str, str]] = []
    try:
        for module, cls in LIBRARY_PLUGINS:
            plugin = getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), cls)()
            name = "ds:" + plugin.secret_type.lower().replace(" ", "-")
            for rx in plugin.denylist:
                out.append((name, _inline(rx)))
    except (ImportError, AttributeError, TypeError, ValueError, re.error) as exc:   # the built-ins still protect
        _library_error = f"detect-secrets unavailable ({type(exc).__name__}: {exc}); built-in patterns only"
        out = []
    return out


def library_patterns() -> list[tuple[str, str]]:
    """(name, regex) pairs from detect-secrets (names ``ds:<secret type>``);
    empty when the library is missing (see ``library_error``). While the
    installed version is the one ``ds_table`` was generated from, its table
    (the same pairs) is used and the library is not imported (~0.3 s and
    ~6.5 MiB for every ``mcptap record``)."""
    global _library
    if _library is None:
        from mcptap.redact import ds_table

        if installed_library_version() == ds_table.VERSION:
            _library = list(ds_table.PATTERNS)
        else:
            _library = load_library_patterns()
    return _library


def library_value_groups() -> frozenset[str]:
    """The audited detect-secrets regexes (``LIBRARY_VALUE_GROUP``) whose group 1 is the secret."""
    from mcptap.redact import ds_table

    return frozenset(rx for name, rx in ds_table.PATTERNS if name in LIBRARY_VALUE_GROUP and re.compile(rx).groups)


def library_error() -> str | None:
    """Why detect-secrets patterns are not in use, or None."""
    library_patterns()
    return _library_error
