"""An OAuth 2.1 authorization server with the MCP server it protects, for the auth tests.

Stdlib only (asyncio streams), on 127.0.0.1 with a free port; one origin serves both:

- the **protected MCP server** at ``/mcp`` (Streamable HTTP, JSON answers, no sessions):
  ``initialize``, ``ping``, ``tools/list``, ``tools/call`` of ``echo``, ``whoami`` and
  ``admin`` (``admin`` needs the scope ``admin``: without it a 403 ``insufficient_scope``
  asks for it). A request without a valid access token gets a 401 whose
  ``WWW-Authenticate`` says where the resource metadata is (``prm``) and which scope is
  wanted (``challenge_scope``);
- **Protected Resource Metadata** (RFC 9728), at one place chosen by ``prm``: ``"header"``
  (only at the URL the challenge names), ``"path"`` (the well-known URL with the resource
  path), ``"root"`` (the well-known URL without it) or ``"none"`` (the 2025-03-26 era:
  nothing, the AS metadata sits at the server's root);
- **authorization server metadata** at the place chosen by ``metadata``: ``"oauth"``
  (RFC 8414, ``/.well-known/oauth-authorization-server`` + issuer path), ``"oidc"``
  (``/.well-known/openid-configuration`` + issuer path), ``"oidc-suffix"`` (issuer path +
  ``/.well-known/openid-configuration``) or ``"none"`` (default ``/authorize``, ``/token``
  and ``/register`` at the root). ``issuer_path`` gives the issuer a path (``/tenant``);
- ``/authorize`` (authorization code with PKCE S256 unless ``pkce`` is off, ``state``,
  RFC 9207 ``iss`` when ``send_iss``, said in the metadata unless ``advertise_iss`` says otherwise; ``pkce="plain"`` offers only ``plain``), ``/token`` (authorization code, refresh token with
  rotation, client credentials; client authentication ``client_secret_basic``,
  ``client_secret_post`` or ``none`` as each client registered) and ``/register`` (Dynamic
  Client Registration when ``dcr``; with ``cimd`` an https ``client_id`` is a Client ID
  Metadata Document's, taken as a public client). ``clients`` are pre-registered.

The user's step is :meth:`AuthServer.approve` (GET the authorization URL, return the
redirect's ``Location``: what a browser that the user clicked through would be sent to).
Every secret the server made or was shown is in :meth:`AuthServer.secrets`, for the leak
sweep; ``echo`` makes the MCP server repeat the caller's token back (``"result"``: in a
tool result; ``"error"``: in a JSON-RPC error; ``"401"``: in the body of a 401).
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import hashlib
import itertools
import json
import secrets
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

from http_listener import Listener, Request, plain, read_request

VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26")
TOOLS = [{"name": n, "description": f"The {n} tool", "inputSchema": {"type": "object"}}
         for n in ("echo", "whoami", "admin")]


@dataclass
class Client:
    client_id: str
    secret: str | None
    method: str  # token endpoint auth method
    redirect_uris: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class Grant:
    """What a code, an access token or a refresh token stands for."""

    client_id: str
    scope: str
    resource: str | None
    expires: float = float("inf")
    challenge: str | None = None
    redirect_uri: str | None = None


def jsonbody(status: int, value: Any, extra: list[tuple[str, str]] | None = None) -> bytes:
    return plain(status, json.dumps(value).encode(), "application/json", extra)


async def near_expiry(store: Any, server: str, left: float = 30.0) -> None:
    """Make the tokens ``store`` keeps for ``server`` look as if they were in the last ``left``
    seconds of an hour's life (the host refreshes them before it uses them; the authorization
    server still takes them)."""
    kept = await store.get(server)
    assert kept is not None and kept.tokens is not None
    now = time.time()
    tokens = dataclasses.replace(kept.tokens, issued_at=now + left - 3600, expires_at=now + left)
    await store.put(dataclasses.replace(kept, tokens=tokens))


def s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


class AuthServer:
    """``async with AuthServer(...) as server``: ``server.url`` is the MCP endpoint."""

    def __init__(self, *, prm: str = "path", metadata: str = "oauth", issuer_path: str = "",
                 pkce: bool | str = True, dcr: bool = True, clients: list[Client] | None = None,
                 auth_methods: tuple[str, ...] = ("client_secret_basic", "client_secret_post", "none"),
                 scopes_supported: tuple[str, ...] = ("read", "admin"), challenge_scope: str | None = "read",
                 access_ttl: float = 3600.0, refresh: bool = True, rotate: bool = True,
                 send_iss: bool = True, advertise_iss: bool | None = None, echo: str | None = None,
                 cimd: bool = False) -> None:
        self.prm, self.metadata_at, self.issuer_path = prm, metadata, issuer_path.rstrip("/")
        self.pkce, self.dcr, self.cimd = pkce, dcr, cimd
        self.auth_methods, self.scopes_supported = auth_methods, scopes_supported
        self.challenge_scope, self.access_ttl, self.refresh, self.rotate = challenge_scope, access_ttl, refresh, rotate
        self.send_iss, self.echo = send_iss, echo
        self.advertise_iss = send_iss if advertise_iss is None else advertise_iss
        self.clients: dict[str, Client] = {c.client_id: c for c in clients or []}
        self.deny = False  # the user refuses at /authorize
        self.wrong_iss = False  # the redirect carries another issuer's iss
        self.hang: asyncio.Event | None = None  # set: authorized MCP requests wait for it
        self.port = 0
        self.log: list[Request] = []
        self.authorizations = 0  # how many times the user was asked
        self.codes: dict[str, Grant] = {}
        self.access: dict[str, Grant] = {}
        self.refresh_tokens: dict[str, Grant] = {}
        self._seen: set[str] = set()  # every secret issued or received
        self._ids = itertools.count(1)
        self._listener = Listener(self._serve)
        self._changed: asyncio.Event | None = None

    # -- life -------------------------------------------------------------------------------

    async def __aenter__(self) -> AuthServer:
        self.port = await self._listener.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._listener.close()

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return self.origin + "/mcp"

    @property
    def issuer(self) -> str:
        return self.origin + self.issuer_path

    @property
    def prm_url(self) -> str:
        return {"header": self.origin + "/custom/resource-metadata",
                "path": self.origin + "/.well-known/oauth-protected-resource/mcp",
                "root": self.origin + "/.well-known/oauth-protected-resource"}.get(self.prm, "")

    async def until(self, predicate: Any, timeout: float = 30.0) -> None:
        """Wait until ``predicate()`` holds, checked after each request this server answers."""
        async def wait() -> None:
            while not predicate():
                self._changed = asyncio.Event()
                await self._changed.wait()
        await asyncio.wait_for(wait(), timeout)

    def grants(self, grant_type: str) -> list[dict[str, str]]:
        """The token requests of one grant type (their forms)."""
        return [f for f in (r.form() for r in self.log if r.path.endswith("/token")) if f.get("grant_type") == grant_type]

    def requests(self, path: str) -> list[Request]:
        return [r for r in self.log if r.path == path]

    def secrets(self) -> set[str]:
        """Every token, code, verifier and client secret this server issued or was shown."""
        return set(self._seen)

    def new_secret(self, prefix: str) -> str:
        value = f"{prefix}{next(self._ids)}-{secrets.token_urlsafe(12)}"
        self._seen.add(value)
        return value

    def register(self, method: str = "client_secret_basic", client_id: str | None = None) -> Client:
        """A pre-registered client (its secret made here unless the method is ``none``)."""
        client = Client(client_id or f"pre-{next(self._ids)}", None if method == "none" else self.new_secret("cs-"),
                        method)
        self.clients[client.client_id] = client
        return client

    def revoke_access(self) -> None:
        """Every access token stops working (refresh tokens still do): the next call gets a 401."""
        self.access.clear()

    def revoke_refresh(self) -> None:
        self.refresh_tokens.clear()

    async def approve(self, url: str) -> str:
        """The user: GET the authorization URL and return where its redirect points."""
        parts = urllib.parse.urlsplit(url)
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
        try:
            target = parts.path + ("?" + parts.query if parts.query else "")
            writer.write(f"GET {target} HTTP/1.1\r\nHost: {parts.netloc}\r\nConnection: close\r\n\r\n".encode())
            raw = await reader.read()
        finally:
            writer.close()
        head = raw.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
        for line in head[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "location":
                return value.strip()
        raise AssertionError(f"/authorize did not redirect: {head[0]}")

    # -- HTTP -------------------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            request = await read_request(reader)
            self.log.append(request)
            reply = self._route(request)
            if self.hang is not None and request.path == "/mcp" and reply.startswith(b"HTTP/1.1 200"):
                await self.hang.wait()  # an MCP server that answers nothing once authorized
            writer.write(reply)
            await writer.drain()
            if self._changed is not None:
                self._changed.set()
            if request.headers.get("connection", "").lower() == "close":
                return

    def _route(self, req: Request) -> bytes:
        path = req.path
        if path == "/mcp":
            return self._mcp(req)
        if path == self._prm_path() and req.method == "GET":
            return jsonbody(200, self.resource_metadata())
        if path in self._metadata_paths() and req.method == "GET":
            return jsonbody(200, self.as_metadata())
        base = "" if self.metadata_at == "none" else self.issuer_path
        if path == base + "/authorize" and req.method == "GET":
            return self._authorize(req)
        if path == base + "/token" and req.method == "POST":
            return self._token(req)
        if path == base + "/register" and req.method == "POST" and self.dcr:
            return self._register(req)
        return plain(404, b"not found")

    # -- metadata ---------------------------------------------------------------------------

    def _prm_path(self) -> str | None:
        return urllib.parse.urlsplit(self.prm_url).path if self.prm != "none" else None

    def _metadata_paths(self) -> set[str]:
        path = self.issuer_path
        return {"oauth": {"/.well-known/oauth-authorization-server" + path},
                "oidc": {"/.well-known/openid-configuration" + path},
                "oidc-suffix": {path + "/.well-known/openid-configuration"}}.get(self.metadata_at, set())

    def resource_metadata(self) -> dict[str, Any]:
        return {"resource": self.url, "authorization_servers": [self.issuer],
                "scopes_supported": list(self.scopes_supported), "bearer_methods_supported": ["header"]}

    def as_metadata(self) -> dict[str, Any]:
        issuer = self.issuer
        meta: dict[str, Any] = {
            "issuer": issuer, "authorization_endpoint": issuer + "/authorize", "token_endpoint": issuer + "/token",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
            "token_endpoint_auth_methods_supported": list(self.auth_methods),
            "scopes_supported": list(self.scopes_supported),
            "authorization_response_iss_parameter_supported": self.advertise_iss,
        }
        if self.pkce:
            meta["code_challenge_methods_supported"] = ["plain"] if self.pkce == "plain" else ["S256"]
        if self.dcr:
            meta["registration_endpoint"] = issuer + "/register"
        if self.cimd:
            meta["client_id_metadata_document_supported"] = True
        return meta

    # -- the authorization server -----------------------------------------------------------

    def _authorize(self, req: Request) -> bytes:
        q = req.query
        client = self._known(q.get("client_id", ""))
        redirect = q.get("redirect_uri", "")
        if client is None or (client.redirect_uris and redirect not in client.redirect_uris) or not redirect:
            return plain(400, b"unknown client or redirect_uri")
        self.authorizations += 1
        back: dict[str, str] = {}
        if self.deny:
            back["error"] = "access_denied"
        elif q.get("response_type") != "code" or (
                self.pkce and (q.get("code_challenge_method") != "S256" or not q.get("code_challenge"))):
            back["error"] = "invalid_request"
        else:
            code = self.new_secret("code-")
            self.codes[code] = Grant(client.client_id, q.get("scope", ""), q.get("resource"),
                                     challenge=q.get("code_challenge"), redirect_uri=redirect)
            back["code"] = code
        if "state" in q:
            back["state"] = q["state"]
        if self.send_iss:
            back["iss"] = "https://elsewhere.example" if self.wrong_iss else self.issuer
        sep = "&" if "?" in redirect else "?"
        return plain(302, extra=[("Location", redirect + sep + urllib.parse.urlencode(back))])

    def _known(self, client_id: str) -> Client | None:
        """A registered client, or (``cimd``) a Client ID Metadata Document URL: a public
        client (this server trusts the document without fetching it)."""
        if self.cimd and client_id.startswith("https://") and client_id not in self.clients:
            self.clients[client_id] = Client(client_id, None, "none")
        return self.clients.get(client_id)

    def _client(self, req: Request, form: dict[str, str]) -> Client | None:
        """The client the token request authenticates as (None: it failed)."""
        basic = req.headers.get("authorization", "")
        if basic.lower().startswith("basic "):
            decoded = base64.b64decode(basic[6:]).decode()
            cid, _, secret = decoded.partition(":")
            cid, secret = urllib.parse.unquote(cid), urllib.parse.unquote(secret)
            self._seen.add(secret)
            client = self.clients.get(cid)
            ok = client is not None and client.method == "client_secret_basic" and client.secret == secret
            return client if ok else None
        client = self._known(form.get("client_id", ""))
        if client is None:
            return None
        if client.method == "client_secret_post":
            self._seen.add(form.get("client_secret", ""))
            return client if form.get("client_secret") == client.secret else None
        return client if client.method == "none" else None

    def _token(self, req: Request) -> bytes:
        form = req.form()
        for key in ("code", "code_verifier", "refresh_token", "client_secret"):
            if form.get(key):
                self._seen.add(form[key])
        client = self._client(req, form)
        if client is None:
            return jsonbody(401, {"error": "invalid_client"})
        grant_type = form.get("grant_type")
        if grant_type == "authorization_code":
            grant = self.codes.pop(form.get("code", ""), None)
            if grant is None or grant.client_id != client.client_id or grant.redirect_uri != form.get("redirect_uri"):
                return jsonbody(400, {"error": "invalid_grant"})
            if self.pkce and s256(form.get("code_verifier", "")) != grant.challenge:
                return jsonbody(400, {"error": "invalid_grant", "error_description": "PKCE verification failed"})
            return self._issue(grant, refresh=self.refresh)
        if grant_type == "refresh_token":
            token = form.get("refresh_token", "")
            grant = self.refresh_tokens.get(token)
            if grant is None or grant.client_id != client.client_id:
                return jsonbody(400, {"error": "invalid_grant"})
            if self.rotate:
                del self.refresh_tokens[token]
            return self._issue(grant, refresh=self.rotate, keep=None if self.rotate else token)
        if grant_type == "client_credentials":
            grant = Grant(client.client_id, form.get("scope", ""), form.get("resource"))
            return self._issue(grant, refresh=False)
        return jsonbody(400, {"error": "unsupported_grant_type"})

    def _issue(self, grant: Grant, refresh: bool, keep: str | None = None) -> bytes:
        access = self.new_secret("at-")
        self.access[access] = Grant(grant.client_id, grant.scope, grant.resource,
                                    expires=time.monotonic() + self.access_ttl)
        body: dict[str, Any] = {"access_token": access, "token_type": "Bearer",
                                "expires_in": int(self.access_ttl), "scope": grant.scope}
        if refresh:
            token = self.new_secret("rt-")
            self.refresh_tokens[token] = Grant(grant.client_id, grant.scope, grant.resource)
            body["refresh_token"] = token
        elif keep is not None:
            body["refresh_token"] = keep
        return jsonbody(200, body, [("Cache-Control", "no-store")])

    def _register(self, req: Request) -> bytes:
        meta = json.loads(req.body or b"{}")
        method = meta.get("token_endpoint_auth_method", "client_secret_basic")
        wants_code = "client_credentials" not in meta.get("grant_types", [])
        if method not in self.auth_methods or (wants_code and not meta.get("redirect_uris")):
            return jsonbody(400, {"error": "invalid_client_metadata"})
        client = Client(f"dcr-{next(self._ids)}", None if method == "none" else self.new_secret("cs-"), method,
                        list(meta.get("redirect_uris") or []), meta)
        self.clients[client.client_id] = client
        out = {**meta, "client_id": client.client_id, "token_endpoint_auth_method": method,
               "client_id_issued_at": int(time.time())}
        if client.secret is not None:
            out["client_secret"] = client.secret
            out["client_secret_expires_at"] = 0
        return jsonbody(201, out)

    # -- the protected MCP server -----------------------------------------------------------

    def _challenge(self, error: str | None = None, scope: str | None = None) -> str:
        parts = []
        if error:
            parts.append(f'error="{error}"')
        if self.prm == "header":
            parts.append(f'resource_metadata="{self.prm_url}"')
        if scope:
            parts.append(f'scope="{scope}"')
        return "Bearer " + ", ".join(parts) if parts else "Bearer"

    def _mcp(self, req: Request) -> bytes:
        header = req.headers.get("authorization", "")
        token = header[7:] if header.lower().startswith("bearer ") else ""
        if token:
            self._seen.add(token)
        grant = self.access.get(token)
        if grant is not None and (grant.expires <= time.monotonic()
                                  or grant.resource not in (None, self.url)):
            grant = None
        if grant is None:
            body = f"invalid token {token}".encode() if self.echo == "401" and token else b""
            return plain(401, body, extra=[("WWW-Authenticate", self._challenge("invalid_token" if token else None,
                                                                                self.challenge_scope))])
        if req.method == "GET":
            return plain(405, extra=[("Allow", "POST, DELETE")])
        if req.method == "DELETE":
            return plain(200, ctype="application/json")
        msg = json.loads(req.body)
        if "id" not in msg or "method" not in msg:
            return plain(202, ctype="application/json")
        method, params = msg["method"], msg.get("params") or {}
        if method == "tools/call" and params.get("name") == "admin" and "admin" not in grant.scope.split():
            wanted = " ".join(dict.fromkeys([*grant.scope.split(), "admin"]))
            return plain(403, extra=[("WWW-Authenticate", self._challenge("insufficient_scope", wanted))])
        if method == "tools/call" and self.echo == "error":
            return jsonbody(200, {"jsonrpc": "2.0", "id": msg["id"],
                                  "error": {"code": -32000, "message": f"bad token {token}", "data": header}})
        if method not in ("initialize", "ping", "tools/list", "tools/call"):
            # A handshake-era server: server/discover (the host's era probe) is not one of its methods.
            return jsonbody(200, {"jsonrpc": "2.0", "id": msg["id"],
                                  "error": {"code": -32601, "message": f"Method not found: {method}"}})
        return jsonbody(200, {"jsonrpc": "2.0", "id": msg["id"], "result": self._answer(method, params, token, grant)})

    def _answer(self, method: str, params: dict[str, Any], token: str, grant: Grant) -> dict[str, Any]:
        if method == "initialize":
            asked = params.get("protocolVersion")
            return {"protocolVersion": asked if asked in VERSIONS else VERSIONS[0],
                    "capabilities": {"tools": {}}, "serverInfo": {"name": "protected", "version": "1.0"}}
        if method == "tools/list":
            return {"tools": TOOLS}
        if method == "tools/call":
            name = params.get("name")
            if name == "whoami":
                text = f"{grant.client_id} {grant.scope}" + (f" {token}" if self.echo == "result" else "")
            else:
                text = json.dumps(params.get("arguments") or {})
            return {"content": [{"type": "text", "text": text}], "isError": False}
        return {}
