"""The OAuth steps of :mod:`mcphost.auth` run over the network: the authorizer of a remote server.

Layer 2. A remote transport holds at most one authorizer. It asks it for the
``Authorization`` header of each request, and hands it every 401 and 403 whose challenge is
a ``Bearer`` one; the authorizer gets a token (refresh, or the whole flow: discovery,
registration, the user's step through the application's ``on_authorize`` hook, the token
request) and the transport sends the request again. The requests to the metadata, the
registration and the token endpoints go over this package's own HTTP connections
(:mod:`.oauth_fetch`).

- :class:`BearerAuthorizer`: a fixed token from the configuration;
- :class:`OAuthAuthorizer`: the MCP authorization flow (``oauth`` and ``clientCredentials``).

Every token, code, verifier and secret is handed to ``add_secrets`` (the host's redactor) as
soon as it exists. Failures are :class:`~mcphost.auth.errors.OAuthError` with a message fit
to show.
"""

from __future__ import annotations

import asyncio
import logging
import os
import ssl
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Final

from ..auth.challenge import Challenge, bearer_challenge
from ..auth.discovery import (
    AuthServer,
    ProtectedResource,
    as_metadata_urls,
    canonical_resource,
    covers,
    default_auth_server,
    prm_urls,
    read_as_metadata,
    read_prm,
    require_pkce,
)
from ..auth.dpop import NONCE_ERROR, DPoPSession, dpop_challenge, offers_dpop
from ..auth.errors import OAuthError
from ..auth.flow import (
    PKCE,
    Request,
    authorization_url,
    choose_auth_method,
    choose_scope,
    code_from_callback,
    new_state,
    read_registration,
    read_tokens,
    registration_request,
    token_request,
)
from ..auth.grants import Identity, id_jag_request, jwt_bearer_grant, read_id_jag
from ..auth.jwt import client_assertion
from ..auth.store import ClientInfo, Credentials, MemoryTokenStore, Tokens, TokenStore
from .base import AuthHooks, OnAuthorize
from .oauth_fetch import fetch, json_body

if TYPE_CHECKING:
    from ..config import ServerConfig

__all__ = ["DEFAULT_REDIRECT_URI", "AuthHooks", "Authorizer", "BearerAuthorizer", "OAuthAuthorizer", "make_authorizer"]

logger = logging.getLogger("mcphost.auth")

#: The redirect URI registered and sent when the configuration gives none.
DEFAULT_REDIRECT_URI: Final = "http://127.0.0.1:33418/callback"
#: Authorizations one request may cause (a step-up that never satisfies the server ends here).
MAX_AUTHORIZATIONS: Final = 3
#: A token this close to its expiry (seconds) is refreshed before it is used; one that lives
#: less than four times this, in the last quarter of its life (``Tokens.refresh_due``).
REFRESH_MARGIN: Final = 60.0

def make_authorizer(config: ServerConfig, hooks: AuthHooks | None,
                    ssl_context: ssl.SSLContext | None) -> Authorizer | None:
    """The authorizer of a remote server: its ``auth``, else the OAuth flow when the host has
    an ``on_authorize`` hook (a server that asks for a login gets one), else none."""
    auth = config.auth
    hooks = hooks or AuthHooks()
    if auth is None and hooks.on_authorize is None:
        return None
    if auth is not None and auth.type == "bearer":
        assert auth.token is not None
        return BearerAuthorizer(auth.token)
    return OAuthAuthorizer(
        config.name, config.url or "", kind=auth.type if auth is not None else "oauth",
        client_id=auth.client_id if auth else None, client_secret=auth.client_secret if auth else None,
        scopes=auth.scopes if auth else (), redirect_uri=auth.redirect_uri if auth else None,
        client_metadata_url=auth.client_metadata_url if auth else None,
        private_key=auth.private_key if auth else None, signing_algorithm=auth.signing_algorithm if auth else None,
        assertion=auth.assertion if auth else None, identity=_identity(auth), dpop=auth.dpop if auth else None,
        dpop_session=hooks.dpop.setdefault(config.name, DPoPSession(os.urandom)),
        on_authorize=hooks.on_authorize, on_user_step=hooks.on_user_step,
        store=hooks.store, add_secrets=hooks.add_secrets, ssl_context=ssl_context,
    )


