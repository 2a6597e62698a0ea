"""HTTP proxies for the remote transports, from the environment as curl reads it.

Layer 2, no I/O here (the tunnel is opened by :mod:`.tunnel`). Which proxy a URL goes
through:

- ``https://`` (and ``wss://``): ``https_proxy``, then ``HTTPS_PROXY``, then ``all_proxy``
  / ``ALL_PROXY``; ``http://`` (and ``ws://``): ``http_proxy``, ``HTTP_PROXY``, then the
  ``all_proxy`` pair. The lower-case name wins, as in curl.
- ``no_proxy`` / ``NO_PROXY``: a comma-separated list of host names, domain suffixes
  (``example.com`` and ``.example.com`` both cover ``api.example.com``), IP addresses, with
  an optional ``:port``; ``*`` means every host. Loopback addresses are always direct:
  a server on 127.0.0.1 is never reached through a proxy.
- The proxy URL is ``http://[user:password@]host[:port]`` (port 1080 by default, as curl);
  user and password become a ``Proxy-Authorization: Basic`` header. A scheme other than
  ``http`` is a :class:`ConfigurationError` (TLS to the proxy itself and SOCKS are not
  spoken).

An ``https`` server is reached through a ``CONNECT`` tunnel, TLS inside it end to end; a
plain ``http`` server gets its requests in absolute form (``POST http://host/mcp``), which
every forward proxy accepts.
"""

from __future__ import annotations

import base64
import ipaddress
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import ConfigurationError

__all__ = ["Proxy", "proxy_for"]

_DEFAULT_PORT = 1080


@dataclass(frozen=True, slots=True)
class Proxy:
    """A forward proxy: where to connect, and the header that authorizes us, if any."""

    host: str
    port: int
    authorization: str | None = None

    @property
    def shown(self) -> str:
        """``host:port`` for messages (never the credentials)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


def _get(environ: Mapping[str, str], name: str) -> str | None:
    for key in (name.lower(), name.upper()):
        value = environ.get(key, "").strip()
        if value:
            return value
    return None


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost" or host.lower().endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def bypassed(host: str, port: int, no_proxy: str | None) -> bool:
    """Whether ``host:port`` is reached directly under this ``no_proxy`` value."""
    if _is_loopback(host):
        return True
    if not no_proxy:
        return False
    host = host.lower().strip("[]").rstrip(".")
    for entry in no_proxy.split(","):
        entry = entry.strip().lower()
        if not entry:
            continue
        if entry == "*":
            return True
        name, entry_port = entry, None
        if entry.count(":") == 1:  # host:port (an IPv6 address has more colons)
            name, _, port_text = entry.partition(":")
            entry_port = int(port_text) if port_text.isdigit() else None
        name = name.strip("[]").lstrip("*").lstrip(".").rstrip(".")
        if entry_port is not None and entry_port != port:
            continue
        if host == name or host.endswith("." + name):
            return True
        try:  # a network in CIDR form
            if "/" in name and ipaddress.ip_address(host) in ipaddress.ip_network(name, strict=False):
                return True
        except ValueError:
            pass
    return False


def proxy_for(scheme: str, host: str, port: int, environ: Mapping[str, str], name: str) -> Proxy | None:
    """The proxy a request to ``scheme://host:port`` goes through, or ``None`` (direct)."""
    secure = scheme in ("https", "wss")
    value = _get(environ, "https_proxy" if secure else "http_proxy") or _get(environ, "all_proxy")
    if value is None or bypassed(host, port, _get(environ, "no_proxy")):
        return None
    if "://" not in value:
        value = "http://" + value
    try:
        parts = urllib.parse.urlsplit(value)
        proxy_port = parts.port
    except ValueError:
        raise ConfigurationError("the proxy URL in the environment is not a valid URL", server=name) from None
    if parts.scheme.lower() != "http" or not parts.hostname:
        raise ConfigurationError(
            f"the proxy in the environment uses {parts.scheme or 'no'}:// ; only http:// proxies are supported",
            server=name,
        )
    authorization = None
    if parts.username is not None:
        user = urllib.parse.unquote(parts.username)
        password = urllib.parse.unquote(parts.password or "")
        token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
        authorization = f"Basic {token}"
    return Proxy(parts.hostname, proxy_port or _DEFAULT_PORT, authorization)
