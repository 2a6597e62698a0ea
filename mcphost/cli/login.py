"""``mcphost auth login|status|logout``: OAuth logins kept for the other commands.

A login is kept by :class:`~mcphost.auth.filestore.FileTokenStore` in the token directory
(``--token-dir``; default ``$XDG_CONFIG_HOME/mcphost/tokens``, else
``~/.config/mcphost/tokens``; ``%APPDATA%\\mcphost\\tokens`` on Windows), where ``inspect``,
``call``, ``tools`` and ``shell`` find it: log in once, then every command is authorized.

- ``login SERVER`` forgets the server's tokens (not its client registration), starts only
  that server with a hook that opens the authorization URL in a browser (``webbrowser``;
  ``--no-browser``: prints it) and waits on a one-shot listener at the loopback redirect
  URI (``127.0.0.1:<port>``, RFC 8252 §7.3) for the browser to come back with the code
  (with ``--no-browser`` on a terminal, the address a browser on another machine ended at
  may be pasted instead); the host finishes the flow and the store keeps the result.
- ``status``: per server, logged in or not, which issuer, the scopes granted, when the
  access token expires and whether it can be refreshed. Never a token.
- ``logout SERVER``: forgets everything kept for it (tokens and client registration).

:class:`LoopbackRedirect` is the listener; the user's browser is untrusted input like any
peer: one request head of at most 8 KiB per connection, a few connections at a time, each
bounded in time, and only a request to the redirect path that carries ``code`` or
``error`` ends the wait.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import html
import json
import os
import sys
import time
import urllib.parse
import webbrowser
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from ..auth.errors import OAuthError
from ..auth.filestore import FileTokenStore, default_directory
from ..auth.store import Credentials
from ..errors import ConfigurationError, MCPHostError, ServerStartupError, UsageError
from ..policy import RetryPolicy
from .report import clean, print_error

__all__ = ["LoopbackRedirect", "browser_authorizer", "login_hint", "no_login", "token_directory", "token_store"]

#: How long ``login`` waits for the browser to come back, unless ``--timeout`` says.
DEFAULT_LOGIN_TIMEOUT = 300.0
_MAX_HEAD = 8 * 1024
_MAX_CONNECTIONS = 8
_PER_CONNECTION = 10.0
_LOOPBACK = ("127.0.0.1", "localhost", "::1")
_PAGE = ("<!doctype html><meta charset=utf-8><title>mcphost</title>"
         "<body style='font-family:sans-serif'><h3>{}</h3><p>{}</p></body>")


def token_directory(args: argparse.Namespace | None = None) -> Path:
    """The token directory: ``--token-dir``, else the user's default."""
    given = getattr(args, "token_dir", None)
    if given:
        return Path(given)
    return default_directory(os.environ, Path.home(), windows=os.name == "nt")


def token_store(args: argparse.Namespace | None = None) -> FileTokenStore:
    return FileTokenStore(token_directory(args))


async def no_login(url: str) -> str:
    """The ``on_authorize`` of every command but ``auth login``: a server that needs the
    user's login fails with what to do (its stored login is still used and refreshed)."""
    raise OAuthError("the server needs a login, which only `mcphost auth login` asks for")


def login_hint(name: str, error: Any) -> str | None:
    """What to run when ``error`` says ``name`` needs a login (else ``None``)."""
    text = str(error).lower()
    if not any(word in text for word in ("needs a login", "log in", "authoriz", "http 401", "unauthorized")):
        return None
    return f"{name}: needs an OAuth login: run `mcphost auth login {name}` (then this command again)"