def _identity(auth: Any) -> Identity | None:
    if auth is None or auth.type != "enterpriseManaged":
        return None
    assert auth.idp_token_endpoint is not None and auth.id_token is not None
    return Identity(auth.idp_token_endpoint, auth.id_token, auth.idp_client_id, auth.idp_client_secret)


class Authorizer:
    """What a remote transport asks of its authorization (this base: nothing to add)."""

    #: Bumped each time the token changes: a 401 to a request sent with an older one is
    #: answered by sending it again, not by a new authorization.
    generation = 0

    def header(self) -> str | None:
        """The ``Authorization`` header value of the next request, or ``None``."""
        return None

    async def prepare(self) -> None:
        """Before the first request: load what the store kept, refresh it if it expires."""

    def proof(self, method: str, url: str) -> str | None:
        """The ``DPoP`` header of a request (RFC 9449: a fresh proof each), or ``None``."""
        return None

    def nonce(self, value: str) -> None:
        """A response carried ``DPoP-Nonce: value`` (the next proofs should name it)."""

    def handles(self, status: int, challenges: list[str]) -> bool:
        """Whether a 401/403 with these ``WWW-Authenticate`` values is this authorizer's to answer."""
        return False

    async def authorize(self, status: int, challenges: list[str], generation: int) -> None:
        """Get a token that answers the challenge (``OAuthError`` if none can be had)."""
        raise OAuthError("no authorization is configured")

    def close(self) -> None:
        """The transport is closing: stop what runs in the background."""


class BearerAuthorizer(Authorizer):
    """A fixed token (``{"type": "bearer", "token": ...}``)."""

    def __init__(self, token: str) -> None:
        self._value = f"Bearer {token}"

    def __repr__(self) -> str:
        return "BearerAuthorizer(token='***')"

    def header(self) -> str:
        return self._value

    def handles(self, status: int, challenges: list[str]) -> bool:
        return status == 401

    async def authorize(self, status: int, challenges: list[str], generation: int) -> None:
        raise OAuthError('the server refused the configured bearer token (auth.token)')


