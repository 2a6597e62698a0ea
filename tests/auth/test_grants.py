"""The extension grants: workload identity (``jwtBearer``) and enterprise-managed authorization
(``enterpriseManaged``), their steps, their configuration, and a host using each."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import urllib.parse
from typing import Any

import pytest
from test_oauth_host import OAuthServer
from test_store import load

from mcphost import MCPHost
from mcphost.auth.errors import OAuthError
from mcphost.auth.grants import (
    ID_JAG_TYPE,
    ID_TOKEN_TYPE,
    JWT_BEARER,
    TOKEN_EXCHANGE,
    id_jag_request,
    jwt_bearer_grant,
    read_id_jag,
)
from mcphost.config import AuthSettings
from mcphost.errors import ConfigurationError, MCPHostError

JAG = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ1In0.c2lnbmF0dXJl"


def form(body: bytes) -> dict[str, str]:
    return dict(urllib.parse.parse_qsl(body.decode()))


def test_the_token_exchange_request_names_the_authorization_server_and_the_resource() -> None:
    request = id_jag_request("https://idp.example/token", "id-token-1", "https://as.example", "https://mcp.example/mcp",
                             "read", "idp-client", None)
    assert request.method == "POST" and request.url == "https://idp.example/token"
    assert form(request.body) == {
        "grant_type": TOKEN_EXCHANGE, "requested_token_type": ID_JAG_TYPE, "audience": "https://as.example",
        "resource": "https://mcp.example/mcp", "subject_token": "id-token-1", "subject_token_type": ID_TOKEN_TYPE,
        "scope": "read", "client_id": "idp-client"}
    assert "Authorization" not in dict(request.headers) and "id-token-1" not in repr(request)
    with_secret = id_jag_request("https://idp.example/token", "t", "a", "r", None, "c:1", "s&2")
    basic = dict(with_secret.headers)["Authorization"].removeprefix("Basic ")
    assert base64.b64decode(basic).decode() == "c%3A1:s%262"
    assert "client_id" not in form(with_secret.body) and "scope" not in form(with_secret.body)


def test_the_id_jag_is_read_from_the_exchange_answer() -> None:
    assert read_id_jag(200, {"access_token": JAG, "issued_token_type": ID_JAG_TYPE, "token_type": "N_A"}) == JAG
    refused = [
        ((400, {"error": "invalid_grant", "error_description": "expired"}), "refused the token exchange: invalid_grant"),
        ((502, None), "HTTP 502 without a JSON object"),
        ((200, {"access_token": JAG, "issued_token_type": "urn:ietf:params:oauth:token-type:access_token"}),
         "not an ID-JAG"),
        ((200, {"access_token": "opaque", "issued_token_type": ID_JAG_TYPE}), r"no ID-JAG \(a JWT\)"),
        ((200, {"access_token": "a.b." + "c" * 20000, "issued_token_type": ID_JAG_TYPE}), r"no ID-JAG \(a JWT\)"),
    ]
    for (status, doc), message in refused:
        with pytest.raises(OAuthError, match=message):
            read_id_jag(status, doc)


def test_the_jwt_bearer_grant() -> None:
    assert jwt_bearer_grant("a.b.c") == {"grant_type": JWT_BEARER, "assertion": "a.b.c"}


def test_the_extension_auths_are_read_and_their_secrets_masked() -> None:
    wif = load('{"type": "jwtBearer", "clientId": "w", "assertion": "${env:JWT}", "scopes": ["s"]}',
               {"JWT": "workload-jwt-value"})
    assert wif == AuthSettings("jwtBearer", "w", scopes=("s",), assertion="workload-jwt-value")
    ema = load('{"type": "enterpriseManaged", "clientId": "c", "clientSecret": "cs", "idpTokenEndpoint":'
               ' "https://idp.example/token", "idToken": "${env:ID}", "idpClientId": "i", "idpClientSecret": "is"}',
               {"ID": "id-token-value"})
    assert ema == AuthSettings("enterpriseManaged", "c", "cs", idp_token_endpoint="https://idp.example/token",
                               id_token="id-token-value", idp_client_id="i", idp_client_secret="is")
    assert ema is not None and wif is not None
    assert set(ema.secrets()) == {"cs", "id-token-value", "is"} and wif.secrets() == ("workload-jwt-value",)
    for secret in ("cs", "id-token-value", "'is'", "workload-jwt-value"):
        assert secret not in repr(ema) + repr(wif)
    with pytest.raises(ConfigurationError, match='a "jwtBearer" auth needs "clientId" and "assertion"'):
        AuthSettings("jwtBearer", "w")


@pytest.mark.parametrize(("auth", "message"), [
    ('{"type": "jwtBearer", "clientId": "w"}', 'mcp.json:2: mcpServers.a.auth: a "jwtBearer" auth needs "clientId" and "assertion"'),
    ('{"type": "jwtBearer", "assertion": "j"}', 'auth: a "jwtBearer" auth needs "clientId"'),
    ('{"type": "enterpriseManaged", "clientId": "c", "idToken": "t"}',
     'an "enterpriseManaged" auth needs "clientId", "idpTokenEndpoint" and "idToken"'),
    ('{"type": "enterpriseManaged", "clientId": "c", "idToken": "t", "idpTokenEndpoint": "ftp://idp/token"}',
     "auth.idpTokenEndpoint: expected an http:// or https:// URL"),
    ('{"type": "enterpriseManaged", "clientId": "c", "idToken": "t", "idpTokenEndpoint": "https://i/t",'
     ' "idpClientSecret": "s"}', 'auth.idpClientSecret: needs "idpClientId"'),
    ('{"type": "oauth", "assertion": "j"}', 'auth.assertion: does not apply to a "oauth" auth'),
    ('{"type": "jwtBearer", "clientId": "w", "assertion": "j", "idToken": "t"}',
     'auth.idToken: does not apply to a "jwtBearer" auth'),
    ('{"type": "jwtBearer", "clientId": "w", "assertion": "${env:NONE}"}', "auth.assertion"),
])
def test_bad_extension_auth_config_is_refused_with_its_line(auth: str, message: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        load(auth)
    assert message in str(caught.value)


class GrantServer(OAuthServer):
    """``OAuthServer`` whose token endpoint takes only the JWT bearer grant, with an identity
    provider beside it (``/idp/token``) that exchanges ID tokens for ID-JAGs."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.exchanges: list[dict[str, str]] = []
        self.assertions: list[str] = []
        self.refuse = False

    def _token(self, form: dict[str, str], writer: asyncio.StreamWriter) -> bool:
        self.grants.append(form["grant_type"])
        if form["grant_type"] != JWT_BEARER or self.refuse:
            return self._json(writer, 400, {"error": "invalid_grant", "error_description": "assertion refused"})
        assert form["resource"] == self.url
        self.assertions.append(form["assertion"])
        access = self.new("access")
        self.access.add(access)
        return self._json(writer, 200, {"access_token": access, "token_type": "Bearer", "expires_in": 3600})

    async def _route(self, req: Any, writer: asyncio.StreamWriter) -> bool:
        if req.path == "/idp/token":
            exchange = dict(urllib.parse.parse_qsl(req.body.decode()))
            self.exchanges.append(exchange)
            jag = self.new("jag") + ".payload.signature"
            self.issued[-1] = jag
            return self._json(writer, 200, {"access_token": jag, "issued_token_type": ID_JAG_TYPE, "token_type": "N_A"})
        return await super()._route(req, writer)


