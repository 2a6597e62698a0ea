"""What an OAuth login leaves behind, and where it is kept: ``Credentials`` and ``TokenStore``.

Layer 1 (no clock, no I/O of its own). A login to a remote server yields a client
registration (the ``client_id`` the authorization server knows us by, and its secret when it
gave one) and tokens (access, refresh, expiry). Both belong to one server *and* one
authorization server (its ``issuer``): a token is only ever sent to the resource it was
issued for, and a new issuer means a new registration (2026-07-28 "Key stored credentials by
issuer and re-register if the AS changes").

:class:`TokenStore` is the interface the host keeps them through. :class:`MemoryTokenStore`
is the default (a login lasts as long as the host); a store that persists (a file per server
and issuer, a keyring, a database) implements the same four methods. The methods are
``async`` so a store may do I/O without blocking the host's loop.

Every secret-bearing class hides its secrets from ``repr()``: these values end up in logs
and tracebacks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = ["ClientInfo", "Credentials", "MemoryTokenStore", "TokenStore", "Tokens"]


def _hidden(value: str | None) -> str:
    return "None" if value is None else "'***'"


@dataclass(frozen=True, repr=False)
class Tokens:
    """Tokens the authorization server issued.

    Attributes:
        access_token: the bearer token sent to the MCP server.
        token_type: as the token response said (``Bearer``).
        refresh_token: for a new access token without the user, or ``None``.
        expires_at: when the access token expires, in seconds of the injected wall clock
            (``time.time()`` in the host), or ``None`` when the server did not say.
        scope: the granted scopes (space-separated), or ``None`` when not said.
        issued_at: when the token response came (same clock), or ``None`` when not known
            (tokens kept before it was recorded): with ``expires_at``, the token's lifetime.
    """

    access_token: str
    token_type: str = "Bearer"
    refresh_token: str | None = None
    expires_at: float | None = None
    scope: str | None = None
    issued_at: float | None = None

    def __repr__(self) -> str:
        return (f"Tokens(access_token='***', token_type={self.token_type!r}, "
                f"refresh_token={_hidden(self.refresh_token)}, expires_at={self.expires_at!r}, "
                f"scope={self.scope!r}, issued_at={self.issued_at!r})")

    def refresh_due(self, now: float, margin: float) -> bool:
        """Whether the access token should be refreshed before it is used at ``now``: it
        expires within ``margin`` seconds, or within a quarter of its lifetime when that is
        shorter (a token that lives 30 s is not refreshed on every request)."""
        if self.expires_at is None or self.refresh_token is None:
            return False
        if self.issued_at is not None and self.expires_at > self.issued_at:
            margin = min(margin, (self.expires_at - self.issued_at) / 4)
        return now > self.expires_at - margin

    def to_json(self) -> dict[str, Any]:
        """A JSON object of these tokens (for a store that writes them down)."""
        out: dict[str, Any] = {"access_token": self.access_token, "token_type": self.token_type}
        for key, value in (("refresh_token", self.refresh_token), ("expires_at", self.expires_at),
                           ("scope", self.scope), ("issued_at", self.issued_at)):
            if value is not None:
                out[key] = value
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Tokens:
        """The tokens of :meth:`to_json`'s object. Raises ``ValueError`` on a malformed one."""
        access = data.get("access_token")
        if not isinstance(access, str) or not access:
            raise ValueError("access_token: expected a non-empty string")
        expires = data.get("expires_at")
        if expires is not None and (isinstance(expires, bool) or not isinstance(expires, (int, float))):
            raise ValueError("expires_at: expected a number")
        issued = data.get("issued_at")
        if issued is not None and (isinstance(issued, bool) or not isinstance(issued, (int, float))):
            raise ValueError("issued_at: expected a number")
        return cls(
            access_token=access,
            token_type=_opt_str(data, "token_type") or "Bearer",
            refresh_token=_opt_str(data, "refresh_token"),
            expires_at=None if expires is None else float(expires),
            scope=_opt_str(data, "scope"),
            issued_at=None if issued is None else float(issued),
        )


