"""The values of a configuration: frozen ``HostConfig`` / ``ServerConfig`` and their parts.

Layer 1 (no I/O). Nothing here validates a file: :mod:`mcphost.config.load` builds these
values from a document that has been checked; code may also build them directly.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import TypeVar

from mcphost.errors import ConfigurationError
from mcphost.policy import RestartPolicy, RetryPolicy

from .urls import hide_credentials

#: Start-up timeout (seconds) when a server sets none.
DEFAULT_TIMEOUT = 30.0

#: Server names: the host routes ``server.tool`` on the first dot, so names have none. (The
#: rule itself lives in the schema, ``$defs/serverName``; a test keeps the two equal.)
SERVER_NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9_-]*$"

_MEMORY = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([KMGT]?)(?:I?B)?\s*\Z", re.IGNORECASE)
_MEMORY_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}

_V = TypeVar("_V")


class FrozenMap(Mapping[str, _V]):
    """An immutable, hashable mapping that keeps the order it was given."""

    __slots__ = ("_data", "_hash")

    def __init__(self, items: Iterable[tuple[str, _V]] = ()) -> None:
        self._data: dict[str, _V] = dict(items)
        self._hash: int | None = None

    def __getitem__(self, key: str) -> _V:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __hash__(self) -> int:
        # Order-free, like the equality Mapping defines.
        if self._hash is None:
            self._hash = hash(frozenset(self._data.items()))
        return self._hash

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return dict(self._data.items()) == dict(other.items())
        return NotImplemented

    def __repr__(self) -> str:
        return repr(self._data)


class FrozenDict(FrozenMap[str]):
    """A frozen ``str -> str`` mapping whose repr hides the values.

    Used for ``env`` and ``headers``: they often hold tokens, and a ``ServerConfig`` ends
    up in logs and tracebacks through its repr.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return "{" + ", ".join(f"{k!r}: '***'" for k in self._data) + "}"


_EMPTY: Mapping[str, str] = FrozenDict()


@dataclass(frozen=True)
class Limits:
    """Resource limits for a stdio server's process.

    Attributes:
        memory_bytes: memory limit in bytes (RLIMIT_DATA), or ``None`` for no limit.
        cpu_seconds: CPU-time limit in seconds, or ``None`` for no limit.
        open_files: most open file descriptors, or ``None``.
        processes: most processes of the user (RLIMIT_NPROC), or ``None``.
    """

    memory_bytes: int | None = None
    cpu_seconds: int | None = None
    open_files: int | None = None
    processes: int | None = None


@functools.lru_cache(maxsize=256)
def _compile_globs(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    if not patterns:
        return None
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns))


@dataclass(frozen=True)
class ToolFilter:
    """Which of a server's tools the host exposes.

    Patterns are shell-style globs (:func:`fnmatch.fnmatchcase`: case-sensitive, ``*``,
    ``?``, ``[...]``) matched against the tool's own name, without the server prefix.

    Attributes:
        allow: if not empty, only tools matching one of these are exposed.
        deny: tools matching one of these are never exposed (deny wins over allow).
    """

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()

    def permits(self, tool_name: str) -> bool:
        """Return whether ``tool_name`` passes the filter.

        Args:
            tool_name: the tool's name as the server reports it (no ``server.`` prefix).

        Returns:
            ``False`` if a ``deny`` pattern matches; otherwise ``True`` if ``allow`` is
            empty or one of its patterns matches.
        """
        deny = _compile_globs(self.deny)
        if deny is not None and deny.match(tool_name):
            return False
        allow = _compile_globs(self.allow)
        return allow is None or allow.match(tool_name) is not None


@dataclass(frozen=True)
class InputSpec:
    """A value the application must supply for ``${input:id}`` (VS Code ``inputs``).

    Attributes:
        id: the input's id, as in ``${input:id}``.
        description: the prompt to show (empty when the input was not declared).
        password: whether the value is a secret (mask it when asking; never log it).
            Inputs referenced without a declaration are treated as secrets.
        default: the value to use when the application supplies none, if any.
        type: ``"promptString"`` or ``"pickString"``.
        options: for ``pickString``, the values to choose from.
    """

    id: str
    description: str = ""
    password: bool = False
    default: str | None = None
    type: str = "promptString"
    options: tuple[str, ...] = ()


AUTH_TYPES = ("oauth", "bearer", "clientCredentials", "jwtBearer", "enterpriseManaged")
#: The fields of ``AuthSettings`` that hold a secret.
_SECRET_FIELDS = ("client_secret", "token", "private_key", "assertion", "id_token", "idp_client_secret")


