"""Building :class:`~mcphost.errors.ValidationError` objects on the slow (failure) path.

Validation runs twice at most: the compiled closures answer "valid or not" without
allocating anything, and only when the answer is "not" does the explain pass walk the
schema again to find *where* and *why*. This module owns what that pass produces: JSON
paths of the instance (``$.items[3].name``, ``$['a b']``), short renderings of values, and
the collector that stops after the first error or keeps them all.
"""

from __future__ import annotations

import json
import re
from typing import Any

from mcphost.errors import ValidationError

__all__ = ["Collector", "IPath", "Stop", "format_path", "json_type", "show"]

IPath = tuple[str | int, ...]

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def format_path(ipath: IPath) -> str:
    """``("items", 3, "a b")`` → ``$.items[3]['a b']``."""
    parts = ["$"]
    for seg in ipath:
        if isinstance(seg, int):
            parts.append(f"[{seg}]")
        elif _IDENT.match(seg):
            parts.append(f".{seg}")
        else:
            escaped = seg.replace("\\", "\\\\").replace("'", "\\'")
            parts.append(f"['{escaped}']")
    return "".join(parts)


def json_type(x: Any) -> str:
    """The JSON type name of a Python value, as used in messages."""
    if x is None:
        return "null"
    if isinstance(x, bool):
        return "boolean"
    if isinstance(x, int):
        return "integer"
    if isinstance(x, float):
        return "integer" if x.is_integer() else "number"
    if isinstance(x, str):
        return "string"
    if isinstance(x, (list, tuple)):
        return "array"
    if isinstance(x, dict):
        return "object"
    return type(x).__name__


def show(x: Any, limit: int = 60) -> str:
    """A short JSON rendering of a value for messages."""
    t = type(x)
    if t is int and x.bit_length() > 4 * limit:
        # repr() of an int past 4300 digits raises ValueError (Python 3.11+), and a long
        # one says nothing useful anyway.
        return f"<integer of about {int(x.bit_length() * 0.30103) + 1} digits>"
    if t is int or t is float:
        text = repr(x)
        return text if len(text) <= limit else text[: limit - 3] + "..."
    if t is str and len(x) <= limit and x.isprintable() and '"' not in x and "\\" not in x:
        return f'"{x}"'
    if x is None:
        return "null"
    if t is bool:
        return "true" if x else "false"
    try:
        text = json.dumps(x, ensure_ascii=False, default=repr)
    except (ValueError, RecursionError):
        text = f"<{json_type(x)}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


class Stop(Exception):
    """Raised inside the explain pass once enough errors were collected."""


class Collector:
    """Collects validation errors; raises :class:`Stop` after the first unless ``all``."""

    __slots__ = ("all", "errors")

    def __init__(self, collect_all: bool) -> None:
        self.all = collect_all
        self.errors: list[ValidationError] = []

    def emit(self, ipath: IPath, spath: str, keyword: str, value: Any, message: str) -> None:
        """Record one error at instance path ``ipath`` for keyword at ``spath``."""
        path = format_path(ipath)
        self.errors.append(
            ValidationError(
                f"{path}: {message}",
                path=path,
                keyword=keyword,
                schema_path=spath,
                value=value,
            )
        )
        if not self.all:
            raise Stop
