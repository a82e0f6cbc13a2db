"""Errors of the host-configuration code (level 3)."""

from mcptap.errors import McptapError


class ConfigError(McptapError):
    """A host configuration cannot be wrapped or unwrapped as asked: no MCP
    server section, a server name not in it, an entry of the wrong shape."""


class ConfigSyntaxError(ConfigError):
    """The configuration does not parse (JSON/JSONC or TOML); the message
    gives line and column."""
