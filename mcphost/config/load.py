"""Loading ``mcp.json``: the document, its inputs, its dependency graph; the public functions.

The order of the checks: the JSON(C) text (:mod:`.jsonpos`), the structure (the schema,
:mod:`.schema_errors`), then each server entry (:mod:`.entry`, which expands references with
:mod:`.expand`), then the rules across servers (one name per server across dialects,
dependencies known, enabled and acyclic).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from mcphost.errors import ConfigurationError

from .dialects import normalise
from .entry import EntryLoader
from .jsonpos import JSONPath, display_name, loads
from .model import CacheSettings, FrozenMap, HostConfig, InputSpec, ServerConfig
from .schema_errors import config_schema, plain, suggest

__all__ = ["config_from_data", "parse_config", "required_inputs"]

_TOP = ("servers", "mcpServers", "inputs", "cache", "logLevel", "failFast", "enableLogging")


class _Loader(EntryLoader):
    """Validates one configuration; holds what every check needs to report an error."""

    def check_schema(self, data: Any) -> None:
        """Validate ``data`` against the schema; raise the first error in document order."""
        problems = config_schema().problems(data)
        if problems:
            first = problems[0]
            path = first.path
            server = None
            if len(path) >= 2 and path[0] in ("servers", "mcpServers") and isinstance(path[1], str):
                server = path[1]
            self.error(path, first.message, server=server)

    # -- the document -----------------------------------------------------------------------

    def canonical(self, data: Any) -> Any:
        """``data`` in the canonical shape (another dialect rewritten, its paths kept)."""
        data, self.paths, notes = normalise(data)
        for fpath, message in notes:
            self.note(fpath, message)
        return data

    def load(self, data: Any, only: Sequence[str] | None = None) -> HostConfig:
        data = self.canonical(data)
        left_out: list[tuple[str, str]] = []
        if only is not None:
            data, left_out = _selected(data, only)
        self.check_schema(data)
        for key in data:
            if key not in _TOP:
                hint = suggest(key, _TOP)
                self.note((key,), f"unknown top-level key ignored{hint}")
        self.load_inputs(data.get("inputs", ()))
        entries: dict[str, tuple[str, Any]] = {}
        for top in ("servers", "mcpServers"):
            for name, raw in data.get(top, {}).items():
                if name in entries:
                    other = entries[name][0]
                    other_line = self.doc.line((other, name)) if self.doc is not None else None
                    where = f" (line {other_line})" if other_line is not None else ""
                    self.error(
                        (top, name),
                        f'server "{name}" is also defined in "{other}"{where}',
                        server=name,
                    )
                entries[name] = (top, raw)
        servers: dict[str, ServerConfig] = {}
        for name, (top, raw) in entries.items():
            servers[name] = self.load_server(top, name, raw)
        unresolved = dict(self.deferred or {})
        self.check_dependencies(servers, entries, set(unresolved))
        duplicates = _duplicates({n: c for n, c in servers.items() if n not in unresolved})
        for group in duplicates:
            for name in group[1:]:
                self.note((entries[name][0], name), f"the same server as {group[0]!r} (identical command, "
                          "arguments, environment and URL): one server configured twice?")
        for name, _top in [*left_out, *((n, "") for n in unresolved)]:
            # Not selected: neither expanded nor validated (an unset variable or a broken
            # entry there is no error for the servers that were chosen); listed, disabled.
            # An unresolved server is the same until start_server() reads it again.
            servers[name] = ServerConfig(name=name, type="stdio", enabled=False)
        return HostConfig(
            servers=FrozenMap(servers.items()),
            path=self.path,
            inputs=tuple(self.declared_inputs.values()),
            notes=tuple(self.notes),
            secrets=frozenset(self.secrets),
            left_out=frozenset([*(name for name, _top in left_out), *unresolved]),
            unresolved=unresolved,
            cache=_cache(data.get("cache")),
            log_level=data["logLevel"].upper() if "logLevel" in data else None,
            fail_fast=data.get("failFast"),
            enable_logging=data.get("enableLogging"),
            duplicates=tuple(duplicates),
        )

    def load_inputs(self, raw: Sequence[Mapping[str, Any]]) -> None:
        """Record the declared inputs (already validated by the schema)."""
        for i, item in enumerate(raw):
            input_id = item["id"]
            if input_id in self.declared_inputs:
                self.error(("inputs", i, "id"), f'input "{input_id}" is declared twice')
            options = tuple(
                option["value"] if isinstance(option, Mapping) else option
                for option in item.get("options", ())
            )
            self.declared_inputs[input_id] = InputSpec(
                id=input_id,
                description=item.get("description", ""),
                password=item.get("password", False),
                default=item.get("default"),
                type=item.get("type", "promptString"),
                options=options,
            )

    def check_dependencies(
        self, servers: Mapping[str, ServerConfig], entries: Mapping[str, tuple[str, Any]],
        unresolved: set[str] | frozenset[str] = frozenset(),
    ) -> None:
        for name, server in servers.items():
            top = entries[name][0]
            for i, dep in enumerate(server.dependencies):
                fpath: JSONPath = (top, name, "dependencies", i)
                if dep not in servers:
                    hint = suggest(dep, list(servers))
                    self.error(fpath, f'unknown server "{dep}"{hint}', server=name)
                if server.enabled and not servers[dep].enabled and dep not in unresolved:
                    self.error(fpath, f'depends on "{dep}", which is disabled', server=name)
        # Cycle detection: iterative depth-first search, reporting the cycle's path.
        state: dict[str, int] = {}  # 1 = on the current path, 2 = finished
        for start in servers:
            if state.get(start):
                continue
            stack: list[tuple[str, int]] = [(start, 0)]
            trail: list[str] = [start]
            state[start] = 1
            while stack:
                node, index = stack[-1]
                deps = servers[node].dependencies
                if index < len(deps):
                    stack[-1] = (node, index + 1)
                    dep = deps[index]
                    if state.get(dep) == 1:
                        cycle = [*trail[trail.index(dep) :], dep]
                        fpath = (entries[node][0], node, "dependencies", index)
                        self.error(fpath, "dependency cycle: " + " -> ".join(cycle), server=node)
                    if not state.get(dep):
                        state[dep] = 1
                        stack.append((dep, 0))
                        trail.append(dep)
                else:
                    state[node] = 2
                    stack.pop()
                    trail.pop()



def parse_config(
    text: str,
    *,
    path: str | None = None,
    environ: Mapping[str, str],
    workspace_folder: str | None = None,
    user_home: str | None = None,
    inputs: Mapping[str, str] | None = None,
    read_text: Callable[[str], str] | None = None,
    only: Sequence[str] | None = None,
    defer_unset: bool = False,
) -> HostConfig:
    """Parse, expand and validate the text of an ``mcp.json`` file.

    Args:
        text: the file's content (JSON with optional ``//``/``/* */`` comments and
            trailing commas).
        path: the file's path. Its base name appears in messages; relative ``envFile``,
            ``cwd`` and roots are resolved against its directory.
        environ: the variables ``${VAR}`` and ``${env:VAR}`` read (usually ``os.environ``).
        workspace_folder: the value of ``${workspaceFolder}``. Defaults to the directory
            of ``path`` (its parent when that directory is ``.vscode`` or ``.cursor``).
        user_home: the value of ``${userHome}`` and of a leading ``~`` in paths. Defaults
            to ``environ["HOME"]`` (or ``USERPROFILE``).
        inputs: values for ``${input:id}``, already obtained by the application (see
            :func:`required_inputs`).
        read_text: reads an ``envFile`` (``path -> text``); required only when a server
            uses ``envFile``.
        only: expand and validate only these servers and what they depend on; the others
            are listed, disabled, and nothing in them can be an error.
        defer_unset: a server with an unset ``${VAR}`` is not an error of the document:
            it is listed disabled, with its error in ``HostConfig.unresolved`` (the host's
            ``require_all=False`` reports it failed and serves the others).

    Returns:
        The validated configuration.

    Raises:
        ConfigurationError: the text is not valid JSON(C) or the configuration is invalid;
            the message reads ``file:line: field: what is wrong``.
    """
    doc = loads(text, path=path)
    loader = _Loader(doc, path=path, environ=environ, workspace_folder=workspace_folder, user_home=user_home,
                     inputs=inputs, read_text=read_text)
    loader.deferred = {} if defer_unset else None
    return loader.load(doc.value, only)


def config_from_data(
    data: Mapping[str, Any],
    *,
    path: str | None = None,
    environ: Mapping[str, str],
    workspace_folder: str | None = None,
    user_home: str | None = None,
    inputs: Mapping[str, str] | None = None,
    read_text: Callable[[str], str] | None = None,
    only: Sequence[str] | None = None,
    defer_unset: bool = False,
) -> HostConfig:
    """Validate a configuration given as Python data (for example built in code).

    Same rules and keywords as :func:`parse_config`; messages carry no line numbers
    (lists may be given as tuples).

    Args:
        data: the configuration, shaped like the JSON file.
        path: a path to resolve relative paths against and to name in messages.
        environ: see :func:`parse_config`.
        workspace_folder: see :func:`parse_config`.
        user_home: see :func:`parse_config`.
        inputs: see :func:`parse_config`.
        read_text: see :func:`parse_config`.
        defer_unset: see :func:`parse_config`.

    Returns:
        The validated configuration.

    Raises:
        ConfigurationError: the configuration is invalid.
    """
    loader = _Loader(None, path=path, environ=environ, workspace_folder=workspace_folder, user_home=user_home,
                     inputs=inputs, read_text=read_text)
    loader.deferred = {} if defer_unset else None
    return loader.load(_data_as_json(data, path), only)


def required_inputs(
    text: str | Mapping[str, Any], *, path: str | None = None, only: Sequence[str] | None = None
) -> list[InputSpec]:
    """List the ``${input:id}`` values a configuration needs, before loading it.

    Only the fields that are expanded are scanned (command, args, env, cwd, url, headers,
    envFile, roots), and only in enabled servers. Inputs declared in ``"inputs"`` come
    with their description, password flag and default; an id referenced without a
    declaration gets an empty description and ``password=True`` (unknown: treat as secret).

    Args:
        text: the file's text, or the configuration as Python data.
        path: the file's path (for messages).

    Returns:
        One :class:`InputSpec` per referenced id, in order of first reference.

    Raises:
        ConfigurationError: the text is not valid JSON, the configuration does not match
            the schema (the same error :func:`parse_config` would raise), or an input id is
            declared twice.
    """
    doc = loads(text, path=path) if isinstance(text, str) else None
    data = doc.value if doc is not None else _data_as_json(text, path)
    loader = _Loader(doc, path=path, environ={}, workspace_folder=None, user_home=None, inputs=None, read_text=None)
    data = loader.canonical(data)
    if only is not None:
        data, _ = _selected(data, only)  # the inputs of the servers chosen, and no other
    loader.check_schema(data)
    loader.load_inputs(data.get("inputs", ()))
    loader.collected_inputs = []
    for top in ("servers", "mcpServers"):
        for name, raw in data.get(top, {}).items():
            if raw.get("enabled") is False or raw.get("disabled") is True:
                continue
            for fpath, value in _expandable_strings((top, name), raw):
                loader.expand(fpath, value, name)
    specs = []
    for input_id in loader.collected_inputs:
        spec = loader.declared_inputs.get(input_id)
        specs.append(spec if spec is not None else InputSpec(id=input_id, password=True))
    return specs


def _selected(data: Any, only: Sequence[str]) -> tuple[Any, list[tuple[str, str]]]:
    """``data`` with only the servers in ``only`` and what they depend on (transitively,
    read from the raw entries), and the (name, section) of every entry left out."""
    if not isinstance(data, Mapping):
        return data, []
    sections = {top: data[top] for top in ("servers", "mcpServers") if isinstance(data.get(top), Mapping)}
    raw = {name: entry for block in sections.values() for name, entry in block.items()}
    keep: set[str] = set()
    todo = [name for name in only if name in raw]
    while todo:
        name = todo.pop()
        if name in keep:
            continue
        keep.add(name)
        entry = raw[name]
        deps = entry.get("dependencies") if isinstance(entry, Mapping) else None
        if isinstance(deps, (list, tuple)):
            todo.extend(d for d in deps if isinstance(d, str) and d in raw)
    left_out = [(name, top) for top, block in sections.items() for name in block if name not in keep]
    filtered = dict(data)
    for top, block in sections.items():
        filtered[top] = {name: entry for name, entry in block.items() if name in keep}
    return filtered, left_out


def _data_as_json(data: Any, path: str | None) -> Any:
    try:
        return plain(data)
    except RecursionError:
        raise ConfigurationError(
            f"{display_name(path)}: the configuration is nested too deeply", path=path
        ) from None


def _expandable_strings(spath: JSONPath, raw: Mapping[str, Any]) -> Iterator[tuple[JSONPath, str]]:
    for key in ("command", "cwd", "url", "envFile"):
        if isinstance(raw.get(key), str):
            yield (*spath, key), raw[key]
    for key in ("args", "roots"):
        items = raw.get(key)
        if isinstance(items, (list, tuple)):
            for i, item in enumerate(items):
                if isinstance(item, str):
                    yield (*spath, key, i), item
    for key in ("env", "headers"):
        mapping = raw.get(key)
        if isinstance(mapping, Mapping):
            for k, v in mapping.items():
                if isinstance(v, str):
                    yield (*spath, key, k), v


def _cache(raw: Mapping[str, Any] | None) -> CacheSettings:
    default = CacheSettings()
    if not raw:
        return default
    ttl = raw.get("ttl", default.ttl)
    return CacheSettings(
        ttl=float(ttl) if math.isfinite(ttl) else default.ttl,
        max_entries=int(raw.get("maxEntries", default.max_entries)),
        max_bytes=int(raw.get("maxBytes", default.max_bytes)),
    )


def _duplicates(servers: Mapping[str, ServerConfig]) -> list[tuple[str, ...]]:
    """Groups of enabled servers whose definitions start the same server (interface rule 2
    of the host specification: "duplicate servers"): same type, command, arguments,
    environment, directory, URL and headers, whatever their names and settings."""
    groups: dict[tuple[object, ...], list[str]] = {}
    for name, server in servers.items():
        if server.enabled:
            identity = (server.type, server.command, server.args, tuple(sorted(server.env.items())), server.cwd,
                        server.url, tuple(sorted(server.headers.items())))
            groups.setdefault(identity, []).append(name)
    return [tuple(names) for names in groups.values() if len(names) > 1]
