"""``private_key_jwt`` assertions, checked by an independent verifier (PyJWT with ``cryptography``)."""

from __future__ import annotations

import os

import jwt as pyjwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from mcphost.auth.errors import OAuthError
from mcphost.auth.jwt import client_assertion

FORMATS = (serialization.PrivateFormat.PKCS8, serialization.PrivateFormat.TraditionalOpenSSL)


@pytest.mark.parametrize("fmt", FORMATS, ids=["pkcs8", "traditional"])
@pytest.mark.parametrize("algorithm", ["ES256", "RS256"])
def test_an_assertion_verifies(algorithm: str, fmt: serialization.PrivateFormat) -> None:
    key = ec.generate_private_key(ec.SECP256R1()) if algorithm == "ES256" else rsa.generate_private_key(65537, 2048)
    pem = key.private_bytes(serialization.Encoding.PEM, fmt, serialization.NoEncryption()).decode()
    token = client_assertion(pem, algorithm, "client-1", "https://as.example", 1_000_000.0, os.urandom)
    claims = pyjwt.decode(token, key.public_key(), algorithms=[algorithm], audience="https://as.example",
                          options={"verify_exp": False, "verify_iat": False})
    assert (claims["iss"], claims["sub"], claims["exp"] - claims["iat"]) == ("client-1", "client-1", 300)


def test_a_key_that_does_not_fit_is_said() -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(serialization.Encoding.PEM, FORMATS[0], serialization.NoEncryption()).decode()
    with pytest.raises(OAuthError, match="RS256 does not fit a EC key"):
        client_assertion(pem, "RS256", "c", "https://as", 0.0, os.urandom)
    with pytest.raises(OAuthError, match="not a PEM private key"):
        client_assertion("nonsense", "ES256", "c", "https://as", 0.0, os.urandom)
    with pytest.raises(OAuthError, match="cannot be read"):
        client_assertion("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----", "ES256", "c", "x", 0.0,
                         os.urandom)
