"""The one failure of the OAuth steps: :class:`OAuthError`, a message safe to show.

Layer 1. The driver turns it into the host's own error for the call that needed the
authorization; its message never holds a token, code, verifier or secret.
"""

from __future__ import annotations

__all__ = ["OAuthError"]


class OAuthError(Exception):
    """The authorization could not be obtained (the message says why)."""