@dataclass(frozen=True, repr=False)
class AuthSettings:
    """How a remote server is authorized (its ``auth`` entry).

    Attributes:
        type: ``"oauth"`` (the authorization code flow of the MCP authorization spec, the
            user's step through the host's ``on_authorize`` hook), ``"bearer"`` (a fixed
            token), ``"clientCredentials"`` (OAuth client credentials grant, no user),
            ``"jwtBearer"`` (workload identity: an assertion JWT for a token, RFC 7523) or
            ``"enterpriseManaged"`` (the user's ID token exchanged at the enterprise identity
            provider for an ID-JAG, then the ID-JAG for a token: SEP-990).
        client_id: a pre-registered client id (``oauth``, ``clientCredentials``; required by
            ``jwtBearer`` and ``enterpriseManaged``), or ``None``
            (a Client ID Metadata Document or Dynamic Client Registration).
        client_secret: its secret, or ``None``.
        scopes: scopes to ask for (empty: the server's challenge or its metadata decide).
        redirect_uri: the redirect URI to register and send (``oauth``), or ``None`` for
            the host's default.
        client_metadata_url: the HTTPS URL of this client's Client ID Metadata Document,
            used as ``client_id`` where the authorization server supports it.
        token: the bearer token (``bearer``).
        private_key: a PEM private key for ``private_key_jwt`` client authentication
            (``clientCredentials``), or ``None``.
        signing_algorithm: the JWS algorithm of that key (``ES256`` or ``RS256``).
        assertion: the JWT a ``jwtBearer`` auth sends (its platform's workload token).
        idp_token_endpoint, id_token, idp_client_id, idp_client_secret: the identity
            provider of an ``enterpriseManaged`` auth: its token endpoint, the user's ID token
            it issued, and this client as registered with it (optional).
        dpop: DPoP-bound tokens (RFC 9449): ``True`` always, ``False`` never, ``None`` (the
            default) when the authorization server offers them for ES256.
    """

    type: str
    client_id: str | None = None
    client_secret: str | None = None
    scopes: tuple[str, ...] = ()
    redirect_uri: str | None = None
    client_metadata_url: str | None = None
    token: str | None = None
    private_key: str | None = None
    signing_algorithm: str | None = None
    assertion: str | None = None
    idp_token_endpoint: str | None = None
    id_token: str | None = None
    idp_client_id: str | None = None
    idp_client_secret: str | None = None
    dpop: bool | None = None

    def __post_init__(self) -> None:
        if self.type not in AUTH_TYPES:
            raise ConfigurationError(f"auth.type: expected one of {', '.join(AUTH_TYPES)}, got {self.type!r}")
        if self.type == "bearer" and self.token is None:
            raise ConfigurationError('auth: a "bearer" auth needs "token"')
        if self.type == "jwtBearer" and (self.assertion is None or self.client_id is None):
            raise ConfigurationError('auth: a "jwtBearer" auth needs "clientId" and "assertion"')
        if self.type == "enterpriseManaged" and (self.client_id is None or self.idp_token_endpoint is None
                                                 or self.id_token is None):
            raise ConfigurationError('auth: an "enterpriseManaged" auth needs "clientId", "idpTokenEndpoint" '
                                     'and "idToken"')

    def secrets(self) -> tuple[str, ...]:
        """The secret values of these settings (for the host's redactor)."""
        return tuple(v for v in (getattr(self, name) for name in _SECRET_FIELDS) if v)

    def __repr__(self) -> str:
        shown = []
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in _SECRET_FIELDS and value is not None:
                shown.append(f"{f.name}='***'")
            elif value is not None and value != ():
                shown.append(f"{f.name}={value!r}")
        return f"AuthSettings({', '.join(shown)})"


