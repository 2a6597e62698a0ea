"""The OAuth resource-server check in front of the HTTP gateway (``--oauth-issuer``).

Layer 5. The gateway accepts an access token when the configured authorization server says it
is active and for this server, and tells MCP clients where to get one:

- **Protected Resource Metadata** (RFC 9728) is served, without authentication, at
  ``/.well-known/oauth-protected-resource`` and at the same path followed by the endpoint's
  path (``/.well-known/oauth-protected-resource/mcp``, RFC 9728 §3.1): the resource, its
  authorization server, the scopes, ``bearer_methods_supported: ["header"]``.
- A request without a valid token is 401 with ``WWW-Authenticate: Bearer
  resource_metadata="<that document's URL>"`` (spec 2025-11-25, Authorization: "MCP servers
  MUST use the HTTP header WWW-Authenticate when returning a 401 Unauthorized to indicate
  the location of the resource server metadata URL"), and ``error="invalid_token"`` when a
  token was given; a token without a required scope is 403 ``insufficient_scope``.
- A token is checked by **introspection** (RFC 7662) at the endpoint the issuer's
  Authorization Server Metadata names (RFC 8414, or OpenID Connect Discovery; found once and
  kept; its ``issuer`` must be the one configured). Accepted only when ``active`` is true, ``exp`` (when given) is in the
  future, ``iss`` (when given) is the issuer, and ``aud`` names this server's resource URL
  (RFC 8707; spec: "MCP servers MUST validate that access tokens were issued specifically
  for them as the intended audience").

No new dependency: the issuer is asked with ``urllib`` in a worker thread, its answers read
within a bound. What it costs is bounded: each verdict is cached (keyed by the token's
SHA-256, never the token) until the token expires or ``cache_ttl`` passes, for at most
``cache_size`` tokens; a rejected token is remembered for ``reject_ttl`` so a client
repeating a bad one does not reach the issuer each time; one token is introspected once at a
time, and at most ``max_concurrent`` introspections run at once. An issuer that cannot be
reached is 503 (not 401: the client's token may be fine).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import ipaddress
import json
import logging
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import OrderedDict
from typing import Any, Final

from ..auth.discovery import as_metadata_urls, canonical_resource
from ..auth.errors import OAuthError
from ..errors import UsageError

__all__ = ["OAuthOptions", "ResourceServer"]

logger = logging.getLogger("mcphost.gateway")

_MAX_ANSWER: Final = 256 * 1024  # bytes of an issuer's answer read at most
_MAX_TOKEN: Final = 8 * 1024  # a longer "token" is refused without asking the issuer
WELL_KNOWN: Final = "/.well-known/oauth-protected-resource"

#: A refusal: the HTTP status, the message, the headers to send.
Refusal = tuple[int, str, dict[str, str]]


def _secure(url: str, what: str) -> str:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise UsageError(f"{what} must be an http(s) URL, not {url!r}")
    if parts.scheme == "http":
        try:
            loopback = ipaddress.ip_address(parts.hostname).is_loopback
        except ValueError:
            loopback = parts.hostname == "localhost"
        if not loopback:  # OAuth 2.1: every authorization server endpoint is https
            raise UsageError(f"{what} must use https (http only on a loopback address), not {url!r}")
    if parts.query or parts.fragment:
        raise UsageError(f"{what} must have no query or fragment, not {url!r}")
    return url


class OAuthOptions:
    """The resource-server check's settings.

    ``issuer``: the authorization server's issuer URL. ``resource``: this gateway's public URL
    of its endpoint (``https://mcp.example.com/mcp``), which tokens must name in ``aud``.
    ``client_id``/``client_secret``: the gateway's credentials at the introspection endpoint
    (HTTP Basic), when it asks for them. ``scopes``: scopes every token must carry.
    """

    def __init__(self, issuer: str, resource: str, *, client_id: str | None = None,
                 client_secret: str | None = None, scopes: list[str] | None = None, cache_size: int = 4096,
                 cache_ttl: float = 300.0, reject_ttl: float = 10.0, max_concurrent: int = 16,
                 timeout: float = 10.0) -> None:
        self.issuer = _secure(issuer, "the OAuth issuer").rstrip("/")
        self.resource = _secure(resource, "the OAuth resource")
        for name, value in (("cache_size", cache_size), ("max_concurrent", max_concurrent)):
            if type(value) is not int or value < 1:
                raise UsageError(f"{name} must be a whole number of 1 or more, not {value!r}")
        for name, number in (("cache_ttl", cache_ttl), ("reject_ttl", reject_ttl), ("timeout", timeout)):
            if type(number) not in (int, float) or not number >= 0:
                raise UsageError(f"{name} must be a number of seconds, not {number!r}")
        if client_secret is not None and client_id is None:
            raise UsageError("an OAuth client_secret needs its client_id")
        self.client_id = client_id
        self.client_secret = client_secret
        self.scopes = list(scopes or [])
        self.cache_size = cache_size
        self.cache_ttl = float(cache_ttl)
        self.reject_ttl = float(reject_ttl)
        self.max_concurrent = max_concurrent
        self.timeout = float(timeout)


class _Unreachable(Exception):
    """The issuer could not be asked, or its answer could not be read."""


class ResourceServer:
    """Checks bearer tokens for one gateway endpoint (see the module docstring)."""

    def __init__(self, options: OAuthOptions, path: str) -> None:
        self.options = options
        self.path = path
        base = urllib.parse.urlsplit(options.resource)
        suffix = base.path.rstrip("/")
        #: Where the Protected Resource Metadata is served (the bare form and the one with
        #: the resource's path), and the URL announced in WWW-Authenticate.
        self.metadata_paths = {WELL_KNOWN, WELL_KNOWN + suffix} if suffix else {WELL_KNOWN}
        self.metadata_url = f"{base.scheme}://{base.netloc}{WELL_KNOWN}{suffix}"
        self.introspections = 0  # asked of the issuer, for the tests and the curious
        self._endpoint: str | None = None
        self._cache: OrderedDict[bytes, tuple[float, Refusal | None]] = OrderedDict()
        self._asking: dict[bytes, asyncio.Task[Refusal | None]] = {}
        self._slots = asyncio.Semaphore(options.max_concurrent)

    def metadata(self) -> bytes:
        """The Protected Resource Metadata document (RFC 9728 §2)."""
        doc: dict[str, Any] = {"resource": self.options.resource, "authorization_servers": [self.options.issuer],
                               "bearer_methods_supported": ["header"]}
        if self.options.scopes:
            doc["scopes_supported"] = self.options.scopes
        return json.dumps(doc).encode()

    def _challenge(self, error: str | None = None, description: str | None = None) -> dict[str, str]:
        value = f'Bearer resource_metadata="{self.metadata_url}"'
        if error is not None:
            value += f', error="{error}"'
        if description is not None:
            value += f', error_description="{description}"'
        if self.options.scopes:
            value += f', scope="{" ".join(self.options.scopes)}"'
        return {"WWW-Authenticate": value}

    async def refuse(self, authorization: str | None) -> Refusal | None:
        """``None`` when the ``Authorization`` header carries an accepted token, else the
        answer to give instead."""
        if not authorization:
            return 401, "an OAuth access token is required", self._challenge()
        scheme, _, token = authorization.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token or len(token) > _MAX_TOKEN:
            return 401, "the Authorization header must be 'Bearer <token>'", self._challenge("invalid_request")
        key = hashlib.sha256(token.encode("utf-8", "replace")).digest()
        now = time.monotonic()
        cached = self._cache.get(key)
        if cached is not None:
            if cached[0] > now:
                self._cache.move_to_end(key)
                return cached[1]
            del self._cache[key]
        asking = self._asking.get(key)
        if asking is None:
            # In a task of its own: a client that leaves does not cancel what others await.
            asking = self._asking[key] = asyncio.get_running_loop().create_task(self._decide(token, key))
        return await asyncio.shield(asking)

    async def _decide(self, token: str, key: bytes) -> Refusal | None:
        try:
            verdict, until = await self._verdict(token)
        except _Unreachable as exc:
            logger.warning("OAuth: the issuer could not be asked: %s", exc)
            verdict, until = (503, "the authorization server cannot be reached; try again later", {}), 0.0
        except Exception:
            logger.exception("OAuth: the token check failed")
            verdict, until = (503, "the access token could not be checked", {}), 0.0
        finally:
            del self._asking[key]
        if until > time.monotonic():
            self._cache[key] = (until, verdict)
            while len(self._cache) > self.options.cache_size:
                self._cache.popitem(last=False)
        return verdict

    async def _verdict(self, token: str) -> tuple[Refusal | None, float]:
        """The verdict on ``token`` and until when it may be kept (monotonic time)."""
        options = self.options
        async with self._slots:
            claims = await self._introspect(token)
        now_wall, now = time.time(), time.monotonic()
        rejected = now + options.reject_ttl

        def invalid(why: str) -> tuple[Refusal | None, float]:
            return (401, f"the access token is not accepted: {why}", self._challenge("invalid_token", why)), rejected

        if claims.get("active") is not True:
            return invalid("it is not active")
        exp = claims.get("exp")
        if exp is not None and (type(exp) not in (int, float) or exp <= now_wall):
            return invalid("it has expired")
        iss = claims.get("iss")
        if iss is not None and str(iss).rstrip("/") != options.issuer:
            return invalid("it was issued by another authorization server")
        audience = claims.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if not any(_same_resource(a, options.resource) for a in audiences if isinstance(a, str)):
            return invalid("it was not issued for this server (its audience is not this resource)")
        granted = set(str(claims.get("scope", "")).split())
        missing = [s for s in options.scopes if s not in granted]
        if missing:
            challenge = self._challenge("insufficient_scope", f"the token lacks the scope {' '.join(missing)}")
            return (403, f"the access token lacks the scope {' '.join(missing)}", challenge), rejected
        until = now + options.cache_ttl
        if isinstance(exp, (int, float)):
            until = min(until, now + (exp - now_wall))
        return None, until

    async def _introspect(self, token: str) -> dict[str, Any]:
        endpoint = self._endpoint
        if endpoint is None:
            endpoint = self._endpoint = await self._discover()
        options = self.options
        headers = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}
        if options.client_id is not None:
            pair = f"{urllib.parse.quote(options.client_id)}:{urllib.parse.quote(options.client_secret or '')}"
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        body = urllib.parse.urlencode({"token": token, "token_type_hint": "access_token"}).encode()
        self.introspections += 1
        answer = await asyncio.to_thread(_fetch, endpoint, body, headers, options.timeout)
        if not isinstance(answer, dict):
            raise _Unreachable("the introspection answer is not a JSON object")
        return answer

    async def _discover(self) -> str:
        """The introspection endpoint, from the issuer's metadata: RFC 8414, then OpenID
        Connect Discovery, at the places :func:`mcphost.auth.discovery.as_metadata_urls` says."""
        problems = []
        for url in as_metadata_urls(self.options.issuer):
            try:
                meta = await asyncio.to_thread(_fetch, url, None, {"Accept": "application/json"}, self.options.timeout)
            except _Unreachable as exc:
                problems.append(str(exc))
                continue
            if not isinstance(meta, dict):
                raise _Unreachable(f"{url}: the metadata is not a JSON object")
            if str(meta.get("issuer", "")).rstrip("/") != self.options.issuer:
                raise _Unreachable(f"{url}: the metadata names issuer {meta.get('issuer')!r}, not the one configured")
            endpoint = meta.get("introspection_endpoint")
            if not isinstance(endpoint, str):
                raise _Unreachable(f"{url}: the issuer offers no introspection_endpoint")
            try:
                return _secure(endpoint, "the introspection endpoint")
            except UsageError as exc:
                raise _Unreachable(exc.message) from None
        raise _Unreachable("; ".join(problems))


def _same_resource(audience: str, resource: str) -> bool:
    try:
        return canonical_resource(audience) == canonical_resource(resource)
    except OAuthError:  # not an http(s) URL: not this server
        return False


def _fetch(url: str, body: bytes | None, headers: dict[str, str], timeout: float) -> Any:
    """One request to the issuer (in a worker thread): its JSON answer, read within a bound."""
    request = urllib.request.Request(url, data=body, headers=headers, method="POST" if body is not None else "GET")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            data = response.read(_MAX_ANSWER + 1)
    except urllib.error.HTTPError as exc:
        raise _Unreachable(f"{url}: HTTP {exc.code}") from None
    except (OSError, ValueError) as exc:
        raise _Unreachable(f"{url}: {exc}") from None
    if len(data) > _MAX_ANSWER:
        raise _Unreachable(f"{url}: the answer is over {_MAX_ANSWER} bytes")
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        raise _Unreachable(f"{url}: the answer is not JSON") from None
