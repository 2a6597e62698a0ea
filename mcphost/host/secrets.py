"""Keeping secrets out of what the host says, and paths out of what it returns.

Layer 4. The values that ``${VAR}``, ``${env:VAR}`` and ``${input:id}`` references were
expanded to (``HostConfig.secrets``), the values of every server's ``env`` and ``headers``
-- and the token inside a header value on its own (``Bearer <token>``: a server that
quotes the token alone in a 401 body or a JSON-RPC error must not show it either; for
``Basic`` the decoded password too) --, and the credentials of every server's URL (the
password of ``user:pass@``, query parameters such as ``token``, ``api_key``, ``sig``) are
replaced by ``***`` wherever the host writes text: every record of the ``mcphost``
loggers (its message and its formatted traceback), a server's stderr lines (as they are
read, before they are logged or kept for error messages), and the errors it raises to the
application. Credentials of any URL in a text (known or not) are masked by their form
(:func:`mcphost.config.urls.hide_credentials`).

TR10.3: errors returned to the application carry no absolute path of this machine (a
server's stderr is full of them: ``/srv/app/node_modules/x/dist/index.js:12``). A path
under the configuration's folder becomes relative to it, one under the home folder starts
with ``~``, any other keeps its last two parts (``.../dist/index.js:12``). Logs keep the
whole path.
"""

from __future__ import annotations

import base64
import binascii
import logging
import os
import re
from collections.abc import Iterable
from typing import Any

from ..config.urls import hide_credentials, url_secrets
from ..errors import MCPHostError, ServerError

__all__ = ["Redactor", "header_secrets"]

_MIN = 4  # shorter values would blank out ordinary words
MASK = "***"

# An absolute path: POSIX (a "/" not after a word, a dot, a colon or another "/", so URLs
# and relative paths are left alone) or Windows (a drive letter). It ends at white space,
# a quote, a bracket, a comma or a semicolon; a ":12:5" position stays outside it.
_PATH = re.compile(
    r"""(?<![\w.:/~\\-])(?:/|[A-Za-z]:[\\/])[^\s'"`()\[\]{}<>,;:]*(?:[/\\][^\s'"`()\[\]{}<>,;:]*)*"""
)


def scrub_paths(text: str, base: str | None, home: str | None) -> str:
    """``text`` with every absolute path made relative to ``base``, or to ``~``, or cut to
    its last two parts."""
    def shorter(m: re.Match[str]) -> str:
        path = m.group(0)
        if len(path) < 2:
            return path
        for root, shown in ((base, ""), (home, "~/")):
            if root and root != "/" and (path == root or path.startswith(root.rstrip("/\\") + os.sep)
                                         or path.startswith(root.rstrip("/\\") + "/")):
                rest = path[len(root.rstrip("/\\")) + 1:]
                return (shown + rest) if rest else (shown.rstrip("/") or ".")
        parts = [p for p in re.split(r"[/\\]", path) if p]
        if len(parts) <= 2:
            return path  # /tmp, /usr/bin: nothing to hide
        return ".../" + "/".join(parts[-2:])

    return _PATH.sub(shorter, text)


_FORMATTER = logging.Formatter()
# An authorization scheme ("Bearer", "Basic", "Token"...) before the credential itself.
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*\Z")


def header_secrets(value: str) -> list[str]:
    """A header value and the credentials inside it: the value whole, each word after an
    authorization scheme (``Bearer <token>``: the token alone), and for ``Basic`` the
    decoded ``user:password`` and the password."""
    found = [value]
    words = value.split()
    if len(words) >= 2 and _SCHEME.match(words[0]):
        found.extend(words[1:])
        if words[0].lower() == "basic":
            try:
                decoded = base64.b64decode(words[1], validate=True).decode("utf-8")
            except (binascii.Error, UnicodeDecodeError, ValueError):
                decoded = ""
            if decoded:
                found.append(decoded)
                found.append(decoded.partition(":")[2])
    return found


