"""Skills: the ``io.modelcontextprotocol/skills`` extension (SEP-2640), client side.

Layer 4. A server that declares the extension lists its skills with ``skills/list``: each
entry names a skill's ``SKILL.md`` (``uri``), its YAML ``frontmatter`` and its files
(``resources``: ``uri``, ``digest`` ``sha256:<hex>``, ``size`` in bytes). The SEP's rules for
the host, kept here:

- nothing is read ahead of need: listing reads no file; a file is read when the application
  loads the skill (:meth:`Skills.load`) or asks for one of its files (:meth:`Skills.read_file`);
- every file read is verified against its entry before it is used: its byte length against
  ``size`` (a mismatch fails, whatever the digest), then its SHA-256 against ``digest``;
- a ``SKILL.md`` is loaded only when the frontmatter it carries equals, field by field, the
  entry's ``frontmatter``;
- unverified content is never handed over: each failure is a :class:`ProtocolError` naming
  the skill, the file and what differed.

The frontmatter is read by a small YAML subset (``key: value`` scalars, nested mappings and
lists by indentation, flow lists of scalars, quoted strings); a ``SKILL.md`` whose
frontmatter goes beyond it is not loaded, with an error saying so: a host must not load a
skill it cannot compare.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
from typing import TYPE_CHECKING, Any

from ..errors import ProtocolError, RoutingError, UsageError
from ..schema.equality import freeze
from ..types import JSONObject
from . import requests
from .registry import list_all

if TYPE_CHECKING:
    from ..bounds import Bounds
    from .router import Router

__all__ = ["EXTENSION", "SKILL_FILE", "Skills", "parse_frontmatter"]

EXTENSION = "io.modelcontextprotocol/skills"
SKILL_FILE = "SKILL.md"
_DIGEST = re.compile(r"sha256:([0-9a-f]{64})")
#: A file larger than this is refused before it is hashed (the SEP's bound on a whole skill).
MAX_SKILL_BYTES = 16 * 1024 * 1024
_FRONTMATTER = re.compile(r"---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|$)", re.DOTALL)


class FrontmatterError(ValueError):
    """The frontmatter is not the YAML subset this module reads."""


class Skills:
    """What :class:`~mcphost.host.facade.MCPHost` does with skills: list, load, read a file.

    The entries of the last listing of each server are kept: a skill is loaded against the
    entry the server listed, never against what the file says of itself.
    """

    def __init__(self, router: Router, bounds: Bounds) -> None:
        self._router = router
        self._bounds = bounds
        self._entries: dict[tuple[str, str], JSONObject] = {}

    async def list(self, server: str) -> list[JSONObject]:
        """``skills/list`` of ``server`` (every page): its entries, each with ``server`` added.

        Reads no skill file. Entries without a string ``uri`` or an object ``frontmatter``
        are the server's ``ProtocolError``.
        """
        handle = self._router.handle(server)
        session = handle.require_ready()
        bounds = self._bounds
        items = await requests.timed(handle, list_all(
            session, "skills/list", "skills", bounds.max_pages, bounds.max_list_items), "skills/list")
        entries: list[JSONObject] = []
        for index, item in enumerate(items):
            if not (isinstance(item, dict) and isinstance(item.get("uri"), str)
                    and isinstance(item.get("frontmatter"), dict)):
                raise ProtocolError(f"skills/list entry {index} has no string 'uri' and object 'frontmatter'",
                                    server=handle.name)
            entries.append(item)
        for key in [key for key in self._entries if key[0] == handle.name]:
            del self._entries[key]
        for entry in entries:
            self._entries[(handle.name, entry["uri"])] = entry
        return [{**entry, "server": handle.name} for entry in entries]

    async def load(self, uri: str, server: str) -> JSONObject:
        """Read the skill's ``SKILL.md``, verify it, and return the skill:
        ``{"uri", "server", "frontmatter", "body", "resources"}`` (``body``: the text after the
        frontmatter).

        Raises:
            RoutingError: ``server`` did not list a skill ``uri`` (list first).
            ProtocolError: the file fails verification (size, digest, frontmatter).
        """
        entry = self._entry(uri, server)
        text = await self._read_verified(entry, uri, server)
        match = _FRONTMATTER.match(text[1:] if text.startswith("\ufeff") else text)
        if match is None:
            raise _refused(server, uri, uri, "its SKILL.md has no leading --- frontmatter block")
        try:
            found = parse_frontmatter(match.group(1))
        except FrontmatterError as exc:
            raise _refused(server, uri, uri, f"its frontmatter cannot be compared ({exc})") from None
        listed = entry["frontmatter"]
        differing = sorted(name for name in {*found, *listed}
                           if freeze(found.get(name)) != freeze(listed.get(name)))
        if differing:
            raise _refused(server, uri, uri, "its frontmatter differs from the listed entry's in "
                           + ", ".join(repr(name) for name in differing))
        body = (text[1:] if text.startswith("\ufeff") else text)[match.end():]
        return {"uri": uri, "server": server, "frontmatter": found, "body": body,
                "resources": list(entry.get("resources") or [])}

    async def read_file(self, skill: str, uri: str, server: str) -> str | bytes:
        """One file of the skill ``skill``, verified against its entry: text as ``str``, a blob
        as ``bytes``.

        Raises:
            RoutingError: no listed skill ``skill``, or it lists no file ``uri``.
            ProtocolError: the file fails verification.
        """
        entry = self._entry(skill, server)
        data = await self._read_bytes(entry, skill, uri, server)
        return data[1] if data[0] else data[2]

    # -- the parts -----------------------------------------------------------------------------

    def _entry(self, uri: str, server: str) -> JSONObject:
        if not isinstance(uri, str) or not isinstance(server, str):
            raise UsageError("a skill is named by its uri (a string) and its server (a string)")
        name = self._router.handle(server).name
        entry = self._entries.get((name, uri))
        if entry is None:
            raise RoutingError(f"server {name!r} listed no skill {uri!r} (call list_skills first)", server=name)
        return entry

    async def _read_verified(self, entry: JSONObject, uri: str, server: str) -> str:
        is_text, text, _raw = await self._read_bytes(entry, uri, uri, server)
        if not is_text:
            raise _refused(server, uri, uri, "its SKILL.md came as a blob, not text")
        return text

    async def _read_bytes(self, entry: JSONObject, skill: str, uri: str, server: str) -> tuple[bool, str, bytes]:
        """(is text, text, bytes) of ``uri``, verified against the file's entry in ``entry``."""
        listed = [item for item in entry.get("resources") or () if isinstance(item, dict) and item.get("uri") == uri]
        if not listed:
            raise RoutingError(f"skill {skill!r} lists no file {uri!r}", server=server)
        expected = listed[0]
        size, digest = expected.get("size"), expected.get("digest")
        wanted = _DIGEST.fullmatch(digest) if isinstance(digest, str) else None
        if type(size) is not int or size < 0 or wanted is None:
            raise _refused(server, skill, uri, "its entry has no byte 'size' and 'sha256:<hex>' digest to verify it by")
        if size > MAX_SKILL_BYTES:
            raise _refused(server, skill, uri, f"its entry says {size} bytes, over the {MAX_SKILL_BYTES} a skill may hold")
        handle = self._router.handle(server)
        session = handle.require_ready()
        result = await requests.timed(handle, session.request("resources/read", {"uri": uri}), "resources/read")
        contents = result.get("contents") if isinstance(result, dict) else None
        block = next((c for c in contents if isinstance(c, dict) and c.get("uri") == uri), None) \
            if isinstance(contents, list) else None
        if block is None:
            raise _refused(server, skill, uri, "resources/read returned no contents for it")
        is_text = isinstance(block.get("text"), str)
        if is_text:
            text = block["text"]
            raw = text.encode("utf-8")
        elif isinstance(block.get("blob"), str):
            text = ""
            try:
                raw = base64.b64decode(block["blob"], validate=True)
            except (binascii.Error, ValueError):
                raise _refused(server, skill, uri, "its blob is not base64") from None
        else:
            raise _refused(server, skill, uri, "its contents have neither text nor blob")
        if len(raw) != size:
            raise _refused(server, skill, uri, f"it is {len(raw)} bytes where its entry says {size}")
        if not hmac.compare_digest(hashlib.sha256(raw).hexdigest(), wanted.group(1)):
            raise _refused(server, skill, uri, "its SHA-256 is not the entry's digest")
        return is_text, text, raw


