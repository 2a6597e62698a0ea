"""The one exception tree of mcphost.

Every failure the library raises is an :class:`MCPHostError`; callers catch that root, or
one branch of it, and never a lower layer's ``OSError`` or ``json.JSONDecodeError``. The
first level says whose fault it is, so that an application (or a model's retry loop) knows
what to do: fix its own call, report the server, or wait for the connection::

    MCPHostError                      .server (None when not tied to one server)
    ├── CallerError                   the caller's mistake: fix the call, trying again won't help
    │   ├── ConfigurationError        .path, .line, .field   bad mcp.json
    │   ├── RoutingError              unknown server, tool, prompt or URI; ambiguous URI
    │   ├── ValidationError           .path, .keyword, .schema_path, .value   arguments vs inputSchema
    │   ├── PermissionDeniedError     (also a builtin PermissionError) the host's policy refused it
    │   └── UsageError                (also a ValueError) a bad option or argument, a wrong state
    ├── ServerFault                   the server's fault: it answered, and wrongly (or not at all)
    │   ├── ProtocolError             the server broke the protocol (JSON-RPC or MCP)
    │   │   └── OutputValidationError .path, .keyword, ...   structuredContent vs its own outputSchema
    │   ├── ServerError               .code, .message, .data   a JSON-RPC error the server sent
    │   └── TimeoutError              (also a builtin TimeoutError) no answer in time
    ├── ConnectionFault               the connection's: the server could not be reached or ran away
    │   ├── ServerStartupError        .stderr_tail, .failures  a server could not be started
    │   ├── ServerUnavailableError    .exit_code, .stderr_tail the server died / is not running
    │   └── TransportError            .http_status, .os_error  one exchange failed on the way
    └── SchemaError                   a JSON Schema that is itself invalid (whoever wrote it)

    RpcError (not an MCPHostError)    raised by the application's handlers of server requests
                                      to answer with a JSON-RPC error: .code, .message, .data

Decisions kept here so that they are kept everywhere:

- ``ValidationError`` is only ever the caller's (arguments, a value the application gave);
  a server whose ``structuredContent`` breaks its own ``outputSchema`` raises
  :class:`OutputValidationError`, a :class:`ProtocolError` because the specification makes
  conforming output the server's obligation ("servers MUST provide structured results that
  conform to this schema"). It is deliberately *not* a ``ValidationError``: a loop that
  corrects its arguments on ``ValidationError`` must not spin on a server's bug.
- ``ServerError`` is raised only for a JSON-RPC error object the server sent. A request
  that failed on the way (an HTTP status, a dropped connection, a stream that ended early)
  is a :class:`TransportError` naming the status or the socket error.
- ``UsageError`` is one class for every bad option or argument, raised where the mistake is
  made (the constructor, for an option). It stays a ``ValueError`` so that code written
  against ``Bounds`` and ``RetryPolicy`` when they raised ``ValueError`` keeps working.
- ``TimeoutError`` is the server's: it was reachable (the request went out) and did not
  answer in time. A server that cannot be reached at all is a ``ConnectionFault``.
- Errors are data: ``stderr_tail`` is an attribute, never glued to the message; ``str()``
  composes the two. An error is not changed after it is raised.

Messages are meant for the application: they name the server and the failure and never
carry absolute paths or secret values. Logs may hold the full detail.
"""

from __future__ import annotations

import builtins
import copy
from typing import Any, TypeVar

__all__ = [
    "MCPHostError",
    "CallerError",
    "ServerFault",
    "ConnectionFault",
    "ConfigurationError",
    "ServerStartupError",
    "ServerUnavailableError",
    "RoutingError",
    "ValidationError",
    "SchemaError",
    "TimeoutError",
    "ProtocolError",
    "ServerError",
    "OutputValidationError",
    "TransportError",
    "PermissionDeniedError",
    "UsageError",
    "RpcError",
]


_E = TypeVar("_E", bound="MCPHostError")


