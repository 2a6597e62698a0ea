"""The environment allow-list lets package runners reach a private index and a private CA
(uvx, pipx, npx read these), and still keeps secrets out (docs/config.md)."""

from __future__ import annotations

import os
from pathlib import Path

from helpers import ECHO_TOOL, fake, fake_config

from mcphost import MCPHost

RUNNER_SETTINGS = {
    "UV_INDEX_URL": "https://pypi.example/simple", "UV_EXTRA_INDEX_URL": "https://extra.example/simple",
    "PIP_INDEX_URL": "https://pypi.example/simple", "PIP_TRUSTED_HOST": "pypi.example",
    "PIP_CERT": "/etc/ssl/private-ca.pem", "PIPX_HOME": "/opt/pipx", "CURL_CA_BUNDLE": "/etc/ssl/ca.pem",
    "REQUESTS_CA_BUNDLE": "/etc/ssl/ca.pem", "SSL_CERT_FILE": "/etc/ssl/ca.pem", "SSL_CERT_DIR": "/etc/ssl/certs",
    "NODE_EXTRA_CA_CERTS": "/etc/ssl/ca.pem", "NPM_CONFIG_REGISTRY": "https://npm.example/",
    "npm_config_cafile": "/etc/ssl/ca.pem",
}
SECRETS = {"OPENAI_API_KEY": "sk-not-passed", "GITHUB_TOKEN": "ghp-not-passed", "UVICORN_SECRET": "not-passed"}


async def test_package_runner_and_ca_settings_reach_the_child_and_secrets_do_not() -> None:
    env = {**os.environ, **RUNNER_SETTINGS, **SECRETS}
    async with MCPHost(fake_config(a=fake({"tools": [ECHO_TOOL]})), environ=env) as host:
        pid = host.servers["a"].pid()
        assert pid is not None
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    seen = dict(item.decode().split("=", 1) for item in raw.split(b"\0") if b"=" in item)
    assert {k: seen.get(k) for k in RUNNER_SETTINGS} == RUNNER_SETTINGS
    assert not set(SECRETS) & set(seen)
