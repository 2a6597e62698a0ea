"""``WWW-Authenticate`` read (RFC 9110 §11.6.1): the challenges of a 401 or 403.

Layer 1. The MCP authorization spec starts the flow from a 401's ``Bearer`` challenge and
reads its ``resource_metadata`` (RFC 9728 §5.1), ``scope`` and ``error`` (RFC 6750 §3:
``insufficient_scope`` on a 403 asks for a step-up). The header is the server's: it is
bounded, and a malformed one yields what could be read before the fault, never an exception.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

__all__ = ["Challenge", "bearer_challenge", "parse_challenges"]

#: The most of a header value read; a challenge is a few hundred bytes.
MAX_HEADER: Final = 8192
#: The most challenges and parameters kept.
MAX_ITEMS: Final = 32

_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_TOKEN68 = re.compile(r"[A-Za-z0-9._~+/-]+=*")
_SPACE = re.compile(r"[ \t]*")


@dataclass(frozen=True)
class Challenge:
    """One challenge: its scheme (lower case) and parameters (names lower case)."""

    scheme: str
    params: Mapping[str, str] = field(default_factory=dict)

    @property
    def resource_metadata(self) -> str | None:
        return self.params.get("resource_metadata")

    @property
    def scope(self) -> str | None:
        return self.params.get("scope")

    @property
    def error(self) -> str | None:
        return self.params.get("error")


def _quoted(text: str, i: int) -> tuple[str, int]:
    """The quoted-string starting at ``text[i] == '"'``: its value and the index after it."""
    out = []
    i += 1
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            out.append(text[i + 1])
            i += 2
        elif c == '"':
            return "".join(out), i + 1
        else:
            out.append(c)
            i += 1
    raise ValueError("unterminated quoted string")


def parse_challenges(value: str) -> list[Challenge]:
    """Every challenge of a ``WWW-Authenticate`` value (several headers: joined with ``,``)."""
    text = value[:MAX_HEADER]
    out: list[Challenge] = []
    i = 0
    try:
        while i < len(text) and len(out) < MAX_ITEMS:
            i = _skip_commas(text, i)
            m = _TOKEN.match(text, i)
            if m is None:
                break
            scheme = m.group().lower()
            i = _SPACE.match(text, m.end()).end()  # type: ignore[union-attr]
            params: dict[str, str] = {}
            token68 = _TOKEN68.match(text, i)
            if token68 is not None and not _is_param(text, i):
                end = _SPACE.match(text, token68.end()).end()  # type: ignore[union-attr]
                if end >= len(text) or text[end] == ",":
                    i = end
                    out.append(Challenge(scheme, {}))
                    continue
            while i < len(text) and len(params) < MAX_ITEMS:
                if not _is_param(text, i):
                    break
                name = _TOKEN.match(text, i)
                assert name is not None
                i = _SPACE.match(text, name.end()).end() + 1  # type: ignore[union-attr]
                i = _SPACE.match(text, i).end()  # type: ignore[union-attr]
                if i < len(text) and text[i] == '"':
                    val, i = _quoted(text, i)
                else:
                    tok = _TOKEN.match(text, i)
                    val = tok.group() if tok else ""
                    i = tok.end() if tok else i
                params.setdefault(name.group().lower(), val)
                i = _SPACE.match(text, i).end()  # type: ignore[union-attr]
                if i < len(text) and text[i] == ",":
                    j = _skip_commas(text, i)
                    if _is_param(text, j):
                        i = j
                        continue
                    i = j
                break
            out.append(Challenge(scheme, params))
    except ValueError:
        pass
    return out


def _skip_commas(text: str, i: int) -> int:
    while i < len(text) and text[i] in ", \t":
        i += 1
    return i


def _is_param(text: str, i: int) -> bool:
    """``text[i:]`` starts with ``name =`` (an auth-param, not a new challenge's scheme)."""
    m = _TOKEN.match(text, i)
    if m is None:
        return False
    j = _SPACE.match(text, m.end()).end()  # type: ignore[union-attr]
    return j < len(text) and text[j] == "=" and not (j + 1 < len(text) and text[j + 1] == "=")


def bearer_challenge(values: list[str]) -> Challenge | None:
    """The ``Bearer`` challenge among the ``WWW-Authenticate`` headers ``values``, if any."""
    for value in values:
        for challenge in parse_challenges(value):
            if challenge.scheme == "bearer":
                return challenge
    return None
