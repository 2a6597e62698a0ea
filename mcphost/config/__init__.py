"""Configuration: parsing, expansion and validation of ``mcp.json``.

This package owns the meaning of an ``mcp.json`` file: which dialects are accepted, which
fields a server entry may carry, how ``${...}`` references are expanded, and what is an
error. It turns text (or a dict built in code) into frozen :class:`HostConfig` /
:class:`ServerConfig` values, or raises :class:`~mcphost.errors.ConfigurationError` with a
message of the form ``mcp.json:12: servers.brave.env.BRAVE_API_KEY: ...``.

Its modules, each one concept:

- ``model``: the frozen values (``HostConfig``, ``ServerConfig``, ``Limits``...).
- ``jsonpos``: the JSON(C) reader that remembers the line of every value.
- ``schema_errors``: the bundled ``schemas/mcp.json.schema.json`` (types, required fields,
  names, transport keywords, unknown fields, ranges) and its errors in the loader's words.
- ``expand``: ``${...}`` references, ``~`` and relative paths; error reporting.
- ``dotenv``: the ``.env`` format of ``envFile``.
- ``entry``: one server entry (transport inference, expansion, checks of expanded values).
- ``load``: the document and the rules across servers; the public functions.
- ``urls``: which host names can be connected to, and the credentials a URL carries
  (found, and masked in any text).

It is layer 1 (no I/O): the environment, the user's home directory, the workspace folder,
the values of ``${input:...}`` prompts and a ``read_text(path)`` function (for ``envFile``)
are all passed in by the caller. (The schema itself is read from the package.) The full
format is described in ``docs/config.md``.

Messages never carry the value of a variable (it may be a secret) nor absolute paths: a
file is named by its base name; the full path is kept in the error's ``path`` attribute.
"""

from __future__ import annotations

from .load import config_from_data, parse_config, required_inputs
from .model import (
    DEFAULT_TIMEOUT,
    SERVER_NAME_PATTERN,
    AuthSettings,
    CacheSettings,
    HostConfig,
    InputSpec,
    Limits,
    ServerConfig,
    TlsSettings,
    ToolFilter,
    parse_memory,
)

__all__ = [
    "DEFAULT_TIMEOUT",
    "SERVER_NAME_PATTERN",
    "AuthSettings",
    "CacheSettings",
    "TlsSettings",
    "HostConfig",
    "InputSpec",
    "Limits",
    "ServerConfig",
    "ToolFilter",
    "config_from_data",
    "parse_config",
    "parse_memory",
    "required_inputs",
]
