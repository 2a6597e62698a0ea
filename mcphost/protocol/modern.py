"""The MCP session, modern (stateless) era: 2026-07-28 rules, beside :mod:`.legacy`.

Sans-I/O (layer 1). There is no handshake: every request carries, in ``params._meta``, the
protocol version, the client's capabilities and its info (spec 2026-07-28 "Base Protocol";
:func:`request_meta`, :func:`with_meta`). ``server/discover`` tells the server's versions,
capabilities and instructions (:class:`ModernSession`, the same questions the legacy
``Session`` answers, so the client session asks either without knowing the era).

What else this module decides, with no I/O:

- ``resultType``: absent means ``complete`` (older servers); ``input_required`` is an
  interim result of ``tools/call``, ``prompts/get`` or ``resources/read``; anything else is
  invalid (:func:`result_type`).
- Multi-round-trip requests (MRTR, :func:`input_round`, :func:`retry_params`): every
  ``inputRequests`` entry (``elicitation/create``, ``sampling/createMessage``, ``roots/list``)
  is fulfilled, then the request is sent again — with a new id, chosen by the caller — with
  the same params plus ``inputResponses`` and ``requestState`` echoed byte for byte (never
  added when the server gave none). Rounds of one request are bounded (``max_rounds``,
  :data:`DEFAULT_MAX_ROUNDS`), as is the number of input requests in one round.
- ``-32022`` (unsupported protocol version): :func:`unsupported_versions` reads
  ``data.supported``; :func:`pick_version` chooses the newest mutual version.
- HTTP headers (spec 2026-07-28 "Streamable HTTP", SEP-2243): ``Mcp-Method`` on every
  request, ``Mcp-Name`` on ``tools/call``/``prompts/get``/``resources/read``, and
  ``Mcp-Param-<Name>`` for each ``inputSchema`` property annotated ``x-mcp-header``
  (:func:`header_problem` judges the annotations of a tool — a tool with an invalid one is
  not offered —, :func:`header_map` collects them, :func:`request_headers` builds the
  headers: integers in decimal, booleans ``true``/``false``, nulls and absent values
  omitted, a value HTTP cannot carry as is sent as ``=?base64?<UTF-8 in base64>?=``).
"""

from __future__ import annotations

import base64
import enum
import math
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from ..errors import ProtocolError
from . import versions as _versions
from .versions import MODERN_VERSIONS

__all__ = [
    "META_VERSION",
    "META_CAPABILITIES",
    "META_CLIENT_INFO",
    "META_LOG_LEVEL",
    "META_SERVER_INFO",
    "HEADER_MISMATCH",
    "MISSING_CAPABILITY",
    "UNSUPPORTED_VERSION",
    "MODERN_ERRORS",
    "COMPLETE",
    "INPUT_REQUIRED",
    "TASK",
    "TASKS_EXTENSION",
    "TERMINAL",
    "INPUT_METHODS",
    "MULTI_ROUND_METHODS",
    "DEFAULT_MAX_ROUNDS",
    "MAX_INPUT_REQUESTS",
    "State",
    "InputRound",
    "ModernSession",
    "request_meta",
    "with_meta",
    "result_type",
    "input_round",
    "required_capabilities",
    "retry_params",
    "unsupported_versions",
    "pick_version",
    "header_problem",
    "header_map",
    "encode_header_value",
    "request_headers",
    "NAME_PARAM",
    "SENTINEL",
]

META_VERSION: Final = "io.modelcontextprotocol/protocolVersion"
META_CAPABILITIES: Final = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO: Final = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL: Final = "io.modelcontextprotocol/logLevel"
META_SERVER_INFO: Final = "io.modelcontextprotocol/serverInfo"

#: HTTP headers and the body disagree, or a required header is missing.
HEADER_MISMATCH: Final = -32020
#: The request needs a client capability the request did not declare.
MISSING_CAPABILITY: Final = -32021
#: The server does not serve the requested version (``data.supported``, ``data.requested``).
UNSUPPORTED_VERSION: Final = -32022
#: Error codes only a modern server sends: proof of the era, never a reason to fall back.
MODERN_ERRORS: Final = frozenset({HEADER_MISMATCH, MISSING_CAPABILITY, UNSUPPORTED_VERSION})

