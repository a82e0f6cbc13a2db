"""mcptap's built-in demo peers: a small MCP stdio server and a scripted client.

Both are dependency-free (stdlib only) reference implementations of MCP
revision 2025-11-25 over stdio, written to be read: ``mcptap demo`` records a
real session between them through the tap, and the docs use them as the
"well-behaved peer" whose clean session yields no error or warn finding.

* ``python -m mcptap.demo.server`` — the server (see :mod:`mcptap.demo.server`);
* ``python -m mcptap.demo.client -- CMD ARGS…`` — spawns CMD and drives a
  scripted session against it (see :mod:`mcptap.demo.client`).
"""

#: The protocol revision both demo peers speak (spec basic/lifecycle).
PROTOCOL_VERSION = "2025-11-25"

#: Revisions the demo server accepts in ``initialize`` (oldest first); anything
#: else gets a counter-offer of ``PROTOCOL_VERSION``.
SUPPORTED_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