@dataclass(frozen=True, repr=False)
class ClientInfo:
    """How the authorization server knows this client.

    Attributes:
        client_id: pre-registered, a Client ID Metadata Document URL, or issued by Dynamic
            Client Registration.
        client_secret: the secret, or ``None`` for a public client.
        auth_method: the token endpoint authentication method: ``client_secret_basic``,
            ``client_secret_post`` or ``none``.
        redirect_uri: the redirect URI registered with it, or ``None``.
        secret_expires_at: when a DCR-issued secret expires (wall clock seconds), or ``None``.
    """

    client_id: str
    client_secret: str | None = None
    auth_method: str = "none"
    redirect_uri: str | None = None
    secret_expires_at: float | None = None

    def __repr__(self) -> str:
        return (f"ClientInfo(client_id={self.client_id!r}, client_secret={_hidden(self.client_secret)}, "
                f"auth_method={self.auth_method!r}, redirect_uri={self.redirect_uri!r})")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"client_id": self.client_id, "auth_method": self.auth_method}
        for key, value in (("client_secret", self.client_secret), ("redirect_uri", self.redirect_uri),
                           ("secret_expires_at", self.secret_expires_at)):
            if value is not None:
                out[key] = value
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ClientInfo:
        client_id = data.get("client_id")
        if not isinstance(client_id, str) or not client_id:
            raise ValueError("client_id: expected a non-empty string")
        expires = data.get("secret_expires_at")
        if expires is not None and (isinstance(expires, bool) or not isinstance(expires, (int, float))):
            raise ValueError("secret_expires_at: expected a number")
        return cls(
            client_id=client_id,
            client_secret=_opt_str(data, "client_secret"),
            auth_method=_opt_str(data, "auth_method") or "none",
            redirect_uri=_opt_str(data, "redirect_uri"),
            secret_expires_at=None if expires is None else float(expires),
        )


@dataclass(frozen=True)
class Credentials:
    """What one server's login left: keyed by ``server`` and ``issuer``.

    Attributes:
        server: the server's name in the configuration.
        issuer: the authorization server's ``issuer`` (its URL when it published none).
        resource: the resource the tokens are for (RFC 8707): the MCP server's canonical URI,
            or the protected resource metadata's ``resource`` that covers it.
        client: the registration with that issuer, or ``None``.
        tokens: the tokens, or ``None`` (registered, not logged in, or logged out).
    """

    server: str
    issuer: str
    resource: str
    client: ClientInfo | None = None
    tokens: Tokens | None = field(default=None)

    def to_json(self) -> dict[str, Any]:
        """A JSON object of these credentials (holds secrets: never log it)."""
        out: dict[str, Any] = {"server": self.server, "issuer": self.issuer, "resource": self.resource}
        if self.client is not None:
            out["client"] = self.client.to_json()
        if self.tokens is not None:
            out["tokens"] = self.tokens.to_json()
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Credentials:
        """The credentials of :meth:`to_json`'s object. Raises ``ValueError`` on a malformed one."""
        if not isinstance(data, Mapping):
            raise ValueError("expected a JSON object")
        for key in ("server", "issuer", "resource"):
            if not isinstance(data.get(key), str):
                raise ValueError(f"{key}: expected a string")
        client = data.get("client")
        tokens = data.get("tokens")
        if client is not None and not isinstance(client, Mapping):
            raise ValueError("client: expected an object")
        if tokens is not None and not isinstance(tokens, Mapping):
            raise ValueError("tokens: expected an object")
        return cls(
            server=data["server"], issuer=data["issuer"], resource=data["resource"],
            client=None if client is None else ClientInfo.from_json(client),
            tokens=None if tokens is None else Tokens.from_json(tokens),
        )


def _opt_str(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{key}: expected a string")
    return value


@runtime_checkable
class TokenStore(Protocol):
    """Where the host keeps each server's :class:`Credentials`.

    Keys are ``(server, issuer)``. ``issuer=None`` in :meth:`get` means "the credentials of
    this server saved last" (before discovery the host does not know the issuer yet); in
    :meth:`delete`, every issuer of the server.
    """

    async def get(self, server: str, issuer: str | None = None) -> Credentials | None:
        """The credentials of ``server`` (with ``issuer``), or ``None``."""
        ...

    async def put(self, credentials: Credentials) -> None:
        """Keep ``credentials``, replacing those of the same server and issuer."""
        ...

    async def delete(self, server: str, issuer: str | None = None) -> None:
        """Forget the credentials of ``server`` (with ``issuer``; ``None``: all of them)."""
        ...

    async def list(self) -> list[Credentials]:
        """Every credentials kept, in no particular order."""
        ...


class MemoryTokenStore:
    """The default :class:`TokenStore`: a dict, gone with the process."""

    def __init__(self) -> None:
        # Insertion order is "saved last" order: put() moves a key to the end.
        self._items: dict[tuple[str, str], Credentials] = {}

    def __repr__(self) -> str:
        return f"MemoryTokenStore({len(self._items)} credentials)"

    async def get(self, server: str, issuer: str | None = None) -> Credentials | None:
        if issuer is not None:
            return self._items.get((server, issuer))
        found = None
        for (name, _), credentials in self._items.items():
            if name == server:
                found = credentials
        return found

    async def put(self, credentials: Credentials) -> None:
        key = (credentials.server, credentials.issuer)
        self._items.pop(key, None)
        self._items[key] = credentials

    async def delete(self, server: str, issuer: str | None = None) -> None:
        for key in [k for k in self._items if k[0] == server and (issuer is None or k[1] == issuer)]:
            del self._items[key]

    async def list(self) -> list[Credentials]:
        return list(self._items.values())