class LoopbackRedirect:
    """A one-shot HTTP listener at a loopback redirect URI: ``async with`` it, then
    :meth:`wait` for the URL the browser was sent back to."""

    def __init__(self, redirect_uri: str) -> None:
        parts = urllib.parse.urlsplit(redirect_uri)
        host = (parts.hostname or "").lower()
        if parts.scheme != "http" or host not in _LOOPBACK:
            raise UsageError(f"the redirect URI {redirect_uri!r} is not an http:// loopback address: the command line "
                             'can only receive it on this machine; set "redirectUri" to http://127.0.0.1:PORT/callback')
        if parts.port is None:
            raise UsageError(f"the redirect URI {redirect_uri!r} names no port; set \"redirectUri\" to "
                             "http://127.0.0.1:PORT/callback with a free PORT")
        self.redirect_uri = redirect_uri
        self.host = "127.0.0.1" if host == "localhost" else host
        self.port = parts.port
        self.path = parts.path or "/"
        self._answer: asyncio.Future[str] | None = None
        self._server: asyncio.Server | None = None
        self._open = 0

    async def __aenter__(self) -> LoopbackRedirect:
        self._answer = asyncio.get_running_loop().create_future()
        try:
            self._server = await asyncio.start_server(self._serve, self.host, self.port, limit=_MAX_HEAD)
        except OSError as exc:
            raise UsageError(f"cannot listen at the redirect URI {self.redirect_uri}: "
                             f"{exc.strerror or exc}") from None
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._server.wait_closed(), 2)
            self._server = None

    async def wait(self, timeout: float) -> str:
        """The full redirect URL (with ``code``, ``state`` or ``error``) the browser brought."""
        assert self._answer is not None
        try:
            return await asyncio.wait_for(asyncio.shield(self._answer), timeout)
        except asyncio.TimeoutError:
            raise MCPHostError(f"no answer from the browser within {timeout:.0f} s "
                               "(the login was not completed)") from None

    def accept(self, pasted: str) -> bool:
        """Take the address the user copied from a browser that could not reach this
        listener (another machine): true if it is the redirect, with ``code`` or ``error``."""
        try:
            parts = urllib.parse.urlsplit(pasted.strip())
        except ValueError:
            return False
        query = urllib.parse.parse_qs(parts.query)
        base = urllib.parse.urlsplit(self.redirect_uri)
        if (parts.scheme, parts.netloc, parts.path) != (base.scheme, base.netloc, self.path) \
                or not ({"code", "error"} & query.keys()) or self._answer is None or self._answer.done():
            return False
        self._answer.set_result(urllib.parse.urlunsplit((base.scheme, base.netloc, parts.path, parts.query, "")))
        return True

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._open += 1
        try:
            if self._open > _MAX_CONNECTIONS:
                return
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), _PER_CONNECTION)
            method, target, _ = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ", 2)
            parts = urllib.parse.urlsplit(target)
            query = urllib.parse.parse_qs(parts.query)
            done = self._answer is not None and not self._answer.done()
            if method != "GET" or parts.path != self.path or not ({"code", "error"} & query.keys()) or not done:
                writer.write(_page(404, "Not found", "This is mcphost's login redirect; nothing here."))
                return
            error = query.get("error", [""])[0]
            if error:
                writer.write(_page(200, "Login failed", f"The authorization server said: {error}. "
                                   "You can close this window."))
            else:
                writer.write(_page(200, "Logged in", "mcphost has the authorization. You can close this window."))
            assert self._answer is not None
            base = urllib.parse.urlsplit(self.redirect_uri)
            self._answer.set_result(urllib.parse.urlunsplit((base.scheme, base.netloc, parts.path, parts.query, "")))
        except (asyncio.TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError,
                ValueError, UnicodeDecodeError):
            return
        finally:
            self._open -= 1
            with contextlib.suppress(ConnectionError):
                await writer.drain()
            writer.close()


def _page(status: int, title: str, text: str) -> bytes:
    body = _PAGE.format(html.escape(title), html.escape(text)).encode()
    reason = "OK" if status == 200 else "Not Found"
    return (f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {len(body)}\r\n"
            "Cache-Control: no-store\r\nConnection: close\r\n\r\n").encode() + body


