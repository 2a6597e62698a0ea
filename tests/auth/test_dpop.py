"""DPoP (RFC 9449): proofs checked by an independent verifier (PyJWT), and a host whose server and
authorization server both bind tokens to the proof key and ask for nonces."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import urllib.parse
from typing import Any

import jwt as pyjwt
import pytest
from remote_server import plain
from test_oauth_host import OAuthServer, User, host
from test_store import load

from mcphost.auth.dpop import DPoPKey, DPoPSession, dpop_challenge, good_nonce, offers_dpop
from mcphost.auth.errors import OAuthError
from mcphost.auth.flow import Request, read_tokens
from mcphost.errors import ConfigurationError


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def verify(proof: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The header and claims of a proof whose signature verifies with the key in its header."""
    header = pyjwt.get_unverified_header(proof)
    key = pyjwt.PyJWK(header["jwk"], "ES256")
    return header, pyjwt.decode(proof, key.key, algorithms=["ES256"])


def test_a_proof_is_signed_by_the_key_it_names_and_binds_the_request() -> None:
    key = DPoPKey.make(os.urandom)
    header, claims = verify(key.proof("POST", "https://as.example/token?x=1#f", 1_700_000_000.5, os.urandom))
    assert header["typ"] == "dpop+jwt" and header["alg"] == "ES256" and "d" not in header["jwk"]
    assert claims["htm"] == "POST" and claims["htu"] == "https://as.example/token" and claims["iat"] == 1_700_000_000
    assert "ath" not in claims and "nonce" not in claims
    _, bound = verify(key.proof("GET", "https://mcp.example/mcp", 0, os.urandom, "the-token", "n-1"))
    assert bound["ath"] == b64(hashlib.sha256(b"the-token").digest()) and bound["nonce"] == "n-1"
    assert bound["jti"] != claims["jti"]  # fresh each time
    # RFC 7638: the thumbprint over the required members, sorted, without spaces.
    canonical = json.dumps({k: header["jwk"][k] for k in ("crv", "kty", "x", "y")}, separators=(",", ":"))
    assert key.thumbprint == b64(hashlib.sha256(canonical.encode()).digest())
    assert str(key.d) not in repr(key)


def test_what_the_servers_say_is_read_with_bounds() -> None:
    assert offers_dpop(("RS256", "ES256")) and not offers_dpop(("RS256",)) and not offers_dpop(None)
    challenge = dpop_challenge(['Bearer realm="x"', 'DPoP error="use_dpop_nonce", algs="ES256"'])
    assert challenge is not None and challenge.error == "use_dpop_nonce"
    assert dpop_challenge(['Bearer error="invalid_token"']) is None
    assert good_nonce("eyJ7S_zG.eyJH0-Z.HX4w-7v") == "eyJ7S_zG.eyJH0-Z.HX4w-7v"
    for bad in (None, "", "a b", 'a"b', "x" * 2000, "caf\u00e9"):
        assert good_nonce(bad) is None


def test_a_dpop_token_is_taken_only_when_a_proof_was_sent() -> None:
    answer = {"access_token": "at", "token_type": "DPoP", "expires_in": 60}
    assert read_tokens(200, answer, 0.0, dpop=True).token_type == "DPoP"
    assert read_tokens(200, {"access_token": "at", "token_type": "bearer"}, 0.0, dpop=True).token_type == "Bearer"
    with pytest.raises(OAuthError, match="token_type is not Bearer"):
        read_tokens(200, answer, 0.0)


def test_the_dpop_setting_is_read() -> None:
    settings = load('{"type": "oauth", "dpop": false}')
    assert settings is not None and settings.dpop is False
    with pytest.raises(ConfigurationError, match="auth.dpop: does not apply to a \"bearer\" auth"):
        load('{"type": "bearer", "token": "t", "dpop": true}')


