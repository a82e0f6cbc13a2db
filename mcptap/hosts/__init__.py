"""Host configurations (level 3, pure): the dialects MCP hosts use to list
their servers, and wrapping their stdio (or, on request, URL) entries so the
host starts ``mcptap record`` in front of each server, and unwrapping them
again byte for byte.

* ``jsonc``: position-tracking JSON-with-comments reader (span splicing).
* ``dialects``: ``mcpServers`` JSON (Claude Desktop, Claude Code, Cursor,
  Windsurf, Gemini CLI), VS Code ``servers`` (JSONC), Zed
  ``context_servers``, Codex ``[mcp_servers.NAME]`` TOML; detection
  (``entries``: the shared types; ``json_dialect``, ``toml_dialect``: the two kinds).
* ``wrap``: the wrap/unwrap engine; ``memo``: its records (kept in a sidecar file by
  the CLI).
* ``tapline``: the wrapped command line (building it, reading one back,
  whoever wrote it) and the ``--http`` tap URLs and ports.
* ``locations``: each host's default configuration file per OS.

No file I/O here: the CLI (``mcptap/cli/wrap.py``, ``cli/hostfiles.py``)
reads and writes files, backups and sidecars.
"""
