"""The one table of MCP protocol versions: era, features and schema dialect of each.

Sans-I/O (layer 1). Every other place asks this table instead of comparing version strings
(the session, the message checker, the schema compiler's default dialect, the client
capabilities, the fake server's list through a test). A feature is named once here, with
the version that brought it (or took it away, for batches).

Eras: ``legacy`` is the ``initialize`` handshake era (2024-11-05 .. 2025-11-25). The next
era (2026-07-28: ``server/discover``, per-request ``_meta``, multi-round-trip requests) gets
its own rows and module beside ``legacy`` when it is supported.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = [
    "Version",
    "VERSIONS",
    "SUPPORTED_VERSIONS",
    "LATEST_VERSION",
    "get",
    "is_supported",
]


@dataclass(frozen=True)
class Version:
    """What one protocol version has."""

    name: str
    era: str
    #: JSON Schema dialect of schemas without ``$schema`` (tool inputSchema/outputSchema).
    schema_dialect: str
    #: JSON-RPC batches (added in 2025-03-26, removed in 2025-06-18).
    batches: bool = False
    #: Audio content, tool annotations, completions capability flag, progress messages.
    annotations: bool = False
    #: ``elicitation/create`` (form mode).
    elicitation: bool = False
    #: ``elicitation/create`` in URL mode, ``notifications/elicitation/complete``.
    elicitation_url: bool = False
    #: ``structuredContent``/``outputSchema``, resource links, ``title`` fields,
    #: ``context`` in completion requests, ``MCP-Protocol-Version`` on HTTP.
    structured_content: bool = False
    #: Tasks (``tasks/*``, task-augmented requests), ``sampling.tools``, icons.
    tasks: bool = False
    #: The server capability ``completions`` is declared (before: completion had no flag).
    completions_flag: bool = False
    #: An error response may lack the id of a request whose id could not be read.
    error_id_optional: bool = False


_TABLE: Final = (
    Version(
        "2025-11-25", "legacy", "2020-12", annotations=True, elicitation=True,
        elicitation_url=True, structured_content=True, tasks=True, completions_flag=True, error_id_optional=True,
    ),
    Version(
        "2025-06-18", "legacy", "draft-07", annotations=True, elicitation=True,
        structured_content=True, completions_flag=True,
    ),
    Version("2025-03-26", "legacy", "draft-07", batches=True, annotations=True, completions_flag=True),
    Version("2024-11-05", "legacy", "draft-07"),
)

#: Every supported version by name.
VERSIONS: Final[dict[str, Version]] = {v.name: v for v in _TABLE}
#: Newest first: the first is what the client offers.
SUPPORTED_VERSIONS: Final[tuple[str, ...]] = tuple(v.name for v in _TABLE)
LATEST_VERSION: Final = SUPPORTED_VERSIONS[0]
#: Answers for a version that is not (yet) negotiated: nothing is assumed.
_NONE: Final = Version("", "none", "draft-07")


def get(version: str | None) -> Version:
    """The row of ``version``; an unknown or absent version has no feature at all."""
    if version is None:
        return _NONE
    return VERSIONS.get(version, _NONE)


def is_supported(version: object) -> bool:
    return isinstance(version, str) and version in VERSIONS