@dataclass(frozen=True)
class ServerConfig:
    """One server of the configuration, validated and with every reference expanded.

    Attributes:
        name: the configuration key (``^[A-Za-z][A-Za-z0-9_-]*$``).
        type: ``"stdio"``, ``"http"`` (Streamable HTTP), ``"sse"`` (legacy HTTP+SSE) or
            ``"websocket"``.
        command: the program to run (stdio), run without a shell.
        args: its arguments, passed as they are.
        env: variables for the child, from ``envFile`` then ``env`` (``env`` wins). The
            process layer adds only an allow-list of the parent's environment.
        cwd: the child's working directory (relative paths resolved against the config
            file's directory), or ``None`` to inherit.
        url: the endpoint (http, sse, websocket).
        headers: extra HTTP headers for remote servers.
        tls: TLS options of a remote server (``None``: the system's trust, verified).
        timeout: start-up timeout in seconds (spawn/connect plus ``initialize``).
        request_timeout: default per-request timeout in seconds, or ``None`` for the
            host's default.
        protocol: the era it speaks: ``auto`` (probe with ``server/discover``, then the
            handshake if need be), ``legacy``, ``modern``, or an exact version; ``None``:
            ``auto`` for ``http``, ``legacy`` for the others (see :attr:`protocol_setting`).
        shutdown_timeout: seconds to wait at each step of the shutdown ladder, or ``None``
            for the host's default.
        dependencies: servers that must be started before this one.
        enabled: ``False`` to keep the entry without starting it.
        limits: resource limits for a stdio process, or ``None``.
        tools: which tools are exposed.
        priority: lower first: the order of ``gather_resources()``, and which server serves
            a URI several servers offer (the lowest).
        domains: free-form labels the application can use to group or select servers.
        roots: ``file://`` URIs offered to this server as its roots (empty: the host's).
        inherit_env: the child gets the host's whole environment, not the allow-list.
        cache_ttl: seconds its reads and prompts stay cached (0: never), or ``None`` for the
            host's time to live.
        log_level: the level of its loggers (stderr, wire trace), or ``None``.
        declared_capabilities: what the configuration says the server offers (Talk-2-Tables'
            ``capabilities``), shown in ``get_tools()``.
        retry: how failed starts and safe requests are tried again, or ``None`` for the
            host's policy (see :mod:`mcphost.policy`).
        restart: what happens when the ready server fails by itself (default: nothing).
        auth: how a remote server is authorized (``auth``), or ``None``: no authorization
            configured (a server that asks for it then fails with a clear error).
        line: line of the entry in the file, or ``None`` (configuration built in code).
    """

    name: str
    type: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default=_EMPTY)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default=_EMPTY)
    tls: TlsSettings | None = None
    timeout: float = DEFAULT_TIMEOUT
    request_timeout: float | None = None
    shutdown_timeout: float | None = None
    protocol: str | None = None
    dependencies: tuple[str, ...] = ()
    enabled: bool = True
    limits: Limits | None = None
    tools: ToolFilter = field(default_factory=ToolFilter)
    priority: int = 0
    domains: tuple[str, ...] = ()
    roots: tuple[str, ...] = ()
    line: int | None = field(default=None, compare=False)
    inherit_env: bool = False
    cache_ttl: float | None = None
    log_level: str | None = None
    declared_capabilities: tuple[str, ...] = ()
    retry: RetryPolicy | None = None
    restart: RestartPolicy = field(default_factory=RestartPolicy)
    auth: AuthSettings | None = None

    def __post_init__(self) -> None:
        # Make env/headers immutable (and hashable) even when built in code from dicts.
        for name in ("env", "headers"):
            value = getattr(self, name)
            if not isinstance(value, FrozenDict):
                object.__setattr__(self, name, FrozenDict(value.items()))

    @property
    def protocol_setting(self) -> str:
        """``protocol``, or its default: ``auto`` for ``http``, ``legacy`` for the others
        (an old stdio server may misbehave on a method it does not know)."""
        if self.protocol is not None:
            return self.protocol
        return "auto" if self.type == "http" else "legacy"

    def __repr__(self) -> str:
        # A ServerConfig ends up in logs and tracebacks: env and header values are hidden
        # by their mapping's repr, and the credentials of a URL (user:pass@, ?token=...)
        # here, in the URL and in any argument that holds one.
        shown = []
        for f in fields(self):
            if not f.repr:
                continue
            value = getattr(self, f.name)
            if f.name == "url" and value is not None:
                text = repr(hide_credentials(value))
            elif f.name == "args":
                text = repr(tuple(hide_credentials(arg) for arg in value))
            else:
                text = repr(value)
            shown.append(f"{f.name}={text}")
        return f"ServerConfig({', '.join(shown)})"


@dataclass(frozen=True)
class TlsSettings:
    """TLS of a remote server's ``https://`` or ``wss://`` URL.

    Attributes:
        verify: check the server's certificate and host name (the default). ``False``
            accepts any certificate: for tests only, and logged as a warning.
        ca_file: a PEM file of CA certificates trusted besides the system's.
        cert_file: a client certificate (PEM), presented when the server asks.
        key_file: its private key, when ``cert_file`` does not hold it.
    """

    verify: bool = True
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None