def _refused(server: str, skill: str, uri: str, why: str) -> ProtocolError:
    what = f"skill {skill!r}" if uri == skill else f"file {uri!r} of skill {skill!r}"
    return ProtocolError(f"{what} failed verification and was not used: {why}", server=server)


# -- the YAML subset of a frontmatter ----------------------------------------------------------

_KEY = re.compile(r"([A-Za-z0-9_][A-Za-z0-9_.\-/ ]*?)[ \t]*:(?:[ \t]+(.*))?$")
_INT = re.compile(r"[-+]?[0-9]+")
_FLOAT = re.compile(r"[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")


def parse_frontmatter(text: str) -> dict[str, Any]:
    """The mapping a SKILL.md frontmatter holds, read by a YAML subset.

    Raises:
        FrontmatterError: a line outside the subset (block scalars, anchors, flow mappings,
            tabs for indentation, a key given twice...).
    """
    lines = []
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        indent = len(line) - len(line.lstrip(" "))
        if line[indent:indent + 1] == "\t":
            raise FrontmatterError(f"line {number} is indented with a tab")
        lines.append((number, indent, line[indent:].rstrip()))
    value, end = _block(lines, 0, 0)
    if end != len(lines):
        raise FrontmatterError(f"line {lines[end][0]} is indented out of place")
    if not isinstance(value, dict):
        raise FrontmatterError("it is not a mapping")
    return value