class Redactor:
    """Replaces known secret values in text, log records and errors.

    A log filter by its ``filter`` method: ``logging`` takes any object that has one, so no
    base class is needed."""

    def __init__(self) -> None:
        self._values: set[str] = set()
        self._pattern: re.Pattern[str] | None = None
        self._loggers: set[str] = set()
        #: The configuration's folder and the home folder, for paths in returned errors.
        self.base: str | None = None
        self.home: str | None = None

    def add(self, values: Iterable[str]) -> None:
        fresh = {v for v in values if isinstance(v, str) and len(v) >= _MIN} - self._values
        if fresh:
            self._values |= fresh
            ordered = sorted(self._values, key=len, reverse=True)  # longest first
            self._pattern = re.compile("|".join(re.escape(v) for v in ordered))

    def add_config(self, config: Any) -> None:
        path = getattr(config, "path", None)
        if isinstance(path, str) and path:
            self.base = os.path.dirname(os.path.abspath(path))
        self.add(getattr(config, "secrets", ()))
        for server in config.servers.values():
            self.add(server.env.values())
            for value in server.headers.values():
                self.add(header_secrets(value))
            if server.url:
                self.add(url_secrets(server.url))
            if server.auth is not None:
                self.add(server.auth.secrets())

    def text(self, value: str) -> str:
        pattern = self._pattern
        if pattern is not None:
            value = pattern.sub(MASK, value)
        return hide_credentials(value)

    def public(self, value: str) -> str:
        """``value`` fit to return to the application: no secret, no absolute path."""
        return scrub_paths(self.text(value), self.base, self.home)

    def error(self, exc: MCPHostError, _done: set[int] | None = None) -> MCPHostError:
        """``exc`` with its message and stderr lines made public (in place, returned), and
        the errors inside it and chained to it (``__cause__``, ``__context__``: a traceback
        prints them) cleaned too."""
        done = set() if _done is None else _done
        if id(exc) in done:
            return exc
        done.add(id(exc))
        exc.message = self.public(exc.message)
        exc.args = (exc.message, *exc.args[1:])
        if isinstance(exc, ServerError) and exc.data is not None:
            # A JSON-RPC error's data is the server's words too (one that quotes the token).
            exc.data = self._data(exc.data, 0)
        tail = getattr(exc, "stderr_tail", None)
        if isinstance(tail, list):
            tail[:] = [self.public(line) for line in tail]
        for inner in (getattr(exc, "failures", None) or {}).values():
            self.error(inner, done)
        for inner in getattr(exc, "attempts", None) or ():
            self.error(inner, done)
        for chained in (exc.__cause__, exc.__context__):
            if isinstance(chained, MCPHostError):
                self.error(chained, done)
            elif chained is not None and id(chained) not in done:
                done.add(id(chained))
                chained.args = tuple(self.public(a) if isinstance(a, str) else a for a in chained.args)
        return exc

    def _data(self, value: Any, depth: int) -> Any:
        """``value`` (decoded JSON) with every string masked; past a depth, the nesting is
        dropped rather than walked (the peer bounds nothing here)."""
        if isinstance(value, str):
            return self.text(value)
        if depth > 32:
            return None
        if isinstance(value, dict):
            return {self.text(k) if isinstance(k, str) else k: self._data(v, depth + 1) for k, v in value.items()}
        if isinstance(value, list):
            return [self._data(v, depth + 1) for v in value]
        return value

    # -- logging --------------------------------------------------------------------------

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = self.text(message)
        if clean != message:
            record.msg = clean
            record.args = None
        if record.exc_info and not record.exc_text:
            # The traceback's text is made here (as a formatter would) so that the
            # exception's message is cleaned too; formatters use exc_text when it is set.
            record.exc_text = self.text(_FORMATTER.formatException(record.exc_info))
        return True

    def install(self) -> None:
        """Filter every ``mcphost`` logger that exists now (call again after new ones)."""
        for name in list(logging.Logger.manager.loggerDict):
            if (name == "mcphost" or name.startswith("mcphost.")) and name not in self._loggers:
                self._loggers.add(name)
                logging.getLogger(name).addFilter(self)

    def uninstall(self) -> None:
        for name in self._loggers:
            logging.getLogger(name).removeFilter(self)
        self._loggers.clear()
