"""Checking MCP messages against the schemas of the negotiated protocol version.

This module owns the question "is this message well-formed for protocol version V?" for
the four handshake versions the host negotiates (2024-11-05, 2025-03-26, 2025-06-18,
2025-11-25) and the stateless 2026-07-28. The rules are the JSON Schemas in ``schemas/mcp/`` (see the README there):
each version's file lists, per *kind* of message, every method of that version and the
schema of its params or result. Layer 1: no asyncio, no clock; the only I/O is reading
those bundled schema files once, on first use.

Two entry points:

- :class:`MessageChecker`, one per server connection, checks what the *server* sends: the
  results of the host's requests, the params of the server's requests and notifications.
  ``strict`` raises :class:`~mcphost.errors.ProtocolError`; ``lenient`` (the default) logs
  one WARNING per kind and method and lets the message through; ``off`` does nothing.
- :func:`outgoing_errors` lists the problems of a whole JSON-RPC message the *host* sends
  (used by tests to prove the host speaks each version correctly).

Decisions:

- A method absent from the version's table is not checked. That covers custom methods and
  methods of other versions (``elicitation/create`` on 2025-03-26): the connection answers
  a request it cannot serve with -32601 and ignores an unknown notification, which is what
  the spec asks; the checker does not second-guess it. :func:`outgoing_errors`, which
  judges the host itself, does report a method that belongs to another version.
- Absent ``params`` are checked as ``{}``: methods whose params may be omitted accept
  ``{}``, and the others report the first missing member.
- Unknown members are accepted everywhere, as the spec allows. A member a later version
  adds (``structuredContent``, ``title``...) is an unknown member in earlier versions.
- ``tasks/result`` returns "the original request's result": it is checked here only as a
  result object; a caller that knows the original method checks it again with that method.
- In lenient mode a (kind, method) that was reported once is no longer validated on that
  checker: nothing more would be logged, so the work is skipped.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Mapping
from typing import Any, Final

from .. import schema
from ..errors import ProtocolError, ValidationError
from ..schema.refs import join_uri
from . import versions

__all__ = ["KINDS", "MODES", "VERSIONS", "MessageChecker", "known_methods", "outgoing_errors"]

MODES: Final = ("strict", "lenient", "off")
#: Oldest first: the schema files of a version build on those of the versions before it
#: (the handshake era's, then the stateless era's).
VERSIONS: Final = tuple(reversed(versions.SUPPORTED_VERSIONS)) + tuple(reversed(versions.MODERN_VERSIONS))
# Who sends what, as named in the "methods" table of every version file.
KINDS: Final = (
    "server_result",  # result of a request the client made
    "server_task_result",  # CreateTaskResult: a task-augmented request answered with a task
    "server_request",  # params of a request the server sent
    "server_notification",  # params of a notification the server sent
    "client_request",
    "client_notification",
    "client_result",  # result the client returns to a server request
    "client_task_result",  # CreateTaskResult: the client runs a server's request as a task
)
_LABEL: Final = {
    "server_result": "result",
    "server_task_result": "task result",
    "server_request": "params",
    "server_notification": "params",
    "client_request": "params",
    "client_notification": "params",
    "client_result": "result",
    "client_task_result": "task result",
}
_BASE_URI: Final = "https://mcphost.dev/schemas/mcp/"

_lock = threading.Lock()
#: Each schema document's text by its ``$id``, and each version's method tables, read once.
_texts: dict[str, str] | None = None
_methods: dict[str, Any] = {}
_validators: dict[tuple[str, str, str], schema.Validator] = {}


def _schema_dir() -> str:
    """``schemas/mcp``: inside the installed package (wheel), else beside it (checkout).

    (``os.path``, not ``pathlib``: a host need not load pathlib for two paths.)"""
    here = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    for candidate in (os.path.join(here, "schemas", "mcp"), os.path.join(os.path.dirname(here), "schemas", "mcp")):
        if os.path.isfile(os.path.join(candidate, "common.json")):
            return candidate
    raise FileNotFoundError("the MCP message schemas (schemas/mcp) are not installed")


def _read() -> dict[str, str]:
    """Every schema document's text by its ``$id``, read once; the method tables parsed."""
    global _texts
    texts = _texts
    if texts is None:
        with _lock:
            if _texts is None:
                folder = _schema_dir()
                loaded = {}
                for name in ("common", *VERSIONS):
                    with open(os.path.join(folder, f"{name}.json"), encoding="utf-8") as f:
                        text = f.read()
                    uri = _BASE_URI + name + ".json"
                    _methods[uri] = json.loads(text).get("methods", {})
                    loaded[uri] = text
                _texts = loaded
            texts = _texts
    return texts


