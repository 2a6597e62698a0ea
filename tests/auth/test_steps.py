"""The sans-I/O OAuth steps: challenges, discovery, PKCE, the callback, token requests."""

from __future__ import annotations

import base64
import hashlib
import urllib.parse

import pytest

from mcphost.auth.challenge import bearer_challenge, parse_challenges
from mcphost.auth.discovery import (
    as_metadata_urls,
    canonical_resource,
    default_auth_server,
    prm_urls,
    read_as_metadata,
    read_prm,
    require_pkce,
)
from mcphost.auth.errors import OAuthError
from mcphost.auth.flow import (
    PKCE,
    authorization_url,
    choose_auth_method,
    choose_scope,
    code_from_callback,
    read_registration,
    read_tokens,
    token_request,
)
from mcphost.auth.store import ClientInfo

META = {"issuer": "https://as.example/tenant", "authorization_endpoint": "https://as.example/authorize",
        "token_endpoint": "https://as.example/token", "code_challenge_methods_supported": ["S256"]}


def test_challenges_are_read() -> None:
    found = parse_challenges('Basic realm="x", Bearer resource_metadata="https://m.example/prm", '
                             'scope="a b", error="insufficient_scope", error_description="say \\"hi\\""')
    assert [c.scheme for c in found] == ["basic", "bearer"]
    bearer = bearer_challenge(['Basic realm="x"', 'Bearer scope="a b", resource_metadata="https://m.example/prm", '
                                                  'error=insufficient_scope'])
    assert bearer is not None
    assert (bearer.scope, bearer.resource_metadata, bearer.error) == ("a b", "https://m.example/prm", "insufficient_scope")
    assert bearer_challenge(["Negotiate abc=="]) is None
    assert parse_challenges('Bearer realm="never closed') == []
    assert len(parse_challenges("Bearer " + "a=b, " * 10_000)[0].params) <= 32  # bounded


def test_discovery_urls_in_the_spec_order() -> None:
    assert prm_urls("https://mcp.example/api/mcp", "https://mcp.example/custom") == [
        "https://mcp.example/custom", "https://mcp.example/.well-known/oauth-protected-resource/api/mcp",
        "https://mcp.example/.well-known/oauth-protected-resource"]
    assert prm_urls("https://mcp.example", None) == ["https://mcp.example/.well-known/oauth-protected-resource"]
    assert as_metadata_urls("https://as.example/tenant1") == [
        "https://as.example/.well-known/oauth-authorization-server/tenant1",
        "https://as.example/.well-known/openid-configuration/tenant1",
        "https://as.example/tenant1/.well-known/openid-configuration"]
    assert as_metadata_urls("https://as.example") == [
        "https://as.example/.well-known/oauth-authorization-server", "https://as.example/.well-known/openid-configuration"]
    assert canonical_resource("HTTPS://MCP.Example/mcp/") == "https://mcp.example/mcp"
    fallback = default_auth_server("https://mcp.example/mcp")
    assert (fallback.authorization_endpoint, fallback.token_endpoint, fallback.registration_endpoint) == (
        "https://mcp.example/authorize", "https://mcp.example/token", "https://mcp.example/register")


def test_metadata_is_checked() -> None:
    prm = read_prm({"resource": "https://mcp.example/mcp", "authorization_servers": ["https://as.example"],
                    "scopes_supported": ["r"]}, "https://mcp.example/mcp")
    assert prm.authorization_servers == ("https://as.example",) and prm.scopes_supported == ("r",)
    with pytest.raises(OAuthError, match="another resource"):
        read_prm({"resource": "https://evil.example/mcp", "authorization_servers": ["x"]}, "https://mcp.example/mcp")
    with pytest.raises(OAuthError, match="no authorization server"):
        read_prm({"resource": "https://mcp.example/mcp"}, "https://mcp.example/mcp")
    assert read_as_metadata(META, "https://as.example/tenant").issuer == "https://as.example/tenant"
    with pytest.raises(OAuthError, match="another issuer"):
        read_as_metadata(META, "https://as.example/other")
    with pytest.raises(OAuthError, match="PKCE"):
        read_as_metadata({**META, "code_challenge_methods_supported": ["plain"]}, "https://as.example/tenant")


def test_pkce_must_be_confirmed_by_the_metadata() -> None:
    require_pkce(read_as_metadata(META, "https://as.example/tenant"))
    bare = {k: v for k, v in META.items() if k != "code_challenge_methods_supported"}
    with pytest.raises(OAuthError, match="code_challenge_methods_supported"):
        require_pkce(read_as_metadata(bare, "https://as.example/tenant"))


