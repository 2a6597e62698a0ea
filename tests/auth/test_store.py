"""The token store interface and its in-memory default; the ``auth`` config field."""

from __future__ import annotations

import pytest

from mcphost.auth import ClientInfo, Credentials, MemoryTokenStore, Tokens, TokenStore
from mcphost.config import AuthSettings, parse_config
from mcphost.errors import ConfigurationError


def creds(server: str = "s", issuer: str = "https://as.example", token: str = "at-1") -> Credentials:
    return Credentials(server=server, issuer=issuer, resource="https://mcp.example/mcp",
                       client=ClientInfo("cid", "client-secret-1", "client_secret_basic", "http://127.0.0.1/cb"),
                       tokens=Tokens(token, refresh_token="rt-1", expires_at=100.0, scope="read", issued_at=40.0))


async def test_memory_store_keeps_by_server_and_issuer() -> None:
    store = MemoryTokenStore()
    assert isinstance(store, TokenStore)
    await store.put(creds(issuer="https://a"))
    await store.put(creds(issuer="https://b", token="at-2"))
    await store.put(creds(server="t"))
    assert (await store.get("s", "https://a")).tokens.access_token == "at-1"  # type: ignore[union-attr]
    latest = await store.get("s")
    assert latest is not None and latest.issuer == "https://b"
    await store.put(creds(issuer="https://a", token="at-3"))  # saved last now
    assert (await store.get("s")).issuer == "https://a"  # type: ignore[union-attr]
    await store.delete("s", "https://a")
    assert (await store.get("s")).issuer == "https://b"  # type: ignore[union-attr]
    await store.delete("s")
    assert await store.get("s") is None
    assert [c.server for c in await store.list()] == ["t"]


def test_refresh_is_due_within_a_margin_scaled_to_the_lifetime() -> None:
    hour = Tokens("at", refresh_token="rt", issued_at=0.0, expires_at=3600.0)
    assert not hour.refresh_due(3539.0, 60.0) and hour.refresh_due(3541.0, 60.0)
    # A token that lives 30 s: refreshed in its last quarter, not on every request.
    short = Tokens("at", refresh_token="rt", issued_at=1000.0, expires_at=1030.0)
    assert not short.refresh_due(1000.0, 60.0) and not short.refresh_due(1022.0, 60.0)
    assert short.refresh_due(1023.0, 60.0)
    # Kept before the issue time was recorded: the whole margin.
    assert Tokens("at", refresh_token="rt", expires_at=1030.0).refresh_due(1000.0, 60.0)
    assert not Tokens("at", issued_at=1000.0, expires_at=1030.0).refresh_due(1029.0, 60.0)  # nothing to refresh with
    assert not Tokens("at", refresh_token="rt").refresh_due(1e12, 60.0)  # no expiry said
    with pytest.raises(ValueError, match="issued_at"):
        Tokens.from_json({"access_token": "at", "issued_at": "soon"})


def test_credentials_round_trip_through_json() -> None:
    original = creds()
    assert Credentials.from_json(original.to_json()) == original
    bare = Credentials("s", "https://a", "https://r")
    assert Credentials.from_json(bare.to_json()) == bare
    for broken in ({}, {"server": "s", "issuer": 1, "resource": "r"},
                   {"server": "s", "issuer": "i", "resource": "r", "tokens": {"access_token": ""}},
                   {"server": "s", "issuer": "i", "resource": "r", "tokens": {"access_token": "a", "expires_at": "x"}},
                   {"server": "s", "issuer": "i", "resource": "r", "client": []}):
        with pytest.raises(ValueError):
            Credentials.from_json(broken)


def test_reprs_hide_every_secret() -> None:
    shown = repr(creds()) + repr(MemoryTokenStore())
    for secret in ("at-1", "rt-1", "client-secret-1"):
        assert secret not in shown
    assert "cid" in shown
    settings = AuthSettings("clientCredentials", client_id="c", client_secret="cs-secret", private_key="PEMKEY")
    assert "cs-secret" not in repr(settings) and "PEMKEY" not in repr(settings)
    assert set(settings.secrets()) == {"cs-secret", "PEMKEY"}


def load(auth: str, environ: dict[str, str] | None = None) -> AuthSettings | None:
    text = '{"mcpServers": {"a": {"url": "https://x.example/mcp",\n "auth": ' + auth + "}}}"
    return parse_config(text, path="mcp.json", environ=environ or {}).servers["a"].auth


def test_auth_config_is_read() -> None:
    oauth = load('{"type": "oauth", "clientId": "c", "clientSecret": "${env:S}", "scopes": ["a", "b"],'
                 ' "redirectUri": "http://127.0.0.1:8765/cb", "clientMetadataUrl": "https://me.example/client.json"}',
                 {"S": "secret-value"})
    assert oauth == AuthSettings("oauth", "c", "secret-value", ("a", "b"), "http://127.0.0.1:8765/cb",
                                 "https://me.example/client.json")
    assert load('{"type": "bearer", "token": "${env:T}"}', {"T": "tok-value"}) == AuthSettings("bearer", token="tok-value")
    assert load('{"type": "clientCredentials", "clientId": "c", "clientSecret": "s"}') == AuthSettings(
        "clientCredentials", "c", "s")


@pytest.mark.parametrize(("auth", "message"), [
    ('{"type": "bearer"}', 'mcp.json:2: mcpServers.a.auth: a "bearer" auth needs "token"'),
    ('{"type": "basic"}', "mcp.json:2: mcpServers.a.auth.type: expected"),
    ('{"type": "oauth", "token": "t"}', 'mcp.json:2: mcpServers.a.auth.token: does not apply to a "oauth" auth'),
    ('{"type": "oauth", "clientSecret": "s"}', 'mcpServers.a.auth.clientSecret: needs "clientId"'),
    ('{"type": "oauth", "clientMetadataUrl": "http://me.example/c.json"}', "expected an https:// URL with a path"),
    ('{"type": "oauth", "redirectUri": "myapp:/cb"}', "auth.redirectUri: expected an http:// or https:// URL"),
    ('{"type": "oauth", "scopes": ["a b"]}', "auth.scopes[0]"),
    ('{"type": "clientCredentials", "clientId": "c"}', 'needs "clientSecret" or "privateKey"'),
    ('{"type": "clientCredentials", "clientSecret": "s"}', 'needs "clientId"'),
    ('{"type": "oauth", "unknown": 1}', "auth.unknown: unknown field"),
])
def test_bad_auth_config_is_refused_with_its_line(auth: str, message: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        load(auth)
    assert message in str(caught.value)


def test_a_websocket_server_takes_a_bearer_token_only() -> None:
    text = '{"mcpServers": {"w": {"url": "wss://x.example/ws", "auth": {"type": "%s", "token": "t"}}}}'
    assert parse_config(text.replace("%s", "bearer"), environ={}).servers["w"].auth == AuthSettings("bearer", token="t")
    with pytest.raises(ConfigurationError, match='auth.type: a websocket server takes only a "bearer" auth'):
        parse_config(text.replace("%s", "oauth").replace(', "token": "t"', ""), environ={})


def test_auth_is_only_for_remote_servers() -> None:
    with pytest.raises(ConfigurationError, match="auth: only applies to http, sse and websocket servers"):
        parse_config('{"mcpServers": {"a": {"command": "x", "auth": {"type": "oauth"}}}}', environ={})
