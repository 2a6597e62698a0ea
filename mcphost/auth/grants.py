"""The extension grants, each a pure function: an assertion for a token, without a user.

Layer 1. Two MCP authorization extensions, both ending in the JWT bearer grant of RFC 7523
§2.1 at the MCP server's authorization server:

- workload identity federation (SEP-1933): the assertion is a JWT the workload's platform
  issued (the configuration's ``assertion``), sent as it is;
- enterprise-managed authorization (SEP-990, "cross-app access"): the user's ID token from
  the enterprise identity provider is first exchanged there (RFC 8693 token exchange) for
  an Identity Assertion JWT Authorization Grant (ID-JAG) naming the authorization server
  (``audience``) and the MCP server (``resource``); the ID-JAG is the assertion.
"""

from __future__ import annotations

import base64
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from .errors import OAuthError
from .flow import Request

__all__ = ["ID_JAG_TYPE", "ID_TOKEN_TYPE", "JWT_BEARER", "Identity", "TOKEN_EXCHANGE", "id_jag_request", "jwt_bearer_grant",
           "read_id_jag"]

#: RFC 7523 §2.1: the grant type of an assertion used as an authorization grant.
JWT_BEARER: Final = "urn:ietf:params:oauth:grant-type:jwt-bearer"
#: RFC 8693 §2.1: the grant type of a token exchange.
TOKEN_EXCHANGE: Final = "urn:ietf:params:oauth:grant-type:token-exchange"
#: RFC 8693 §3: the subject token is an OpenID Connect ID token.
ID_TOKEN_TYPE: Final = "urn:ietf:params:oauth:token-type:id_token"
#: The token type of an Identity Assertion JWT Authorization Grant (SEP-990).
ID_JAG_TYPE: Final = "urn:ietf:params:oauth:token-type:id-jag"
_QUOTE: Final = 200
#: The most of an ID-JAG taken (a JWT; anything longer is not one worth sending on).
MAX_ASSERTION: Final = 16 * 1024


@dataclass(frozen=True, repr=False)
class Identity:
    """The enterprise identity provider of an ``enterpriseManaged`` auth: its token endpoint, the
    user's ID token there, and this client as the identity provider knows it."""

    token_endpoint: str
    id_token: str
    client_id: str | None = None
    client_secret: str | None = None

    def __repr__(self) -> str:
        return f"Identity({self.token_endpoint.split('?')[0]!r})"


def jwt_bearer_grant(assertion: str) -> dict[str, str]:
    """The grant parameters of an RFC 7523 JWT bearer token request (``token_request``
    adds the client authentication, ``scope`` and ``resource``)."""
    return {"grant_type": JWT_BEARER, "assertion": assertion}


def id_jag_request(token_endpoint: str, id_token: str, audience: str, resource: str, scope: str | None,
                   client_id: str | None, client_secret: str | None) -> Request:
    """The token exchange at the identity provider: the user's ID token for an ID-JAG for
    ``audience`` (the authorization server's issuer) and ``resource`` (the MCP server).
    The client, when given, is the one registered with the identity provider
    (``client_secret_basic`` when it has a secret, else its id in the body)."""
    params = {"grant_type": TOKEN_EXCHANGE, "requested_token_type": ID_JAG_TYPE, "audience": audience,
              "resource": resource, "subject_token": id_token, "subject_token_type": ID_TOKEN_TYPE}
    if scope:
        params["scope"] = scope
    headers = [("Content-Type", "application/x-www-form-urlencoded"), ("Accept", "application/json")]
    if client_id is not None and client_secret is not None:
        pair = f"{urllib.parse.quote(client_id, safe='')}:{urllib.parse.quote(client_secret, safe='')}"
        headers.append(("Authorization", "Basic " + base64.b64encode(pair.encode()).decode("ascii")))
    elif client_id is not None:
        params["client_id"] = client_id
    return Request("POST", token_endpoint, tuple(headers), urllib.parse.urlencode(params).encode("ascii"))


def read_id_jag(status: int, doc: Any) -> str:
    """The ID-JAG of the identity provider's token exchange answer (RFC 8693 §2.2), or why
    there is none."""
    if not isinstance(doc, Mapping):
        raise OAuthError(f"the identity provider's token endpoint answered HTTP {status} without a JSON object")
    if status != 200 or "error" in doc:
        error = doc.get("error")
        description = doc.get("error_description")
        text = (f"the identity provider refused the token exchange: {str(error)[:_QUOTE]}" if error
                else f"the identity provider's token endpoint answered HTTP {status}")
        if isinstance(description, str) and description:
            text += f" ({description[:_QUOTE]})"
        raise OAuthError(text)
    issued = doc.get("issued_token_type")
    if issued != ID_JAG_TYPE:
        raise OAuthError(f"the identity provider issued a {str(issued)[:80]!r}, not an ID-JAG")
    token = doc.get("access_token")
    if not isinstance(token, str) or not token or len(token) > MAX_ASSERTION or token.count(".") != 2:
        raise OAuthError("the identity provider's answer has no ID-JAG (a JWT) in access_token")
    return token