COMPLETE: Final = "complete"
INPUT_REQUIRED: Final = "input_required"
#: A ``CreateTaskResult`` of the tasks extension (only to a client that opted in).
TASK: Final = "task"
#: The tasks extension's id (``capabilities.extensions``).
TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"
#: Task states after which nothing changes.
TERMINAL: Final = frozenset({"completed", "failed", "cancelled"})
#: The methods an ``inputRequests`` entry may name (with the legacy params and results).
INPUT_METHODS: Final = frozenset({"elicitation/create", "sampling/createMessage", "roots/list"})
#: The requests that may be answered ``input_required``.
MULTI_ROUND_METHODS: Final = frozenset({"tools/call", "prompts/get", "resources/read"})
#: Rounds of one request at most (the first included): a server cannot keep it going forever.
DEFAULT_MAX_ROUNDS: Final = 8
#: Input requests in one round at most: each costs an application handler.
MAX_INPUT_REQUESTS: Final = 32
#: The client capability an input request needs.
_NEEDS: Final = {"elicitation/create": "elicitation", "sampling/createMessage": "sampling", "roots/list": "roots"}
#: The param whose value ``Mcp-Name`` carries, by method.
NAME_PARAM: Final = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri",
                     # SEP-2663, "Streamable HTTP: Routing Headers": Mcp-Name is the task id.
                     "tasks/get": "taskId", "tasks/update": "taskId", "tasks/cancel": "taskId"}


class State(enum.Enum):
    NEW = "new"
    DISCOVERING = "discovering"
    READY = "ready"
    FAILED = "failed"
    CLOSED = "closed"


def request_meta(
    version: str, capabilities: Mapping[str, Any], client_info: Mapping[str, Any] | None,
    log_level: str | None = None,
) -> dict[str, Any]:
    """The ``_meta`` members every request of ``version`` carries."""
    meta: dict[str, Any] = {META_VERSION: version, META_CAPABILITIES: dict(capabilities)}
    if client_info is not None:
        meta[META_CLIENT_INFO] = dict(client_info)
    if log_level is not None:
        meta[META_LOG_LEVEL] = log_level
    return meta


def with_meta(params: dict[str, Any] | None, meta: Mapping[str, Any], owned: bool) -> dict[str, Any]:
    """``params`` with ``meta`` merged into its ``_meta`` (ours win over the caller's for the
    same key; the caller's others, ``progressToken`` say, stay). ``params`` itself is written
    only when ``owned``; a modern request always has params (``_meta`` is required)."""
    if params is None:
        return {"_meta": dict(meta)}
    old = params.get("_meta")
    merged = {**old, **meta} if type(old) is dict and old else dict(meta)
    if owned:
        params["_meta"] = merged
        return params
    return {**params, "_meta": merged}


def result_type(method: str, result: Any, tasks: bool = False) -> str:
    """``complete``, ``input_required`` (only where the spec allows it), ``task`` (only to a
    client that opted in to the tasks extension, ``tasks``); else ProtocolError.

    Spec: "A client MUST treat an absent resultType as complete ... an unrecognized value as
    invalid"."""
    if type(result) is not dict:
        return COMPLETE  # the caller's shape checks say what is wrong with it
    kind = result.get("resultType", COMPLETE)
    if kind == COMPLETE:
        return COMPLETE
    if kind == INPUT_REQUIRED and method in MULTI_ROUND_METHODS:
        return INPUT_REQUIRED
    if kind == TASK and tasks and isinstance(result.get("taskId"), str):
        return TASK
    raise ProtocolError(f"{method} answered with resultType {str(kind)[:60]!r}, which the client does not know")


@dataclass(frozen=True)
class InputRound:
    """One ``InputRequiredResult``: what to ask the application, what to echo."""

    #: key → (method, params), in the server's order.
    requests: dict[str, tuple[str, dict[str, Any]]]
    #: ``requestState`` exactly as received (``None``: none was given, none is sent).
    state: Any


