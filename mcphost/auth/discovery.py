"""Where the authorization metadata is, and whether what was found may be used.

Layer 1. The MCP authorization spec (2025-11-25 "Authorization Server Discovery"; 2026-07-28
adds the ``resource`` and ``issuer`` checks):

- Protected Resource Metadata (RFC 9728): the URL of the 401's ``resource_metadata``, else
  ``/.well-known/oauth-protected-resource`` with the MCP endpoint's path, else at the root;
- its ``resource`` must be the MCP server's (a PRM for another resource is refused);
- authorization server metadata: RFC 8414 then OpenID Connect Discovery, the issuer's path
  inserted after the well-known segment (and OIDC's appended form too); its ``issuer`` must
  be the one it was looked up by; an authorization code is asked for only when its
  ``code_challenge_methods_supported`` lists ``S256`` (:func:`require_pkce`: absent means no
  PKCE, and the client "MUST refuse to proceed");
- without any PRM (2025-03-26), the authorization server is the MCP server's origin; without
  its metadata, the endpoints default to ``/authorize``, ``/token`` and ``/register``.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import OAuthError

__all__ = [
    "AuthServer", "ProtectedResource", "as_metadata_urls", "canonical_resource", "covers", "default_auth_server",
    "prm_urls", "read_as_metadata", "read_prm", "require_pkce",
]

_PRM = "/.well-known/oauth-protected-resource"
_RFC8414 = "/.well-known/oauth-authorization-server"
_OIDC = "/.well-known/openid-configuration"


def _split(url: str) -> urllib.parse.SplitResult:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        raise OAuthError(f"not an http(s) URL: {url[:200]!r}")
    return parts


def _origin(parts: urllib.parse.SplitResult) -> str:
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


def canonical_resource(server_url: str) -> str:
    """The MCP server's canonical URI (RFC 8707 ``resource``): lower-case scheme and host, no
    fragment, no trailing slash on a path (the spec's examples: ``https://mcp.example.com/mcp``)."""
    parts = _split(server_url)
    path = parts.path.rstrip("/") if parts.path not in ("", "/") else ""
    query = f"?{parts.query}" if parts.query else ""
    return f"{_origin(parts)}{path}{query}"


def prm_urls(server_url: str, from_header: str | None) -> list[str]:
    """Where to look for the Protected Resource Metadata, in the spec's order."""
    parts = _split(server_url)
    urls = []
    if from_header:
        _split(from_header)
        urls.append(from_header)
    path = parts.path.rstrip("/")
    if path:
        urls.append(f"{_origin(parts)}{_PRM}{path}")
    urls.append(f"{_origin(parts)}{_PRM}")
    return list(dict.fromkeys(urls))


def as_metadata_urls(issuer: str) -> list[str]:
    """Where to look for the authorization server's metadata, in the spec's order."""
    parts = _split(issuer)
    origin = _origin(parts)
    path = parts.path.rstrip("/")
    if path:
        return [f"{origin}{_RFC8414}{path}", f"{origin}{_OIDC}{path}", f"{origin}{path}{_OIDC}"]
    return [f"{origin}{_RFC8414}", f"{origin}{_OIDC}"]


@dataclass(frozen=True)
class ProtectedResource:
    """What a PRM document says: the resource, its authorization servers, its scopes."""

    resource: str
    authorization_servers: tuple[str, ...]
    scopes_supported: tuple[str, ...] | None = None


def _strings(doc: Mapping[str, Any], key: str) -> tuple[str, ...] | None:
    value = doc.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise OAuthError(f"{key}: expected a list of strings")
    return tuple(value[:256])


def covers(given: str, server_url: str) -> bool:
    """``given`` names the MCP server: the same origin, and a path the server's path is in."""
    try:
        a, b = _split(given), _split(server_url)
    except OAuthError:
        return False
    if _origin(a) != _origin(b) or (a.port or 0) != (b.port or 0):
        return False
    mine = b.path.rstrip("/") + "/"
    theirs = a.path.rstrip("/") + "/"
    return mine.startswith(theirs)


def read_prm(doc: Any, server_url: str) -> ProtectedResource:
    """The PRM document ``doc`` checked against the MCP server's URL."""
    if not isinstance(doc, Mapping):
        raise OAuthError("the protected resource metadata is not a JSON object")
    resource = doc.get("resource")
    if not isinstance(resource, str):
        raise OAuthError("the protected resource metadata has no resource")
    if not covers(resource, server_url):
        # RFC 9728 §3.3: a resource other than the one asked about must not be used.
        raise OAuthError(f"the protected resource metadata is for another resource ({resource[:200]!r})")
    servers = _strings(doc, "authorization_servers") or ()
    if not servers:
        raise OAuthError("the protected resource metadata names no authorization server")
    return ProtectedResource(resource, servers, _strings(doc, "scopes_supported"))


@dataclass(frozen=True)
class AuthServer:
    """An authorization server's metadata (RFC 8414), what the flow uses of it."""

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    registration_endpoint: str | None = None
    scopes_supported: tuple[str, ...] | None = None
    code_challenge_methods: tuple[str, ...] | None = None
    token_auth_methods: tuple[str, ...] | None = None
    grant_types: tuple[str, ...] | None = None
    cimd_supported: bool = False
    iss_supported: bool = False
    #: ``dpop_signing_alg_values_supported`` (RFC 9449 §5.1): the DPoP proofs it takes.
    dpop_algorithms: tuple[str, ...] | None = None
    #: Read from a metadata document (``False``: the 2025-03-26 default endpoints).
    discovered: bool = True


def _endpoint(doc: Mapping[str, Any], key: str, required: bool = True) -> str | None:
    value = doc.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise OAuthError(f"the authorization server metadata has no {key}")
    _split(value)
    return value


def _issuer_equal(a: str, b: str) -> bool:
    return a == b or a.rstrip("/") == b.rstrip("/")


def read_as_metadata(doc: Any, issuer: str | None) -> AuthServer:
    """The metadata document ``doc`` found for ``issuer``, checked (``None``: 2025-03-26's
    metadata at the MCP server's root, whose issuer nothing named before)."""
    if not isinstance(doc, Mapping):
        raise OAuthError("the authorization server metadata is not a JSON object")
    given = doc.get("issuer")
    if not isinstance(given, str):
        raise OAuthError("the authorization server metadata has no issuer")
    if issuer is not None and not _issuer_equal(given, issuer):
        # RFC 8414 §3.3: the issuer must be the one the metadata was looked up by.
        raise OAuthError(f"the authorization server metadata is for another issuer ({given[:200]!r})")
    methods = _strings(doc, "code_challenge_methods_supported")
    if methods is not None and "S256" not in methods:
        # PKCE S256 is required (MCP authorization, "Authorization Code Protection").
        raise OAuthError("the authorization server does not support PKCE with S256")
    return AuthServer(
        issuer=given,
        authorization_endpoint=_endpoint(doc, "authorization_endpoint") or "",
        token_endpoint=_endpoint(doc, "token_endpoint") or "",
        registration_endpoint=_endpoint(doc, "registration_endpoint", False),
        scopes_supported=_strings(doc, "scopes_supported"),
        code_challenge_methods=methods,
        token_auth_methods=_strings(doc, "token_endpoint_auth_methods_supported"),
        grant_types=_strings(doc, "grant_types_supported"),
        cimd_supported=doc.get("client_id_metadata_document_supported") is True,
        iss_supported=doc.get("authorization_response_iss_parameter_supported") is True,
        dpop_algorithms=_strings(doc, "dpop_signing_alg_values_supported"),
    )


def require_pkce(server: AuthServer) -> None:
    """Refuse an authorization code flow with ``server`` unless its metadata confirms PKCE
    S256. 2025-11-25 "Authorization Code Protection": "If ``code_challenge_methods_supported``
    is absent, the authorization server does not support PKCE and MCP clients MUST refuse to
    proceed" (for OpenID Connect Discovery metadata as well). The 2025-03-26 paths (metadata
    at the MCP server's origin, or none at all) are the caller's to exempt: that revision
    gave the client no way to confirm it."""
    if server.code_challenge_methods is None:
        raise OAuthError("the authorization server's metadata does not say it supports PKCE "
                         "(no code_challenge_methods_supported): refusing to log in without PKCE S256")
    if "S256" not in server.code_challenge_methods:
        raise OAuthError("the authorization server does not support PKCE with S256")


def default_auth_server(server_url: str) -> AuthServer:
    """2025-03-26 "Fallbacks for Servers without Metadata Discovery": the endpoints at the
    MCP server's origin."""
    origin = _origin(_split(server_url))
    return AuthServer(issuer=origin, authorization_endpoint=f"{origin}/authorize", token_endpoint=f"{origin}/token",
                      registration_endpoint=f"{origin}/register", discovered=False)
