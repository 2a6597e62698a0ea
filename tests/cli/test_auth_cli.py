"""``mcphost auth status|logout`` and the login's browser hook (its loopback listener)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import stat
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from auth_server import AuthServer, s256
from cli_support import arun_cli, cli_env, write_config

from mcphost.auth.filestore import FileTokenStore
from mcphost.auth.store import ClientInfo, Credentials, Tokens
from mcphost.cli import login as cli_login
from mcphost.cli import main
from mcphost.errors import MCPHostError, UsageError

SECRETS = ("at-kept-secret", "rt-kept-secret", "cs-kept-secret", "bt-kept-secret")


def kept(server: str, expires_in: float | None, refresh: bool = True, issuer: str = "https://auth.example") -> Credentials:
    import time

    expires = None if expires_in is None else time.time() + expires_in
    return Credentials(server, issuer, f"https://{server}.example/mcp",
                       ClientInfo("client-7", "cs-kept-secret", "client_secret_post"),
                       Tokens("at-kept-secret", refresh_token="rt-kept-secret" if refresh else None,
                              expires_at=expires, scope="read write"))


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Path]:
    config = write_config(tmp_path, {"mcpServers": {
        "notes": {"url": "https://notes.example/mcp"}, "crm": {"url": "https://crm.example/mcp"},
        "docs": {"url": "https://docs.example/mcp"}, "local": {"command": "true"},
        "fixed": {"url": "https://fixed.example/mcp", "auth": {"type": "bearer", "token": "bt-kept-secret"}},
        "batch": {"url": "https://batch.example/mcp", "auth": {"type": "clientCredentials", "clientId": "c",
                                                             "clientSecret": "cs-kept-secret"}}}})
    tokens = tmp_path / "tokens"

    async def fill() -> None:
        store = FileTokenStore(tokens)
        await store.put(kept("notes", 3000))
        await store.put(kept("crm", -600))
        await store.put(kept("old", -600, refresh=False))
    asyncio.run(fill())
    return config, tokens


def test_status_says_who_is_logged_in_and_never_a_token(setup: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    config, tokens = setup
    assert main(["auth", "status", str(config), "--token-dir", str(tokens)]) == 0
    out, err = capsys.readouterr()
    lines = dict(line.split(": ", 1) for line in out.splitlines())
    # kept ones, then remote servers without a login
    assert set(lines) == {"notes", "crm", "old", "docs", "fixed", "batch"}
    assert lines["fixed"] == "a bearer token from the configuration (no login)"
    assert lines["batch"] == "client credentials (no login: a token is got when the server is started)"
    assert lines["notes"].startswith("logged in (issuer https://auth.example, scopes read write, access expires in ")
    assert lines["notes"].endswith(", refreshable)")
    assert "access expired 10 min ago; refreshed on next use" in lines["crm"]
    assert "access expired 10 min ago; log in again" in lines["old"]
    assert lines["docs"] == "not logged in"
    assert main(["auth", "status", str(config), "--token-dir", str(tokens), "--json"]) == 0
    rows = {row["server"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["notes"]["loggedIn"] and rows["notes"]["scopes"] == ["read", "write"]
    assert rows["notes"]["clientId"] == "client-7" and rows["docs"] == {"server": "docs", "loggedIn": False}
    for secret in SECRETS:
        assert secret not in out + err + json.dumps(rows)


def test_logout_forgets_one_server(setup: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    config, tokens = setup
    assert main(["auth", "logout", "notes", "--token-dir", str(tokens)]) == 0
    assert capsys.readouterr().out == "notes: logged out (forgot 1 login)\n"
    assert main(["auth", "logout", "notes", "--token-dir", str(tokens)]) == 0
    assert capsys.readouterr().out == "notes: not logged in (nothing kept)\n"
    assert main(["auth", "status", str(config), "--token-dir", str(tokens)]) == 0
    out = capsys.readouterr().out
    assert "notes: not logged in\n" in out and "crm: logged in" in out
    assert sorted(c.server for c in asyncio.run(FileTokenStore(tokens).list())) == ["crm", "old"]


def test_status_without_a_configuration_lists_what_is_kept(
        setup: tuple[Path, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    _, tokens = setup
    monkeypatch.chdir(tokens.parent.parent)  # no mcp.json here
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tokens.parent / "xdg"))
    assert main(["auth", "status"]) == 0
    assert capsys.readouterr().out == "no logins kept (and no remote server in the configuration)\n"
    (tokens.parent / "xdg" / "mcphost").mkdir(parents=True)
    tokens.rename(tokens.parent / "xdg" / "mcphost" / "tokens")  # the default directory
    assert main(["auth", "status"]) == 0
    assert [line.split(":")[0] for line in capsys.readouterr().out.splitlines()] == ["crm", "notes", "old"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def follow(url: str) -> tuple[int, str]:
    """A browser: GET ``url`` and follow every redirect; the last status and page."""
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


async def test_the_browser_hook_receives_the_redirect(monkeypatch: pytest.MonkeyPatch) -> None:
    async with AuthServer() as server:
        redirect = f"http://127.0.0.1:{free_port()}/callback"
        client = server.register("none")
        url = server.issuer + "/authorize?" + urllib.parse.urlencode({
            "response_type": "code", "client_id": client.client_id, "redirect_uri": redirect, "state": "st-1",
            "code_challenge": s256("v" * 50), "code_challenge_method": "S256"})
        pages: list[tuple[int, str]] = []

        def browser(address: str) -> bool:  # webbrowser.open, run in a thread by the hook
            assert follow(redirect + "?nothing=here")[0] == 404  # not the answer: still waiting
            pages.append(follow(address))
            return True

        monkeypatch.setattr(cli_login.webbrowser, "open", browser)
        said = _Text()
        hook = cli_login.browser_authorizer(open_browser=True, timeout=30, out=said)
        back = await hook(url)
        query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(back).query))
        assert back.startswith(redirect + "?") and query["state"] == "st-1" and query["code"] in server.codes
        assert query["iss"] == server.issuer
        assert pages == [(200, pages[0][1])] and "Logged in" in pages[0][1]
        assert url in said.text and "opening a browser" in said.text and query["code"] not in said.text


async def test_no_browser_prints_the_address_and_an_error_page_is_an_answer() -> None:
    async with AuthServer() as server:
        server.deny = True
        redirect = f"http://localhost:{free_port()}/cb"
        client = server.register("none")
        url = server.issuer + "/authorize?" + urllib.parse.urlencode({
            "response_type": "code", "client_id": client.client_id, "redirect_uri": redirect, "state": "s"})
        said = _Text()
        hook = cli_login.browser_authorizer(open_browser=False, timeout=30, out=said)
        waiting = asyncio.ensure_future(hook(url))
        await asyncio.wait_for(said.waiting.wait(), 30)  # the hook listens once it says so
        status, page = await asyncio.to_thread(follow, url)
        back = await waiting
        assert status == 200 and "access_denied" in page and "error=access_denied" in back
        assert "to log in, open this address in a browser:" in said.text and url in said.text
        assert "paste" not in said.text


@pytest.mark.skipif(os.name != "posix", reason="pasting reads the terminal with the loop's reader (POSIX)")
async def test_the_address_a_browser_elsewhere_ended_at_may_be_pasted() -> None:
    async with AuthServer() as server:
        redirect = f"http://127.0.0.1:{free_port()}/callback"
        client = server.register("none")
        url = server.issuer + "/authorize?" + urllib.parse.urlencode({
            "response_type": "code", "client_id": client.client_id, "redirect_uri": redirect, "state": "s9",
            "code_challenge": s256("v" * 50), "code_challenge_method": "S256"})
        read_fd, write_fd = os.pipe()
        try:
            said = _Text()
            hook = cli_login.browser_authorizer(open_browser=False, timeout=30, out=said, paste=read_fd)
            waiting = asyncio.ensure_future(hook(url))
            await asyncio.wait_for(said.waiting.wait(), 30)
            ended_at = await server.approve(url)  # what the browser elsewhere shows, unable to load it
            os.write(write_fd, b"something else\n" + ended_at.replace(redirect, "http://127.0.0.1:1/callback").encode()[:40])
            os.write(write_fd, b"\n  " + ended_at.encode() + b"  \n")
            back = await asyncio.wait_for(waiting, 30)
        finally:
            os.close(read_fd)
            os.close(write_fd)
        assert back == ended_at and "paste here the address" in said.text
        assert said.text.count("not the redirect to") == 2


async def test_the_listener_refuses_what_it_cannot_receive_and_times_out() -> None:
    for bad in ("https://127.0.0.1:5/cb", "http://example.com:5/cb", "http://127.0.0.1/cb", ""):
        with pytest.raises(UsageError, match="redirect URI"):
            cli_login.LoopbackRedirect(bad)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(UsageError, match="cannot listen at the redirect URI"):
            async with cli_login.LoopbackRedirect(f"http://127.0.0.1:{taken.getsockname()[1]}/cb"):
                pass
    async with cli_login.LoopbackRedirect(f"http://127.0.0.1:{free_port()}/cb") as listener:
        reader, writer = await asyncio.open_connection("127.0.0.1", listener.port)
        writer.write(b"GET /cb?" + b"x" * 10_000 + b" HTTP/1.1\r\n\r\n")  # a head over the bound
        assert await reader.read() == b""
        writer.close()
        with pytest.raises(MCPHostError, match="no answer from the browser within 0 s"):
            await listener.wait(0.01)


async def test_inspect_and_call_on_a_server_that_wants_a_login_say_what_to_run(tmp_path: Path) -> None:
    async with AuthServer() as server:
        config = write_config(tmp_path, {"mcpServers": {"notes": {"url": server.url}}})
        hint = "mcphost: hint: notes: needs an OAuth login: run `mcphost auth login notes` (then this command again)"
        env = cli_env(XDG_CONFIG_HOME=str(tmp_path / "xdg"))
        runs = await asyncio.gather(arun_cli("inspect", str(config), env=env),
                                    arun_cli("call", str(config), "notes.echo", "{}", env=env))
        for code, _, err in runs:
            assert code == 1 and hint in err.splitlines()


async def login_as_browser(config: Path, *args: str) -> tuple[int, str, int, str, str, str]:
    """`mcphost auth login notes CONFIG --no-browser ARGS`, the test playing the browser:
    (page status, page, exit status, stdout, the rest of stderr, stderr up to the wait)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "mcphost", "auth", "login", "notes", str(config), "--no-browser", *args,
        env=cli_env(), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        assert proc.stderr is not None
        said: list[str] = []
        while not said or "waiting for the browser" not in said[-1]:
            line = (await asyncio.wait_for(proc.stderr.readline(), 30)).decode()
            assert line, f"the login ended early: {said}"
            said.append(line)
        url = next(line.strip() for line in said if line.startswith("  http"))
        status, page = await asyncio.to_thread(follow, url)  # the browser
        out, rest = await asyncio.wait_for(proc.communicate(), 30)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode is not None
    return status, page, proc.returncode, out.decode(), rest.decode(), "".join(said)


