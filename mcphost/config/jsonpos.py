"""Line-aware JSON(C) reader for configuration files.

This module owns one concept: turning the text of a JSON document (such as ``mcp.json``)
into plain Python values *and* remembering where in the text each value came from, so
that a configuration error can say ``mcp.json:7: servers.fs.args[1]: ...``.

What it accepts, beyond strict JSON (RFC 8259), and why:

* ``//`` line comments and ``/* ... */`` block comments, and a trailing comma before ``}``
  or ``]``: VS Code's ``mcp.json`` is a JSONC file and people write both. Comments are
  skipped like whitespace, so every position stays that of the original text. Both can be
  turned off (``comments=False``, ``trailing_commas=False``).
* A leading byte-order mark (``U+FEFF``), which some Windows editors write.

What it refuses, with a :class:`~mcphost.errors.ConfigurationError` that carries the line
and column (``mcp.json:3:17: invalid JSON: expected ',' or '}'``):

* anything that is not JSON: single quotes, ``NaN``/``Infinity``, unquoted keys, bad
  escapes, raw control characters inside strings, data after the document;
* the same key twice in one object (``mcp.json:9: servers.fs: duplicate key (first defined
  on line 4)``), which :func:`json.loads` silently resolves to the last one;
* nesting deeper than ``max_depth`` (default 256) levels. The parser itself is iterative
  (an explicit stack, no recursion), so the limit exists only to protect whatever walks
  the returned value recursively later; the error is clear instead of a ``RecursionError``.

Positions: for a member of an object the recorded position is that of its *key* (the line
a person looks at); for an array element, the start of the element; for the document
itself, the start of the top-level value. Lines and columns are 1-based; columns count
characters (code points), not bytes.

Strings are decoded by the standard library's C ``scanstring`` and every other token is
matched with a compiled regular expression, so multi-megabyte files parse in well under a
second on ordinary hardware.
"""

from __future__ import annotations

import bisect
import json
import json.decoder as _json_decoder
import logging
import os.path
import re
from collections.abc import Callable, Iterator
from typing import Any, TypeAlias

from mcphost.errors import ConfigurationError

__all__ = [
    "DEFAULT_MAX_DEPTH",
    "Document",
    "JSONPath",
    "display_name",
    "format_path",
    "loads",
]

logger = logging.getLogger("mcphost.config")

#: A JSON path: the keys (``str``) and indices (``int``) from the root to a value.
JSONPath: TypeAlias = tuple[str | int, ...]

#: Default bound on nesting of objects and arrays.
DEFAULT_MAX_DEPTH = 256

# The C implementation when available; decodes escapes and refuses control characters.
_scanstring: Callable[[str, int, bool], tuple[str, int]] = _json_decoder.scanstring  # type: ignore[attr-defined]

# JSON whitespace (RFC 8259 §2: space, tab, LF, CR) plus JSONC comments.
_WS_COMMENTS = re.compile(r"(?:[ \t\n\r]+|//[^\n]*|/\*.*?\*/)*", re.DOTALL)
_WS_ONLY = re.compile(r"[ \t\n\r]*")
_COLON = re.compile(r"[ \t\n\r]*:[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_SIMPLE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")
_WS_CHARS = frozenset(" \t\n\r/")
_LITERALS: tuple[tuple[str, Any], ...] = (("true", True), ("false", False), ("null", None))


def display_name(path: str | None) -> str:
    """Return the name to show for a configuration file in messages.

    Messages never carry absolute paths: only the file's base name. Text that did not come
    from a file is called ``<config>``.

    Args:
        path: the file's path, or ``None``.

    Returns:
        The base name of ``path``, or ``"<config>"``.
    """
    if not path:
        return "<config>"
    return os.path.basename(path.rstrip("/\\")) or path


def format_path(path: JSONPath) -> str:
    """Format a JSON path the way error messages show it.

    Keys that look like identifiers are joined with dots, indices in brackets, and any
    other key is quoted in brackets so that the result is unambiguous::

        ("servers", "fs", "args", 1)      -> servers.fs.args[1]
        ("servers", "my.server")          -> servers["my.server"]

    Args:
        path: the keys and indices from the root.

    Returns:
        The dotted path (the empty string for the root).
    """
    parts: list[str] = []
    for part in path:
        if isinstance(part, int):
            parts.append(f"[{part}]")
        elif _SIMPLE_KEY.match(part):
            parts.append(f".{part}" if parts else part)
        else:
            parts.append(f"[{_quote(part)}]")
    return "".join(parts)


def _quote(key: str) -> str:
    # json.dumps escapes control characters; ensure_ascii=False keeps names readable.
    return json.dumps(key, ensure_ascii=False)


