"""The leak sweep: no token, code, verifier or secret of an OAuth login appears in anything
the host writes or raises. Every log record (DEBUG, the wire trace with bodies), every
exception text, the ``repr()`` of the host, its configuration, its store and what the store
keeps, the metrics, and the command line's output at ``-vvv`` are collected while the
flows of ``test_oauth_flows`` run against the test authorization server, including one that
echoes the caller's token back in a result, in a JSON-RPC error and in a 401 body, and a
credential in the server URL's query; then searched for every secret the authorization
server issued or was shown."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import sys
from pathlib import Path
from typing import Any

import pytest
from auth_server import AuthServer, near_expiry

from mcphost import MCPHost, MCPHostError
from mcphost.auth import FileTokenStore
from mcphost.policy import NO_RETRY

REDIRECT = "http://127.0.0.1:9/callback"
QUERY_SECRET = "qk-5f1e2d3c4b5a69788796"
ROOT = Path(__file__).resolve().parent.parent.parent


class Sweep:
    """Everything written or raised, as text."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.formatter = logging.Formatter("%(name)s %(levelname)s %(message)s")

    def exception(self, exc: BaseException, done: set[int] | None = None) -> None:
        done = set() if done is None else done
        if id(exc) in done:
            return
        done.add(id(exc))
        self.texts += [str(exc), repr(exc), *map(repr, exc.args), repr(getattr(exc, "data", None))]
        self.texts += [str(e) for e in getattr(exc, "errors", None) or []]
        self.texts += list(getattr(exc, "stderr_tail", None) or [])
        for inner in [*(getattr(exc, "failures", None) or {}).values(), exc.__cause__, exc.__context__]:
            if inner is not None:
                self.exception(inner, done)

    async def host(self, h: MCPHost, store: FileTokenStore | None = None) -> None:
        self.texts += [repr(h), repr(h.config), str(h.config), json.dumps(h.get_metrics(), default=str),
                       h.metrics_text(), json.dumps(h.get_tools(include_unavailable=True), default=str)]
        self.texts += [repr(s.config) for s in h.servers.values()]
        if store is not None:
            self.texts += [repr(store), *map(repr, await store.list())]

    def records(self, caplog: pytest.LogCaptureFixture) -> None:
        for record in caplog.records:
            self.texts.append(self.formatter.format(record))  # the traceback too, when there is one

    def search(self, secrets: set[str]) -> list[str]:
        everything = "\n".join(self.texts)
        return sorted(s for s in secrets if s and s in everything)


def config(server: AuthServer, url: str | None = None, **auth: Any) -> dict[str, Any]:
    return {"mcpServers": {"notes": {"url": url or server.url,
                                     "auth": {"type": "oauth", "redirectUri": REDIRECT, **auth}}}}


async def calls(h: MCPHost, sweep: Sweep, *tools: str) -> None:
    for tool in tools:
        try:
            result = await h.call_tool(f"notes.{tool}", {})
            sweep.texts.append(repr(result) if tool != "whoami" else "")  # a tool's result is the app's data
        except MCPHostError as exc:
            sweep.exception(exc)