async def test_a_login_that_cannot_be_made_says_why(tmp_path: Path) -> None:
    async with AuthServer() as server:
        server.deny = True
        redirect = f"http://127.0.0.1:{free_port()}/callback"
        config = write_config(tmp_path, {"mcpServers": {
            "notes": {"url": server.url, "auth": {"type": "oauth", "redirectUri": redirect}, "timeout": 400},
            "local": {"command": "true"}}})
        common = ("--token-dir", str(tmp_path / "tokens"))
        denied, unknown, local = await asyncio.gather(
            login_as_browser(config, *common), arun_cli("auth", "login", "nope", str(config), *common),
            arun_cli("auth", "login", "local", str(config), *common))
    status, page, code, out, rest, said = denied
    assert status == 200 and "access_denied" in page and "must be done within" not in said
    assert code == 1 and out == "" and "access_denied" in rest and "hint" not in rest
    assert unknown[0] == 2 and "no server named 'nope' (servers: local, notes)" in unknown[2]
    assert local[0] == 2 and "local: a stdio server: a login is for a remote (http, sse) server" in local[2]
    assert not (tmp_path / "tokens").exists() or all(
        "tokens" not in json.loads(p.read_text()) for p in (tmp_path / "tokens").iterdir())


async def test_login_headless_then_every_command_without_one(tmp_path: Path) -> None:
    """A new user: inspect says to log in; `auth login` (the browser played by the test,
    following the redirects); inspect and call work without a login; status; logout."""
    async with AuthServer() as server:
        redirect = f"http://127.0.0.1:{free_port()}/callback"
        config = write_config(tmp_path, {"mcpServers": {"notes": {
            "url": server.url, "auth": {"type": "oauth", "redirectUri": redirect}}}})
        tokens = tmp_path / "tokens"
        env = cli_env()
        common = ("--token-dir", str(tokens))
        code, _, err = await arun_cli("inspect", str(config), *common, env=env)
        assert code == 1 and "mcphost: hint: notes: needs an OAuth login: run `mcphost auth login notes`" in err
        assert server.authorizations == 0

        status, page, code, out, rest, said = await login_as_browser(config, *common)
        assert status == 200 and "Logged in" in page
        assert code == 0, rest
        assert out.startswith(f"notes: logged in (issuer {server.issuer}, scopes read, access expires in ")
        assert "the login must be done within" not in said  # the start-up timeout stops for it
        assert server.authorizations == 1
        (kept,) = tokens.iterdir()
        assert stat.S_IMODE(kept.stat().st_mode) == 0o600

        runs = await asyncio.gather(arun_cli("inspect", str(config), *common, env=env),
                                    arun_cli("call", str(config), "notes.whoami", "{}", *common, env=env),
                                    arun_cli("auth", "status", str(config), *common, env=env))
        assert [r[0] for r in runs] == [0, 0, 0], runs
        assert runs[2][1].startswith("notes: logged in (issuer ")
        assert "notes.whoami()" in runs[0][1] and json.loads(runs[1][1])["content"][0]["text"] == "dcr-1 read"
        assert server.authorizations == 1

        code, out_text, _ = await arun_cli("auth", "logout", "notes", *common, env=env)
        assert code == 0 and out_text == "notes: logged out (forgot 1 login)\n"
        code, _, err = await arun_cli("call", str(config), "notes.whoami", "{}", *common, env=env)
        assert code == 1 and "run `mcphost auth login notes`" in err
        everything = said + out + rest + out_text + err + repr(runs)
        for secret in server.secrets():
            assert secret not in everything


