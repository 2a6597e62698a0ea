"""The OAuth flow through the public API, against the stdlib authorization server of
``tests/auth_server.py``: every discovery path, PKCE refusal, registration (DCR,
pre-registered clients and their token endpoint auth methods), step-up, refresh before
expiry and on a 401, a failed refresh, client credentials, ``iss``, and logins kept in a
:class:`FileTokenStore` shared by two hosts."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from auth_server import AuthServer, near_expiry

from mcphost import MCPHost, MCPHostError
from mcphost.auth import FileTokenStore, MemoryTokenStore
from mcphost.policy import NO_RETRY
from mcphost.transports.oauth import OAuthAuthorizer

# approve() returns the redirect's Location without following it: nothing listens here.
REDIRECT = "http://127.0.0.1:9/callback"


def config(server: AuthServer, **auth: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"url": server.url, "auth": {"type": "oauth", "redirectUri": REDIRECT, **auth}}
    return {"mcpServers": {"notes": entry}}


def host(server: AuthServer, cfg: dict[str, Any] | None = None, **options: Any) -> MCPHost:
    options.setdefault("on_authorize", server.approve)
    return MCPHost(cfg or config(server), retry=NO_RETRY, **options)


async def whoami(h: MCPHost) -> str:
    result = await h.call_tool("notes.whoami", {})
    assert result["isError"] is False
    return str(result["content"][0]["text"])


def paths(server: AuthServer) -> list[str]:
    return [r.path for r in server.log if r.path != "/mcp"]


# -- discovery ------------------------------------------------------------------------------

DISCOVERY = [
    # (prm, metadata, issuer path): where the server publishes; the host must find it.
    ("header", "oauth", ""), ("header", "oidc", "/tenant"), ("header", "oidc-suffix", "/tenant"),
    ("path", "oauth", "/tenant"), ("path", "oidc", ""), ("path", "oidc-suffix", "/tenant"),
    ("root", "oauth", ""), ("root", "oauth", "/tenant"), ("root", "oidc-suffix", "/tenant"),
]


@pytest.mark.parametrize(("prm", "metadata", "issuer_path"), DISCOVERY)
async def test_every_discovery_path(prm: str, metadata: str, issuer_path: str) -> None:
    async with AuthServer(prm=prm, metadata=metadata, issuer_path=issuer_path) as server:
        async with host(server) as h:
            assert (await whoami(h)).startswith("dcr-")
        assert server.authorizations == 1
        seen = paths(server)
        assert server.prm_url.removeprefix(server.origin) in seen
        published = next(iter(server._metadata_paths()))
        assert published in seen
        # The spec's order: nothing asked after the metadata was found but the flow's steps.
        after = seen[seen.index(published) + 1:]
        assert all(p.startswith(issuer_path + "/") and "well-known" not in p for p in after[:3])
        # RFC 8707 on both requests, the canonical URI of the MCP server.
        assert server.requests(issuer_path + "/authorize")[0].query["resource"] == server.url
        assert server.grants("authorization_code")[0]["resource"] == server.url


async def test_the_2025_03_26_fallbacks_without_resource_metadata() -> None:
    # No PRM: the AS metadata at the server's root; no metadata at all: /authorize, /token, /register.
    for metadata in ("oauth", "none"):
        async with AuthServer(prm="none", metadata=metadata) as server, host(server) as h:
            assert (await whoami(h)).startswith("dcr-")
            assert {"/authorize", "/token", "/register"} <= set(paths(server))


async def test_pkce_s256_is_required_of_the_authorization_server() -> None:
    async with AuthServer(pkce="plain") as server:
        with pytest.raises(MCPHostError, match="(?i)pkce|S256|code_challenge") as info:
            async with host(server):
                pass
        assert server.authorizations == 0 and server.grants("authorization_code") == []
        assert "notes" in str(info.value)


@pytest.mark.parametrize("metadata", ["oauth", "oidc"])
async def test_metadata_that_does_not_say_pkce_is_refused(metadata: str) -> None:
    # 2025-11-25: code_challenge_methods_supported absent means no PKCE: "refuse to proceed",
    # before a client is registered or the user is asked.
    async with AuthServer(pkce=False, metadata=metadata) as server:
        with pytest.raises(MCPHostError, match="code_challenge_methods_supported") as info:
            async with host(server):
                pass
        assert server.authorizations == 0 and server.requests("/register") == []
        assert "notes" in str(info.value)


async def test_client_credentials_need_no_pkce() -> None:
    async with AuthServer(pkce=False, dcr=False, auth_methods=("client_secret_basic",)) as server:
        client = server.register()
        cfg = {"mcpServers": {"notes": {"url": server.url, "auth": {
            "type": "clientCredentials", "clientId": client.client_id, "clientSecret": client.secret}}}}
        async with MCPHost(cfg, retry=NO_RETRY) as h:
            assert (await whoami(h)).startswith(client.client_id)


async def test_an_iss_of_another_issuer_is_refused() -> None:
    async with AuthServer() as server:
        server.wrong_iss = True
        with pytest.raises(MCPHostError, match="(?i)iss"):
            async with host(server):
                pass
        assert server.grants("authorization_code") == []


async def test_iss_is_required_when_promised_and_optional_when_not() -> None:
    async with AuthServer(send_iss=False, advertise_iss=True) as server:
        with pytest.raises(MCPHostError, match="(?i)iss"):
            async with host(server):
                pass
        assert server.grants("authorization_code") == []
    async with AuthServer(send_iss=False) as server, host(server) as h:
        assert (await whoami(h)).startswith("dcr-")


async def test_a_user_who_refuses_is_a_clear_error() -> None:
    async with AuthServer() as server:
        server.deny = True
        with pytest.raises(MCPHostError, match="access_denied"):
            async with host(server):
                pass


# -- registration ---------------------------------------------------------------------------


async def test_dynamic_client_registration() -> None:
    async with AuthServer() as server, host(server) as h:
        assert (await whoami(h)).startswith("dcr-")
        registered = json.loads(server.requests("/register")[0].body)
        assert registered["redirect_uris"] == [REDIRECT]
        assert "authorization_code" in registered.get("grant_types", ["authorization_code"])
        client = server.clients[next(iter(server.clients))]
        assert server.requests("/authorize")[0].query["client_id"] == client.client_id


@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post", "none"])
async def test_a_pre_registered_client_and_its_auth_method(method: str) -> None:
    async with AuthServer(dcr=False, auth_methods=(method,)) as server:
        client = server.register(method)
        auth: dict[str, Any] = {"clientId": client.client_id}
        if client.secret:
            auth["clientSecret"] = client.secret
        async with host(server, config(server, **auth)) as h:
            assert (await whoami(h)).startswith(client.client_id)
        assert server.requests("/register") == []
        token = next(r for r in server.log if r.path == "/token")
        basic = token.headers.get("authorization", "")
        if method == "client_secret_basic":
            assert base64.b64decode(basic[6:]).decode().startswith(client.client_id + ":")
            assert "client_secret" not in token.form()
        elif method == "client_secret_post":
            assert not basic and token.form()["client_secret"] == client.secret
        else:
            assert not basic and "client_secret" not in token.form()


async def test_a_client_id_metadata_document_comes_before_registration() -> None:
    document = "https://app.example/mcphost/client.json"
    async with AuthServer(cimd=True) as server, host(server, config(server, clientMetadataUrl=document)) as h:
        assert (await whoami(h)).startswith(document)
        assert server.requests("/register") == []
        assert server.requests("/authorize")[0].query["client_id"] == document


async def test_a_new_authorization_server_means_a_new_registration(tmp_path: Path) -> None:
    async with AuthServer() as server:
        store = FileTokenStore(tmp_path)
        async with host(server, token_store=store) as h:
            await whoami(h)
            first = server.issuer
            server.issuer_path = "/v2"  # the resource moves to another issuer: old tokens stop working
            server.revoke_access()
            server.revoke_refresh()
            await whoami(h)
        assert server.issuer != first and len(server.requests("/v2/register")) == 1
        assert server.authorizations == 2
        kept = {c.issuer: c for c in await store.list()}
        assert set(kept) == {first, server.issuer}  # one file per server and issuer
        assert kept[first].client is not None and kept[server.issuer].client is not None
        assert kept[first].client.client_id != kept[server.issuer].client.client_id


async def test_no_registration_possible_is_a_clear_error() -> None:
    async with AuthServer(dcr=False) as server:
        with pytest.raises(MCPHostError, match="clientId"):
            async with host(server):
                pass


# -- scopes ---------------------------------------------------------------------------------


async def test_scopes_from_the_challenge_then_step_up_on_insufficient_scope() -> None:
    async with AuthServer(challenge_scope="read") as server, host(server) as h:
        assert (await whoami(h)).endswith(" read")
        result = await h.call_tool("notes.admin", {"x": 1})
        assert result["content"][0]["text"] == '{"x": 1}'
        assert server.authorizations == 2
        assert server.requests("/authorize")[1].query["scope"].split() == ["read", "admin"]
        assert (await whoami(h)).endswith(" read admin")


async def test_scopes_from_the_resource_metadata_when_the_challenge_has_none() -> None:
    async with AuthServer(challenge_scope=None, scopes_supported=("read", "write")) as server, host(server) as h:
        assert (await whoami(h)).endswith(" read write")


# -- refresh --------------------------------------------------------------------------------


async def test_refresh_on_a_401_with_a_rotated_refresh_token() -> None:
    async with AuthServer() as server, host(server) as h:
        await whoami(h)
        first = server.grants("authorization_code")
        server.revoke_access()
        await whoami(h)
        assert server.authorizations == 1 and len(first) == 1
        refreshed = server.grants("refresh_token")
        assert len(refreshed) == 1
        server.revoke_access()
        await whoami(h)  # the rotated refresh token is the one used
        assert [g["refresh_token"] for g in server.grants("refresh_token")][1] != refreshed[0]["refresh_token"]
        assert server.authorizations == 1


async def test_refresh_before_expiry() -> None:
    # A kept token in the last minute of its hour is refreshed before the host first uses it.
    async def refuse(url: str) -> str:
        raise AssertionError("asked the user again")

    async with AuthServer() as server:
        store = MemoryTokenStore()
        async with host(server, token_store=store) as h:
            await whoami(h)
        await near_expiry(store, "notes")
        async with host(server, token_store=store, on_authorize=refuse) as h:
            await whoami(h)
        assert len(server.grants("refresh_token")) == 1 and server.authorizations == 1


async def test_a_short_lived_token_is_not_refreshed_on_every_request() -> None:
    # A 30 s token is refreshed in the last quarter of its life, not within the 60 s margin
    # (which it always is): three calls in its first seconds refresh nothing.
    async with AuthServer(access_ttl=30) as server, host(server) as h:
        for _ in range(3):
            await whoami(h)
        assert server.grants("refresh_token") == [] and server.authorizations == 1


async def test_step_up_with_a_short_lived_token() -> None:
    # The repro of the bug: each 403 insufficient_scope was met by a background refresh of a
    # token inside the refresh margin, and the call failed "after 3 authorizations".
    async with AuthServer(access_ttl=30, challenge_scope="read") as server, host(server) as h:
        assert (await whoami(h)).endswith(" read")
        result = await h.call_tool("notes.admin", {"x": 1})
        assert result["content"][0]["text"] == '{"x": 1}'
        assert server.authorizations == 2


async def test_step_up_while_a_refresh_before_expiry_runs() -> None:
    # A token inside its refresh margin is refreshed in the background while a request is out;
    # the request's 403 insufficient_scope must still step up: a refreshed token has the
    # scope it had, so sending the request again with it would be refused the same way.
    now = [1_000_000.0]
    async with AuthServer(challenge_scope="read") as server:
        auth = OAuthAuthorizer("notes", server.url, redirect_uri=REDIRECT, on_authorize=server.approve,
                               clock=lambda: now[0])
        await auth.prepare()
        await auth.authorize(401, ['Bearer scope="read"'], auth.generation)
        assert auth.credentials is not None and auth.credentials.tokens is not None
        assert auth.credentials.tokens.scope == "read"
        assert auth.header() is not None and server.grants("refresh_token") == []
        now[0] += 3600 - 30  # the last minute of the token's hour
        sent_with = auth.generation
        assert auth.header() is not None  # starts the refresh before expiry
        await server.until(lambda: len(server.grants("refresh_token")) == 1)
        # The refresh holds the authorizer while its token request is out; the 403 waits for it.
        await auth.authorize(403, ['Bearer error="insufficient_scope", scope="read admin"'], sent_with)
        assert server.authorizations == 2
        assert auth.credentials.tokens.scope == "read admin"
        assert server.requests("/authorize")[1].query["scope"].split() == ["read", "admin"]
        auth.close()


async def test_a_failed_refresh_starts_the_flow_again() -> None:
    async with AuthServer() as server, host(server) as h:
        await whoami(h)
        server.revoke_access()
        server.revoke_refresh()
        await whoami(h)
        assert server.authorizations == 2 and len(server.grants("refresh_token")) == 1


# -- the start-up timeout ---------------------------------------------------------------------


async def test_a_login_longer_than_the_start_up_timeout() -> None:
    # The person at the browser is not the server being slow: the start's clock stops while
    # on_authorize runs, and runs again after (a server that then hangs still times out).
    async def slow_person(url: str) -> str:
        await asyncio.sleep(0.6)  # three times the start-up timeout
        return await server.approve(url)

    async with AuthServer() as server:
        cfg = config(server)
        cfg["mcpServers"]["notes"]["timeout"] = 0.2
        async with host(server, cfg, on_authorize=slow_person) as h:
            assert (await whoami(h)).startswith("dcr-")
        assert server.authorizations == 1


async def test_the_start_up_timeout_still_bounds_the_rest_of_the_start() -> None:
    async with AuthServer() as server:
        cfg = config(server)
        cfg["mcpServers"]["notes"]["timeout"] = 0.2
        server.hang = asyncio.Event()  # the MCP endpoint answers nothing once the user is done
        with pytest.raises(MCPHostError, match="0.2 s") as info:
            async with host(server, cfg):
                pass
        assert server.authorizations == 1 and "notes" in str(info.value)
        server.hang.set()


# -- client credentials ---------------------------------------------------------------------


@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post"])
async def test_client_credentials_need_no_user(method: str) -> None:
    async with AuthServer(dcr=False, auth_methods=(method,)) as server:
        client = server.register(method)
        cfg = {"mcpServers": {"notes": {"url": server.url, "auth": {
            "type": "clientCredentials", "clientId": client.client_id, "clientSecret": client.secret}}}}
        async with MCPHost(cfg, retry=NO_RETRY) as h:
            assert (await whoami(h)).startswith(client.client_id)
        assert server.authorizations == 0
        assert len(server.grants("client_credentials")) == 1
        assert server.grants("client_credentials")[0].get("resource") == server.url


# -- stores ---------------------------------------------------------------------------------


async def test_a_login_kept_in_a_file_is_used_by_the_next_host(tmp_path: Path) -> None:
    async with AuthServer() as server:
        store = FileTokenStore(tmp_path / "tokens")
        async with host(server, token_store=store) as h:
            await whoami(h)
        files = list((tmp_path / "tokens").iterdir())
        assert len(files) == 1
        if os.name == "posix":
            assert stat.S_IMODE(files[0].stat().st_mode) == 0o600
        kept = json.loads(files[0].read_text())
        assert kept["server"] == "notes" and kept["issuer"] == server.issuer and kept["resource"] == server.url
        assert kept["tokens"]["access_token"] in server.access

        async def refuse(url: str) -> str:
            raise AssertionError("asked the user again")

        async with host(server, token_store=FileTokenStore(tmp_path / "tokens"), on_authorize=refuse) as h:
            await whoami(h)
        assert server.authorizations == 1 and len(server.requests("/register")) == 1


async def test_a_store_shared_by_two_hosts(tmp_path: Path) -> None:
    async def refuse(url: str) -> str:
        raise AssertionError("asked the user again")

    async with AuthServer() as server:
        async with host(server, token_store=FileTokenStore(tmp_path)) as first:
            await whoami(first)
            async with host(server, token_store=FileTokenStore(tmp_path), on_authorize=refuse) as second:
                await whoami(second)  # the first host's login
                server.revoke_access()
                await whoami(first)  # refreshed: the refresh token rotated, the old one is dead
                await whoami(second)  # reads the rotated one from the shared store
                server.revoke_access()
                await whoami(second)
                await whoami(first)
        assert server.authorizations == 1
        assert len(server.grants("refresh_token")) == 2


async def test_two_hosts_refreshing_at_once_with_one_refresh_token(tmp_path: Path) -> None:
    async def refuse(url: str) -> str:
        raise AssertionError("asked the user again")

    async with AuthServer() as server:
        async with host(server, token_store=FileTokenStore(tmp_path)) as first:
            await whoami(first)
            async with host(server, token_store=FileTokenStore(tmp_path), on_authorize=refuse) as second:
                for _ in range(3):
                    server.revoke_access()
                    # Both meet a 401 and refresh: whichever spends the refresh token second
                    # takes what the first saved.
                    await asyncio.gather(whoami(first), whoami(second))
        assert server.authorizations == 1


async def test_the_memory_store_given_is_the_one_filled() -> None:
    async with AuthServer() as server:
        store = MemoryTokenStore()
        async with host(server, token_store=store) as h:
            await whoami(h)
        kept = await store.get("notes")
        assert kept is not None and kept.tokens is not None and kept.tokens.access_token in server.access
