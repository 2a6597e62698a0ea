"""The one table of MCP protocol versions: era, features and schema dialect of each.

Sans-I/O (layer 1). Every other place asks this table instead of comparing version strings
(the session, the message checker, the schema compiler's default dialect, the client
capabilities, the fake server's list through a test). A feature is named once here, with
the version that brought it (or took it away, for batches).

Eras: ``legacy`` is the ``initialize`` handshake era (2024-11-05 .. 2025-11-25), whose
rules are :mod:`.legacy`; ``modern`` is the stateless era (2026-07-28: ``server/discover``,
per-request ``_meta``, multi-round-trip requests, ``subscriptions/listen``), whose rules are
:mod:`.modern`. ``SUPPORTED_VERSIONS`` are the handshake versions (what ``initialize``
offers, newest first); ``MODERN_VERSIONS`` the stateless ones (what ``server/discover``
offers, newest first); ``ALL_VERSIONS`` both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "Version",
    "VERSIONS",
    "SUPPORTED_VERSIONS",
    "LATEST_VERSION",
    "MODERN_VERSIONS",
    "LATEST_MODERN_VERSION",
    "ALL_VERSIONS",
    "ERAS",
    "PROTOCOL_SETTINGS",
    "protocol_choice",
    "get",
    "is_supported",
    "declares",
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
    #: ``roots.listChanged`` and ``notifications/roots/list_changed`` (gone in 2026-07-28).
    roots_list_changed: bool = False
    #: The stateless era (2026-07-28): no ``initialize``; ``server/discover``; the version,
    #: client capabilities and client info in every request's ``_meta``; ``resultType``.
    stateless: bool = False
    #: Multi-round-trip requests: ``InputRequiredResult`` (``inputRequests``,
    #: ``requestState``) instead of server-to-client requests.
    input_requests: bool = False
    #: ``subscriptions/listen`` instead of ``resources/subscribe`` and the GET stream.
    listen: bool = False
    #: ``ttlMs``/``cacheScope`` on cacheable results.
    cache_hints: bool = False
    #: HTTP ``Mcp-Method``, ``Mcp-Name``, ``Mcp-Param-*`` (from ``x-mcp-header``) headers.
    request_headers: bool = False
    #: Tasks as the extension ``io.modelcontextprotocol/tasks`` (``tasks/get``,
    #: ``tasks/update``, ``tasks/cancel``) rather than in the core.
    task_extension: bool = False

    @property
    def modern(self) -> bool:
        return self.era == "modern"


_TABLE: Final = (
    Version(
        "2026-07-28", "modern", "2020-12", annotations=True, elicitation=True, elicitation_url=True,
        structured_content=True, completions_flag=True, error_id_optional=True, stateless=True,
        input_requests=True, listen=True, cache_hints=True, request_headers=True, task_extension=True,
    ),
    Version(
        "2025-11-25", "legacy", "2020-12", annotations=True, elicitation=True, elicitation_url=True,
        structured_content=True, tasks=True, completions_flag=True, error_id_optional=True,
        roots_list_changed=True,
    ),
    Version(
        "2025-06-18", "legacy", "draft-07", annotations=True, elicitation=True,
        structured_content=True, completions_flag=True, roots_list_changed=True,
    ),
    Version("2025-03-26", "legacy", "draft-07", batches=True, annotations=True, completions_flag=True,
            roots_list_changed=True),
    Version("2024-11-05", "legacy", "draft-07", roots_list_changed=True),
)

#: The eras, in the order the ``protocol`` setting names them.
ERAS: Final = ("legacy", "modern")
#: Every supported version by name.
VERSIONS: Final[dict[str, Version]] = {v.name: v for v in _TABLE}
#: The handshake versions, newest first: the first is what ``initialize`` offers.
SUPPORTED_VERSIONS: Final[tuple[str, ...]] = tuple(v.name for v in _TABLE if v.era == "legacy")
LATEST_VERSION: Final = SUPPORTED_VERSIONS[0]
#: The stateless versions, newest first: the first is what ``server/discover`` offers.
MODERN_VERSIONS: Final[tuple[str, ...]] = tuple(v.name for v in _TABLE if v.era == "modern")
LATEST_MODERN_VERSION: Final = MODERN_VERSIONS[0]
#: Every version, newest first.
ALL_VERSIONS: Final[tuple[str, ...]] = tuple(v.name for v in _TABLE)
#: Answers for a version that is not (yet) negotiated: nothing is assumed.
_NONE: Final = Version("", "none", "draft-07")


def get(version: str | None) -> Version:
    """The row of ``version``; an unknown or absent version has no feature at all."""
    if version is None:
        return _NONE
    return VERSIONS.get(version, _NONE)


def is_supported(version: object) -> bool:
    return isinstance(version, str) and version in VERSIONS


#: The words of a server's ``protocol`` setting, besides an exact version.
PROTOCOL_SETTINGS: Final = ("auto", "legacy", "modern")


def protocol_choice(setting: str) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """What a server's ``protocol`` setting asks: ``(mode, handshake versions, modern
    versions)``; ``mode`` is ``auto`` (probe, then either era), ``legacy`` or ``modern``. An
    exact version is that version only, in its era.

    Raises:
        ValueError: the setting is none of the words nor a supported version.
    """
    if setting == "auto":
        return "auto", SUPPORTED_VERSIONS, MODERN_VERSIONS
    if setting == "legacy":
        return "legacy", SUPPORTED_VERSIONS, ()
    if setting == "modern":
        return "modern", (), MODERN_VERSIONS
    row = VERSIONS.get(setting)
    if row is None:
        raise ValueError(f"expected one of {', '.join(PROTOCOL_SETTINGS)} or a protocol version "
                         f"({', '.join(ALL_VERSIONS)})")
    if row.era == "modern":
        return "modern", (), (setting,)
    return "legacy", (setting,), ()


def declares(capabilities: Mapping[str, Any], name: str, sub: str | None = None) -> bool:
    """Did a peer declare capability ``name`` (and the ``sub`` flag inside it) in ``capabilities``?
    (The same question in both eras: ``initialize``'s and ``server/discover``'s capabilities.)"""
    cap = capabilities.get(name)
    if cap is None or cap is False:
        return False
    if sub is None:
        return True
    return isinstance(cap, dict) and bool(cap.get(sub))

