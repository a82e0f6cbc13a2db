"""Redaction: secrets out of captures (level 1).

* :mod:`~mcptap.redact.keyed` — keyed placeholders ``«redacted:hmac:…»``;
  :mod:`~mcptap.redact.keyfile` — the per-user key (0600, user config dir);
* :mod:`~mcptap.redact.keys`, :mod:`~mcptap.redact.patterns`,
  :mod:`~mcptap.redact.rules` — what counts as a secret (built-in and user rules);
* :mod:`~mcptap.redact.engine` — ``Redactor``: JSON values and strings;
* :mod:`~mcptap.redact.argv` — argv, URLs and header values at record time;
* :mod:`~mcptap.redact.scrub` — a whole capture's record stream (``mcptap scrub``,
  ``record --redact``, ``report``).
"""

from __future__ import annotations

from mcptap.redact.argv import placeholder, scrub_argv, scrub_command_url, scrub_text, scrub_url
from mcptap.redact.argv_rules import is_secret_name

__all__ = ["is_secret_name", "placeholder", "scrub_argv", "scrub_command_url", "scrub_text", "scrub_url"]
