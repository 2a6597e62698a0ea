"""An ECMA-262 pattern's AST written as a Python ``re`` pattern with the same matches.

This module owns the translation used when :mod:`mcphost.schema.regex` has proven that
backtracking is safe for a pattern and lets ``re`` (fast, in C) search with it. Every
ECMA-262 meaning Python spells differently is spelled out: sets become explicit code point
ranges, ``$`` becomes ``\\Z`` and the ASCII word boundaries become look-arounds.
"""

from __future__ import annotations

from mcphost.schema.regex_syntax import MAX_CP, Ast, Ranges

__all__ = ["to_python"]


def _cp(c: int) -> str:
    ch = chr(c)
    if ch.isascii() and ch.isalnum():
        return ch
    return f"\\U{c:08x}"


def _emit_set(ranges: Ranges) -> str:
    if not ranges:
        return "(?!)"
    if ranges == ((0, MAX_CP),):
        return r"[\s\S]"
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        return _cp(ranges[0][0])
    parts = [_cp(lo) if lo == hi else f"{_cp(lo)}-{_cp(hi)}" for lo, hi in ranges]
    return "[" + "".join(parts) + "]"


_W = "[0-9A-Za-z_]"


def to_python(node: Ast) -> str:
    """The Python ``re`` source that matches exactly what ``node`` matches in ECMA-262."""
    kind = node[0]
    if kind == "set":
        return _emit_set(node[1])
    if kind == "cat":
        return "".join(to_python(n) if n[0] != "alt" else f"(?:{to_python(n)})" for n in node[1])
    if kind == "alt":
        return "|".join(to_python(n) for n in node[1])
    if kind == "group":
        name = node[2]
        return f"(?P<{name}>{to_python(node[1])})" if name else f"({to_python(node[1])})"
    if kind == "ncgroup":
        return f"(?:{to_python(node[1])})"
    if kind == "repeat":
        body = to_python(node[1])
        if not (node[1][0] in ("group", "ncgroup") or (node[1][0] == "set" and len(body) <= 1)):
            body = f"(?:{body})"
        lo, hi = node[2], node[3]
        q = "{%d,%s}" % (lo, "" if hi is None else hi)  # noqa: UP031 - braces in the format
        q = {"{0,}": "*", "{1,}": "+", "{0,1}": "?"}.get(q, q)
        return body + q + ("?" if node[4] else "")
    if kind == "bol":
        return "^"
    if kind == "eol":
        # ECMA '$' (no multiline flag) matches only at the very end, never before a
        # trailing newline as Python's '$' does.
        return r"\Z"
    if kind == "wordb":
        return f"(?:(?<={_W})(?!{_W})|(?<!{_W})(?={_W}))"
    if kind == "nwordb":
        return f"(?:(?<={_W})(?={_W})|(?<!{_W})(?!{_W}))"
    if kind == "look":
        op = ("?<" if node[2] else "?") + ("!" if node[3] else "=")
        return f"({op}{to_python(node[1])})"
    if kind == "backref":
        ref = node[1]
        return f"(?P={ref})" if isinstance(ref, str) else f"(?:\\{ref})"
    raise AssertionError(kind)  # pragma: no cover
