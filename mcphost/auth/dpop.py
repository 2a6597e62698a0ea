"""DPoP (RFC 9449, the MCP extension of SEP-1932): tokens bound to a key only this client holds.

Layer 1: the clock and randomness are arguments. A :class:`DPoPKey` is an ES256 (P-256) key
made for one authorizer; each request (the token request, then every request to the MCP
server) carries a fresh proof: a JWT of type ``dpop+jwt`` with the public key in its header,
the request's method (``htm``) and URL without query or fragment (``htu``), a unique ``jti``,
``iat``, the server's ``nonce`` once one was given, and ``ath`` (the token's SHA-256) beside
an access token. The token is sent as ``Authorization: DPoP <token>``.
"""

from __future__ import annotations

import base64
import hashlib
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from .._json import dumps
from .challenge import Challenge, parse_challenges
from .flow import Request
from .jwt import N_P256, es256_sign, p256_public

__all__ = ["ALGORITHM", "NONCE_ERROR", "DPoPKey", "DPoPSession", "dpop_challenge", "good_nonce", "offers_dpop"]

ALGORITHM: Final = "ES256"
#: RFC 9449 §8, §9: the error of a server that wants its nonce in the proof.
NONCE_ERROR: Final = "use_dpop_nonce"
#: The most of a server's nonce kept (RFC 9449 §8.1: an opaque string, short in practice).
MAX_NONCE: Final = 1024


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def offers_dpop(algorithms: tuple[str, ...] | None) -> bool:
    """Whether an authorization server whose ``dpop_signing_alg_values_supported`` is
    ``algorithms`` takes our proofs (RFC 9449 §5.1)."""
    return algorithms is not None and ALGORITHM in algorithms


def dpop_challenge(values: list[str]) -> Challenge | None:
    """The ``DPoP`` challenge among the ``WWW-Authenticate`` headers ``values``, if any."""
    for value in values:
        for challenge in parse_challenges(value):
            if challenge.scheme == "dpop":
                return challenge
    return None


def good_nonce(value: str | None) -> str | None:
    """A server's ``DPoP-Nonce`` value, if it is one worth sending back (RFC 9449 §8.1:
    ``1*NQCHAR``, bounded here)."""
    if value is None or not value or len(value) > MAX_NONCE:
        return None
    if any(not (0x21 <= ord(c) <= 0x7E) or c in '"\\' for c in value):
        return None
    return value


@dataclass(frozen=True, repr=False)
class DPoPKey:
    """A P-256 key pair for DPoP proofs."""

    d: int
    jwk: Mapping[str, str]

    @classmethod
    def make(cls, random: Callable[[int], bytes]) -> DPoPKey:
        while True:
            d = int.from_bytes(random(32), "big")
            if 0 < d < N_P256:
                break
        x, y = p256_public(d)
        # RFC 7638: the members of an EC key's thumbprint, in lexicographic order.
        jwk = {"crv": "P-256", "kty": "EC", "x": _b64url(x.to_bytes(32, "big")), "y": _b64url(y.to_bytes(32, "big"))}
        return cls(d, jwk)

    def __repr__(self) -> str:
        return f"DPoPKey(jkt={self.thumbprint!r})"

    @property
    def thumbprint(self) -> str:
        """The RFC 7638 SHA-256 thumbprint of the public key (what a bound token's
        ``cnf.jkt`` names)."""
        jwk = self.jwk
        canonical = f'{{"crv":"{jwk["crv"]}","kty":"{jwk["kty"]}","x":"{jwk["x"]}","y":"{jwk["y"]}"}}'
        return _b64url(hashlib.sha256(canonical.encode("ascii")).digest())

    def proof(self, method: str, url: str, now: float, random: Callable[[int], bytes],
              access_token: str | None = None, nonce: str | None = None) -> str:
        """A fresh proof for one request (RFC 9449 §4.2)."""
        parts = urllib.parse.urlsplit(url)
        header = {"typ": "dpop+jwt", "alg": ALGORITHM, "jwk": dict(self.jwk)}
        claims: dict[str, Any] = {"jti": _b64url(random(16)), "htm": method,
                                  "htu": urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")),
                                  "iat": int(now)}
        if access_token is not None:
            claims["ath"] = _b64url(hashlib.sha256(access_token.encode("ascii")).digest())
        if nonce is not None:
            claims["nonce"] = nonce
        signing_input = f"{_b64url(dumps(header))}.{_b64url(dumps(claims))}".encode("ascii")
        return f"{signing_input.decode('ascii')}.{_b64url(es256_sign(self.d, signing_input, random))}"


class DPoPSession:
    """One authorizer's DPoP key (made when first needed) and the nonces its authorization
    server and MCP server gave."""

    def __init__(self, random: Callable[[int], bytes]) -> None:
        self.random = random
        self.key: DPoPKey | None = None
        self.as_nonce: str | None = None
        self.rs_nonce: str | None = None

    def __repr__(self) -> str:
        return f"DPoPSession({self.key!r})"

    def sign(self, request: Request, now: float) -> Request:
        """``request`` (to the token endpoint) with a fresh proof."""
        if self.key is None:
            self.key = DPoPKey.make(self.random)
        proof = self.key.proof(request.method, request.url, now, self.random, nonce=self.as_nonce)
        return Request(request.method, request.url, (*request.headers, ("DPoP", proof)), request.body)

    def retry_with_nonce(self, status: int, headers: list[tuple[str, str]], doc: Any) -> bool:
        """Whether the token endpoint's answer asks for the nonce it gives (RFC 9449 §8); any
        nonce it gives is kept for the next proofs."""
        nonce = good_nonce(next((v for k, v in headers if k.lower() == "dpop-nonce"), None))
        if nonce is not None:
            self.as_nonce = nonce
        return nonce is not None and status == 400 and isinstance(doc, Mapping) and doc.get("error") == NONCE_ERROR

    def resource_proof(self, method: str, url: str, now: float, access_token: str) -> str | None:
        """The proof of a request to the MCP server with a token bound to this key."""
        if self.key is None:
            return None
        return self.key.proof(method, url, now, self.random, access_token, self.rs_nonce)

    def resource_nonce(self, value: str) -> bool:
        """The MCP server gave ``DPoP-Nonce: value``: whether it is new (RFC 9449 §9)."""
        nonce = good_nonce(value)
        if nonce is None or nonce == self.rs_nonce:
            return False
        self.rs_nonce = nonce
        return True