def _block(lines: list[tuple[int, int, str]], start: int, indent: int) -> tuple[Any, int]:
    """The mapping or list whose lines begin at ``start`` with ``indent``; (value, next line)."""
    if start >= len(lines):
        return {}, start
    if lines[start][2].startswith("- ") or lines[start][2] == "-":
        items: list[Any] = []
        i = start
        while i < len(lines) and lines[i][1] == indent and (lines[i][2].startswith("- ") or lines[i][2] == "-"):
            rest = lines[i][2][1:].strip()
            if not rest:
                raise FrontmatterError(f"line {lines[i][0]}: a list item must be a scalar here")
            items.append(_scalar(rest, lines[i][0]))
            i += 1
        return items, i
    mapping: dict[str, Any] = {}
    i = start
    while i < len(lines) and lines[i][1] == indent:
        number, _, content = lines[i]
        match = _KEY.match(content)
        if match is None:
            raise FrontmatterError(f"line {number} is not 'key: value'")
        key, rest = match.group(1), match.group(2)
        if key in mapping:
            raise FrontmatterError(f"line {number} repeats the key {key!r}")
        i += 1
        if rest is None or not rest.strip():
            if i < len(lines) and lines[i][1] > indent:
                mapping[key], i = _block(lines, i, lines[i][1])
            elif i < len(lines) and lines[i][1] == indent and lines[i][2].startswith("-"):
                mapping[key], i = _block(lines, i, indent)
            else:
                mapping[key] = None
        else:
            mapping[key] = _scalar(rest.strip(), number)
    if i < len(lines) and lines[i][1] > indent:
        raise FrontmatterError(f"line {lines[i][0]} is indented out of place")
    return mapping, i


def _scalar(text: str, number: int) -> Any:
    if text.startswith('"'):
        if not text.endswith('"') or len(text) < 2:
            raise FrontmatterError(f"line {number}: an unclosed double-quoted string")
        try:
            return json.loads(text)
        except ValueError:
            raise FrontmatterError(f"line {number}: a double-quoted string this host does not read") from None
    if text.startswith("'"):
        if not text.endswith("'") or len(text) < 2:
            raise FrontmatterError(f"line {number}: an unclosed single-quoted string")
        return text[1:-1].replace("''", "'")
    if text.startswith("["):
        if not text.endswith("]"):
            raise FrontmatterError(f"line {number}: an unclosed flow list")
        inner = text[1:-1].strip()
        return [_scalar(part.strip(), number) for part in inner.split(",")] if inner else []
    if text[0] in "{|>&*!%@`":
        raise FrontmatterError(f"line {number} uses YAML this host does not read ({text[0]!r})")
    if " #" in text:
        text = text.split(" #", 1)[0].rstrip()
    if text in ("null", "Null", "NULL", "~"):
        return None
    if text in ("true", "True", "TRUE"):
        return True
    if text in ("false", "False", "FALSE"):
        return False
    if _INT.fullmatch(text):
        return int(text)
    if _FLOAT.fullmatch(text):
        return float(text)
    if ": " in text:
        raise FrontmatterError(f"line {number}: a plain value holds ': ' (quote it)")
    return text