async def test_no_secret_of_a_whole_login_life_leaks(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    sweep = Sweep()
    async with AuthServer() as server:
        store = FileTokenStore(tmp_path)
        h = MCPHost(config(server), on_authorize=server.approve, token_store=store, retry=NO_RETRY,
                    trace_bodies=True, log_level="DEBUG")
        h.on_event(lambda event: sweep.texts.append(json.dumps(event, default=repr)))  # what applications see
        async with h:
            await calls(h, sweep, "whoami", "admin", "echo")  # login, step-up
            server.revoke_access()
            await calls(h, sweep, "echo")  # refresh on 401
            server.revoke_access()
            server.revoke_refresh()
            await calls(h, sweep, "echo")  # a failed refresh: the flow again
            server.deny = True
            server.revoke_access()
            server.revoke_refresh()
            await calls(h, sweep, "echo")  # the user refuses: an error
            await sweep.host(h, store)
        secrets = server.secrets()
    async with AuthServer() as server:  # a kept token refreshed before expiry
        store = FileTokenStore(tmp_path / "aged")
        for _ in range(2):
            async with MCPHost(config(server), on_authorize=server.approve, token_store=store, retry=NO_RETRY,
                               trace_bodies=True) as h:
                await calls(h, sweep, "echo")
                await sweep.host(h, store)
            await near_expiry(store, "notes")
        assert len(server.grants("refresh_token")) == 1
        secrets |= server.secrets()
    # Pre-registered clients and their secrets, client credentials.
    for method in ("client_secret_post", "client_secret_basic"):
        async with AuthServer(dcr=False, auth_methods=(method,)) as server:
            client = server.register(method)
            cfg = config(server, clientId=client.client_id, clientSecret=client.secret)
            async with MCPHost(cfg, on_authorize=server.approve, retry=NO_RETRY, trace_bodies=True) as h:
                await calls(h, sweep, "echo")
                await sweep.host(h)
            cfg["mcpServers"]["notes"]["auth"] = {"type": "clientCredentials", "clientId": client.client_id,
                                                  "clientSecret": client.secret}
            async with MCPHost(cfg, retry=NO_RETRY, trace_bodies=True) as h:
                await calls(h, sweep, "echo")
                await sweep.host(h)
            secrets |= server.secrets()
    sweep.records(caplog)
    assert len(secrets) >= 15 and any(s.startswith("code-") for s in secrets)
    assert sum("notes" in t for t in sweep.texts) > 10 and len(caplog.records) > 50
    assert any('"type": "server_ready"' in t for t in sweep.texts)
    assert sweep.search(secrets) == []


@pytest.mark.parametrize("echo", ["result", "error", "401"])
async def test_a_server_that_echoes_the_token_back(echo: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    sweep = Sweep()
    async with AuthServer(echo=echo) as server:
        url = server.url + f"?api_key={QUERY_SECRET}&page=1"
        host = MCPHost(config(server, url), on_authorize=server.approve, retry=NO_RETRY, trace_bodies=True)
        try:
            try:
                await host.initialize()
            except MCPHostError as exc:
                sweep.exception(exc)
            await calls(host, sweep, "whoami", "echo")
            if echo == "401":
                server.revoke_access()
                server.revoke_refresh()
                server.deny = True
                await calls(host, sweep, "echo")  # its stale token is quoted in the 401's body
            await sweep.host(host)
        finally:
            await host.shutdown()
        secrets = server.secrets() | {QUERY_SECRET}
        assert any(r.query.get("api_key") == QUERY_SECRET for r in server.requests("/mcp"))
    sweep.records(caplog)
    traced = "\n".join(sweep.texts)
    if echo == "error":
        assert "bad token ***" in traced  # the server's words are there, masked
    assert sweep.search(secrets) == []


async def test_the_command_line_at_its_most_verbose(tmp_path: Path) -> None:
    """``-vvv``: debug logs and the wire trace with bodies on stderr, from the login (the
    system browser a program that follows the redirects) to the commands that use it."""
    browser = tmp_path / "browser.py"
    browser.write_text("import sys, urllib.request\nurllib.request.urlopen(sys.argv[1], timeout=30).read()\n")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        redirect = f"http://127.0.0.1:{s.getsockname()[1]}/callback"
    async with AuthServer(echo="error") as server:
        cfg = tmp_path / "mcp.json"
        cfg.write_text(json.dumps(config(server, server.url + f"?api_key={QUERY_SECRET}", redirectUri=redirect)))
        tokens = tmp_path / "tokens"
        env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "BROWSER": f"{sys.executable} {browser} %s"}
        outputs = []
        for args in (("auth", "login", "notes", str(cfg)), ("refresh",), ("call", str(cfg), "notes.echo", "{}"),
                     ("inspect", str(cfg)), ("auth", "status", str(cfg))):
            if args == ("refresh",):
                server.revoke_access()  # the next command refreshes, at -vvv
                continue
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "mcphost", *args, "-vvv", "--token-dir", str(tokens), env=env,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
            out, err = await asyncio.wait_for(proc.communicate(), 60)
            outputs.append(out.decode() + err.decode())
        secrets = server.secrets() | {QUERY_SECRET}
        assert server.authorizations == 1 and len(server.grants("refresh_token")) == 1
    text = "\n".join(outputs)
    # The trace shows bodies, masked; the token was refreshed (and kept) on the way.
    assert '"message": "bad token ***", "data": "Bearer ***"' in text
    assert "asking the user to authorize" in text and "saved the credentials of notes" in text
    assert text.count("notes: logged in (issuer") == 2  # the login's, then the status's
    assert [s for s in secrets if s in text] == []
