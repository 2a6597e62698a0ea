"""The MCP session, legacy (handshake) era: version negotiation and capability rules.

Sans-I/O (layer 1). One :class:`Session` per server connection. It builds the
``initialize`` request, judges the server's answer, and from then on answers the questions
the connection and the host ask of the negotiated session: which features the version has,
which server capabilities were declared, which server requests the client can accept.

Theory of operation (spec, Base Protocol, "Lifecycle")::

    NEW --initialize_params()--> INITIALIZING --accept_initialize_result()--> READY
     |                                |                                         |
     +------------- fail() -----------+---------------> FAILED     close() --> CLOSED

- The client offers the newest version it speaks. "If the server supports the requested
  version it MUST echo it. Otherwise it returns another version it supports"; if the
  client does not support that one, "it SHOULD disconnect" — here: ``ProtocolError``
  naming both versions, and the state becomes FAILED (sticky).
- After the result, the client "MUST then send notifications/initialized".
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

from ..errors import ProtocolError
from . import versions as _versions
from .versions import LATEST_VERSION, SUPPORTED_VERSIONS

__all__ = [
    "SUPPORTED_VERSIONS",
    "LATEST_VERSION",
    "State",
    "Session",
    "client_capabilities",
]



class State(enum.Enum):
    NEW = "new"
    INITIALIZING = "initializing"
    READY = "ready"
    FAILED = "failed"
    CLOSED = "closed"


def client_capabilities(
    version: str,
    *,
    roots: bool = True,
    sampling: bool = False,
    sampling_tools: bool = False,
    elicitation_form: bool = False,
    elicitation_url: bool = False,
    task_requests: bool = False,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``ClientCapabilities`` to declare for ``version``: only what the host honours.

    Args:
        version: the version offered (shapes differ by version).
        roots: the host answers ``roots/list`` (it always can; the list may be empty).
        sampling: the application registered a sampling handler.
        sampling_tools: that handler accepts ``tools``/``toolChoice`` (2025-11-25+).
            (2026-07-28 shapes: ``roots`` without ``listChanged``, no core ``tasks``.)
        elicitation_form: an elicitation handler accepts form mode (2025-06-18+).
        elicitation_url: it accepts URL mode (2025-11-25+).
        task_requests: the host runs task-augmented sampling and elicitation requests as
            tasks the server follows (2025-11-25+): ``tasks`` is declared with ``list``,
            ``cancel`` and ``requests`` for each of the two the application serves.
        extra: merged last (e.g. ``experimental``).

    Tasks the host creates on servers (``tools/call`` as a task) need no client capability.
    """
    row = _versions.get(version)
    caps: dict[str, Any] = {}
    if roots:
        # 2026-07-28 dropped roots.listChanged (there is no session to tell).
        caps["roots"] = {"listChanged": True} if row.roots_list_changed else {}
    if sampling:
        sampling_caps: dict[str, Any] = {}
        if sampling_tools and (row.tasks or row.stateless):
            sampling_caps["tools"] = {}
        caps["sampling"] = sampling_caps
    if (elicitation_form or elicitation_url) and row.elicitation:
        if row.elicitation_url:
            elicitation: dict[str, Any] = {}
            if elicitation_form:
                elicitation["form"] = {}
            if elicitation_url:
                elicitation["url"] = {}
            caps["elicitation"] = elicitation
        elif elicitation_form:
            # 2025-06-18 knows only form mode, declared as an empty object.
            caps["elicitation"] = {}
    if task_requests and row.tasks:
        requests: dict[str, Any] = {}
        if "sampling" in caps:
            requests["sampling"] = {"createMessage": {}}
        if "elicitation" in caps:
            requests["elicitation"] = {"create": {}}
        if requests:
            caps["tasks"] = {"list": {}, "cancel": {}, "requests": requests}
    if task_requests and row.task_extension:
        # 2026-07-28: the host follows a task a server makes of any request (tasks/get,
        # tasks/update with the application's answers, tasks/cancel).
        caps["extensions"] = {"io.modelcontextprotocol/tasks": {}}
    if extra:
        caps.update(extra)
    return caps


