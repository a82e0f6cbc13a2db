"""mcptap: a transparent recording proxy ("tap") for the Model Context Protocol."""

__version__ = "0.1.0"
