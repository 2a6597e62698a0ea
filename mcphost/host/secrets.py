"""Keeping secrets out of what the host says: logs (DEBUG included) and returned errors.

Layer 4. The values that ``${VAR}``, ``${env:VAR}`` and ``${input:id}`` references were
expanded to (``HostConfig.secrets``), and the values of every server's ``env`` and
``headers``, are replaced by ``***`` wherever the host writes text: every record of the
``mcphost`` loggers, a server's stderr lines (as they are read, before they are logged or
kept for error messages), and the errors it raises to the application. TR10.3 asks for
the same of absolute paths; those are kept out where the message is made.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from typing import Any

from ..errors import MCPHostError

__all__ = ["Redactor"]

_MIN = 4  # shorter values would blank out ordinary words
MASK = "***"


class Redactor(logging.Filter):
    """Replaces known secret values in text, log records and errors."""

    def __init__(self) -> None:
        super().__init__()
        self._values: set[str] = set()
        self._pattern: re.Pattern[str] | None = None
        self._loggers: set[str] = set()

    def add(self, values: Iterable[str]) -> None:
        fresh = {v for v in values if isinstance(v, str) and len(v) >= _MIN} - self._values
        if fresh:
            self._values |= fresh
            ordered = sorted(self._values, key=len, reverse=True)  # longest first
            self._pattern = re.compile("|".join(re.escape(v) for v in ordered))

    def add_config(self, config: Any) -> None:
        self.add(getattr(config, "secrets", ()))
        for server in config.servers.values():
            self.add(server.env.values())
            self.add(server.headers.values())

    def text(self, value: str) -> str:
        pattern = self._pattern
        return value if pattern is None else pattern.sub(MASK, value)

    def error(self, exc: MCPHostError) -> MCPHostError:
        """``exc`` with its message and stderr lines redacted (in place, returned)."""
        if self._pattern is None:
            return exc
        exc.message = self.text(exc.message)
        exc.args = (exc.message, *exc.args[1:])
        tail = getattr(exc, "stderr_tail", None)
        if isinstance(tail, list):
            tail[:] = [self.text(line) for line in tail]
        for inner in (getattr(exc, "failures", None) or {}).values():
            self.error(inner)
        return exc

    # -- logging --------------------------------------------------------------------------

    def filter(self, record: logging.LogRecord) -> bool:
        if self._pattern is not None:
            message = record.getMessage()
            clean = self.text(message)
            if clean != message:
                record.msg = clean
                record.args = None
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
