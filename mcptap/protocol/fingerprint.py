"""Fingerprint of the annotation rules (pure; reads this package's own files).

A capture records the fingerprint of the rules that annotated it (header
field ``rules``). Annotations are a cache (design principle 4): when a
capture's fingerprint equals the running mcptap's, re-annotating it would
reproduce the recorded annotations exactly, so ``check``/``show`` reuse them
and only add what the live tap does not compute (schema shape checks). Any
change to a rule module or to the method table changes the fingerprint.
"""

from __future__ import annotations

import hashlib
import pkgutil
from functools import lru_cache

#: Modules whose code decides annotations (besides the data table).
_RULE_MODULES = ("annotate", "annotator_state", "capabilities", "codes", "conventions", "contracts", "framing", "framing_facts", "jsonrpc", "lifecycle",
                 "pairing", "process_rules", "rules", "http_rules", "http_memory", "http_answers", "http_judge", "http_replay", "session_book", "sse",
                 "sse_block", "http_fields", "urls", "jsonparse", "skeleton", "utf8", "sse_rules", "excerpt", "gap_pending",
                 "content_coding", "pending", "idless_answers", "code_table", "code_table_transport")


@lru_cache(maxsize=1)
def rules_fingerprint() -> str:
    """``sha256:<16 hex>`` over the rule modules' source and the method table;
    ``""`` when the sources cannot be read (then no capture matches)."""
    h = hashlib.sha256()
    parts = [("mcptap.protocol", f"{name}.py") for name in _RULE_MODULES] + [("mcptap.protocol", "data/mcp-methods.json")]
    parts += [("mcptap", "recorder.py"), ("mcptap", "recording.py"), ("mcptap", "reannotate.py")]
    try:
        for package, name in parts:
            # pkgutil, not importlib.resources: its readers import zipfile into every tap (0.35 MiB)
            data = pkgutil.get_data(package, name)
            if data is None:
                return ""
            h.update(data)
    except OSError:
        return ""
    return "sha256:" + h.hexdigest()[:16]