def browser_authorizer(*, open_browser: bool, timeout: float, out: TextIO, paste: int | None = None) -> Any:
    """The host's ``on_authorize`` hook for the command line: the user's browser, and a
    listener at the redirect URI the authorization URL carries. With ``paste`` (a file
    descriptor: the terminal), the address the browser ended at may also be pasted there,
    for a browser on another machine (POSIX)."""

    async def on_authorize(url: str) -> str:
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
        redirect = query.get("redirect_uri", [""])[0]
        async with LoopbackRedirect(redirect) as listener:
            if open_browser:
                out.write("mcphost: opening a browser to log in; if none opens, visit:\n")
            else:
                out.write("mcphost: to log in, open this address in a browser:\n")
            out.write(f"  {url}\n")
            out.flush()
            if open_browser:
                await asyncio.to_thread(webbrowser.open, url)
            if paste is not None:
                out.write("mcphost: if that browser is on another machine, paste here the address it ends at "
                          "(it fails to load; its address holds the answer)\n")
            out.write(f"mcphost: waiting for the browser to come back to {listener.redirect_uri} ...\n")
            out.flush()
            with _pasting(paste, listener, out):
                return await listener.wait(timeout)

    return on_authorize


@contextlib.contextmanager
def _pasting(fd: int | None, listener: LoopbackRedirect, out: TextIO) -> Iterator[None]:
    """Read lines from ``fd`` while the listener waits; each is offered to it."""
    if fd is None or os.name != "posix":
        yield
        return
    loop = asyncio.get_running_loop()
    buffer = bytearray()

    def readable() -> None:
        try:
            data = os.read(fd, 4096)
        except OSError:
            data = b""
        if not data:
            loop.remove_reader(fd)
            return
        buffer.extend(data)
        while b"\n" in buffer or len(buffer) > _MAX_HEAD:
            line, _, rest = bytes(buffer).partition(b"\n")
            buffer[:] = rest
            text = line[:_MAX_HEAD].decode("utf-8", "replace").strip()
            if text and not listener.accept(text):
                out.write(f"mcphost: not the redirect to {listener.redirect_uri} with a code; paste the whole "
                          "address, or wait for the browser\n")
                out.flush()

    loop.add_reader(fd, readable)
    try:
        yield
    finally:
        loop.remove_reader(fd)


# -- the commands ---------------------------------------------------------------------------


async def login(args: argparse.Namespace, interrupts: Any) -> int:
    from . import commands
    from .run import started_host, stop_host

    name = args.server
    config = commands.config_path(args, args.config)
    _check_remote(config, name)
    store = token_store(args)
    for kept in await store.list():
        if kept.server == name and kept.tokens is not None:  # a fresh login, same registration
            await store.put(dataclasses.replace(kept, tokens=None))
    paste = sys.stdin.fileno() if args.no_browser and sys.stdin is not None and sys.stdin.isatty() else None
    # The server's start-up clock stops while the user logs in: --timeout alone bounds it.
    hook = browser_authorizer(open_browser=not args.no_browser, timeout=args.timeout, out=sys.stderr, paste=paste)
    options = commands.options_of(args)
    options.update(token_store=store, on_authorize=hook)
    # Only the server's own timeout bounds the start (no retries to spend a budget on).
    options["retry"] = RetryPolicy(retries=0, start_budget=None)
    try:
        host = await started_host(interrupts, config, servers=[name], require_all=True, **options)
    except ServerStartupError as exc:
        # Said as it is, without the other commands' hint (which is to run this one).
        print_error(exc, bool(args.verbose), remote=frozenset([name]))
        return 1
    await stop_host(host, interrupts)
    now = await store.get(name)
    if now is None or now.tokens is None:
        print(f"mcphost: {clean(name)}: connected without a login (the server did not ask for one)", file=sys.stderr)
        return 0
    print(f"{clean(name)}: {_describe(now, time.time())}")
    return 0


async def status(args: argparse.Namespace) -> int:
    store = token_store(args)
    kept = await store.list()
    configured = _configured_remote(args)
    names = [c.server for c in kept] + list(configured)
    now = time.time()
    rows: list[dict[str, Any]] = []
    for name in dict.fromkeys(names):
        mine = [c for c in kept if c.server == name]
        if not mine:
            rows.append({"server": name, "loggedIn": False})
        for c in mine:
            rows.append(_row(c, now))
        if configured.get(name) in ("bearer", "clientCredentials"):
            for row in rows[len(rows) - max(len(mine), 1):]:
                row["auth"] = configured[name]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print("no logins kept (and no remote server in the configuration)")
    for row in rows:
        print(f"{clean(row['server'])}: {_describe_row(row)}")
    return 0