def input_round(result: dict[str, Any], client_caps: Mapping[str, Any]) -> InputRound:
    """Judge an ``input_required`` result; ProtocolError when it asks what it may not."""
    requests = result.get("inputRequests")
    state = result.get("requestState")
    if requests is None and state is None:
        raise ProtocolError("an input_required result has neither inputRequests nor requestState")
    if state is not None and not isinstance(state, str):
        raise ProtocolError("requestState is not a string")
    if requests is None:
        requests = {}
    if not isinstance(requests, dict):
        raise ProtocolError("inputRequests is not an object")
    if len(requests) > MAX_INPUT_REQUESTS:
        raise ProtocolError(f"{len(requests)} input requests in one round (at most {MAX_INPUT_REQUESTS})")
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    for key, request in requests.items():
        if not isinstance(request, dict) or not isinstance(request.get("method"), str):
            raise ProtocolError(f"input request {key[:60]!r} has no method")
        method = request["method"]
        if method not in INPUT_METHODS:
            raise ProtocolError(f"input request {key[:60]!r} asks for {method[:60]!r}, which is not an input request")
        if _NEEDS[method] not in client_caps:
            raise ProtocolError(f"input request {key[:60]!r} asks for {method} but the client did not declare "
                                f"{_NEEDS[method]!r}")
        params = request.get("params", {})
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise ProtocolError(f"input request {key[:60]!r} has params that are not an object")
        out[key] = (method, params)
    return InputRound(out, state)


def retry_params(params: dict[str, Any] | None, responses: Mapping[str, Any], state: Any) -> dict[str, Any]:
    """The params of the next round: the original ones (a copy, without an earlier round's
    answers), ``inputResponses``, and ``requestState`` when the server gave one."""
    out = {k: v for k, v in (params or {}).items() if k not in ("inputResponses", "requestState")}
    if responses:
        out["inputResponses"] = dict(responses)
    if state is not None:
        out["requestState"] = state
    return out


def required_capabilities(data: Any) -> tuple[str, ...]:
    """The client capabilities a ``-32021`` error's ``data.requiredCapabilities`` names: its
    keys, an extension as ``extensions/<id>`` (at most 16, each at most 100 characters)."""
    found = data.get("requiredCapabilities") if isinstance(data, dict) else None
    if not isinstance(found, dict):
        return ()
    names: list[str] = []
    for key, value in list(found.items())[:16]:
        if key == "extensions" and isinstance(value, dict) and value:
            names += [f"extensions/{ext}"[:100] for ext in list(value)[:16]]
        else:
            names.append(str(key)[:100])
    return tuple(names[:16])


def unsupported_versions(data: Any) -> tuple[str, ...] | None:
    """The versions a ``-32022`` error's ``data.supported`` names (``None``: unreadable)."""
    if not isinstance(data, dict):
        return None
    supported = data.get("supported")
    if not isinstance(supported, list):
        return None
    return tuple(v for v in supported[:64] if isinstance(v, str))


def pick_version(supported: tuple[str, ...], ours: tuple[str, ...] = MODERN_VERSIONS) -> str | None:
    """The newest of ``ours`` the server supports (``None``: none)."""
    for version in ours:
        if version in supported:
            return version
    return None