class Session:
    """Negotiation and capability state of one MCP session (no I/O).

    Attributes:
        state: the lifecycle state.
        protocol_version: the negotiated version once READY.
        server_capabilities, server_info, instructions: from the initialize result.
        client_caps: what the client declared.
    """

    def __init__(
        self,
        *,
        client_info: Mapping[str, Any],
        capabilities_for: Any = None,
        versions: tuple[str, ...] = SUPPORTED_VERSIONS,
    ) -> None:
        if not versions:
            raise ValueError("at least one protocol version is needed")
        self.state = State.NEW
        self.versions = versions
        self.client_info = dict(client_info)
        self._capabilities_for = capabilities_for
        self.protocol_version: str | None = None
        #: The negotiated version's row of the versions table (no feature until READY).
        self.version = _versions.get(None)
        self.server_capabilities: dict[str, Any] = {}
        self.server_info: dict[str, Any] | None = None
        self.instructions: str | None = None
        self.client_caps: dict[str, Any] = {}

    # -- handshake -----------------------------------------------------------------------

    def initialize_params(self) -> dict[str, Any]:
        """Params of the ``initialize`` request; moves NEW → INITIALIZING."""
        if self.state is not State.NEW:
            raise ProtocolError(f"initialize called in state {self.state.value}")
        offered = self.versions[0]
        caps = self._capabilities_for(offered) if self._capabilities_for else {}
        self.client_caps = caps
        self.state = State.INITIALIZING
        info = dict(self.client_info)
        row = _versions.get(offered)
        if not row.structured_content:
            info.pop("title", None)
        if not row.tasks:
            for key in ("description", "icons", "websiteUrl"):
                info.pop(key, None)
        return {"protocolVersion": offered, "capabilities": caps, "clientInfo": info}

    def accept_initialize_result(self, result: Any) -> None:
        """Judge the server's ``InitializeResult``; READY on success, else ProtocolError."""
        if self.state is not State.INITIALIZING:
            raise ProtocolError(f"initialize result received in state {self.state.value}")
        try:
            if not isinstance(result, dict):
                raise ProtocolError("initialize result is not an object")
            version = result.get("protocolVersion")
            if not isinstance(version, str):
                raise ProtocolError("initialize result has no protocolVersion string")
            if version not in self.versions:
                raise ProtocolError(
                    f"server answered protocol version {version!r}; the client offered "
                    f"{self.versions[0]!r} and supports {', '.join(self.versions)}"
                )
            caps = result.get("capabilities", {})
            if caps is None:
                caps = {}
            if not isinstance(caps, dict):
                raise ProtocolError("initialize result capabilities is not an object")
            info = result.get("serverInfo")
            if info is not None and not isinstance(info, dict):
                raise ProtocolError("initialize result serverInfo is not an object")
            instructions = result.get("instructions")
            if instructions is not None and not isinstance(instructions, str):
                raise ProtocolError("initialize result instructions is not a string")
        except ProtocolError:
            self.state = State.FAILED
            raise
        if version != self.versions[0] and self._capabilities_for:
            # Declared capabilities follow the negotiated version's shapes from now on.
            self.client_caps = self._capabilities_for(version)
        self.protocol_version = version
        self.version = _versions.get(version)
        self.server_capabilities = caps
        self.server_info = info
        self.instructions = instructions
        self.state = State.READY

    def fail(self) -> None:
        self.state = State.FAILED

    def close(self) -> None:
        self.state = State.CLOSED

    # -- questions asked of a ready session -----------------------------------------------

    def has_capability(self, name: str, sub: str | None = None) -> bool:
        """Did the server declare capability ``name`` (and ``sub`` flag inside it)?"""
        return _versions.declares(self.server_capabilities, name, sub)

    def supports_completions(self) -> bool:
        # 2024-11-05 had no capability flag for completion; later versions declare it.
        if self.has_capability("completions"):
            return True
        return not self.version.completions_flag

    @property
    def batches_allowed(self) -> bool:
        """JSON-RPC batches exist only in 2025-03-26 (added then, removed in 2025-06-18)."""
        return self.version.batches

    @property
    def has_elicitation(self) -> bool:
        return self.version.elicitation

    @property
    def has_structured_content(self) -> bool:
        return self.version.structured_content

    @property
    def has_tasks(self) -> bool:
        return self.version.tasks

    def accepts_server_request(self, method: str) -> bool:
        """May the server send ``method`` to this client, given what the client declared?"""
        if method == "ping":
            return True
        if method == "roots/list":
            return "roots" in self.client_caps
        if method == "sampling/createMessage":
            return "sampling" in self.client_caps
        if method == "elicitation/create":
            return self.has_elicitation and "elicitation" in self.client_caps
        if method.startswith("tasks/"):
            return "tasks" in self.client_caps
        return True  # anything else goes to the application's generic callback