def _docs() -> dict[str, Any]:
    """Every schema document by its ``$id``, parsed afresh: kept only while a method's schema
    is compiled (the texts are a fifth of the parsed documents' size)."""
    return {uri: json.loads(text) for uri, text in _read().items()}


def _table(version: str, kind: str) -> Mapping[str, str]:
    """The version's ``{method: schema reference}`` for ``kind``."""
    if version not in VERSIONS:
        raise ValueError(f"unsupported MCP version {version!r}; expected one of {', '.join(VERSIONS)}")
    if kind not in _LABEL:
        raise ValueError(f"unknown message kind {kind!r}; expected one of {', '.join(KINDS)}")
    _read()
    table: Mapping[str, str] = _methods[_BASE_URI + version + ".json"][kind]
    return table


def known_methods(version: str, kind: str) -> tuple[str, ...]:
    """The methods the schemas of ``version`` describe for ``kind`` (one of :data:`KINDS`)."""
    return tuple(_table(version, kind))


def _validator(version: str, kind: str, method: str) -> schema.Validator | None:
    """The compiled schema for (version, kind, method), or ``None`` if the method is unknown.

    Compiled on first use and kept for the life of the process.
    """
    key = (version, kind, method)
    found = _validators.get(key)
    if found is not None:
        return found
    ref = _table(version, kind).get(method)
    if ref is None:
        return None
    target = join_uri(_BASE_URI + version + ".json", ref)
    docs = _used_definitions(target)
    # strict: a reference that does not resolve is an error, never a silent "anything goes".
    compiled = schema.compile({"$ref": target}, resources=docs, strict=True)
    with _lock:
        return _validators.setdefault(key, compiled)


def _used_definitions(target: str) -> dict[str, Any]:
    """The schema documents trimmed to the definitions ``target`` reaches through ``$ref``.

    A validator keeps its own copy of every document it is given (indexed, with a location
    per subschema): handing over the whole of ``common.json`` and four version files cost
    about 650 KB per compiled method; the definitions one method uses are a few KB. Every
    reference in these files reads ``[file]#/$defs/Name`` today; should one
    not, every document is handed over whole, which is always correct.
    """
    everything = _docs()
    kept: dict[str, dict[str, Any]] = {}
    pending = [target]
    while pending:
        uri, _, fragment = pending.pop().partition("#")
        doc = everything.get(uri)
        parts = fragment.split("/")
        if doc is None or len(parts) < 3 or parts[:2] != ["", "$defs"] or parts[2] not in doc["$defs"]:
            return {u: {k: v for k, v in d.items() if k != "methods"} for u, d in everything.items()}
        defs = kept.setdefault(uri, {})
        if parts[2] in defs:
            continue
        definition = defs[parts[2]] = doc["$defs"][parts[2]]
        pending += (join_uri(uri, ref) for ref in _refs(definition))
    return {
        uri: {**{k: v for k, v in everything[uri].items() if k not in ("methods", "$defs")}, "$defs": defs}
        for uri, defs in kept.items()
    }


def _refs(node: Any) -> list[str]:
    """Every ``$ref`` string anywhere inside ``node`` (over-collecting is harmless)."""
    found: list[str] = []
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            ref = item.get("$ref")
            if isinstance(ref, str):
                found.append(ref)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def _first_error(validator: schema.Validator, instance: Any) -> ValidationError:
    try:
        validator.validate(instance)  # stops at the first error
    except ValidationError as exc:
        return exc
    return ValidationError("$: does not match the schema")  # pragma: no cover - defensive