class OAuthAuthorizer(Authorizer):
    """The MCP authorization flow for one server (``oauth`` or ``clientCredentials``).

    Args:
        name: the server's name (the store's key).
        server_url: the MCP endpoint.
        kind: ``"oauth"``, ``"clientCredentials"``, ``"jwtBearer"`` or ``"enterpriseManaged"``.
        client_id, client_secret, scopes, redirect_uri, client_metadata_url: the configuration's.
        assertion: the JWT of a ``jwtBearer`` auth (workload identity, RFC 7523).
        identity: the identity provider of an ``enterpriseManaged`` auth (its ID token is
            exchanged there for an ID-JAG, the assertion of the JWT bearer grant).
        dpop: DPoP-bound tokens (RFC 9449): ``True`` always, ``False`` never, ``None`` when the
            authorization server offers them for ES256; dpop_session: the key and nonces
            (the host keeps one per server across restarts).
        on_authorize: the application's step: given the authorization URL, returns the URL the
            authorization server redirected back to (``None``: no user step possible).
        store: where credentials are kept (default: in memory).
        add_secrets: told every secret value as soon as it exists (the redactor).
        ssl_context: TLS of the requests to the authorization server.
        on_user_step: told ``(name, True)`` when ``on_authorize`` is called, ``(name, False)``
            when it has returned or failed.
        clock: wall-clock seconds (token expiry); random: ``n -> n random bytes``.
    """

    def __init__(self, name: str, server_url: str, *, kind: str = "oauth", client_id: str | None = None,
                 client_secret: str | None = None, scopes: Iterable[str] = (), redirect_uri: str | None = None,
                 client_metadata_url: str | None = None, private_key: str | None = None,
                 signing_algorithm: str | None = None, assertion: str | None = None,
                 identity: Identity | None = None, dpop: bool | None = None,
                 dpop_session: DPoPSession | None = None, on_authorize: OnAuthorize | None = None,
                 store: TokenStore | None = None, add_secrets: Callable[[Iterable[str]], None] | None = None,
                 ssl_context: ssl.SSLContext | None = None, on_user_step: Callable[[str, bool], None] | None = None,
                 clock: Callable[[], float] = time.time,
                 random: Callable[[int], bytes] = os.urandom) -> None:
        self.name = name
        self.server_url = server_url
        self.resource = canonical_resource(server_url)
        self.kind = kind
        self.client_id = client_id
        self.client_secret = client_secret
        self.scopes = tuple(scopes)
        self.redirect_uri = redirect_uri or DEFAULT_REDIRECT_URI
        self.client_metadata_url = client_metadata_url
        self.private_key = private_key
        self.signing_algorithm = signing_algorithm or "ES256"
        self.assertion = assertion
        self.identity = identity
        self.dpop = dpop
        self._dpop = dpop_session if dpop_session is not None else DPoPSession(random)
        self.on_authorize = on_authorize
        self.on_user_step = on_user_step
        self.store: TokenStore = store if store is not None else MemoryTokenStore()
        self._add_secrets = add_secrets
        self.ssl_context = ssl_context
        self.clock = clock
        self.random = random
        self.credentials: Credentials | None = None
        self._lock = asyncio.Lock()
        self._refreshing: asyncio.Task[None] | None = None
        self._early_failed = -1
        #: The generation the last new authorization (a flow, not a refresh) made: a 403
        #: insufficient_scope to a request sent before it is answered by sending it again.
        self._granted = 0
        self._loaded = False
        #: The authorization server of the last flow (refreshes go to it), the scope it asked for.
        self._server: AuthServer | None = None
        self._scope: str | None = None
        #: The ``resource`` of the last flow's requests (refreshes name it too).
        self._resource_param: str | None = None
        self.secret(client_secret, private_key, assertion)
        if identity is not None:
            self.secret(identity.id_token, identity.client_secret)

    def __repr__(self) -> str:
        return f"OAuthAuthorizer({self.name!r}, kind={self.kind!r})"

    def secret(self, *values: str | None) -> None:
        if self._add_secrets is not None:
            self._add_secrets([v for v in values if v])

    # -- what the transport asks ------------------------------------------------------------

    def header(self) -> str | None:
        credentials = self.credentials
        tokens = credentials.tokens if credentials is not None else None
        if tokens is None:
            return None
        if (self._refreshing is None and self._early_failed != self.generation
                and tokens.refresh_due(self.clock(), REFRESH_MARGIN)):
            # Refreshed in the background; this request still goes with the token it has.
            self._refreshing = asyncio.get_running_loop().create_task(self._refresh_soon(self.generation))
        return f"{tokens.token_type} {tokens.access_token}"

    def proof(self, method: str, url: str) -> str | None:
        credentials = self.credentials
        tokens = credentials.tokens if credentials is not None else None
        if tokens is None or tokens.token_type != "DPoP":
            return None
        return self._dpop.resource_proof(method, url, self.clock(), tokens.access_token)

    def nonce(self, value: str) -> None:
        if self._dpop.resource_nonce(value):
            self.generation += 1  # RFC 9449 §9: a request refused for want of it is sent again

    async def _refresh_soon(self, generation: int) -> None:
        try:
            async with self._lock:
                if generation == self.generation:
                    await self._refresh()
        except OAuthError as exc:
            # Not tried again for this token: a 401 will say when a new one is needed.
            self._early_failed = generation
            logger.info("%s: the token could not be refreshed before it expires: %s", self.name, exc)
        finally:
            self._refreshing = None

    def close(self) -> None:
        if self._refreshing is not None:
            self._refreshing.cancel()

    async def prepare(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        stored = await self.store.get(self.name)
        if stored is None or not covers(stored.resource, self.server_url):
            return  # "Send only tokens issued by that AS for that resource."
        self.credentials = stored
        self._resource_param = stored.resource
        tokens = stored.tokens
        if tokens is not None:
            self.secret(tokens.access_token, tokens.refresh_token)
        if stored.client is not None:
            self.secret(stored.client.client_secret)
        if tokens is not None and tokens.refresh_due(self.clock(), REFRESH_MARGIN):
            async with self._lock:
                try:
                    await self._refresh()
                except OAuthError as exc:
                    logger.info("%s: the stored token could not be refreshed: %s", self.name, exc)

    def handles(self, status: int, challenges: list[str]) -> bool:
        if status == 401:
            return True
        challenge = bearer_challenge(challenges)
        return status == 403 and challenge is not None and challenge.error == "insufficient_scope"

    async def authorize(self, status: int, challenges: list[str], generation: int) -> None:
        challenge = bearer_challenge(challenges) or dpop_challenge(challenges)
        async with self._lock:
            if status == 401 and generation != self.generation:
                return  # the token (or the DPoP nonce) changed since the request was sent: send it again
            if status == 403 and generation < self._granted:
                # Authorized again since: the new grant may hold the scope. A mere refresh
                # since (same scope) does not count, or a token near its expiry would meet
                # every insufficient_scope with a refresh and never step up.
                return
            if challenge is not None and challenge.scheme == "dpop" and challenge.error == NONCE_ERROR:
                raise OAuthError("the server asked for a DPoP nonce without giving a new one (DPoP-Nonce)")
            found = await self._discover(challenge)
            credentials = self.credentials
            # A refresh only with the authorization server the resource names now: when it
            # names another one (a migration), the flow starts over there, registration first.
            if (status == 401 and credentials is not None and found[1].issuer == credentials.issuer
                    and await self._try_refresh(found[1])):
                return
            await self._flow(challenge, found, step_up=status == 403)

    # -- the flow ---------------------------------------------------------------------------

    async def _try_refresh(self, server: AuthServer) -> bool:
        tokens = self.credentials.tokens if self.credentials is not None else None
        if tokens is None or tokens.refresh_token is None:
            return False
        self._server = server
        try:
            await self._refresh()
        except OAuthError as exc:
            # Another host sharing the store may have spent the same refresh token first.
            if self.credentials is not None and await self._adopt_stored(self.credentials):
                return True
            # "A failed refresh restarts the flow."
            logger.info("%s: refreshing the token failed (%s); authorizing again", self.name, exc)
            return False
        return True

    async def _refresh(self) -> None:
        credentials = self.credentials
        if credentials is None or credentials.tokens is None or credentials.tokens.refresh_token is None:
            raise OAuthError("no refresh token")
        if await self._adopt_stored(credentials):
            return
        server = self._server
        if server is None or server.issuer != credentials.issuer:
            server = await self._discover_issuer(credentials.issuer)
        client = credentials.client or ClientInfo(self.client_id or "")
        grant = {"grant_type": "refresh_token", "refresh_token": credentials.tokens.refresh_token}
        tokens = await self._token(server, client, grant, self._resource_param, credentials.tokens.refresh_token)
        await self._keep(Credentials(self.name, credentials.issuer, credentials.resource, client, tokens))

    async def _adopt_stored(self, credentials: Credentials) -> bool:
        """Take the tokens another host sharing the store saved since ours were loaded (it
        refreshed them, and a rotated refresh token of ours is dead): true if taken."""
        stored = await self.store.get(self.name, credentials.issuer)
        if stored is None or stored.tokens is None or stored.resource != credentials.resource \
                or stored.tokens == credentials.tokens:
            return False
        self.secret(stored.tokens.access_token, stored.tokens.refresh_token)
        widened = credentials.tokens is None or stored.tokens.scope != credentials.tokens.scope
        self.credentials = stored
        self.generation += 1
        if widened:
            self._granted = self.generation  # another host's step-up, perhaps
        logger.debug("%s: took the tokens another host saved in the store", self.name)
        return True

    async def _flow(self, challenge: Challenge | None, found: tuple[ProtectedResource | None, AuthServer],
                    step_up: bool) -> None:
        resource, server = found
        self._server = server
        if self.kind != "clientCredentials" and resource is not None:
            # Before anything is registered or asked of the user. Not on the 2025-03-26 paths
            # (no resource metadata), which had no way to confirm PKCE.
            require_pkce(server)
        client = await self._client(server, resource)
        challenged = challenge.scope if challenge is not None else None
        if step_up and challenged:
            # SEP-2350: a step-up asks for what was asked before and what the challenge names.
            before = self._scope.split() if self._scope else []
            scope = choose_scope((), " ".join(dict.fromkeys([*before, *challenged.split()])), None, server)
        else:
            scope = choose_scope(self.scopes, challenged, resource.scopes_supported if resource else None, server)
        self._scope = scope
        # RFC 8707: the resource the token is for, on both requests.
        resource_param = resource.resource if resource is not None else self.resource
        self._resource_param = resource_param
        if self.kind == "clientCredentials":
            tokens = await self._token(server, client, {"grant_type": "client_credentials"}, resource_param, None,
                                       scope=scope)
        elif self.kind in ("jwtBearer", "enterpriseManaged"):
            assertion = self.assertion if self.identity is None else await self._id_jag(server, resource_param, scope)
            if assertion is None:
                raise OAuthError("no assertion for the JWT bearer grant (auth.assertion)")
            # SEP-1933: a refused assertion is said, never tried again or swapped for another grant.
            tokens = await self._token(server, client, jwt_bearer_grant(assertion), resource_param, None, scope=scope)
        else:
            tokens = await self._code_flow(server, client, scope, resource_param)
        await self._keep(Credentials(self.name, server.issuer, resource_param, client, tokens))
        self._granted = self.generation

    async def _id_jag(self, server: AuthServer, resource: str, scope: str | None) -> str:
        """SEP-990: the user's ID token exchanged at the identity provider for an ID-JAG naming
        ``server`` (its issuer) and ``resource``."""
        identity = self.identity
        assert identity is not None
        request = id_jag_request(identity.token_endpoint, identity.id_token, server.issuer, resource, scope,
                                 identity.client_id, identity.client_secret)
        status, _, body = await fetch(request, self.ssl_context)
        id_jag = read_id_jag(status, json_body(body))
        self.secret(id_jag)
        return id_jag

    async def _code_flow(self, server: AuthServer, client: ClientInfo, scope: str | None,
                         resource: str | None) -> Tokens:
        if self.on_authorize is None:
            raise OAuthError("the server needs a login and the host has no on_authorize hook "
                             "(give MCPHost(on_authorize=...), or log in with the command line)")
        pkce = PKCE.make(self.random)
        state = new_state(self.random)
        self.secret(pkce.verifier, state)
        url = authorization_url(server, client, self.redirect_uri, pkce, state, scope, resource)
        logger.info("%s: asking the user to authorize at %s", self.name, server.authorization_endpoint)
        if self.on_user_step is not None:
            self.on_user_step(self.name, True)
        try:
            callback = await self.on_authorize(url)
        except OAuthError:
            raise
        except Exception as exc:  # the application's hook: its failure is said, not raised raw
            raise OAuthError(f"on_authorize failed: {type(exc).__name__}: {str(exc)[:200]}") from None
        finally:
            if self.on_user_step is not None:
                self.on_user_step(self.name, False)
        if not isinstance(callback, str):
            raise OAuthError("on_authorize returned no callback URL")
        code = code_from_callback(callback, state, server)
        self.secret(code)
        grant = {"grant_type": "authorization_code", "code": code, "redirect_uri": self.redirect_uri,
                 "code_verifier": pkce.verifier}
        return await self._token(server, client, grant, resource, None)

    async def _token(self, server: AuthServer, client: ClientInfo, grant: dict[str, str], resource: str | None,
                     previous_refresh: str | None, scope: str | None = None) -> Tokens:
        assertion = None
        if client.auth_method == "private_key_jwt" and self.private_key is not None:
            assertion = client_assertion(self.private_key, self.signing_algorithm, client.client_id, server.issuer,
                                         self.clock(), self.random)
        request = token_request(server, client, grant, resource or self.resource, scope, assertion)
        dpop = self.dpop if self.dpop is not None else offers_dpop(server.dpop_algorithms)
        for attempt in range(2 if dpop else 1):  # DPoP: once more with the nonce asked for (RFC 9449 §8)
            status, headers, body = await fetch(self._dpop.sign(request, self.clock()) if dpop else request,
                                                self.ssl_context)
            doc = json_body(body)
            if not (dpop and self._dpop.retry_with_nonce(status, headers, doc) and attempt == 0):
                break
        tokens = read_tokens(status, doc, self.clock(), previous_refresh, dpop=dpop)
        self.secret(tokens.access_token, tokens.refresh_token)
        return tokens

    async def _keep(self, credentials: Credentials) -> None:
        self.credentials = credentials
        self.generation += 1
        await self.store.put(credentials)

    async def _get_json(self, url: str) -> tuple[int, Any]:
        status, _, body = await fetch(Request("GET", url, (("Accept", "application/json"),)), self.ssl_context)
        return status, json_body(body) if status == 200 else None

    async def _discover(self, challenge: Challenge | None) -> tuple[ProtectedResource | None, AuthServer]:
        """The resource's metadata (``None``: it published none) and its authorization server."""
        header_url = challenge.resource_metadata if challenge is not None else None
        resource = None
        for url in prm_urls(self.server_url, header_url):
            status, doc = await self._get_json(url)
            if status == 200 and doc is not None:
                resource = read_prm(doc, self.server_url)
                break
        if resource is None:
            # 2025-03-26: the authorization server is the MCP server's origin.
            return None, await self._discover_issuer(default_auth_server(self.server_url).issuer, legacy=True)
        return resource, await self._discover_issuer(resource.authorization_servers[0])

    async def _discover_issuer(self, issuer: str, legacy: bool = False) -> AuthServer:
        for url in as_metadata_urls(issuer):
            status, doc = await self._get_json(url)
            if status == 200 and doc is not None:
                return read_as_metadata(doc, None if legacy else issuer)
        if legacy:
            return default_auth_server(self.server_url)
        raise OAuthError(f"no metadata found for the authorization server {issuer[:200]!r}")

    async def _client(self, server: AuthServer, resource: ProtectedResource | None) -> ClientInfo:
        """Who we are to ``server``: pre-registered, a metadata document URL, or registered now."""
        if self.client_id is not None and self.private_key is not None:
            return ClientInfo(self.client_id, None, "private_key_jwt")
        if self.client_id is not None:
            return ClientInfo(self.client_id, self.client_secret,
                              choose_auth_method(server, self.client_secret is not None), self.redirect_uri)
        kept = await self.store.get(self.name, server.issuer)
        if kept is not None and kept.client is not None:
            # A new issuer is a new registration ("re-register if the AS changes").
            self.secret(kept.client.client_secret)
            return kept.client
        if self.client_metadata_url is not None and server.cimd_supported:
            return ClientInfo(self.client_metadata_url, None, "none", self.redirect_uri)
        if server.registration_endpoint is None:
            raise OAuthError("the authorization server offers no client registration: set auth.clientId "
                             "(and auth.clientSecret) to a client registered with it")
        offered = server.token_auth_methods
        method = "client_secret_basic"
        if offered is not None:
            method = next((m for m in ("client_secret_basic", "client_secret_post", "none") if m in offered),
                          "client_secret_basic")
        grants = ["client_credentials"] if self.kind == "clientCredentials" else ["authorization_code", "refresh_token"]
        redirect = None if self.kind == "clientCredentials" else self.redirect_uri
        request = registration_request(server, redirect, None, method, "mcphost", grants)
        status, _, body = await fetch(request, self.ssl_context)
        client = read_registration(status, json_body(body), method, redirect)
        self.secret(client.client_secret)
        await self.store.put(Credentials(self.name, server.issuer, self.resource, client, None))
        return client
