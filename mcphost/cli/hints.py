"""What the command line adds to a failed start: the next step, when it can tell one.

- A stdio server that failed to start while variables of this environment were not passed
  to it (the child gets an allow-list, docs/config.md): which ones could matter (named in
  its stderr; or, when it speaks of a certificate, a package index or a key, the dropped
  ones that look like one) and how to pass them.
- A ``"type": "sse"`` server whose URL answered the SSE GET with a 4xx: the URL looks like
  a Streamable HTTP endpoint; say so and what to set.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from ..transports.stdio.command import child_environment
from .login import login_hint

__all__ = ["hints", "not_passed"]

# What a failed start says -> the names of dropped variables that could be why.
_COULD_MATTER: Final = (
    (re.compile(r"(?i)certificate|\bssl\b|\btls\b|CERT_"), re.compile(r"CERT|CA_|CAFILE|BUNDLE")),
    (re.compile(r"(?i)\bindex\b|registry|pypi|npm (ERR|error)|no solution|could not find|not found in"),
     re.compile(r"INDEX|REGISTRY|TRUSTED_HOST")),
    (re.compile(r"(?i)api.?key|token|secret|credential|unauthori[sz]ed|\b40[13]\b"),
     re.compile(r"KEY|TOKEN|SECRET|PASSWORD|AUTH")),
)
_MAX_NAMES: Final = 6


def not_passed(environ: Mapping[str, str], config: Any, tail: list[str]) -> list[str]:
    """The variables of ``environ`` not passed to the stdio server of ``config`` that could
    matter to its failed start: those its stderr names first, then likely ones."""
    if getattr(config, "type", None) != "stdio" or getattr(config, "inherit_env", False):
        return []
    passed = child_environment(environ, dict(config.env))
    dropped = sorted(k for k in environ if k not in passed)
    said = "\n".join(tail)
    named = [k for k in dropped if re.search(rf"\b{re.escape(k)}\b", said)]
    likely = [k for says, names in _COULD_MATTER if says.search(said)
              for k in dropped if k not in named and names.search(k)]
    return list(dict.fromkeys(named + likely))[:_MAX_NAMES]


def hints(name: str, error: Any, config: Any, environ: Mapping[str, str]) -> list[str]:
    """Lines (without the ``mcphost: hint:`` prefix) for the failed start of ``name``."""
    out: list[str] = []
    text = str(error)
    kind = getattr(config, "type", None)
    if kind == "stdio" and "config" not in type(error).__name__.lower():
        names = not_passed(environ, config, [text, *(getattr(error, "stderr_tail", None) or [])])
        if names:
            first = names[0]
            out.append(
                f"{name}: set here but not passed to the server: {', '.join(names)}; pass what it needs "
                f'with "env": {{"{first}": "${{{first}}}"}} in its entry (docs/config.md, "The child\'s environment")'
            )
    if kind == "sse" and re.search(r"HTTP 4\d\d", text):
        url = str(getattr(config, "url", "") or "")
        looks = "ends in /mcp, like" if url.rstrip("/").endswith("/mcp") else "refused the SSE stream, like"
        out.append(
            f'{name}: "type" is "sse" (the legacy HTTP+SSE transport) but the URL {looks} a Streamable '
            'HTTP endpoint: set "type": "http" (or leave "type" out to have it found)'
        )
    auth = getattr(getattr(config, "auth", None), "type", None)
    if kind in ("http", "sse", "websocket") and auth in (None, "oauth"):
        hint = login_hint(name, text)
        if hint is not None:
            out.append(hint)
    return out