class ModernSession:
    """What ``server/discover`` told, and the questions asked of a modern session (no I/O).

    The same attributes and questions as :class:`~mcphost.protocol.legacy.Session`, so the
    client session and the host ask them without knowing the era.
    """

    def __init__(
        self,
        *,
        client_info: Mapping[str, Any],
        capabilities_for: Callable[[str], dict[str, Any]] | None = None,
        versions: tuple[str, ...] = MODERN_VERSIONS,
    ) -> None:
        if not versions:
            raise ValueError("at least one protocol version is needed")
        self.state = State.NEW
        self.versions = versions
        self.client_info = dict(client_info)
        self._capabilities_for = capabilities_for
        self.protocol_version: str | None = None
        self.version = _versions.get(None)
        self.server_capabilities: dict[str, Any] = {}
        self.server_info: dict[str, Any] | None = None
        self.instructions: str | None = None
        self.client_caps: dict[str, Any] = {}
        #: What the server said it supports (``supportedVersions``).
        self.supported_versions: tuple[str, ...] = ()
        #: The ``_meta`` every request carries (built per version, the log level included).
        self.meta: dict[str, Any] = {}
        self.log_level: str | None = None

    def discover_params(self, version: str | None = None) -> dict[str, Any]:
        """Params of ``server/discover`` at ``version`` (default: the newest offered)."""
        if self.state not in (State.NEW, State.DISCOVERING):
            raise ProtocolError(f"server/discover called in state {self.state.value}")
        self.use(version or self.versions[0])
        self.state = State.DISCOVERING
        return {"_meta": dict(self.meta)}

    def use(self, version: str) -> None:
        """Speak ``version`` from now on (the ``_meta`` of every request follows)."""
        self.protocol_version = version
        self.version = _versions.get(version)
        self.client_caps = self._capabilities_for(version) if self._capabilities_for else {}
        self._rebuild()

    def set_log_level(self, level: str | None) -> None:
        """``io.modelcontextprotocol/logLevel`` on every later request (``None``: none)."""
        self.log_level = level
        self._rebuild()

    def _rebuild(self) -> None:
        info = dict(self.client_info)
        self.meta = request_meta(str(self.protocol_version), self.client_caps, info, self.log_level)

    def accept_discover_result(self, result: Any) -> None:
        """Judge the ``DiscoverResult``; READY on success, else ProtocolError (FAILED)."""
        try:
            if not isinstance(result, dict):
                raise ProtocolError("server/discover result is not an object")
            result_type("server/discover", result)
            supported = result.get("supportedVersions")
            if not isinstance(supported, list) or not all(isinstance(v, str) for v in supported):
                raise ProtocolError("server/discover result has no supportedVersions list")
            caps = result.get("capabilities", {})
            if caps is None:
                caps = {}
            if not isinstance(caps, dict):
                raise ProtocolError("server/discover result capabilities is not an object")
            instructions = result.get("instructions")
            if instructions is not None and not isinstance(instructions, str):
                raise ProtocolError("server/discover result instructions is not a string")
            meta = result.get("_meta")
            info = meta.get(META_SERVER_INFO) if isinstance(meta, dict) else None
            if info is None:
                info = result.get("serverInfo")  # some servers put it at the top
            if info is not None and not isinstance(info, dict):
                raise ProtocolError("server/discover result serverInfo is not an object")
            if self.protocol_version not in supported:
                mutual = pick_version(tuple(supported[:64]), self.versions)
                if mutual is None:
                    raise ProtocolError(
                        f"the server supports {', '.join(str(v) for v in supported[:8]) or 'no version'}; "
                        f"the client speaks {', '.join(self.versions)}"
                    )
                self.use(mutual)
        except ProtocolError:
            self.state = State.FAILED
            raise
        self.supported_versions = tuple(supported[:64])
        self.server_capabilities = caps
        self.server_info = info
        self.instructions = instructions
        self.state = State.READY

    def fail(self) -> None:
        self.state = State.FAILED

    def close(self) -> None:
        self.state = State.CLOSED

    def has_capability(self, name: str, sub: str | None = None) -> bool:
        return _versions.declares(self.server_capabilities, name, sub)

    def supports_completions(self) -> bool:
        return self.has_capability("completions")

    @property
    def batches_allowed(self) -> bool:
        return False

    @property
    def has_elicitation(self) -> bool:
        return True

    @property
    def has_structured_content(self) -> bool:
        return True

    @property
    def has_tasks(self) -> bool:
        return False  # tasks are an extension in this era

    def accepts_server_request(self, method: str) -> bool:
        """A modern server sends no requests (they are ``inputRequests`` now)."""
        return False


# -- HTTP headers -----------------------------------------------------------------------------

_X_MCP_HEADER: Final = "x-mcp-header"
#: RFC 9110 token: the characters of an HTTP field name.
_TOKEN: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
#: What a header value carries as it is: visible ASCII and inner spaces.
_SAFE_VALUE: Final = re.compile(r"[\x20-\x7e]*")
SENTINEL: Final = re.compile(r"=\?base64\?.*\?=", re.DOTALL)
_PRIMITIVE: Final = frozenset({"string", "integer", "boolean"})
# JSON Schema applicators: their subschemas are schema positions off the ``properties`` chain.
_ONE: Final = frozenset({"items", "contains", "unevaluatedItems", "additionalProperties", "propertyNames",
                         "unevaluatedProperties", "not", "if", "then", "else", "contentSchema"})
_LIST: Final = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_MAP: Final = frozenset({"patternProperties", "dependentSchemas", "$defs", "definitions"})
#: Schema positions visited at most (a hostile schema is bounded before it costs much).
_MAX_POSITIONS: Final = 10_000


