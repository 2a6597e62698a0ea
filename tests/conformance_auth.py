"""The client under test for the ``auth/*`` scenarios of the official conformance suite.

Run by the suite's runner as ``python conformance_auth.py <server url>`` (the scenario in
``MCP_CONFORMANCE_SCENARIO``, client credentials in ``MCP_CONFORMANCE_CONTEXT`` for the
scenarios that give them). It uses mcphost's public API only: one server
``{"type": "http", "url": <url>, "auth": {...}}`` and a headless ``on_authorize`` that GETs
the authorization URL without following the redirect and returns its ``Location`` (the
suite's mock authorization server answers ``/authorize`` with a 302 carrying the code).
Once connected it calls every tool the server offers. Exits 0 on success; otherwise 1 with
a one-line error on stderr (the negative scenarios expect the failure).
"""

from __future__ import annotations

import asyncio
import http.client
import json
import logging
import os
import sys
import urllib.parse
from typing import Any

from mcphost import MCPHost
from mcphost.policy import NO_RETRY

SERVER = "conformance"
#: The Client ID Metadata Document URL the suite expects (it is never fetched).
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"


def _authorize_sync(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    conn_class = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = conn_class(parts.netloc, timeout=10)
    try:
        conn.request("GET", urllib.parse.urlunsplit(("", "", parts.path, parts.query, "")))
        response = conn.getresponse()
        location = response.getheader("Location")
        response.read()
    finally:
        conn.close()
    if response.status not in (301, 302, 303, 307) or not location:
        raise RuntimeError(f"the authorization endpoint answered HTTP {response.status} without a redirect")
    return urllib.parse.urljoin(url, location)


async def on_authorize(url: str) -> str:
    """A user who approves at once: the redirect back, as a browser would have followed it."""
    return await asyncio.get_running_loop().run_in_executor(None, _authorize_sync, url)


def auth_config(scenario: str, context: dict[str, Any]) -> dict[str, Any]:
    if scenario in ("auth/cross-app-access-complete-flow", "auth/enterprise-managed-authorization"):
        return {"type": "enterpriseManaged", "clientId": context["client_id"], "clientSecret": context["client_secret"],
                "idpTokenEndpoint": context["idp_token_endpoint"], "idToken": context["idp_id_token"],
                "idpClientId": context["idp_client_id"]}
    if scenario == "auth/wif-jwt-bearer":
        return {"type": "jwtBearer", "clientId": context["client_id"], "assertion": context["valid_jwt"]}
    if scenario.startswith("auth/client-credentials"):
        auth: dict[str, Any] = {"type": "clientCredentials", "clientId": context.get("client_id", "")}
        if "client_secret" in context:
            auth["clientSecret"] = context["client_secret"]
        if "private_key_pem" in context:
            auth["privateKey"] = context["private_key_pem"]
            auth["signingAlgorithm"] = context.get("signing_algorithm", "ES256")
        return auth
    auth = {"type": "oauth", "clientMetadataUrl": CLIENT_METADATA_URL}
    if "client_id" in context:
        auth["clientId"] = context["client_id"]
    if "client_secret" in context:
        auth["clientSecret"] = context["client_secret"]
    return auth


async def run(url: str, scenario: str) -> None:
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    entry: dict[str, Any] = {"type": "http", "url": url, "auth": auth_config(scenario, context)}
    if os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION") == "2026-07-28":
        entry["protocol"] = "modern"  # the stateless wire, as the runner asks (else: found by the probe)
    config = {"mcpServers": {SERVER: entry}}
    host = MCPHost(config, request_timeout=20.0, shutdown_timeout=2.0, retry=NO_RETRY, handle_signals=False,
                   client_info={"name": "mcphost-conformance", "version": "1.0.0"}, on_authorize=on_authorize)
    async with host:
        info = host.get_tools(SERVER)[SERVER]
        if info["state"] != "ready":
            raise RuntimeError(f"server {info['state']}: {info.get('error')}")
        for tool in info["tools"]:
            await host.call_tool(f"{SERVER}.{tool['name']}", {})


def main(argv: list[str]) -> int:
    level = os.environ.get("MCPHOST_CONFORMANCE_LOG")
    if level:
        logging.basicConfig(level=level.upper(), stream=sys.stderr, format="%(name)s %(levelname)s %(message)s")
    else:
        logging.getLogger("mcphost").addHandler(logging.NullHandler())
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    try:
        asyncio.run(run(argv[-1], scenario))
    except Exception as exc:  # one line, whatever failed
        print(f"conformance auth client: {scenario}: {type(exc).__name__}: {' '.join(str(exc).split())}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
