"""OAuth 2.1 for remote servers, the sans-I/O part (layer 1): clock and randomness are given.

Modules: ``store`` (what a login leaves: ``Credentials``, ``Tokens``, ``ClientInfo``; the
``TokenStore`` interface and its in-memory default).
"""

from .store import ClientInfo, Credentials, MemoryTokenStore, Tokens, TokenStore

__all__ = ["ClientInfo", "Credentials", "MemoryTokenStore", "TokenStore", "Tokens"]