def _positions(root: Any) -> Iterator[tuple[tuple[str, ...] | None, dict[str, Any]]]:
    """Every schema position of ``root`` with its pure ``properties`` path (``None`` once
    another applicator was crossed). ``$ref`` is never followed."""
    stack: list[tuple[tuple[str, ...] | None, Any]] = [((), root)]
    seen = 0
    while stack and seen < _MAX_POSITIONS:
        path, node = stack.pop()
        if type(node) is not dict:
            continue
        seen += 1
        yield path, node
        for key, value in node.items():
            if key == "properties" and type(value) is dict:
                stack.extend(((*path, name) if path is not None else None, sub) for name, sub in value.items())
            elif key in _ONE:
                stack.append((None, value))
            elif key in _LIST and type(value) is list:
                stack.extend((None, sub) for sub in value)
            elif key in _MAP and type(value) is dict:
                stack.extend((None, sub) for sub in value.values())


def header_problem(input_schema: Any) -> str | None:
    """Why the ``x-mcp-header`` annotations of ``input_schema`` are invalid (``None``: they
    are fine): a name that is empty, not an HTTP token, or a case-insensitive duplicate; on a
    type other than string, integer or boolean; off a pure ``properties`` chain."""
    seen: dict[str, str] = {}
    for path, schema in _positions(input_schema):
        if _X_MCP_HEADER not in schema:
            continue
        if not path:
            return "x-mcp-header is on a schema position that is not a property reached by `properties` alone"
        where = ".".join(path)[:80]
        name = schema[_X_MCP_HEADER]
        if not isinstance(name, str):
            return f"property {where!r}: x-mcp-header is a {type(name).__name__}, not a string"
        if not name:
            return f"property {where!r}: x-mcp-header is empty"
        if not _TOKEN.fullmatch(name):
            return f"property {where!r}: x-mcp-header {name[:60]!r} is not an HTTP token"
        kind = schema.get("type")
        if kind not in _PRIMITIVE:
            return f"property {where!r}: x-mcp-header on type {str(kind)[:30]!r} (only string, integer, boolean)"
        lower = name.lower()
        if lower in seen:
            return f"property {where!r}: x-mcp-header {name!r} repeats that of {seen[lower]!r}"
        seen[lower] = where
    return None


def header_map(input_schema: Any) -> dict[tuple[str, ...], str]:
    """The ``x-mcp-header`` name of each annotated property, by its ``properties`` path
    (for a schema :func:`header_problem` accepts)."""
    return {path: schema[_X_MCP_HEADER] for path, schema in _positions(input_schema)
            if path and isinstance(schema.get(_X_MCP_HEADER), str)}


def encode_header_value(value: str) -> str:
    """``value`` as is when HTTP carries it unchanged; else the base64 sentinel form."""
    if _SAFE_VALUE.fullmatch(value) and value == value.strip() and not SENTINEL.fullmatch(value):
        return value
    return "=?base64?" + base64.b64encode(value.encode("utf-8")).decode("ascii") + "?="


def _rendered(value: Any) -> str | None:
    if value is True:
        return "true"
    if value is False:
        return "false"
    if type(value) is str:
        return value
    if type(value) is int:
        return str(value) if value.bit_length() < 13_000 else None  # str() refuses past 4,300 digits
    if type(value) is float and math.isfinite(value):
        return repr(int(value)) if value.is_integer() else repr(value)
    return None


def request_headers(
    version: str, method: str, params: Mapping[str, Any] | None,
    headers_of_tool: Mapping[tuple[str, ...], str] | None = None,
) -> list[tuple[str, str]]:
    """The HTTP headers of one request: ``MCP-Protocol-Version``, ``Mcp-Method``, and
    ``Mcp-Name``/``Mcp-Param-*`` where they apply."""
    out = [("MCP-Protocol-Version", version), ("Mcp-Method", encode_header_value(method))]
    field = NAME_PARAM.get(method)
    if field is not None and params is not None:
        name = params.get(field)
        if type(name) is str:
            out.append(("Mcp-Name", encode_header_value(name)))
    if headers_of_tool and params is not None:
        arguments = params.get("arguments")
        for path, header in headers_of_tool.items():
            node: Any = arguments
            for key in path:
                node = node.get(key) if type(node) is dict else None
            rendered = _rendered(node) if node is not None else None
            if rendered is not None:
                out.append(("Mcp-Param-" + header, encode_header_value(rendered)))
    return out

