"""The one exception tree of mcphost.

Every failure the library raises is an :class:`MCPHostError`; callers catch that root, or
one branch of it, and never a lower layer's ``OSError`` or ``json.JSONDecodeError``::

    MCPHostError                      .server (None when not tied to one server)
    ├── ConfigurationError            .path, .line, .field   bad mcp.json / arguments to MCPHost
    ├── ServerStartupError            .stderr_tail, .failures  a server could not be started
    ├── ServerUnavailableError        .exit_code, .stderr_tail the server died / is not running
    ├── RoutingError                  unknown server, tool, prompt or URI; ambiguous URI
    ├── ValidationError               .path, .keyword, .schema_path, .value   data vs a JSON Schema
    ├── SchemaError                   a JSON Schema that is itself invalid
    ├── TimeoutError                  (also a builtin TimeoutError) a request ran out of time
    ├── ProtocolError                 the server broke the protocol (JSON-RPC or MCP)
    ├── ServerError                   .code, .message, .data   a JSON-RPC error the server returned
    ├── PermissionDeniedError         (also a builtin PermissionError) the host's policy refused it
    └── UsageError                    (also a ValueError) the caller's own mistake: an argument
                                      that cannot be sent, a method called in the wrong state

    RpcError (not an MCPHostError)    raised by the application's handlers of server requests
                                      to answer with a JSON-RPC error: .code, .message, .data

Messages are meant for the application: they name the server and the failure and never
carry absolute paths or secret values. Logs may hold the full detail.
"""

from __future__ import annotations

import builtins
from typing import Any

__all__ = [
    "MCPHostError",
    "ConfigurationError",
    "ServerStartupError",
    "ServerUnavailableError",
    "RoutingError",
    "ValidationError",
    "SchemaError",
    "TimeoutError",
    "ProtocolError",
    "ServerError",
    "PermissionDeniedError",
    "UsageError",
    "RpcError",
]


class MCPHostError(Exception):
    """Root of every error mcphost raises.

    Attributes:
        server: the configured name of the server concerned, or ``None``.
    """

    def __init__(self, message: str, *, server: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.server = server

    def __str__(self) -> str:
        if self.server is not None and not self.message.startswith(f"{self.server}:"):
            return f"{self.server}: {self.message}"
        return self.message


class ConfigurationError(MCPHostError):
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


class ServerStartupError(MCPHostError):
    """One or more servers could not be started.

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
    ) -> None:
        super().__init__(message, server=server)
        self.stderr_tail = list(stderr_tail or [])
        self.failures = dict(failures or {})
        self.attempts: list[MCPHostError] = []
        self.transient = False


class ServerUnavailableError(MCPHostError):
    """The server is not running (it exited, crashed, or was shut down).

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


class RoutingError(MCPHostError):
    """A name or URI could not be routed to exactly one server."""


class ValidationError(MCPHostError):
    """Data does not satisfy a JSON Schema.

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
    """A JSON Schema is itself invalid (or uses what strict mode refuses)."""


class TimeoutError(MCPHostError, builtins.TimeoutError):  # noqa: A001 - part of the contract
    """A request did not complete in time; ``notifications/cancelled`` was sent."""


class ProtocolError(MCPHostError):
    """The server broke the protocol (malformed JSON-RPC, wrong MCP shape, bad version)."""


class ServerError(MCPHostError):
    """The server answered with a JSON-RPC error.

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


class PermissionDeniedError(MCPHostError, builtins.PermissionError):
    """The host's policy (the application's ``permissions``, a server's ``tools`` filter)
    refused the operation; nothing was sent. Also a builtin ``PermissionError``."""


class UsageError(MCPHostError, ValueError):
    """The caller used the API wrongly: arguments that cannot be serialised, an unknown
    option, a method called in a state where it cannot run (before ``initialize()``, after
    ``shutdown()``). Nothing was sent to a server. Also a ``ValueError``."""


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
