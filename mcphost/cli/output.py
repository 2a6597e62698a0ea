"""Where the command line writes its messages and logs, and in which format.

The library only adds a ``NullHandler`` to the ``mcphost`` logger (the convention for
libraries); the command line configures its own handler here. Without ``-v`` no log line
is printed in text mode: the command reports failures itself, once. ``-v`` shows INFO,
``-vv`` DEBUG. With ``--log-format json`` every line on stderr is one JSON object: log
records through :class:`~mcphost.logs.JSONFormatter`, and the command's own lines
(errors, notes, progress) turned into records of the ``mcphost.cli`` logger by
:class:`JSONLines`, which stands in for ``sys.stderr``.
"""

from __future__ import annotations

import io
import json
import logging
import re
import sys
from typing import Any, Final, TextIO

from ..logs import JSONFormatter

__all__ = ["JSONLines", "LogSetup"]

logger = logging.getLogger("mcphost.cli")

# Cursor movements of the progress line: meaningless in a JSON line.
_CONTROL: Final = re.compile(r"\r|\x1b\[K")


class JSONLines(io.TextIOBase):
    """A text stream that writes every line it is given as a JSON log record."""

    def __init__(self, target: TextIO) -> None:
        super().__init__()
        self.target = target
        self._buffer = ""
        self._formatter = JSONFormatter()

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def write(self, text: str) -> int:
        self._buffer += text
        while "\n" in self._buffer:
            line, self._buffer = self._buffer.split("\n", 1)
            self._line(line)
        return len(text)

    def flush(self) -> None:
        self.target.flush()

    def _line(self, line: str) -> None:
        line = _CONTROL.sub("", line).strip()
        if not line:
            return
        if line.startswith("{"):
            try:
                json.loads(line)
            except ValueError:
                pass
            else:
                self.target.write(line + "\n")
                return
        text = line.removeprefix("mcphost: ")
        level = logging.INFO
        event = "cli_message"
        if text.startswith("error: "):
            level, event, text = logging.ERROR, "cli_error", text[len("error: "):]
        elif text.startswith(("note: ", "hint: ")):
            level, event = logging.WARNING, "cli_" + text.split(":", 1)[0]
            text = text.split(": ", 1)[1]
        record = logger.makeRecord(logger.name, level, "(cli)", 0, "%s", (text,), None)
        record.event = event
        self.target.write(self._formatter.format(record) + "\n")


class LogSetup:
    """The command's log handler and stderr for the time of one command (``main`` may run
    several times in one process: nothing is left behind)."""

    def __init__(self, verbose: int, log_format: str) -> None:
        self.verbose = verbose
        self.log_format = log_format
        self.handler: logging.Handler | None = None
        self.saved_level = logging.NOTSET
        self.saved_stderr: TextIO = sys.stderr

    def __enter__(self) -> TextIO:
        real = self.saved_stderr = sys.stderr
        root = logging.getLogger("mcphost")
        if self.log_format == "json":
            handler: logging.Handler = logging.StreamHandler(real)
            handler.setFormatter(JSONFormatter())
        elif self.verbose:
            handler = logging.StreamHandler(real)
            handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
        else:
            return real
        level = (logging.WARNING, logging.INFO, logging.DEBUG)[min(self.verbose, 2)]
        handler.setLevel(level)
        root.addHandler(handler)
        self.handler, self.saved_level = handler, root.level
        if root.level == logging.NOTSET or root.level > level:
            root.setLevel(level)
        if self.log_format == "json":
            stream: Any = JSONLines(real)
            sys.stderr = stream
            return stream  # type: ignore[no-any-return]
        return real

    def __exit__(self, *exc: object) -> None:
        sys.stderr.flush()
        sys.stderr = self.saved_stderr
        if self.handler is not None:
            root = logging.getLogger("mcphost")
            root.removeHandler(self.handler)
            root.setLevel(self.saved_level)
