"""The TLS context of a remote server, from its configuration's ``tls`` object.

Layer 2, stdlib ``ssl`` only. ``ssl.create_default_context()`` is the start: the system's
CA certificates, the server's certificate and host name checked, TLS 1.2 at least. Then:

- ``caFile`` adds the CA certificates of a PEM file (a private CA, or a self-signed server
  certificate itself) to the system's;
- ``certFile``/``keyFile`` present a client certificate (mutual TLS);
- ``verify: false`` checks nothing: any certificate, any name. It is logged as a warning
  once per server, because it lets anyone on the path read and change every message.

A file that cannot be read or is not what it should be is a :class:`ConfigurationError`
naming the field, said when the server starts.
"""

from __future__ import annotations

import logging
import os.path
import ssl

from ..errors import ConfigurationError

__all__ = ["client_context"]

logger = logging.getLogger("mcphost.transports.tls")


def client_context(
    name: str,
    *,
    verify: bool = True,
    ca_file: str | None = None,
    cert_file: str | None = None,
    key_file: str | None = None,
) -> ssl.SSLContext:
    """A client TLS context for server ``name``; ``ConfigurationError`` for a bad file."""
    context = ssl.create_default_context()
    if ca_file is not None:
        _check_file(name, "caFile", ca_file)
        try:
            context.load_verify_locations(cafile=ca_file)
        except (ssl.SSLError, ValueError) as exc:
            raise ConfigurationError(
                f"tls.caFile {os.path.basename(ca_file)!r} holds no usable PEM certificate ({_reason(exc)})",
                server=name,
            ) from None
    if cert_file is not None:
        _check_file(name, "certFile", cert_file)
        if key_file is not None:
            _check_file(name, "keyFile", key_file)
        try:
            context.load_cert_chain(cert_file, key_file)
        except (ssl.SSLError, ValueError) as exc:
            raise ConfigurationError(
                f"tls.certFile/keyFile: the client certificate or its key cannot be used ({_reason(exc)})",
                server=name,
            ) from None
    if not verify:
        logger.warning("%s: tls.verify is false: the server's certificate is not checked", name)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def _check_file(name: str, field: str, path: str) -> None:
    shown = os.path.basename(path) or path
    if not os.path.exists(path):
        raise ConfigurationError(f"tls.{field}: file {shown!r} does not exist", server=name)
    if not os.path.isfile(path):
        raise ConfigurationError(f"tls.{field}: {shown!r} is not a file", server=name)
    if not os.access(path, os.R_OK):
        raise ConfigurationError(f"tls.{field}: file {shown!r} cannot be read", server=name)


def _reason(exc: BaseException) -> str:
    reason = getattr(exc, "reason", None)
    return str(reason or exc).lower()[:120]