class MessageChecker:
    """Checks what one server sends against the schemas of the negotiated version.

    Args:
        server: the configured server name (used in messages).
        version: the negotiated protocol version, one of :data:`VERSIONS`.
        mode: ``"strict"`` (raise :class:`ProtocolError`), ``"lenient"`` (log a WARNING
            once per kind and method, then carry on) or ``"off"``.
        logger: where lenient mode logs; ``mcphost.protocol.messages`` by default.

    Raises:
        ValueError: unknown mode or version.

    Every check returns ``None`` when the message is valid (or not checked) and never
    modifies it. A message in strict mode reads
    ``tools/list result: $.tools[0]: missing required property 'name'``; the error's
    ``server`` is set (so ``str()`` starts with the server name) and its ``__cause__``
    is the :class:`~mcphost.errors.ValidationError` with ``.path`` and ``.keyword``.
    """

    __slots__ = (
        "_logger",
        "_notifications",
        "_off",
        "_replies",
        "_requests",
        "_results",
        "_strict",
        "_task_results",
        "mode",
        "plain_notifications",
        "plain_results",
        "server",
        "version",
    )

    def __init__(
        self,
        server: str,
        version: str,
        mode: str = "lenient",
        logger: logging.Logger | None = None,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
        _table(version, "server_result")  # validates the version
        self.server = server
        self.version = version
        self.mode = mode
        self._off = mode == "off"
        self._strict = mode == "strict"
        self._logger = logger if logger is not None else logging.getLogger(__name__)
        # Per kind: method -> validator; a method mapped to None is no longer checked
        # (lenient mode already reported it). Unknown methods are never stored.
        self._results: dict[str, schema.Validator | None] = {}
        self._task_results: dict[str, schema.Validator | None] = {}
        self._requests: dict[str, schema.Validator | None] = {}
        self._notifications: dict[str, schema.Validator | None] = {}
        self._replies: dict[tuple[str, str], schema.Validator | None] = {}
        #: Per method, a quick test that accepts the plainest valid form (a sufficient
        #: condition, never a necessary one). Callers on a hot path try it first and call
        #: :meth:`result` / :meth:`notification` only when it says no.
        self.plain_results: dict[str, Callable[[Any], bool]] = (
            {} if self._off else {"tools/call": _plain_call_result}
        )
        self.plain_notifications: dict[str, Callable[[Any], bool]] = (
            {} if self._off else {"notifications/progress": _plain_progress}
        )

    def result(self, method: str, result: Any, *, task: bool = False) -> None:
        """Check the result of a request the host made.

        Args:
            method: the request's method, e.g. ``tools/call``.
            result: the response's ``result`` member.
            task: the request was task-augmented and answered with a ``CreateTaskResult``.
        """
        if self._off:
            return
        if task:
            self._check(self._task_results, "server_task_result", method, result)
        else:
            self._check(self._results, "server_result", method, result)

    def request(self, method: str, params: Any) -> None:
        """Check the params of a request the server sent (``None`` when absent)."""
        if self._off:
            return
        self._check(self._requests, "server_request", method, {} if params is None else params)

    def notification(self, method: str, params: Any) -> None:
        """Check the params of a notification the server sent (``None`` when absent)."""
        if self._off:
            return
        self._check(
            self._notifications, "server_notification", method, {} if params is None else params
        )

    def reply(self, method: str, result: Any, *, task: bool = False) -> str | None:
        """What is wrong with ``result``, the host's answer to the server's ``method``
        request, or ``None`` when it is well-formed (or not checked: off mode, a method
        without a result schema).

        The host never sends a malformed answer: with a problem it replies with an error
        instead, whatever the mode other than off.
        """
        if self._off:
            return None
        kind = "client_task_result" if task else "client_result"
        key = (kind, method)
        validator = self._replies.get(key)
        if validator is None:
            if key in self._replies:
                return None
            validator = self._replies[key] = _validator(self.version, kind, method)
            if validator is None:
                return None
        if validator.is_valid(result):
            return None
        return f"{method} {_LABEL[kind]}: {_first_error(validator, result).message}"

    def _check(
        self, cache: dict[str, schema.Validator | None], kind: str, method: str, instance: Any
    ) -> None:
        validator = cache.get(method)
        if validator is None:
            if method in cache:
                return  # muted after a lenient report
            validator = _validator(self.version, kind, method)
            if validator is None:
                return  # not a method of this version: not checked
            cache[method] = validator
        if validator.is_valid(instance):
            return
        error = _first_error(validator, instance)
        text = f"{method} {_LABEL[kind]}: {error.message}"
        if self._strict:
            raise ProtocolError(text, server=self.server) from error
        cache[method] = None
        self._logger.warning("%s: %s (MCP %s)", self.server, text, self.version)


# Fast acceptance of the two messages that come with every call. Each function is a
# sufficient condition for validity in every version (tests compare them with the schemas):
# it accepts only the plainest form and sends anything else to the full schema check.


def _plain_call_result(result: Any) -> bool:
    """``{"content": [text blocks], "isError"?: bool}`` and nothing else.

    A fast path: ``True`` is exact, ``False`` only means "check it fully". Written for the
    interpreter's cheapest steps (a result is decoded JSON: its types are exact, and a
    missing member or a non-object raises, which is caught once rather than tested for
    on every member)."""
    try:
        content = result["content"]
        if content.__class__ is not list:
            return False
        if len(result) != 1 and (len(result) != 2 or result.get("isError").__class__ is not bool):
            return False
        for block in content:
            if block.__class__ is not dict or len(block) != 2 or block["type"] != "text" \
                    or block["text"].__class__ is not str:
                return False
        return True
    except (KeyError, TypeError, IndexError, AttributeError):
        return False


_NUMBER_TYPES: Final = frozenset((int, float))
_TOKEN_TYPES: Final = frozenset((int, str))


def _plain_progress(params: Any) -> bool:
    """``{"progressToken": str|int, "progress": number, "total"?: number, "message"?: str}``
    (a fast path written like :func:`_plain_call_result`: ``False`` means "check it fully")."""
    try:
        if (
            params["progress"].__class__ not in _NUMBER_TYPES
            or params["progressToken"].__class__ not in _TOKEN_TYPES
        ):
            return False
        size = len(params)
        if size == 2:
            return True
        if size == 3:  # one of the two optional members, valid
            return params.get("total").__class__ in _NUMBER_TYPES or params.get("message").__class__ is str
        return (
            size == 4
            and params.get("total").__class__ in _NUMBER_TYPES
            and params.get("message").__class__ is str
        )
    except (KeyError, TypeError, IndexError):
        return False


def _is_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _other_versions(method: str, kind: str, version: str) -> str | None:
    """A problem naming the versions that do have ``method`` for ``kind``, if any."""
    others = [v for v in VERSIONS if v != version and method in _table(v, kind)]
    if not others:
        return None
    return f"{method} is not a {kind.replace('_', ' ')} of MCP {version} (only of {', '.join(others)})"


def _schema_errors(version: str, kind: str, method: str, instance: Any) -> list[str]:
    validator = _validator(version, kind, method)
    if validator is None:
        other = _other_versions(method, kind, version)
        return [other] if other else []
    return [f"{method} {_LABEL[kind]}: {e.message}" for e in validator.iter_errors(instance)]


def outgoing_errors(
    version: str, message: Any, method: str | None = None, *, task: bool = False
) -> list[str]:
    """Every problem in a JSON-RPC message the host sends, for protocol ``version``.

    Args:
        version: the negotiated version, one of :data:`VERSIONS`.
        message: the whole message: a request, a notification or a response (a list is a
            batch, allowed only in 2025-03-26).
        method: for a response, the method of the server request it answers; without it
            only the envelope of a response is checked.
        task: that request was task-augmented (the answer is a ``CreateTaskResult``).

    Returns:
        Readable problems (an empty list when the message is well-formed), e.g.
        ``tools/call params: $.name: expected string, got integer 5``. Methods unknown to
        every version are not checked; a method of another version is a problem.
    """
    _table(version, "client_request")  # validates the version
    if isinstance(message, list):
        # Spec 2025-03-26 (JSON-RPC batching), removed in 2025-06-18: batches exist only there.
        problems = [] if versions.get(version).batches else [f"$: batches are not part of MCP {version}"]
        if not message:
            problems.append("$: a batch must not be empty")
        for i, item in enumerate(message):
            problems += [f"[{i}] {p}" for p in outgoing_errors(version, item, method, task=task)]
        return problems
    if not isinstance(message, dict):
        return ["$: a JSON-RPC message must be an object"]
    problems = []
    if message.get("jsonrpc") != "2.0":
        problems.append('$.jsonrpc: must be "2.0"')
    has_id = "id" in message
    if has_id and not _is_id(message["id"]):
        # Spec, Base Protocol, Requests: the id "MUST be a string or integer" and "MUST NOT be null".
        problems.append("$.id: must be a string or an integer")
    if "method" in message:
        name = message["method"]
        if not isinstance(name, str):
            return [*problems, "$.method: must be a string"]
        if "result" in message or "error" in message:
            problems.append("$: a request or notification carries no result or error")
        params = message.get("params")
        if "params" in message and not isinstance(params, dict):
            return [*problems, "$.params: must be an object"]
        kind = "client_request" if has_id else "client_notification"
        return problems + _schema_errors(version, kind, name, {} if params is None else params)
    if "result" in message and "error" in message:
        return [*problems, "$: a response carries either result or error, not both"]
    if "result" in message:
        if not has_id:
            problems.append("$: a response needs the id of its request")
        if method is not None:
            kind = "client_task_result" if task else "client_result"
            problems += _schema_errors(version, kind, method, message["result"])
        elif not isinstance(message["result"], dict):
            problems.append("$.result: must be an object")
        return problems
    if "error" in message:
        # An error response may lack its id (its request's id unreadable) from 2025-11-25 on.
        if not has_id and not versions.get(version).error_id_optional:
            problems.append("$: an error response needs the id of its request")
        error = message["error"]
        if not isinstance(error, dict):
            return [*problems, "$.error: must be an object"]
        code = error.get("code")
        if not isinstance(code, int) or isinstance(code, bool):
            problems.append("$.error.code: must be an integer")
        if not isinstance(error.get("message"), str):
            problems.append("$.error.message: must be a string")
        return problems
    return [*problems, "$: neither a request, a notification nor a response"]