def test_pkce_state_and_the_authorization_url() -> None:
    pkce = PKCE.make(lambda n: bytes(range(n)))
    assert len(pkce.verifier) == 43 and "verifier" not in repr(pkce).replace("verifier=", "")
    expected = base64.urlsafe_b64encode(hashlib.sha256(pkce.verifier.encode()).digest()).rstrip(b"=").decode()
    assert pkce.challenge == expected
    server = read_as_metadata(META, None)
    url = authorization_url(server, ClientInfo("cid"), "http://127.0.0.1:9/cb", pkce, "st", "a b",
                            "https://mcp.example/mcp")
    query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))
    assert query == {"response_type": "code", "client_id": "cid", "redirect_uri": "http://127.0.0.1:9/cb",
                     "code_challenge": pkce.challenge, "code_challenge_method": "S256", "state": "st",
                     "scope": "a b", "resource": "https://mcp.example/mcp"}


def test_the_callback_is_checked() -> None:
    server = read_as_metadata({**META, "authorization_response_iss_parameter_supported": True}, None)
    iss = urllib.parse.quote(server.issuer, safe="")
    assert code_from_callback(f"http://cb/?code=c1&state=s&iss={iss}", "s", server) == "c1"
    for url, why in ((f"http://cb/?code=c1&state=x&iss={iss}", "state"), ("http://cb/?code=c1&state=s", "no iss"),
                     ("http://cb/?code=c1&state=s&iss=https%3A%2F%2Fevil", "another issuer"),
                     (f"http://cb/?error=access_denied&state=s&iss={iss}", "refused: access_denied")):
        with pytest.raises(OAuthError, match=why):
            code_from_callback(url, "s", server)


def test_scopes_and_client_authentication() -> None:
    server = read_as_metadata({**META, "scopes_supported": ["r", "offline_access"]}, None)
    assert choose_scope((), "x y", ["r"], server) == "x y offline_access"
    assert choose_scope((), None, ["r"], server) == "r offline_access"
    assert choose_scope((), None, None, server) is None
    assert choose_scope(("mine",), "x", None, read_as_metadata(META, None)) == "mine"
    assert choose_auth_method(read_as_metadata({**META, "token_endpoint_auth_methods_supported": ["client_secret_post"]},
                                               None), True) == "client_secret_post"
    assert choose_auth_method(server, False) == "none"
    basic = token_request(server, ClientInfo("c id", "s:ecret", "client_secret_basic"),
                          {"grant_type": "client_credentials"}, "https://mcp.example/mcp")
    header = dict(basic.headers)["Authorization"]
    assert base64.b64decode(header.split()[1]).decode() == "c%20id:s%3Aecret"
    assert b"client_secret" not in basic.body and b"resource=https" in basic.body
    post = token_request(server, ClientInfo("c", "sec", "client_secret_post"), {"grant_type": "x"}, None)
    assert dict(urllib.parse.parse_qsl(post.body.decode())) == {"grant_type": "x", "client_id": "c",
                                                                "client_secret": "sec"}
    assert "sec" not in repr(post)


def test_token_and_registration_answers() -> None:
    tokens = read_tokens(200, {"access_token": "a", "token_type": "bearer", "expires_in": 60, "refresh_token": "r"},
                         1000.0)
    assert (tokens.access_token, tokens.expires_at, tokens.refresh_token) == ("a", 1060.0, "r")
    assert read_tokens(200, {"access_token": "b", "token_type": "Bearer"}, 0.0, "old").refresh_token == "old"
    with pytest.raises(OAuthError, match="refused: invalid_grant"):
        read_tokens(400, {"error": "invalid_grant"}, 0.0)
    with pytest.raises(OAuthError, match="not Bearer"):
        read_tokens(200, {"access_token": "a", "token_type": "DPoP"}, 0.0)
    client = read_registration(201, {"client_id": "id", "client_secret": "s"}, "client_secret_post", None)
    assert (client.client_id, client.client_secret, client.auth_method) == ("id", "s", "client_secret_post")
    assert read_registration(201, {"client_id": "id"}, "client_secret_basic", None).auth_method == "none"
    with pytest.raises(OAuthError, match="refused"):
        read_registration(400, {"error": "invalid_client_metadata"}, "none", None)