class Document:
    """A parsed JSON document: its value and where each part of it came from.

    Attributes:
        value: the document as plain Python values (``dict``, ``list``, ``str``, ``int``,
            ``float``, ``bool``, ``None``); objects keep their key order.
        offsets: for each JSON path, the 0-based character offset of that value (of the key,
            for an object member) in the text.
        path: the file the text came from, if known (kept in full; messages use only its
            base name).
    """

    __slots__ = ("_newlines", "_text", "offsets", "path", "value")

    def __init__(
        self, value: Any, offsets: dict[JSONPath, int], text: str, path: str | None = None
    ) -> None:
        self.value = value
        self.offsets = offsets
        self.path = path
        self._text = text
        self._newlines: list[int] | None = None

    def _line_col(self, offset: int) -> tuple[int, int]:
        if self._newlines is None:
            self._newlines = [m.start() for m in re.finditer("\n", self._text)]
        index = bisect.bisect_left(self._newlines, offset)
        line_start = self._newlines[index - 1] + 1 if index else 0
        return index + 1, offset - line_start + 1

    def location(self, path: JSONPath, *, exact: bool = False) -> tuple[int, int] | None:
        """Return the 1-based ``(line, column)`` of the value at ``path``.

        Args:
            path: keys and indices from the root.
            exact: when false (the default) and ``path`` has no position (for example a
                field that is missing), the position of its nearest ancestor is returned.

        Returns:
            ``(line, column)``, or ``None`` when neither the path nor (unless ``exact``) any
            ancestor has a position.
        """
        probe = tuple(path)
        while True:
            offset = self.offsets.get(probe)
            if offset is not None:
                return self._line_col(offset)
            if exact or not probe:
                return None
            probe = probe[:-1]

    def line(self, path: JSONPath, *, exact: bool = False) -> int | None:
        """Return the 1-based line of the value at ``path`` (see :meth:`location`)."""
        loc = self.location(path, exact=exact)
        return loc[0] if loc else None

    def paths(self) -> Iterator[JSONPath]:
        """Iterate over every JSON path that has a recorded position, in document order."""
        return iter(self.offsets)


class _Frame:
    """One open object or array on the parser's explicit stack."""

    __slots__ = ("container", "key", "path")

    def __init__(self, container: dict[str, Any] | list[Any], path: JSONPath) -> None:
        self.container = container
        self.path = path
        self.key = ""


