"""What in a server's URL can be connected to, and what in it is a credential.

Layer 1 (no I/O). :func:`host_problem` says why a host name cannot be looked up (a label
over 63 characters, an empty label, a name IDNA cannot encode) so that the configuration
refuses it with the field named, instead of the socket layer raising ``UnicodeError`` at
connect time. :func:`hide_credentials` masks the credentials a URL may carry -- the
password of ``user:pass@``, a bare ``token@``, and query parameters whose name says
credential (``token``, ``access_token``, ``api_key``, ``key``, ``sig``, ``secret``...) --
wherever such a URL appears in a text; :func:`url_secrets` lists those values, so that
they are masked also when a server quotes one alone.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["MASK", "hide_credentials", "host_problem", "is_credential_name", "url_secrets"]

MASK: Final = "***"
#: RFC 1035 §2.3.4: labels of 63 octets or less, names of 255 octets or less (253 in text).
_MAX_LABEL: Final = 63
_MAX_NAME: Final = 253

# A query parameter whose name holds one of these words carries a credential.
_CREDENTIAL_WORDS: Final = r"token|key|secret|pass|pwd|sig|auth|credential|session|code"
_CREDENTIAL_NAME = re.compile(rf"(?:{_CREDENTIAL_WORDS})", re.IGNORECASE)
_QUERY_CREDENTIAL = re.compile(
    rf"(?P<name>[?&;][\w.~%-]*(?:{_CREDENTIAL_WORDS})[\w.~%-]*=)(?P<value>[^&#;,)\s\"'<>]+)", re.IGNORECASE
)
# scheme://userinfo@ : with a colon the password goes, without it the whole userinfo (a
# token given as the user name).
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^/\s@:?#]*)(?P<pw>:[^/\s@?#]*)?@")


def is_credential_name(name: str) -> bool:
    """Whether a query parameter (or header) name says it carries a credential."""
    return _CREDENTIAL_NAME.search(name) is not None


def host_problem(host: str) -> str | None:
    """Why ``host`` (a URL's host name, without brackets) cannot be connected to, or ``None``."""
    if not host:
        return "the URL has no host name"
    import ipaddress  # loaded by a URL, not by every host

    try:
        ipaddress.ip_address(host.strip("[]"))
        return None
    except ValueError:
        pass
    name = host[:-1] if host.endswith(".") else host
    for label in name.split("."):
        if not label:
            return "the host name has an empty label"
        if len(label) > _MAX_LABEL:
            return f"the host name has a label of {len(label)} characters (at most {_MAX_LABEL})"
    try:
        encoded = name.encode("idna")
    except UnicodeError as exc:
        return f"the host name cannot be encoded ({exc.__cause__ or exc})"
    if len(encoded) > _MAX_NAME:
        return f"the host name has {len(encoded)} characters (at most {_MAX_NAME})"
    return None


def hide_credentials(text: str) -> str:
    """``text`` with the credentials of every URL in it masked."""
    if "=" in text:
        text = _QUERY_CREDENTIAL.sub(lambda m: m.group("name") + MASK, text)
    if "@" in text:
        text = _USERINFO.sub(_userinfo, text)
    return text


def _userinfo(m: re.Match[str]) -> str:
    if m.group("pw") is not None:
        return f"{m.group('scheme')}{m.group('user')}:{MASK}@"
    return f"{m.group('scheme')}{MASK}@"


def url_secrets(url: str) -> list[str]:
    """The credential values ``url`` carries (userinfo, credential query parameters)."""
    import urllib.parse  # urllib.parse (with ipaddress, ~0.4 MB): loaded by a URL, not by every host

    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return []
    found: list[str] = []
    if parts.password:
        found.append(parts.password)
        found.append(urllib.parse.unquote(parts.password))
    elif parts.username:
        found.append(parts.username)
        found.append(urllib.parse.unquote(parts.username))
    for name, value in urllib.parse.parse_qsl(parts.query, keep_blank_values=False):
        if is_credential_name(name):
            found.append(value)
            raw = urllib.parse.quote(value, safe="")
            if raw != value:
                found.append(raw)
    return found