async def test_a_server_without_an_auth_entry_uses_its_kept_login(tmp_path: Path) -> None:
    from mcphost import MCPHost

    async with AuthServer() as server:
        config = write_config(tmp_path, {"mcpServers": {"notes": {"url": server.url}}})
        tokens = tmp_path / "tokens"
        # A login made by an application (its own on_authorize) into the same directory.
        async with MCPHost(str(config), on_authorize=server.approve, token_store=FileTokenStore(tokens)):
            pass
        code, out, err = await arun_cli("call", str(config), "notes.whoami", "{}", "--token-dir", str(tokens))
        assert code == 0, err
        assert json.loads(out)["content"][0]["text"] == "dcr-1 read" and server.authorizations == 1


async def test_login_opens_the_system_browser(tmp_path: Path) -> None:
    """Without --no-browser: ``webbrowser`` runs $BROWSER, here a program that follows the
    redirects as a browser would, back to the login's loopback listener."""
    browser = tmp_path / "browser.py"
    browser.write_text("import sys, urllib.request\nurllib.request.urlopen(sys.argv[1], timeout=30).read()\n")
    async with AuthServer() as server:
        redirect = f"http://127.0.0.1:{free_port()}/callback"
        config = write_config(tmp_path, {"mcpServers": {"notes": {
            "url": server.url, "auth": {"type": "oauth", "redirectUri": redirect}}}})
        env = cli_env(BROWSER=f"{sys.executable} {browser} %s")
        code, out, err = await arun_cli("auth", "login", "notes", str(config), "--token-dir", str(tmp_path / "t"),
                                        env=env)
        assert code == 0, err
        assert out.startswith("notes: logged in (issuer ") and "opening a browser" in err
        assert server.authorizations == 1


def test_a_login_hint_names_the_command() -> None:
    hint = cli_login.login_hint("notes", MCPHostError("notes: HTTP 401: the server needs a login"))
    assert hint == "notes: needs an OAuth login: run `mcphost auth login notes` (then this command again)"
    assert cli_login.login_hint("notes", MCPHostError("connection refused")) is None


class _Text:
    def __init__(self) -> None:
        self.text = ""
        self.waiting = asyncio.Event()

    def write(self, text: str) -> int:
        self.text += text
        if "waiting for the browser" in text:
            self.waiting.set()
        return len(text)

    def flush(self) -> None:
        pass