def loads(
    text: str,
    *,
    path: str | None = None,
    comments: bool = True,
    trailing_commas: bool = True,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> Document:
    """Parse JSON (with JSONC comments and trailing commas) and record every position.

    Args:
        text: the document.
        path: the file it came from; only its base name appears in messages, the full
            value is kept in the error's ``path`` attribute.
        comments: accept ``//`` and ``/* */`` comments.
        trailing_commas: accept a comma before a closing ``}`` or ``]``.
        max_depth: the deepest nesting of objects and arrays accepted.

    Returns:
        The :class:`Document`.

    Raises:
        ConfigurationError: the text is not valid JSON (message
            ``name:line:column: invalid JSON: ...``), an object repeats a key
            (``name:line: field: duplicate key (first defined on line N)``), or the
            nesting is deeper than ``max_depth``.
    """
    parser = _Parser(text, path, comments, trailing_commas, max_depth)
    return parser.parse()


class _Parser:
    __slots__ = ("comments", "doc", "max_depth", "n", "name", "path", "text", "trailing")

    def __init__(
        self, text: str, path: str | None, comments: bool, trailing: bool, max_depth: int
    ) -> None:
        self.text = text
        self.n = len(text)
        self.path = path
        self.name = display_name(path)
        self.comments = comments
        self.trailing = trailing
        self.max_depth = max_depth
        self.doc = Document(None, {}, text, path)

    # -- errors ---------------------------------------------------------------------------

    def _syntax(self, offset: int, what: str) -> ConfigurationError:
        line, col = self.doc._line_col(offset)
        return ConfigurationError(
            f"{self.name}:{line}:{col}: invalid JSON: {what}", path=self.path, line=line
        )

    def _expected(self, pos: int, what: str) -> ConfigurationError:
        text = self.text
        if pos >= self.n:
            return self._syntax(pos, f"{what}, found the end of the document")
        if text.startswith("/*", pos):
            return self._syntax(pos, "unterminated /* comment")
        if not self.comments and text.startswith("//", pos):
            return self._syntax(pos, "comments are not allowed")
        ch = text[pos]
        if ch == "'":
            return self._syntax(pos, f"{what} (strings use double quotes)")
        return self._syntax(pos, what)

    # -- scanning -------------------------------------------------------------------------

    def _skip(self, pos: int) -> int:
        if pos < self.n and self.text[pos] not in _WS_CHARS:
            return pos
        pattern = _WS_COMMENTS if self.comments else _WS_ONLY
        m = pattern.match(self.text, pos)
        return m.end() if m else pos

    def _string(self, pos: int) -> tuple[str, int]:
        # pos is at the opening quote.
        try:
            return _scanstring(self.text, pos + 1, True)
        except _json_decoder.JSONDecodeError as exc:
            msg = exc.msg
            if msg.startswith("Unterminated string"):
                raise self._syntax(pos, "unterminated string") from None
            if msg.startswith("Invalid control character"):
                what = "control character in a string (escape it, e.g. \\n)"
                raise self._syntax(exc.pos, what) from None
            if msg.startswith("Invalid \\uXXXX"):
                raise self._syntax(exc.pos, "invalid \\u escape in a string") from None
            raise self._syntax(exc.pos, "invalid escape in a string") from None

    def _scalar(self, pos: int) -> tuple[Any, int]:
        text = self.text
        ch = text[pos] if pos < self.n else ""
        if ch == '"':
            return self._string(pos)
        if ch == "-" or "0" <= ch <= "9":
            m = _NUMBER.match(text, pos)
            if m is None:
                raise self._syntax(pos, "invalid number")
            end = m.end()
            if m.group(1) is None and m.group(2) is None:
                try:
                    return int(m.group()), end
                except ValueError:  # more digits than int() accepts (3.11+)
                    raise self._syntax(pos, "number too large") from None
            return float(m.group()), end
        for word, value in _LITERALS:
            if text.startswith(word, pos):
                return value, pos + len(word)
        raise self._expected(pos, "expected a value")

    # -- the parser -----------------------------------------------------------------------

    def _key(self, frame: _Frame, pos: int, closing_ok: bool) -> int:
        """Read ``"key" :`` at ``pos``; record it on ``frame``; return the value's offset."""
        text = self.text
        if not text.startswith('"', pos):
            if closing_ok:
                raise self._expected(pos, "expected a property name in double quotes or '}'")
            raise self._expected(pos, "expected a property name in double quotes")
        try:
            key, end = _scanstring(text, pos + 1, True)
        except _json_decoder.JSONDecodeError:
            key, end = self._string(pos)  # raises the error with its position
        obj_path = (*frame.path, key)
        offsets = self.doc.offsets
        if key in frame.container:
            line = self.doc._line_col(pos)[0]
            first_line = self.doc._line_col(offsets[obj_path])[0]
            field = format_path(obj_path)
            raise ConfigurationError(
                f"{self.name}:{line}: {field}: duplicate key (first defined on line {first_line})",
                path=self.path,
                line=line,
                field=field,
            )
        frame.key = key
        offsets[obj_path] = pos
        m = _COLON.match(text, end)
        if m is not None and not text.startswith("/", m.end()):
            return m.end()
        end = self._skip(end)
        if not text.startswith(":", end):
            raise self._expected(end, "expected ':' after a property name")
        return self._skip(end + 1)

    def parse(self) -> Document:
        text = self.text
        n = self.n
        offsets = self.doc.offsets
        ws = (_WS_COMMENTS if self.comments else _WS_ONLY).match
        stack: list[_Frame] = []
        pos = 1 if text.startswith("\ufeff") else 0
        pos = self._skip(pos)
        if pos >= n:
            raise self._syntax(pos, "empty document, expected a JSON value")
        path: JSONPath = ()
        offsets[path] = pos
        while True:
            # ---- a value starts at pos; its path is `path` ------------------------------
            ch = text[pos] if pos < n else ""
            value: Any
            if ch in {"{", "["}:
                if len(stack) >= self.max_depth:
                    raise self._syntax(
                        pos, f"nesting deeper than {self.max_depth} levels is not accepted"
                    )
                after = self._skip(pos + 1)
                if ch == "{":
                    if after < n and text[after] == "}":
                        value, pos = {}, after + 1
                    else:
                        frame = _Frame({}, path)
                        stack.append(frame)
                        pos = self._key(frame, after, True)
                        path = (*frame.path, frame.key)
                        continue
                elif after < n and text[after] == "]":
                    value, pos = [], after + 1
                else:
                    frame = _Frame([], path)
                    stack.append(frame)
                    path = (*path, 0)
                    offsets[path] = after
                    pos = after
                    continue
            elif ch == '"':
                try:
                    value, pos = _scanstring(text, pos + 1, True)
                except _json_decoder.JSONDecodeError:
                    value, pos = self._string(pos)  # raises the error with its position
            else:
                value, pos = self._scalar(pos)
            # ---- the value is complete: attach it to its parent(s) ------------------------
            while True:
                if not stack:
                    end = self._skip(pos)
                    if end < n:
                        raise self._syntax(end, "unexpected data after the JSON value")
                    self.doc.value = value
                    return self.doc
                frame = stack[-1]
                container = frame.container
                is_object = isinstance(container, dict)
                if is_object:
                    container[frame.key] = value  # type: ignore[call-overload]
                else:
                    container.append(value)  # type: ignore[union-attr]
                m = ws(text, pos)
                pos = m.end() if m else pos
                closing = "}" if is_object else "]"
                ch = text[pos] if pos < n else ""
                if ch == ",":
                    comma = pos
                    m = ws(text, pos + 1)
                    pos = m.end() if m else pos + 1
                    if pos < n and text[pos] == closing:
                        if not self.trailing:
                            raise self._syntax(comma, "trailing comma is not allowed")
                        value = stack.pop().container
                        pos += 1
                        continue
                    if is_object:
                        pos = self._key(frame, pos, False)
                        path = (*frame.path, frame.key)
                    else:
                        path = (*frame.path, len(container))
                        offsets[path] = pos
                    break
                if ch == closing:
                    value = stack.pop().container
                    pos += 1
                    continue
                raise self._expected(pos, f"expected ',' or '{closing}'")
