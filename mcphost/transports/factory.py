"""Build the transport a server's configuration asks for; the host never names one.

Layer 2. ``make_transport(config, ...)`` reads ``config.type`` and returns an unstarted
transport. Only here is a configuration type tied to a transport class, so a new transport
is one entry in :data:`_BUILDERS` and nothing above changes.

``type: "local"`` is a server in the host's own process (the application's tools): its
transport is one end of an in-memory pair, and the other end is handed to the server's
``serve`` function, given by name in ``in_process``.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from .._json import MAX_TOKENS
from ..errors import ConfigurationError
from .base import Transport

if TYPE_CHECKING:
    from ..config import ServerConfig
    from .base import AuthHooks

__all__ = ["InProcessServer", "TransportFactory", "make_transport", "may_install_first"]

#: What the host calls to get a server's transport (tests and embedders pass their own).
TransportFactory = Callable[["ServerConfig"], Transport]
#: A server in the host's process: given the server's end of the connection, serves it.
InProcessServer = Callable[[Transport], None]


class MessageSizes(NamedTuple):
    """How big one received message may be: bytes, and JSON tokens past 1 MiB."""

    bytes: int
    tokens: int


def _stdio(
    config: ServerConfig, environ: Mapping[str, str], sizes: MessageSizes, inherit_env: bool,
    redact: Callable[[str], str] | None, shutdown_timeout: float, auth: AuthHooks | None,
) -> Transport:
    from .stdio import StdioTransport
    from .stdio.command import child_environment

    assert config.command is not None  # the configuration guarantees it for stdio
    limits = config.limits
    return StdioTransport(
        config.name,
        config.command,
        config.args,
        env=child_environment(environ, config.env, inherit=inherit_env or config.inherit_env, name=config.name),
        cwd=config.cwd,
        max_message_size=sizes.bytes,
        max_message_tokens=sizes.tokens,
        memory_limit=limits.memory_bytes if limits else None,
        cpu_limit=limits.cpu_seconds if limits else None,
        files_limit=limits.open_files if limits else None,
        process_limit=limits.processes if limits else None,
        redact=redact,
        shutdown_timeout=config.shutdown_timeout or shutdown_timeout,
    )


def _websocket(
    config: ServerConfig, environ: Mapping[str, str], sizes: MessageSizes, inherit_env: bool,
    redact: Callable[[str], str] | None, shutdown_timeout: float, auth: AuthHooks | None,
) -> Transport:
    from .websocket import WebSocketTransport

    headers = list(config.headers.items())
    if config.auth is not None and config.auth.token is not None and "authorization" not in {
            key.lower() for key, _ in headers}:
        headers.append(("Authorization", f"Bearer {config.auth.token}"))
    return WebSocketTransport(config.name, config.url or "", headers=headers,
                              max_message_size=sizes.bytes, max_message_tokens=sizes.tokens,
                              ssl_context=_tls(config))


def _tls(config: ServerConfig) -> ssl.SSLContext | None:
    """The TLS context of ``config``'s ``tls`` object (``None``: the transport's default)."""
    tls = config.tls
    if tls is None:
        return None
    from .tls import client_context

    return client_context(config.name, verify=tls.verify, ca_file=tls.ca_file, cert_file=tls.cert_file,
                          key_file=tls.key_file)


def _remote(config: ServerConfig, environ: Mapping[str, str], sizes: MessageSizes,
            auth: AuthHooks | None = None) -> dict[str, Any]:
    """The options both HTTP transports take: headers, limits, TLS, the proxy, the authorizer."""
    from .httpconn import parse_url
    from .oauth import make_authorizer
    from .proxy import proxy_for

    origin, _ = parse_url(config.url or "", config.name)
    context = _tls(config)
    return {
        "headers": config.headers.items(), "max_message_size": sizes.bytes, "max_message_tokens": sizes.tokens,
        "ssl_context": context,
        "proxy": proxy_for(origin.scheme, origin.host, origin.port, environ, config.name),
        "authorizer": make_authorizer(config, auth, context),
    }


def _http(
    config: ServerConfig, environ: Mapping[str, str], sizes: MessageSizes, inherit_env: bool,
    redact: Callable[[str], str] | None, shutdown_timeout: float, auth: AuthHooks | None,
) -> Transport:
    from .http_auto import HttpTransport

    return HttpTransport(config.name, config.url or "", **_remote(config, environ, sizes, auth))


def _sse(
    config: ServerConfig, environ: Mapping[str, str], sizes: MessageSizes, inherit_env: bool,
    redact: Callable[[str], str] | None, shutdown_timeout: float, auth: AuthHooks | None,
) -> Transport:
    from .sse import SseTransport

    return SseTransport(config.name, config.url or "", **_remote(config, environ, sizes, auth))


_BUILDERS: Final[dict[str, Callable[[ServerConfig, Mapping[str, str], MessageSizes, bool, Callable[[str], str] | None, float,
                                     AuthHooks | None], Transport]]] = {
    "http": _http,
    "sse": _sse,
    "stdio": _stdio,
    "websocket": _websocket,
}
#: The type of a server served in the host's own process (see ``in_process``).
LOCAL: Final = "local"


def make_transport(
    config: ServerConfig, *, environ: Mapping[str, str], max_message_size: int, inherit_env: bool = False,
    redact: Callable[[str], str] | None = None, in_process: Mapping[str, InProcessServer] | None = None,
    shutdown_timeout: float = 10.0, auth: AuthHooks | None = None, max_message_tokens: int = MAX_TOKENS,
) -> Transport:
    """An unstarted transport for ``config`` (``ConfigurationError`` if its type has none).
    A child process gets the allow-listed part of ``environ`` (all of it with
    ``inherit_env``) plus the server's own ``env``; ``redact`` is applied to every line the
    server writes on stderr; ``shutdown_timeout`` (the server's own ``shutdownTimeout``
    first) is how long a process left running at interpreter exit gets after SIGTERM. A
    ``local`` server is served by ``in_process[config.name]``. A message over 1 MiB may hold
    ``max_message_tokens`` JSON tokens (counted before it is decoded). ``auth``: what a remote
    server's authorizer needs of the host (``on_authorize``, the token store, the redactor)."""
    if config.type == LOCAL:
        serve = (in_process or {}).get(config.name)
        if serve is None:
            raise ConfigurationError("type 'local' is for the application's own tools (register_tools)",
                                     server=config.name)
        from .memory import memory_pair

        ours, theirs = memory_pair(f"local:{config.name}")
        serve(theirs)
        return ours
    builder = _BUILDERS.get(config.type)
    if builder is None:
        raise ConfigurationError(
            f"transport {config.type!r} is not supported by this version of mcphost "
            f"(supported: {', '.join(sorted(_BUILDERS))})",
            server=config.name,
        )
    sizes = MessageSizes(max_message_size, max_message_tokens)
    return builder(config, environ, sizes, inherit_env, redact, shutdown_timeout, auth)


def may_install_first(config: ServerConfig) -> bool:
    """Whether the first start of ``config``'s server may download it first (a stdio
    command that is a package runner: ``npx -y pkg``, ``uvx pkg``...), so that the host
    can allow it more time."""
    if config.type != "stdio" or config.command is None:
        return False
    from .stdio.command import is_package_runner

    return is_package_runner(config.command, config.args)