@dataclass(frozen=True)
class CacheSettings:
    """The host's cache of ``resources/read`` and ``prompts/get`` results.

    Attributes:
        ttl: seconds an entry is fresh (0: nothing is cached).
        max_entries: most entries kept.
        max_bytes: most bytes kept (the JSON size of the results).
    """

    ttl: float = 300.0
    max_entries: int = 1024
    max_bytes: int = 32 << 20


@dataclass(frozen=True)
class HostConfig:
    """A whole configuration.

    Attributes:
        servers: every server, enabled or not, in file order.
        path: the file it was read from, or ``None``.
        inputs: the ``inputs`` declared in the file (VS Code dialect).
        notes: things that were accepted but ignored (unknown top-level keys, fields of
            other clients) and likely mistakes that are not errors; each is
            ``file:line: field: note``. They are also logged at debug level.
        secrets: every value a ``${VAR}``, ``${env:VAR}`` or ``${input:id}`` reference was
            expanded to (4 characters or more): the host keeps them out of its logs and of
            the errors it returns.
    """

    servers: Mapping[str, ServerConfig]
    path: str | None = None
    inputs: tuple[InputSpec, ...] = ()
    notes: tuple[str, ...] = field(default=(), compare=False)
    secrets: frozenset[str] = field(default=frozenset(), compare=False, repr=False)
    #: Servers not selected (``only=``): listed disabled, neither expanded nor validated.
    left_out: frozenset[str] = field(default=frozenset(), compare=False)
    #: Servers whose ``${VAR}`` is unset, with their error (``defer_unset`` only): listed
    #: disabled (and in ``left_out``) so the others can be served.
    unresolved: Mapping[str, ConfigurationError] = field(default_factory=dict, compare=False)
    cache: CacheSettings = field(default_factory=CacheSettings)
    #: The level of the ``mcphost`` loggers (``"INFO"``...), or ``None`` to leave it.
    log_level: str | None = None
    #: ``failFast``: the default of ``require_all`` and of ``gather_resources(fail_fast=)``,
    #: or ``None`` (the host's default: fail fast).
    fail_fast: bool | None = None
    #: ``enableLogging``: ``False`` silences the ``mcphost`` loggers while the host runs.
    enable_logging: bool | None = None
    #: Groups of servers with identical definitions (the same process or URL under two
    #: names): told as a warning when the host loads the configuration.
    duplicates: tuple[tuple[str, ...], ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        # Read-only even when built in code from a dict (or by dataclasses.replace).
        if not isinstance(self.servers, FrozenMap):
            object.__setattr__(self, "servers", FrozenMap(self.servers.items()))

    def start_order(self) -> list[list[str]]:
        """Group the enabled servers in dependency layers.

        Every server in a layer depends only on servers of earlier layers, so a layer can
        be started in parallel once the previous one is up. Within a layer servers keep
        file order. Disabled servers are left out (an enabled server cannot depend on a
        disabled one: the loader refuses it).

        Returns:
            The layers, first to start first.
        """
        enabled = [name for name, server in self.servers.items() if server.enabled]
        # An unresolved server counts as placed: its dependents are then found blocked.
        done: set[str] = set(self.unresolved)
        layers: list[list[str]] = []
        remaining = enabled
        while remaining:
            layer = [
                name
                for name in remaining
                if all(dep in done for dep in self.servers[name].dependencies)
            ]
            if not layer:  # only reachable for a HostConfig built by hand
                raise ConfigurationError(
                    "cannot order servers (a dependency cycle, or a dependency that is "
                    "unknown or disabled): " + ", ".join(remaining),
                    path=self.path,
                )
            layers.append(layer)
            done.update(layer)
            remaining = [name for name in remaining if name not in done]
        return layers



def parse_memory(value: int | str) -> int:
    """Parse a memory size: an integer (bytes) or a string such as ``"512M"`` or ``"2G"``.

    Units are binary and case-insensitive: ``K`` = 1024, ``M`` = 1024², ``G`` = 1024³,
    ``T`` = 1024⁴; ``KB``/``KiB`` etc. mean the same. Fractions are allowed
    (``"1.5G"``).

    Args:
        value: the size.

    Returns:
        The size in bytes.

    Raises:
        ValueError: the value is not a positive size.
    """
    if isinstance(value, bool):
        raise ValueError("expected an integer or a string like '512M'")
    if isinstance(value, int):
        if value <= 0:
            raise ValueError("must be greater than 0")
        return value
    m = _MEMORY.match(value)
    if m is None:
        raise ValueError("expected a size like 536870912, '512M' or '2G' (units K, M, G, T)")
    size = int(float(m.group(1)) * _MEMORY_UNITS[m.group(2).upper()])
    if size <= 0:
        raise ValueError("must be greater than 0")
    return size

