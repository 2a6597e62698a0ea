"""What a server's process gets of the host's environment: the allow-list, or everything."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
from helpers import ECHO_TOOL, fake, fake_config

from mcphost import MCPHost
from mcphost.transports.stdio.command import child_environment

PASSED = {
    "HTTPS_PROXY": "http://proxy.internal:3128", "https_proxy": "http://proxy.internal:3128",
    "HTTP_PROXY": "http://proxy.internal:3128", "NO_PROXY": "localhost,127.0.0.1",
    "SSL_CERT_FILE": "/etc/ssl/corp.pem", "NODE_EXTRA_CA_CERTS": "/etc/ssl/corp.pem",
    "REQUESTS_CA_BUNDLE": "/etc/ssl/corp.pem", "npm_config_registry": "https://npm.internal/",
    "XDG_CACHE_HOME": "/tmp/cache", "PYTHONUTF8": "1",
}
KEPT_OUT = {"AWS_SECRET_ACCESS_KEY": "s3cret", "OPENAI_API_KEY": "sk-x", "DATABASE_URL": "postgres://x"}


def environ_of(pid: int | None) -> dict[str, str]:
    assert pid is not None
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(item.decode().split("=", 1) for item in raw.split(b"\0") if b"=" in item)


async def test_servers_get_proxies_and_ca_bundles_but_not_secrets() -> None:
    env = {**os.environ, **PASSED, **KEPT_OUT}
    async with MCPHost(fake_config(a=fake({"tools": [ECHO_TOOL]})), environ=env) as host:
        seen = environ_of(host.servers["a"].pid())
    for key, value in PASSED.items():
        assert seen.get(key) == value, key
    assert not set(KEPT_OUT) & set(seen)


async def test_inherit_env_passes_everything() -> None:
    env = {**os.environ, **KEPT_OUT}
    async with MCPHost(fake_config(a=fake({"tools": [ECHO_TOOL]})), environ=env, inherit_env=True) as host:
        seen = environ_of(host.servers["a"].pid())
    assert {k: seen.get(k) for k in KEPT_OUT} == KEPT_OUT


def test_own_env_wins_and_dropped_names_are_logged_without_values(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, "mcphost.transports.stdio.command")
    env = child_environment({"PATH": "/bin", "SECRET_TOKEN": "value-123"}, {"PATH": "/opt/bin"}, name="fs")
    assert env == {"PATH": "/opt/bin"}
    text = caplog.text
    assert "fs: not passed to the server: SECRET_TOKEN" in text and "value-123" not in text


async def test_inherit_env_per_server() -> None:
    env = {**os.environ, **KEPT_OUT}
    cfg = fake_config(a=fake({"tools": [ECHO_TOOL]}), b=fake({"tools": [ECHO_TOOL]}))
    cfg["mcpServers"]["a"]["inheritEnv"] = True
    async with MCPHost(cfg, environ=env) as host:
        inherits = environ_of(host.servers["a"].pid())
        allow_listed = environ_of(host.servers["b"].pid())
    assert {k: inherits.get(k) for k in KEPT_OUT} == KEPT_OUT
    assert not set(KEPT_OUT) & set(allow_listed)
