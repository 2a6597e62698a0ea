"""The other shapes of a server configuration people were promised, read as they are.

Layer 1 (pure). Before the schema sees a document, :func:`normalise` rewrites these into
the canonical shape (``{"servers" | "mcpServers": {name: entry}}``), keeping a map from each
rewritten path to the path the user wrote, so that an error still names the user's field
and line:

- the minimal aggregator's entries: ``"endpoint"`` for ``url``, and ``"command"`` given as
  an array (``["npx", "-y", "pkg"]``: the program, then its arguments);
- the client-module revision's bare map of servers, ``{"id": {"name", "command", "args",
  "env", "enabled"}}``, taken for one only when every top-level value is an object with a
  ``command``, ``url`` or ``endpoint`` and no top-level key means anything else;
- the Talk-2-Tables orchestrator's ``mcp_servers`` map (with ``name``, ``url``,
  ``priority``, ``domains``, ``capabilities`` and ``transport`` per server) and its
  ``orchestration`` block (``resource_cache_ttl`` is the cache's ``ttl``, ``log_level`` the
  ``logLevel``, ``fail_fast`` the ``failFast``, ``enable_logging`` the ``enableLogging``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .jsonpos import JSONPath

__all__ = ["normalise"]

_TOP = frozenset({"servers", "mcpServers", "inputs", "cache", "logLevel", "failFast", "enableLogging", "$schema",
                  "mcp_servers", "orchestration"})
#: The orchestration block's keys -> the canonical top-level keys they become.
_ORCHESTRATION = {"log_level": "logLevel", "fail_fast": "failFast", "enable_logging": "enableLogging"}
_ENTRY_MARKS = ("command", "url", "endpoint")


def normalise(data: Any) -> tuple[Any, dict[JSONPath, JSONPath], list[tuple[JSONPath, str]]]:
    """``(canonical data, {canonical path: written path}, notes)``; data already canonical
    comes back as it is (not copied)."""
    paths: dict[JSONPath, JSONPath] = {}
    notes: list[tuple[JSONPath, str]] = []
    if not isinstance(data, Mapping):
        return data, paths, notes
    if _bare_map(data):
        data = {"mcpServers": dict(data)}
        for name in data["mcpServers"]:
            paths[("mcpServers", name)] = (name,)
        notes.append(((), "read as a map of servers (the client-module dialect)"))
    if "mcp_servers" in data and "mcpServers" not in data:
        data = {k: v for k, v in data.items() if k != "mcp_servers"} | {"mcpServers": data["mcp_servers"]}
        if isinstance(data["mcpServers"], Mapping):
            for name in data["mcpServers"]:
                paths[("mcpServers", name)] = ("mcp_servers", name)
    if "orchestration" in data:
        data = _orchestration(dict(data), notes, paths)
    for top in ("servers", "mcpServers"):
        block = data.get(top)
        if not isinstance(block, Mapping):
            continue
        rewritten = {}
        changed = False
        for name, entry in block.items():
            new = _entry(entry, (top, name), paths)
            changed = changed or new is not entry
            rewritten[name] = new
        if changed:
            data = {**data, top: rewritten}
    return data, paths, notes


def _bare_map(data: Mapping[str, Any]) -> bool:
    if not data or any(key in _TOP for key in data):
        return False
    return all(isinstance(v, Mapping) and any(mark in v for mark in _ENTRY_MARKS) for v in data.values())


def _orchestration(data: dict[str, Any], notes: list[tuple[JSONPath, str]],
                   paths: dict[JSONPath, JSONPath]) -> dict[str, Any]:
    block = data.pop("orchestration")
    if not isinstance(block, Mapping):
        return data
    ttl = block.get("resource_cache_ttl")
    if ttl is not None and "cache" not in data:
        data["cache"] = {"ttl": ttl}
    for key, canonical in _ORCHESTRATION.items():
        value = block.get(key)
        if value is not None and canonical not in data:
            data[canonical] = value
            paths[(canonical,)] = ("orchestration", key)
    for key in block:
        if key != "resource_cache_ttl" and key not in _ORCHESTRATION:
            notes.append((("orchestration", key), "accepted and ignored"))
    return data


def _entry(entry: Any, spath: JSONPath, paths: dict[JSONPath, JSONPath]) -> Any:
    if not isinstance(entry, Mapping):
        return entry
    out = entry
    if "endpoint" in entry and "url" not in entry:
        out = {k: v for k, v in out.items() if k != "endpoint"} | {"url": entry["endpoint"]}
        url: JSONPath = (*spath, "url")
        paths[url] = (*spath, "endpoint")
    command = entry.get("command")
    if isinstance(command, list) and command and all(isinstance(part, str) for part in command):
        out = dict(out)
        out["command"] = command[0]
        out["args"] = [*command[1:], *(entry.get("args") or [])] if isinstance(entry.get("args", []), list) else command[1:]
        cmd: JSONPath = (*spath, "command")
        paths[cmd] = (*spath, "command", 0)
        for i in range(1, len(command)):
            arg: JSONPath = (*spath, "args", i - 1)
            paths[arg] = (*spath, "command", i)
    return out
