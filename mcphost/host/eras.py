"""The era each HTTP origin was found to speak, remembered for the life of the host.

Layer 4. The spec (2026-07-28, "talking to both eras") recommends caching the era detected
per server process (stdio) or per origin (HTTP), so that a reconnection does not probe
again. A stdio process is probed once per session, which lasts as long as the process (a
restarted server is a new process, probed anew): nothing to keep. An ``http`` server whose
``protocol`` is ``auto`` is probed on its first start; its origin's era is then kept and a
later start (a restart, a new configuration naming the same origin) speaks it at once:
``legacy`` sends ``initialize`` without ``server/discover``, a modern version sends
``server/discover`` at that version without the fallback. A start that fails in the
remembered era forgets it, so the next start probes again (a server upgraded or replaced).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from ..client.session import ClientSession
    from ..config.model import ServerConfig

__all__ = ["EraMemory"]

#: Origins remembered at most (a host reconfigured again and again stays bounded).
MAX_ORIGINS: Final = 1024
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


class EraMemory:
    """The ``protocol`` each ``auto`` http server is opened with, learned from its origin."""

    def __init__(self) -> None:
        self._known: dict[str, str] = {}

    def setting(self, config: ServerConfig) -> str:
        """The ``protocol`` to open ``config``'s server with: the remembered era of its
        origin when it is ``auto``, else its own setting."""
        chosen = config.protocol_setting
        key = _origin(config) if chosen == "auto" else None
        return self._known.get(key, chosen) if key is not None else chosen

    async def open(self, config: ServerConfig, session: ClientSession) -> None:
        """Open ``session`` and remember (or, when it fails, forget) its origin's era."""
        key = _origin(config) if config.protocol_setting == "auto" else None
        try:
            await session.open()
        except BaseException:
            if key is not None:
                self._known.pop(key, None)
            raise
        if key is None:
            return
        era = str(session.protocol_version) if session.era == "modern" else "legacy"
        if key not in self._known and len(self._known) >= MAX_ORIGINS:
            self._known.pop(next(iter(self._known)))
        self._known[key] = era


def _origin(config: ServerConfig) -> str | None:
    """``scheme://host:port`` of an ``http`` server's URL (``None``: not one, or unreadable)."""
    if config.type != "http" or not config.url:
        return None
    from urllib.parse import urlsplit  # with ipaddress, ~0.4 MB: an http server's, not every host's

    try:
        parts = urlsplit(config.url)
        port = parts.port or _DEFAULT_PORTS.get(parts.scheme.lower())
    except ValueError:
        return None
    if not parts.hostname:
        return None
    return f"{parts.scheme.lower()}://{parts.hostname.lower()}:{port}"
