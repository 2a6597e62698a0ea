"""``private_key_jwt`` client authentication (RFC 7523 §2.2): a signed assertion, stdlib only.

Layer 1: the clock and randomness are arguments. The key is the configuration's PEM
(PKCS#8 ``PRIVATE KEY``, or ``EC PRIVATE KEY`` / ``RSA PRIVATE KEY``); ``ES256`` is ECDSA on
P-256 with SHA-256 (the JWS signature is ``r || s``, RFC 7518 §3.4), ``RS256`` RSASSA-PKCS1-v1_5
with SHA-256. The arithmetic is Python's integers: fast enough for one assertion per token
request, and never given anything but our own key.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Callable
from typing import Final

from .._json import dumps
from .errors import OAuthError

__all__ = ["ASSERTION_TYPE", "N_P256", "client_assertion", "es256_sign", "p256_public"]

ASSERTION_TYPE: Final = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

# P-256 (SEC 2 secp256r1 / NIST prime256v1).
_P: Final = 0xFFFFFFFF00000001000000000000000000000000FFFFFFFFFFFFFFFFFFFFFFFF
_A: Final = _P - 3
_N: Final = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
#: The order of the P-256 group (a private scalar is below it).
N_P256: Final = _N
_G: Final = (0x6B17D1F2E12C4247F8BCE6E563A440F277037D812DEB33A0F4A13945D898C296,
             0x4FE342E2FE1A7F9B8EE7EB4A7C0F9E162BCE33576B315ECECBB6406837BF51F5)
_EC_OID: Final = bytes.fromhex("2a8648ce3d0201")  # id-ecPublicKey
_RSA_OID: Final = bytes.fromhex("2a864886f70d010101")  # rsaEncryption
_SHA256_PREFIX: Final = bytes.fromhex("3031300d060960864801650304020105000420")  # DigestInfo, RFC 8017 §9.2
_PEM: Final = re.compile(r"-----BEGIN ([A-Z ]+)-----(.*?)-----END \1-----", re.DOTALL)


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _der(data: bytes, i: int = 0) -> tuple[int, bytes, int]:
    """One DER element at ``i``: its tag, its content, the index after it."""
    if i + 2 > len(data):
        raise ValueError("truncated")
    tag, length = data[i], data[i + 1]
    i += 2
    if length & 0x80:
        count = length & 0x7F
        if count == 0 or count > 4 or i + count > len(data):
            raise ValueError("bad length")
        length = int.from_bytes(data[i:i + count], "big")
        i += count
    if i + length > len(data):
        raise ValueError("truncated")
    return tag, data[i:i + length], i + length


def _children(data: bytes) -> list[tuple[int, bytes]]:
    out, i = [], 0
    while i < len(data):
        tag, content, i = _der(data, i)
        out.append((tag, content))
    return out


def _key(pem: str) -> tuple[str, tuple[int, ...]]:
    """``("EC", (d,))`` or ``("RSA", (n, d))`` from a PEM private key."""
    match = _PEM.search(pem)
    if match is None:
        raise OAuthError("auth.privateKey: not a PEM private key")
    label = match.group(1)
    try:
        der = base64.b64decode("".join(match.group(2).split()), validate=True)
        _, body, _ = _der(der)
        items = _children(body)
        if label == "PRIVATE KEY":  # PKCS#8: version, algorithm, the key
            algorithm = _children(items[1][1])[0][1]
            inner = _children(_der(items[2][1])[1])
            if algorithm == _EC_OID:
                return "EC", (int.from_bytes(inner[1][1], "big"),)
            if algorithm == _RSA_OID:
                return "RSA", (int.from_bytes(inner[1][1], "big"), int.from_bytes(inner[3][1], "big"))
            raise OAuthError("auth.privateKey: an EC (P-256) or RSA key is needed")
        if label == "EC PRIVATE KEY":
            return "EC", (int.from_bytes(items[1][1], "big"),)
        if label == "RSA PRIVATE KEY":
            return "RSA", (int.from_bytes(items[1][1], "big"), int.from_bytes(items[3][1], "big"))
    except (ValueError, IndexError):
        raise OAuthError("auth.privateKey: the key cannot be read") from None
    raise OAuthError(f"auth.privateKey: a {label} is not a private key")


def _add(p: tuple[int, int] | None, q: tuple[int, int] | None) -> tuple[int, int] | None:
    if p is None:
        return q
    if q is None:
        return p
    if p[0] == q[0] and (p[1] + q[1]) % _P == 0:
        return None
    if p == q:
        slope = (3 * p[0] * p[0] + _A) * pow(2 * p[1], -1, _P) % _P
    else:
        slope = (q[1] - p[1]) * pow(q[0] - p[0], -1, _P) % _P
    x = (slope * slope - p[0] - q[0]) % _P
    return x, (slope * (p[0] - x) - p[1]) % _P


def _multiply(k: int, point: tuple[int, int]) -> tuple[int, int] | None:
    result: tuple[int, int] | None = None
    addend: tuple[int, int] | None = point
    while k:
        if k & 1:
            result = _add(result, addend)
        addend = _add(addend, addend)
        k >>= 1
    return result


def _es256(d: int, message: bytes, random: Callable[[int], bytes]) -> bytes:
    z = int.from_bytes(hashlib.sha256(message).digest(), "big")
    while True:
        k = int.from_bytes(random(32), "big") % _N
        if k == 0:
            continue
        point = _multiply(k, _G)
        assert point is not None
        r = point[0] % _N
        s = pow(k, -1, _N) * (z + r * d) % _N
        if r and s:
            return r.to_bytes(32, "big") + s.to_bytes(32, "big")


def _rs256(n: int, d: int, message: bytes) -> bytes:
    size = (n.bit_length() + 7) // 8
    digest = _SHA256_PREFIX + hashlib.sha256(message).digest()
    if size < len(digest) + 11:
        raise OAuthError("auth.privateKey: the RSA key is too small")
    encoded = b"\x00\x01" + b"\xff" * (size - len(digest) - 3) + b"\x00" + digest
    return pow(int.from_bytes(encoded, "big"), d, n).to_bytes(size, "big")


def p256_public(d: int) -> tuple[int, int]:
    """The public point of the P-256 private scalar ``d`` (1 <= d < n)."""
    if not 0 < d < _N:
        raise ValueError("not a P-256 private scalar")
    point = _multiply(d, _G)
    assert point is not None
    return point


def es256_sign(d: int, message: bytes, random: Callable[[int], bytes]) -> bytes:
    """The JWS ES256 signature (``r || s``) of ``message`` with the P-256 scalar ``d``."""
    return _es256(d, message, random)


def client_assertion(private_key: str, algorithm: str, client_id: str, audience: str, now: float,
                     random: Callable[[int], bytes], lifetime: float = 300.0) -> str:
    """A signed JWT asserting ``client_id`` to ``audience`` (the authorization server's issuer)."""
    kind, numbers = _key(private_key)
    if (algorithm == "ES256") != (kind == "EC") or algorithm not in ("ES256", "RS256"):
        raise OAuthError(f"auth.signingAlgorithm {algorithm} does not fit a {kind} key")
    header = {"alg": algorithm, "typ": "JWT"}
    claims = {"iss": client_id, "sub": client_id, "aud": audience, "iat": int(now), "exp": int(now + lifetime),
              "jti": _b64url(random(16))}
    signing_input = f"{_b64url(dumps(header))}.{_b64url(dumps(claims))}".encode("ascii")
    if kind == "EC":
        signature = _es256(numbers[0], signing_input, random)
    else:
        signature = _rs256(numbers[0], numbers[1], signing_input)
    return f"{signing_input.decode('ascii')}.{_b64url(signature)}"