def grant_host(server: GrantServer, auth: dict[str, Any]) -> MCPHost:
    config = {"mcpServers": {"api": {"type": "http", "url": server.url, "auth": auth}}}
    return MCPHost(config, handle_signals=False, shutdown_timeout=1.0, trace_bodies=True, require_all=True)


async def test_a_workload_assertion_is_traded_for_a_token_and_never_said(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    async with GrantServer() as server:
        server.issued.append("workload.jwt.value")
        async with grant_host(server, {"type": "jwtBearer", "clientId": "w", "assertion": "workload.jwt.value"}) as h:
            await h.call_tool("api.whoami", {})
            said = [repr(h), repr(h.config), json.dumps(h.get_metrics(), default=str)]
        assert server.assertions == ["workload.jwt.value"] and server.grants == [JWT_BEARER]
    said += [record.getMessage() for record in caplog.records]
    text = "\n".join(said)
    assert "tools/call" in text and [value for value in server.issued if value in text] == []


async def test_a_refused_assertion_fails_the_start_once_with_the_reason() -> None:
    async with GrantServer() as server:
        server.refuse = True
        with pytest.raises(MCPHostError, match=r"invalid_grant \(assertion refused\)") as caught:
            async with grant_host(server, {"type": "jwtBearer", "clientId": "w", "assertion": "workload.jwt.value"}):
                pass
        assert "workload.jwt.value" not in str(caught.value)
        assert server.grants == [JWT_BEARER]  # not tried again, no other grant


async def test_an_enterprise_id_token_becomes_an_id_jag_then_a_token(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    async with GrantServer() as server:
        server.issued += ["enterprise-id-token", "client-secret-value"]
        auth = {"type": "enterpriseManaged", "clientId": "mcp-client", "clientSecret": "client-secret-value",
                "idpTokenEndpoint": f"{server.origin}/idp/token", "idToken": "enterprise-id-token",
                "idpClientId": "idp-client"}
        async with grant_host(server, auth) as h:
            await h.call_tool("api.whoami", {})
        [exchange] = server.exchanges
        assert exchange["subject_token"] == "enterprise-id-token" and exchange["audience"] == server.issuer
        assert exchange["resource"] == server.url and exchange["client_id"] == "idp-client"
        assert server.assertions == [value for value in server.issued if value.startswith("jag-")]
    text = "\n".join(record.getMessage() for record in caplog.records)
    assert "tools/call" in text and [value for value in server.issued if value in text] == []
