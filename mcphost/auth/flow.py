"""The steps of the authorization code flow, each a pure function (randomness and the clock
are arguments).

Layer 1. OAuth 2.1 with PKCE S256 (always), ``state`` checked, RFC 9207 ``iss`` checked,
RFC 8707 ``resource`` on the authorization and token requests, the token endpoint's client
authentication (``client_secret_basic``, ``client_secret_post``, ``none``), Dynamic Client
Registration (RFC 7591) and its answer, the scopes to ask for, the token response read.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from .._json import dumps
from .discovery import AuthServer
from .errors import OAuthError
from .jwt import ASSERTION_TYPE
from .store import ClientInfo, Tokens

__all__ = [
    "PKCE", "Request", "authorization_url", "choose_auth_method", "choose_scope", "code_from_callback",
    "read_registration", "read_tokens", "registration_request", "token_request",
]

#: The scope that asks for a refresh token (OpenID Connect; SEP-2207).
OFFLINE: Final = "offline_access"
#: The most of a token endpoint's error description quoted.
_QUOTE: Final = 200
_METHODS_WITH_SECRET: Final = ("client_secret_basic", "client_secret_post")


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


@dataclass(frozen=True, repr=False)
class PKCE:
    """A code verifier (RFC 7636: 43 characters from 32 random bytes) and its S256 challenge."""

    verifier: str
    challenge: str

    @classmethod
    def make(cls, random: Callable[[int], bytes]) -> PKCE:
        verifier = _b64url(random(32))
        return cls(verifier, _b64url(hashlib.sha256(verifier.encode("ascii")).digest()))

    def __repr__(self) -> str:
        return "PKCE(verifier='***')"


def new_state(random: Callable[[int], bytes]) -> str:
    return _b64url(random(24))


def choose_scope(configured: Sequence[str], challenged: str | None, resource_scopes: Sequence[str] | None,
                 server: AuthServer) -> str | None:
    """The ``scope`` to ask for: the configuration's, else the challenge's, else every scope
    of the resource metadata, else none (2025-11-25 "Scope Selection Strategy"); with
    ``offline_access`` added when the authorization server offers it (SEP-2207)."""
    if configured:
        scopes = list(configured)
    elif challenged:
        scopes = challenged.split()
    elif resource_scopes:
        scopes = list(resource_scopes)
    else:
        return None
    if server.scopes_supported is not None and OFFLINE in server.scopes_supported and OFFLINE not in scopes:
        scopes.append(OFFLINE)
    return " ".join(dict.fromkeys(scopes))


def choose_auth_method(server: AuthServer, has_secret: bool) -> str:
    """The token endpoint authentication to use: one the server offers (RFC 8414's default
    when it says nothing is ``client_secret_basic``)."""
    offered = server.token_auth_methods
    if not has_secret:
        return "none"
    if offered is None:
        return "client_secret_basic"
    for method in _METHODS_WITH_SECRET:
        if method in offered:
            return method
    return "none" if "none" in offered else "client_secret_basic"


def authorization_url(server: AuthServer, client: ClientInfo, redirect_uri: str, pkce: PKCE, state: str,
                      scope: str | None, resource: str | None) -> str:
    """The URL the user is sent to (OAuth 2.1 §4.1.1, RFC 8707 ``resource``)."""
    params = [("response_type", "code"), ("client_id", client.client_id), ("redirect_uri", redirect_uri),
              ("code_challenge", pkce.challenge), ("code_challenge_method", "S256"), ("state", state)]
    if scope:
        params.append(("scope", scope))
    if resource:
        params.append(("resource", resource))
    endpoint = server.authorization_endpoint
    joiner = "&" if urllib.parse.urlsplit(endpoint).query else "?"
    return endpoint + joiner + urllib.parse.urlencode(params, quote_via=urllib.parse.quote)


def code_from_callback(callback_url: str, state: str, server: AuthServer) -> str:
    """The authorization code of the redirect back, once ``state`` and ``iss`` are checked.

    RFC 9207: when the server says it sends ``iss`` it must be there and equal to its issuer
    (exact string comparison); when it is there it must be equal in any case (also on an
    error response, checked before the error is believed).
    """
    query = urllib.parse.urlsplit(callback_url).query
    params = dict(urllib.parse.parse_qsl(query, keep_blank_values=True))
    iss = params.get("iss")
    if iss is not None and iss != server.issuer:
        raise OAuthError("the authorization response came from another issuer (iss does not match)")
    if iss is None and server.iss_supported:
        raise OAuthError("the authorization response has no iss, which the authorization server promised")
    if not hmac.compare_digest(params.get("state", ""), state):
        raise OAuthError("the authorization response's state does not match the request's")
    if "error" in params:
        description = params.get("error_description", "")[:_QUOTE]
        raise OAuthError(f"the authorization was refused: {params['error'][:_QUOTE]}"
                         + (f" ({description})" if description else ""))
    code = params.get("code")
    if not code:
        raise OAuthError("the authorization response has no code")
    return code


@dataclass(frozen=True, repr=False)
class Request:
    """An HTTP request to the authorization server (the driver sends it)."""

    method: str
    url: str
    headers: tuple[tuple[str, str], ...]
    body: bytes = b""

    def __repr__(self) -> str:
        return f"Request({self.method} {self.url.split('?')[0]})"


_FORM = ("Content-Type", "application/x-www-form-urlencoded")
_JSON_ACCEPT = ("Accept", "application/json")


def token_request(server: AuthServer, client: ClientInfo, grant: Mapping[str, str], resource: str | None,
                  scope: str | None = None, assertion: str | None = None) -> Request:
    """A token request of ``grant`` (its ``grant_type`` and parameters), the client
    authenticated the way ``client.auth_method`` says (RFC 6749 §2.3.1; ``private_key_jwt``:
    with ``assertion``, RFC 7523 §2.2)."""
    params = dict(grant)
    headers = [_FORM, _JSON_ACCEPT]
    method = client.auth_method
    if method == "client_secret_basic" and client.client_secret is not None:
        pair = f"{urllib.parse.quote(client.client_id, safe='')}:{urllib.parse.quote(client.client_secret, safe='')}"
        headers.append(("Authorization", "Basic " + base64.b64encode(pair.encode()).decode("ascii")))
    else:
        params["client_id"] = client.client_id
        if method == "client_secret_post" and client.client_secret is not None:
            params["client_secret"] = client.client_secret
        elif method == "private_key_jwt" and assertion is not None:
            params["client_assertion_type"] = ASSERTION_TYPE
            params["client_assertion"] = assertion
    if scope:
        params["scope"] = scope
    if resource:
        params["resource"] = resource
    body = urllib.parse.urlencode(params).encode("ascii")
    return Request("POST", server.token_endpoint, tuple(headers), body)


def read_tokens(status: int, doc: Any, now: float, previous_refresh: str | None = None, dpop: bool = False) -> Tokens:
    """The tokens of a token response (RFC 6749 §5.1), or why there are none (§5.2).
    ``dpop``: the request carried a DPoP proof, so a ``DPoP`` token is welcome (RFC 9449 §5)."""
    if not isinstance(doc, Mapping):
        raise OAuthError(f"the token endpoint answered HTTP {status} without a JSON object")
    if status != 200 or "error" in doc:
        error = doc.get("error")
        description = doc.get("error_description")
        text = f"the token endpoint refused: {str(error)[:_QUOTE]}" if error else f"the token endpoint answered HTTP {status}"
        if isinstance(description, str) and description:
            text += f" ({description[:_QUOTE]})"
        raise OAuthError(text)
    access = doc.get("access_token")
    token_type = doc.get("token_type", "Bearer")
    if not isinstance(access, str) or not access:
        raise OAuthError("the token response has no access_token")
    kind = token_type.lower() if isinstance(token_type, str) else ""
    if kind != "bearer" and not (dpop and kind == "dpop"):
        raise OAuthError(f"the token response's token_type is not Bearer ({str(token_type)[:40]!r})")
    expires_in = doc.get("expires_in")
    expires_at = None
    if isinstance(expires_in, (int, float)) and not isinstance(expires_in, bool) and expires_in > 0:
        expires_at = now + float(expires_in)
    refresh = doc.get("refresh_token")
    scope = doc.get("scope")
    return Tokens(
        access_token=access, token_type="DPoP" if kind == "dpop" else "Bearer",
        refresh_token=refresh if isinstance(refresh, str) and refresh else previous_refresh,
        expires_at=expires_at, scope=scope if isinstance(scope, str) else None, issued_at=now,
    )


def registration_request(server: AuthServer, redirect_uri: str | None, scope: str | None, auth_method: str,
                         client_name: str, grant_types: Sequence[str]) -> Request:
    """A Dynamic Client Registration request (RFC 7591 §3.1)."""
    metadata: dict[str, Any] = {
        "client_name": client_name,
        "grant_types": list(grant_types),
        "token_endpoint_auth_method": auth_method,
    }
    if redirect_uri is not None:
        metadata["redirect_uris"] = [redirect_uri]
        metadata["response_types"] = ["code"]
        host = urllib.parse.urlsplit(redirect_uri).hostname or ""
        # 2026-07-28: "native" for a loopback redirect (a desktop or command-line client).
        metadata["application_type"] = "native" if host in ("localhost", "127.0.0.1", "::1") else "web"
    if scope:
        metadata["scope"] = scope
    assert server.registration_endpoint is not None
    return Request("POST", server.registration_endpoint,
                   (("Content-Type", "application/json"), _JSON_ACCEPT), dumps(metadata))


def read_registration(status: int, doc: Any, requested_method: str, redirect_uri: str | None) -> ClientInfo:
    """The client of a registration response (RFC 7591 §3.2.1), or why there is none."""
    if not isinstance(doc, Mapping):
        raise OAuthError(f"the registration endpoint answered HTTP {status} without a JSON object")
    if status not in (200, 201) or "error" in doc:
        error = doc.get("error")
        raise OAuthError(f"the client registration was refused: {str(error or status)[:_QUOTE]}")
    client_id = doc.get("client_id")
    if not isinstance(client_id, str) or not client_id:
        raise OAuthError("the registration response has no client_id")
    secret = doc.get("client_secret")
    method = doc.get("token_endpoint_auth_method")
    if not isinstance(method, str):
        method = requested_method
    if not isinstance(secret, str) or not secret:
        secret = None
        if method in _METHODS_WITH_SECRET:
            method = "none"
    expires = doc.get("client_secret_expires_at")
    return ClientInfo(
        client_id=client_id, client_secret=secret, auth_method=method, redirect_uri=redirect_uri,
        secret_expires_at=float(expires) if isinstance(expires, (int, float)) and not isinstance(expires, bool)
        and expires > 0 else None,
    )