async def logout(args: argparse.Namespace) -> int:
    store = token_store(args)
    mine = [c for c in await store.list() if c.server == args.server]
    await store.delete(args.server)
    if not mine:
        print(f"{clean(args.server)}: not logged in (nothing kept)")
    else:
        print(f"{clean(args.server)}: logged out (forgot {len(mine)} login{'s' if len(mine) > 1 else ''})")
    return 0


def _check_remote(path: str, name: str) -> None:
    """``name`` is a remote server of the configuration at ``path`` (else a clear error)."""
    from ..config import parse_config

    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigurationError(f"cannot read the configuration {os.path.basename(path)}: "
                                 f"{exc.strerror or type(exc).__name__}") from None
    servers = parse_config(text, path=path, environ=os.environ, only=[name], defer_unset=True).servers
    if name not in servers:
        known = ", ".join(sorted(servers)) or "none"
        raise ConfigurationError(f"{os.path.basename(path)}: no server named {name!r} (servers: {known})")
    if servers[name].type == "stdio":
        raise ConfigurationError(f"{name}: a stdio server: a login is for a remote (http, sse) server")


def _configured_remote(args: argparse.Namespace) -> dict[str, str | None]:
    """The remote servers of the configuration (name -> its ``auth`` type, or ``None``),
    when there is one to read."""
    from ..config import parse_config

    path = args.config or args.config_option or "mcp.json"
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError:
        if args.config or args.config_option:
            raise ConfigurationError(f"cannot read the configuration {os.path.basename(path)}") from None
        return {}
    config = parse_config(text, path=path, environ=os.environ, defer_unset=True)
    return {name: server.auth.type if server.auth is not None else None
            for name, server in config.servers.items() if server.type != "stdio"}


def _row(c: Credentials, now: float) -> dict[str, Any]:
    row: dict[str, Any] = {"server": c.server, "issuer": c.issuer, "resource": c.resource,
                           "loggedIn": c.tokens is not None}
    if c.client is not None:
        row["clientId"] = c.client.client_id
    if c.tokens is not None:
        row["scopes"] = (c.tokens.scope or "").split()
        row["refreshable"] = c.tokens.refresh_token is not None
        if c.tokens.expires_at is not None:
            row["expiresAt"] = c.tokens.expires_at
            row["expiresIn"] = round(c.tokens.expires_at - now)
    return row


def _describe(c: Credentials, now: float) -> str:
    return _describe_row(_row(c, now))


def _describe_row(row: dict[str, Any]) -> str:
    if row.get("auth") == "bearer":
        return "a bearer token from the configuration (no login)"
    if row.get("auth") == "clientCredentials" and not row["loggedIn"]:
        return "client credentials (no login: a token is got when the server is started)"
    if not row["loggedIn"]:
        where = f" with {row['issuer']}" if "issuer" in row else ""
        return f"not logged in{where}"
    parts = [f"issuer {row['issuer']}"]
    parts.append("scopes " + (" ".join(row["scopes"]) if row["scopes"] else "(none said)"))
    if "expiresIn" in row:
        left = row["expiresIn"]
        when = _duration(left)
        if left > 0:
            parts.append(f"access expires in {when}")
        else:
            parts.append(f"access expired {when} ago" + ("; refreshed on next use" if row["refreshable"] else
                                                          "; log in again"))
    else:
        parts.append("no expiry said")
    if row["refreshable"] and row.get("expiresIn", 1) > 0:
        parts.append("refreshable")
    return "logged in (" + ", ".join(parts) + ")"


def _duration(seconds: float) -> str:
    seconds = abs(int(seconds))
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    if seconds < 172800:
        return f"{seconds // 3600} h"
    return f"{seconds // 86400} days"