class DPoPServer(OAuthServer):
    """``OAuthServer`` that offers DPoP, binds its tokens to the proof key, and asks for a
    nonce at its token endpoint and at ``/mcp`` (RFC 9449 §8, §9)."""

    AS_NONCE = "as-nonce-1"
    RS_NONCE = "rs-nonce-1"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.bound: dict[str, str] = {}  # access token -> key thumbprint
        self.jtis: list[str] = []
        self.nonce_asked = {"as": 0, "rs": 0}

    def _json(self, writer: asyncio.StreamWriter, status: int, doc: dict[str, Any],
              extra: list[tuple[str, str]] | None = None) -> bool:
        writer.write(plain(status, json.dumps(doc).encode(), "application/json", extra=extra or []))
        return True

    def _check(self, proof: str, method: str, url: str, token: str | None, nonce: str) -> str | None:
        """The proof key's thumbprint; ``None`` when the nonce is missing; fails on a bad proof."""
        header, claims = verify(proof)
        assert claims["htm"] == method and claims["htu"] == url and claims["jti"] not in self.jtis
        self.jtis.append(claims["jti"])
        if token is not None:
            assert claims["ath"] == b64(hashlib.sha256(token.encode()).digest())
        if claims.get("nonce") != nonce:
            return None
        canonical = json.dumps({k: header["jwk"][k] for k in ("crv", "kty", "x", "y")}, separators=(",", ":"))
        return b64(hashlib.sha256(canonical.encode()).digest())

    async def _route(self, req: Any, writer: asyncio.StreamWriter) -> bool:
        if req.path == "/.well-known/oauth-authorization-server":
            return self._json(writer, 200, {
                "issuer": self.issuer, "authorization_endpoint": f"{self.origin}/authorize",
                "token_endpoint": f"{self.origin}/token", "registration_endpoint": f"{self.origin}/register",
                "code_challenge_methods_supported": ["S256"], "dpop_signing_alg_values_supported": ["ES256"],
                "token_endpoint_auth_methods_supported": ["client_secret_post"]})
        if req.path == "/token":
            jkt = self._check(req.headers["dpop"], "POST", f"{self.origin}/token", None, self.AS_NONCE)
            if jkt is None:
                self.nonce_asked["as"] += 1
                return self._json(writer, 400, {"error": "use_dpop_nonce"}, [("DPoP-Nonce", self.AS_NONCE)])
            form = dict(urllib.parse.parse_qsl(req.body.decode()))
            self.grants.append(form["grant_type"])
            access = self.new("access")
            self.bound[access] = jkt
            return self._json(writer, 200, {"access_token": access, "token_type": "DPoP", "expires_in": 3600})
        if req.path == "/mcp" and req.method == "POST":
            scheme, _, token = req.headers.get("authorization", "").partition(" ")
            if scheme == "Bearer" or (scheme == "DPoP" and token not in self.bound):
                raise AssertionError(f"a request without a bound DPoP token: {scheme}")
            if scheme == "DPoP":
                jkt = self._check(req.headers["dpop"], "POST", self.url, token, self.RS_NONCE)
                if jkt is None:
                    self.nonce_asked["rs"] += 1
                    writer.write(plain(401, b"", extra=[("WWW-Authenticate", 'DPoP error="use_dpop_nonce"'),
                                                        ("DPoP-Nonce", self.RS_NONCE)]))
                    return True
                assert jkt == self.bound[token]
                self.access.add(token)
                req.headers["authorization"] = f"Bearer {token}"  # what OAuthServer checks
        return await super()._route(req, writer)


async def test_a_host_uses_dpop_bound_tokens_with_the_servers_nonces() -> None:
    async with DPoPServer() as server:
        user = User(server)
        async with host(server, user) as h:
            await h.call_tool("api.echo", {})
            await h.call_tool("api.echo", {})
        assert user.asked == 1 and server.grants == ["authorization_code"]
        assert server.nonce_asked == {"as": 1, "rs": 1}  # each asked once, then named in every proof
        assert len(server.jtis) >= 6


def test_a_session_keeps_the_nonces_and_signs_token_requests() -> None:
    session = DPoPSession(os.urandom)
    assert session.resource_proof("POST", "https://mcp.example/mcp", 0, "at") is None  # no key yet
    request = Request("POST", "https://as.example/token", (("Accept", "application/json"),), b"x=1")
    signed = session.sign(request, 0)
    assert signed.body == b"x=1" and signed.headers[0] == ("Accept", "application/json")
    _, claims = verify(dict(signed.headers)["DPoP"])
    assert claims["htu"] == "https://as.example/token" and "nonce" not in claims
    assert session.retry_with_nonce(400, [("dpop-nonce", "n1")], {"error": "use_dpop_nonce"})
    assert not session.retry_with_nonce(400, [], {"error": "use_dpop_nonce"})  # no nonce given: no retry
    assert not session.retry_with_nonce(200, [("DPoP-Nonce", "n2")], {"access_token": "a"})
    assert verify(dict(session.sign(request, 0).headers)["DPoP"])[1]["nonce"] == "n2"
    assert session.resource_nonce("r1") and not session.resource_nonce("r1") and not session.resource_nonce("a b")
    proof = session.resource_proof("DELETE", "https://mcp.example/mcp", 0, "at")
    assert proof is not None and verify(proof)[1]["nonce"] == "r1" and verify(proof)[1]["htm"] == "DELETE"


async def test_a_restarted_server_keeps_its_dpop_key_and_so_its_login() -> None:
    async with DPoPServer() as server:
        user = User(server)
        async with host(server, user) as h:
            await h.call_tool("api.echo", {})
            await h.restart_server("api")
            await h.call_tool("api.echo", {})
        assert user.asked == 1 and server.grants == ["authorization_code"]
        assert len(set(server.bound.values())) == 1
