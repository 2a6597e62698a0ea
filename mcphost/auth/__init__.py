"""OAuth 2.1 for remote servers, the sans-I/O part (layer 1): clock and randomness are given.

Modules: ``challenge`` (``WWW-Authenticate`` read), ``discovery`` (where the protected
resource and authorization server metadata are, and their checks), ``flow`` (PKCE, state,
the authorization URL, the callback, token and registration requests and answers, scopes),
``jwt`` (``private_key_jwt`` client assertions, ES256 and RS256), ``grants`` (the
extension grants: JWT bearer, the ID token exchanged for an ID-JAG), ``dpop`` (RFC 9449
proofs of possession), ``errors``
(``OAuthError``), ``store`` (what a login leaves: ``Credentials``, ``Tokens``,
``ClientInfo``; the ``TokenStore`` interface and its in-memory default). The network part is
``mcphost.transports.oauth``.

``filestore`` (``FileTokenStore``: one private file per server and issuer, written
atomically, shared by hosts; the one module here that touches files, in a directory it is
given).
"""

from typing import TYPE_CHECKING, Any

from .store import ClientInfo, Credentials, MemoryTokenStore, Tokens, TokenStore

if TYPE_CHECKING:
    from .filestore import FileTokenStore, default_directory

__all__ = ["ClientInfo", "Credentials", "FileTokenStore", "MemoryTokenStore", "TokenStore", "Tokens",
           "default_directory"]


def __getattr__(name: str) -> Any:
    # The file store (hashlib, secrets, file locking) is loaded when first asked for: a host
    # that keeps its logins in memory, the default, never pays for it.
    if name in ("FileTokenStore", "default_directory"):
        from . import filestore

        return getattr(filestore, name)
    raise AttributeError(f"module 'mcphost.auth' has no attribute {name!r}")
