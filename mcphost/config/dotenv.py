"""The ``.env`` format of an ``envFile``: ``KEY=VALUE`` lines, as the common tools read it.

Blank lines and ``#`` comments are skipped; ``export KEY=VALUE`` is accepted; a value may be
single-quoted (literal) or double-quoted (``\\n``, ``\\t``, ``\\r`` and ``\\<c>`` escapes);
an unquoted value ends at ``" #"``. No expansion. Errors name the line, never its content
(it may hold a secret).
"""

from __future__ import annotations

import re

__all__ = ["DotenvError", "parse"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\Z")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r"}


class DotenvError(ValueError):
    """A line that is not ``KEY=VALUE``: ``.line`` (1-based) and ``.reason``."""

    def __init__(self, line: int, reason: str) -> None:
        super().__init__(f"line {line}: {reason}")
        self.line = line
        self.reason = reason


def parse(text: str) -> dict[str, str]:
    """The variables of a ``.env`` text, in order; a later definition wins."""
    result: dict[str, str] = {}
    for number, raw_line in enumerate(text.lstrip("\ufeff").splitlines(), 1):
        line = raw_line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith(("export ", "export\t")):
            line = line[len("export") :].lstrip()
        key, sep, value = line.partition("=")
        key = key.strip()
        if not sep or not _NAME.match(key):
            raise DotenvError(number, "expected KEY=VALUE")
        value = value.strip()
        if value[:1] in ('"', "'"):
            quote = value[0]
            end = _closing_quote(value, quote)
            rest = value[end + 1 :].strip() if end > 0 else ""
            if end < 0 or (rest and not rest.startswith("#")):
                raise DotenvError(number, "unterminated or malformed quoted value")
            inner = value[1:end]
            if quote == '"':
                inner = re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), inner)
            value = inner
        else:
            value = re.split(r"\s#", value, maxsplit=1)[0].rstrip()
        result[key] = value
    return result


def _closing_quote(value: str, quote: str) -> int:
    i = 1
    while i < len(value):
        c = value[i]
        if c == "\\" and quote == '"':
            i += 2
            continue
        if c == quote:
            return i
        i += 1
    return -1
