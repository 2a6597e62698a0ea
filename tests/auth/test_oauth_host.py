"""The OAuth flow end to end: a host, an MCP server behind OAuth, its authorization server.

The server is ``tests/remote_server.py``'s, with a ``Bearer`` check in front of ``/mcp`` and
a small authorization server on the same origin (protected resource metadata, RFC 8414
metadata, registration, ``/token``). The user's step is a function that approves at once.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import itertools
import json
import logging
import urllib.parse
from typing import Any

import pytest
from auth_server import near_expiry
from remote_server import RemoteServer, Request, plain

from mcphost import MCPHost
from mcphost.auth import MemoryTokenStore
from mcphost.errors import MCPHostError


class OAuthServer(RemoteServer):
    """``RemoteServer`` behind OAuth; every value it issues is kept in ``issued``."""

    def __init__(self, *, expires_in: int = 3600, **options: Any) -> None:
        super().__init__(**options)
        self.expires_in = expires_in
        self._n = itertools.count(1)
        self.codes: dict[str, dict[str, str]] = {}
        self.access: set[str] = set()
        self.refresh: set[str] = set()
        self.issued: list[str] = []
        self.grants: list[str] = []
        self.refreshed = asyncio.Event()
        self.resource = ""  # the resource its metadata names ("": the /mcp URL)
        self.as_path = ""  # the authorization server's issuer path (changed: a migration)
        self.registrations: list[str] = []
        self.tools.append({"name": "whoami", "inputSchema": {"type": "object"}})
        self.last_token = ""

    def new(self, kind: str) -> str:
        value = f"{kind}-{next(self._n)}-secretvalue"
        self.issued.append(value)
        return value

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def approve(self, url: str) -> str:
        """The user approves: the redirect back with a code."""
        query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))
        assert query["code_challenge_method"] == "S256" and query["resource"] == (self.resource or self.url)
        code = self.new("code")
        self.codes[code] = query
        back = {"code": code, "state": query["state"], "iss": self.issuer}
        return query["redirect_uri"] + "?" + urllib.parse.urlencode(back)

    @property
    def issuer(self) -> str:
        return self.origin + self.as_path

    def revoke(self, refresh: bool = False) -> None:
        self.access.clear()
        if refresh:
            self.refresh.clear()

    def _json(self, writer: asyncio.StreamWriter, status: int, doc: dict[str, Any]) -> bool:
        writer.write(plain(status, json.dumps(doc).encode(), "application/json"))
        return True

    async def _route(self, req: Request, writer: asyncio.StreamWriter) -> bool:
        if req.path == "/.well-known/oauth-protected-resource/mcp" or (
                req.path == "/.well-known/oauth-protected-resource" and self.resource):
            return self._json(writer, 200, {"resource": self.resource or self.url, "authorization_servers": [self.issuer],
                                            "scopes_supported": ["tools"]})
        if req.path == "/.well-known/oauth-authorization-server" + self.as_path:
            return self._json(writer, 200, {
                "issuer": self.issuer, "authorization_endpoint": f"{self.origin}/authorize",
                "token_endpoint": f"{self.origin}/token", "registration_endpoint": f"{self.origin}/register",
                "code_challenge_methods_supported": ["S256"], "authorization_response_iss_parameter_supported": True,
                "token_endpoint_auth_methods_supported": ["client_secret_post"]})
        if req.path == "/register":
            self.registrations.append(self.as_path)
            return self._json(writer, 201, {"client_id": "client-1", "client_secret": self.new("clientsecret"),
                                            "token_endpoint_auth_method": "client_secret_post"})
        if req.path == "/token":
            return self._token(dict(urllib.parse.parse_qsl(req.body.decode())), writer)
        if (req.path, req.method) in (("/mcp", "POST"), ("/sse", "GET"), ("/messages", "POST")):
            token = req.headers.get("authorization", "").removeprefix("Bearer ")
            self.last_token = token
            if token not in self.access:
                writer.write(plain(401, b"", extra=[(
                    "WWW-Authenticate",
                    f'Bearer resource_metadata="{self.origin}/.well-known/oauth-protected-resource/mcp"')]))
                return True
        return await super()._route(req, writer)

    async def _tool(self, params: dict[str, Any], send: Any, sid: str | None) -> dict[str, Any]:
        if params.get("name") == "whoami":  # a server that quotes the token back
            return {"content": [{"type": "text", "text": f"you are {self.last_token}"}]}
        return await super()._tool(params, send, sid)

    def _token(self, form: dict[str, str], writer: asyncio.StreamWriter) -> bool:
        self.grants.append(form["grant_type"])
        assert form["resource"] == (self.resource or self.url) and form["client_secret"] in self.issued
        if form["grant_type"] == "authorization_code":
            asked = self.codes.pop(form["code"], None)
            challenge = base64.urlsafe_b64encode(hashlib.sha256(form["code_verifier"].encode()).digest()).rstrip(b"=")
            if asked is None or asked["code_challenge"] != challenge.decode():
                return self._json(writer, 400, {"error": "invalid_grant"})
            self.issued.append(form["code_verifier"])
        elif form["grant_type"] == "refresh_token":
            if form["refresh_token"] not in self.refresh:
                return self._json(writer, 400, {"error": "invalid_grant"})
            self.refreshed.set()
        access, refresh = self.new("access"), self.new("refresh")
        self.access.add(access)
        self.refresh.add(refresh)
        return self._json(writer, 200, {"access_token": access, "token_type": "Bearer", "expires_in": self.expires_in,
                                        "refresh_token": refresh})


class User:
    def __init__(self, server: OAuthServer) -> None:
        self.server = server
        self.asked = 0

    async def __call__(self, url: str) -> str:
        self.asked += 1
        return self.server.approve(url)


def host(server: OAuthServer, user: User, store: MemoryTokenStore | None = None, **options: Any) -> MCPHost:
    config = {"mcpServers": {"api": {"type": "http", "url": server.url}}}
    return MCPHost(config, handle_signals=False, on_authorize=user, token_store=store, shutdown_timeout=1.0,
                   **options)


async def test_one_login_then_stored_tokens_refresh_on_401_and_no_secret_is_said(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    store = MemoryTokenStore()
    said: list[str] = []
    async with OAuthServer() as server:
        user = User(server)
        async with host(server, user, store, trace_bodies=True) as first:
            result = await first.call_tool("api.echo", {"x": 1})
            await first.call_tool("api.whoami", {})  # its answer is traced: the token in it is masked
            said += [repr(first), repr(first.config), json.dumps(first.get_metrics(), default=str)]
            assert not result.get("isError")
        assert user.asked == 1 and server.grants == ["authorization_code"]
        # A second host with the same store: no login.
        async with host(server, user, store, trace_bodies=True) as second:
            await second.call_tool("api.echo", {})
            assert user.asked == 1
            # The server forgets the access token: a 401, a refresh, the call sent again.
            server.revoke()
            await second.call_tool("api.echo", {})
            assert user.asked == 1 and server.grants[-1] == "refresh_token"
            # Refresh refused too: the whole flow again.
            server.revoke(refresh=True)
            await second.call_tool("api.echo", {})
            assert user.asked == 2 and server.grants[-2:] == ["refresh_token", "authorization_code"]
            said += [repr(second), str(second.get_tools())]
        credentials = await store.list()
        said.append(repr(credentials))
    said += [record.getMessage() for record in caplog.records]
    text = "\n".join(said)
    assert "tools/call" in text  # the wire trace was on
    leaked = [value for value in server.issued if value in text]
    assert leaked == []


async def test_the_legacy_sse_transport_logs_in_too() -> None:
    async with OAuthServer() as server:
        server.resource = server.origin  # the whole origin is the resource: /sse is in it
        user = User(server)
        config = {"mcpServers": {"api": {"type": "sse", "url": server.sse_url, "auth": {"type": "oauth"}}}}
        async with MCPHost(config, handle_signals=False, on_authorize=user, shutdown_timeout=1.0) as h:
            await h.call_tool("api.echo", {})
            server.revoke()  # the stream stays open; the next POST gets a 401 and is sent again
            await h.call_tool("api.echo", {})
        assert user.asked == 1 and server.grants == ["authorization_code", "refresh_token"]


async def test_a_new_authorization_server_means_a_new_registration_and_login() -> None:
    async with OAuthServer() as server:
        user = User(server)
        async with host(server, user) as h:
            await h.call_tool("api.echo", {})
            server.as_path = "/v2"  # the resource now names another issuer
            server.revoke()
            await h.call_tool("api.echo", {})
        assert server.registrations == ["", "/v2"] and user.asked == 2
        assert "refresh_token" not in server.grants  # no refresh sent to the old issuer


async def test_a_restarted_server_keeps_its_login_in_the_hosts_default_store() -> None:
    async with OAuthServer() as server:
        user = User(server)
        async with host(server, user) as h:
            await h.call_tool("api.echo", {})
            await h.restart_server("api")
            await h.call_tool("api.echo", {})
        assert user.asked == 1 and server.grants == ["authorization_code"]


async def test_a_token_near_its_expiry_is_refreshed_before_it_is_refused() -> None:
    async with OAuthServer() as server:
        user = User(server)
        store = MemoryTokenStore()
        async with host(server, user, store) as h:
            await h.call_tool("api.echo", {})
        await near_expiry(store, "api")  # the last 30 s of its hour: inside the refresh margin
        async with host(server, user, store) as h:
            await asyncio.wait_for(server.refreshed.wait(), 10)
            await h.call_tool("api.echo", {})
        assert user.asked == 1 and "refresh_token" in server.grants


async def test_without_a_login_the_start_fails_with_the_reason() -> None:
    async with OAuthServer() as server:
        async def refuse(url: str) -> str:
            raise RuntimeError("the user closed the browser")

        h = MCPHost({"mcpServers": {"api": {"type": "http", "url": server.url}}}, handle_signals=False,
                    on_authorize=refuse, shutdown_timeout=1.0, require_all=True)
        with pytest.raises(MCPHostError, match="on_authorize failed: RuntimeError: the user closed the browser"):
            async with h:
                pass


async def test_a_bearer_token_is_sent_and_a_refusal_said() -> None:
    async with OAuthServer() as server:
        server.access.add("static-token-value")
        config = {"mcpServers": {"api": {"type": "http", "url": server.url,
                                         "auth": {"type": "bearer", "token": "static-token-value"}}}}
        async with MCPHost(config, handle_signals=False, shutdown_timeout=1.0) as h:
            await h.call_tool("api.echo", {})
            server.revoke()
            with pytest.raises(MCPHostError, match=r"refused the configured bearer token \(auth.token\)") as caught:
                await h.call_tool("api.echo", {})
            assert "static-token-value" not in str(caught.value)


async def test_a_login_without_a_host_fills_the_store_a_host_then_uses() -> None:
    # What a command such as "mcphost auth login" does: the flow run on its own, before any
    # MCP request (no challenge: discovery by the well-known paths).
    from mcphost.config import ServerConfig
    from mcphost.transports.oauth import AuthHooks, make_authorizer

    async with OAuthServer() as server:
        user = User(server)
        store = MemoryTokenStore()
        authorizer = make_authorizer(ServerConfig("api", "http", url=server.url), AuthHooks(user, store), None)
        assert authorizer is not None
        await authorizer.prepare()
        await authorizer.authorize(401, [], authorizer.generation)
        [kept] = await store.list()
        assert kept.issuer == server.origin and kept.tokens is not None and user.asked == 1
        async with host(server, user, store) as h:
            await h.call_tool("api.echo", {})
        assert user.asked == 1