class MCPHostError(Exception):
    """Root of every error mcphost raises.

    Attributes:
        server: the configured name of the server concerned, or ``None``.
        errors: related failures: every schema error of a ``ValidationError``, every failed
            read of ``gather_resources(fail_fast=True)`` (``{"server", "uri", "error"}``).
    """

    errors: list[Any]

    def __init__(self, message: str, *, server: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.server = server
        self.errors = []

    def with_errors(self: _E, errors: list[Any]) -> _E:
        """A copy of this error carrying ``errors`` (this one is left as it was raised)."""
        made = copy.copy(self)
        made.errors = list(errors)
        return made

    def __str__(self) -> str:
        if self.server is not None and not self.message.startswith(f"{self.server}:"):
            return f"{self.server}: {self.message}"
        return self.message


#: What ``str()`` of an error puts between its message and its stderr tail (one line each
#: after it); the one place that writes it, for readers of ``str()`` (the command line).
TAIL_HEADING = "; last stderr lines:"


def _with_tail(message: str, tail: list[str]) -> str:
    """``message`` and then the last lines of a tail, as ``str()`` shows them."""
    if not tail:
        return message
    return message + TAIL_HEADING + "\n  " + "\n  ".join(tail[-10:])


class CallerError(MCPHostError):
    """The caller's own mistake (an option, an argument, a name, a configuration, a policy
    it set): nothing was sent to a server, and the same call will fail the same way."""


class ServerFault(MCPHostError):
    """The server's fault: it was reached, and answered wrongly (or not in time)."""


class ConnectionFault(MCPHostError):
    """The connection's fault: the server could not be started or reached, or went away.
    Another try (after a restart, or a while) may succeed."""


class ConfigurationError(CallerError):
    """The configuration is invalid.

    Attributes:
        path: the file the configuration came from (its base name in the message).
        line: 1-based line in that file, when known.
        field: dotted path of the offending field, e.g. ``servers.fs.args[1]``.
    """

    def __init__(
        self,
        message: str,
        *,
        server: str | None = None,
        path: str | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        super().__init__(message, server=server)
        self.path = path
        self.line = line
        self.field = field

    def __str__(self) -> str:
        # The message already carries "file:line: field: ..." when those are known.
        return self.message


class ServerStartupError(ConnectionFault):
    """One or more servers could not be started.

    ``str()`` is the message followed by the last lines of ``stderr_tail``; the message
    itself never carries them.

    Attributes:
        stderr_tail: the last lines the server wrote to stderr (for a single server).
        failures: for a host start, every server that failed, ``{name: error}``.
        attempts: for a server tried more than once, the error of every try, in order.
        transient: another try may succeed: the server exited, closed its connection or
            did not answer in time. ``False`` when it answered wrongly (a protocol or
            JSON-RPC error), which a retry would only repeat.
    """

    def __init__(
        self,
        message: str,
        *,
        server: str | None = None,
        stderr_tail: list[str] | None = None,
        failures: dict[str, MCPHostError] | None = None,
        attempts: list[MCPHostError] | None = None,
        transient: bool = False,
    ) -> None:
        super().__init__(message, server=server)
        self.stderr_tail = list(stderr_tail or [])
        self.failures = dict(failures or {})
        self.attempts: list[MCPHostError] = list(attempts or [])
        self.transient = transient

    def __str__(self) -> str:
        # A host start's error lists each failure (their tails included) in its message.
        head = super().__str__()
        return head if self.failures else _with_tail(head, self.stderr_tail)


class ServerUnavailableError(ConnectionFault):
    """The server is not running (it exited, crashed, or was shut down).

    ``str()`` is the message followed by the last lines of ``stderr_tail``.

    Attributes:
        exit_code: the process exit code when known (negative: killed by that signal).
        stderr_tail: the last lines the server wrote to stderr.
    """

    def __init__(
        self,
        message: str,
        *,
        server: str | None = None,
        exit_code: int | None = None,
        stderr_tail: list[str] | None = None,
    ) -> None:
        super().__init__(message, server=server)
        self.exit_code = exit_code
        self.stderr_tail = list(stderr_tail or [])

    def __str__(self) -> str:
        return _with_tail(super().__str__(), self.stderr_tail)


class TransportError(ConnectionFault):
    """One exchange with the server failed on the way: an HTTP error status, a connection
    refused or dropped, a stream that ended before the response. The server sent no
    JSON-RPC error (that would be a :class:`ServerError`).

    Attributes:
        http_status: the HTTP status the server (or a proxy) answered with, if any.
        os_error: the socket error, e.g. ``"connection refused"``, if any.
        transient: another try may succeed (a refused or dropped connection, 408, 425,
            429, 5xx); a 4xx that says the request itself was refused would fail again.
    """

    def __init__(
        self,
        message: str,
        *,
        server: str | None = None,
        http_status: int | None = None,
        os_error: str | None = None,
        transient: bool | None = None,
    ) -> None:
        super().__init__(message, server=server)
        self.http_status = http_status
        self.os_error = os_error
        if transient is None:
            transient = http_status is None or self.transient_status(http_status)
        self.transient = transient

    @staticmethod
    def transient_status(status: int) -> bool:
        """Whether an HTTP status says "not now" (408, 425, 429, 5xx) rather than "not this"."""
        return status in _TRANSIENT_STATUS or status >= 500


#: HTTP statuses that say "not now" rather than "not this request".
_TRANSIENT_STATUS = frozenset({408, 425, 429})


class RoutingError(CallerError):
    """A name or URI could not be routed to exactly one server."""


class ValidationError(CallerError):
    """The caller's data (a tool's arguments, a value the application gave) does not
    satisfy a JSON Schema. A server's output that breaks its own schema is an
    :class:`OutputValidationError` instead.

    Attributes:
        path: JSON path of the offending instance, e.g. ``$.items[3].name``.
        keyword: the schema keyword that failed, e.g. ``required``.
        schema_path: JSON pointer of that keyword in the schema, e.g. ``/properties/x/type``.
        value: the offending instance value.
        errors: when all errors were collected, every one of them (this one first).
    """

    def __init__(
        self,
        message: str,
        *,
        server: str | None = None,
        path: str = "$",
        keyword: str | None = None,
        schema_path: str = "",
        value: Any = None,
        errors: list[ValidationError] | None = None,
    ) -> None:
        super().__init__(message, server=server)
        self.path = path
        self.keyword = keyword
        self.schema_path = schema_path
        self.value = value
        self.errors: list[ValidationError] = errors if errors is not None else [self]

    def restated(self, message: str, *, server: str | None = None) -> ValidationError:
        """The same error (path, keyword, schema path, value, errors) with a new message,
        e.g. one that names the tool it was raised for."""
        return ValidationError(
            message, server=server, path=self.path, keyword=self.keyword,
            schema_path=self.schema_path, value=self.value, errors=self.errors,
        )


class SchemaError(MCPHostError):
    """A JSON Schema is itself invalid (or uses what strict mode refuses). Whose fault
    depends on who wrote it (a server's tool, the application), so it sits at the root."""


class ProtocolError(ServerFault):
    """The server broke the protocol (malformed JSON-RPC, wrong MCP shape, bad version)."""


class OutputValidationError(ProtocolError):
    """A tool's ``structuredContent`` does not satisfy the ``outputSchema`` the server
    declared for it (or is missing). The server's fault, not the caller's: not a
    :class:`ValidationError` (see the module's decisions).

    Attributes:
        path, keyword, schema_path, value: as :class:`ValidationError`'s, for the output.
        errors: the schema errors found (``ValidationError`` values: where the output
            went wrong, as the schema compiler reports it).
    """

    def __init__(
        self,
        message: str,
        *,
        server: str | None = None,
        path: str = "$",
        keyword: str | None = None,
        schema_path: str = "",
        value: Any = None,
        errors: list[ValidationError] | None = None,
    ) -> None:
        super().__init__(message, server=server)
        self.path = path
        self.keyword = keyword
        self.schema_path = schema_path
        self.value = value
        self.errors: list[ValidationError] = list(errors or [])

    @classmethod
    def of(cls, found: ValidationError, message: str, *, server: str | None = None) -> OutputValidationError:
        """The output error for what the schema check ``found``."""
        return cls(message, server=server, path=found.path, keyword=found.keyword,
                   schema_path=found.schema_path, value=found.value, errors=found.errors)


class TimeoutError(ServerFault, builtins.TimeoutError):  # noqa: A001 - part of the contract
    """A request did not complete in time; ``notifications/cancelled`` was sent."""


class ServerError(ServerFault):
    """The server answered with a JSON-RPC error (only then: a request that failed on its
    way is a :class:`TransportError`).

    Attributes:
        code: the JSON-RPC error code.
        data: the error's ``data`` member, if any.
    """

    def __init__(
        self, message: str, *, server: str | None = None, code: int = 0, data: Any = None
    ) -> None:
        super().__init__(message, server=server)
        self.code = code
        self.data = data


class PermissionDeniedError(CallerError, builtins.PermissionError):
    """The host's policy (the application's ``permissions``, a server's ``tools`` filter)
    refused the operation; nothing was sent. Also a builtin ``PermissionError``."""


class UsageError(CallerError, ValueError):
    """The caller used the API wrongly: a bad constructor option (raised by the
    constructor), arguments that cannot be serialised, a method called in a state where it
    cannot run (before ``initialize()``, after ``shutdown()``). Nothing was sent to a
    server. Also a ``ValueError``."""


class RpcError(Exception):
    """Raised by a handler of a server's request to answer it with a JSON-RPC error.

    Not an :class:`MCPHostError`: the host never raises it to the application; it turns it
    into the error response the server receives.
    """

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data
