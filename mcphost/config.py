"""Configuration: parsing, expansion and validation of ``mcp.json``.

This module owns the meaning of an ``mcp.json`` file: which dialects are accepted, which
fields a server entry may carry, how ``${...}`` references are expanded, and what is an
error. It turns text (or a dict built in code) into frozen :class:`HostConfig` /
:class:`ServerConfig` values, or raises :class:`~mcphost.errors.ConfigurationError` with a
message of the form ``mcp.json:12: servers.brave.env.BRAVE_API_KEY: ...``.

It is a layer-1 module (no I/O): the environment, the user's home directory, the workspace
folder, the values of ``${input:...}`` prompts and a ``read_text(path)`` function (for
``envFile``) are all passed in by the caller. The full format is described in
``docs/config.md``; the JSON Schema for editors is ``schemas/mcp.json.schema.json``.

Messages never carry the value of a variable (it may be a secret) nor absolute paths: a
file is named by its base name; the full path is kept in the error's ``path`` attribute.
"""

from __future__ import annotations

import difflib
import fnmatch
import functools
import json
import logging
import math
import os.path
import posixpath
import re
import urllib.parse
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

from mcphost.errors import ConfigurationError
from mcphost.jsonpos import Document, JSONPath, display_name, format_path, loads

__all__ = [
    "DEFAULT_TIMEOUT",
    "SERVER_NAME_PATTERN",
    "HostConfig",
    "InputSpec",
    "Limits",
    "ServerConfig",
    "ToolFilter",
    "config_from_data",
    "parse_config",
    "parse_memory",
    "required_inputs",
]

logger = logging.getLogger("mcphost.config")

#: Start-up timeout (seconds) when a server sets none.
DEFAULT_TIMEOUT = 30.0

#: Server names: the host routes ``server.tool`` on the first dot, so names have none.
SERVER_NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9_-]*$"
_SERVER_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*\Z")

_TYPE_ALIASES = {
    "stdio": "stdio",
    "http": "http",
    "streamable-http": "http",
    "streamablehttp": "http",
    "streamable_http": "http",
    "sse": "sse",
    "websocket": "websocket",
    "ws": "websocket",
}

# The server fields mcphost understands (JSON spelling).
_FIELDS = (
    "type",
    "command",
    "args",
    "env",
    "envFile",
    "cwd",
    "url",
    "headers",
    "timeout",
    "requestTimeout",
    "shutdownTimeout",
    "dependencies",
    "enabled",
    "limits",
    "tools",
    "priority",
    "domains",
    "roots",
)
# Fields other clients write into the same entries. Accepted and ignored (with a note);
# "disabled" is honoured (enabled = not disabled), "transport"/"transportType" are read as
# the type when "type" is absent.
_FOREIGN_FIELDS = frozenset(
    {
        "description",
        "disabled",
        "autoApprove",
        "alwaysAllow",
        "transport",
        "transportType",
        "gallery",
        "version",
        "dev",
        "sandbox",
        "trust",
        "icon",
        "name",
    }
)
_STDIO_ONLY = ("command", "args", "env", "envFile", "cwd", "limits")
_REMOTE_ONLY = ("url", "headers")
_LIMIT_FIELDS = ("memory", "cpuSeconds")
_TOOLS_FIELDS = ("allow", "deny")
_INPUT_FIELDS = ("type", "id", "description", "password", "default", "options")
_INPUT_TYPES = ("promptString", "pickString")

# ${...} references. Alternatives, in order: the escape "$${" (a literal "${"), a complete
# reference without nested braces, and a stray "${" (unterminated or nested: an error).
_REFERENCE = re.compile(r"\$\$\{|\$\{([^{}]*)\}|\$\{")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_DOTENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\Z")
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+\Z")
_MEMORY = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([KMGT]?)(?:I?B)?\s*\Z", re.IGNORECASE)
_MEMORY_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
# A start-up timeout above this many seconds is most likely milliseconds: note it.
_SUSPICIOUS_TIMEOUT = 3600.0


# ---------------------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------------------


class _FrozenDict(Mapping[str, str]):
    """An immutable, hashable ``str -> str`` mapping whose repr hides the values.

    Used for ``env`` and ``headers``: they often hold tokens, and a ``ServerConfig`` ends
    up in logs and tracebacks through its repr.
    """

    __slots__ = ("_data", "_hash")

    def __init__(self, items: Iterable[tuple[str, str]] = ()) -> None:
        self._data: dict[str, str] = dict(items)
        self._hash: int | None = None

    def __getitem__(self, key: str) -> str:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self._data.items()))
        return self._hash

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return dict(self._data.items()) == dict(other.items())
        return NotImplemented

    def __repr__(self) -> str:
        return "{" + ", ".join(f"{k!r}: '***'" for k in self._data) + "}"


_EMPTY: Mapping[str, str] = _FrozenDict()


@dataclass(frozen=True)
class Limits:
    """Resource limits for a stdio server's process.

    Attributes:
        memory_bytes: address-space limit in bytes, or ``None`` for no limit.
        cpu_seconds: CPU-time limit in seconds, or ``None`` for no limit.
    """

    memory_bytes: int | None = None
    cpu_seconds: int | None = None


@functools.lru_cache(maxsize=256)
def _compile_globs(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    if not patterns:
        return None
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns))


@dataclass(frozen=True)
class ToolFilter:
    """Which of a server's tools the host exposes.

    Patterns are shell-style globs (:func:`fnmatch.fnmatchcase`: case-sensitive, ``*``,
    ``?``, ``[...]``) matched against the tool's own name, without the server prefix.

    Attributes:
        allow: if not empty, only tools matching one of these are exposed.
        deny: tools matching one of these are never exposed (deny wins over allow).
    """

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()

    def permits(self, tool_name: str) -> bool:
        """Return whether ``tool_name`` passes the filter.

        Args:
            tool_name: the tool's name as the server reports it (no ``server.`` prefix).

        Returns:
            ``False`` if a ``deny`` pattern matches; otherwise ``True`` if ``allow`` is
            empty or one of its patterns matches.
        """
        deny = _compile_globs(self.deny)
        if deny is not None and deny.match(tool_name):
            return False
        allow = _compile_globs(self.allow)
        return allow is None or allow.match(tool_name) is not None


@dataclass(frozen=True)
class InputSpec:
    """A value the application must supply for ``${input:id}`` (VS Code ``inputs``).

    Attributes:
        id: the input's id, as in ``${input:id}``.
        description: the prompt to show (empty when the input was not declared).
        password: whether the value is a secret (mask it when asking; never log it).
            Inputs referenced without a declaration are treated as secrets.
        default: the value to use when the application supplies none, if any.
        type: ``"promptString"`` or ``"pickString"``.
        options: for ``pickString``, the values to choose from.
    """

    id: str
    description: str = ""
    password: bool = False
    default: str | None = None
    type: str = "promptString"
    options: tuple[str, ...] = ()


@dataclass(frozen=True)
class ServerConfig:
    """One server of the configuration, validated and with every reference expanded.

    Attributes:
        name: the configuration key (``^[A-Za-z][A-Za-z0-9_-]*$``).
        type: ``"stdio"``, ``"http"`` (Streamable HTTP), ``"sse"`` (legacy HTTP+SSE) or
            ``"websocket"``.
        command: the program to run (stdio), run without a shell.
        args: its arguments, passed as they are.
        env: variables for the child, from ``envFile`` then ``env`` (``env`` wins). The
            process layer adds only an allow-list of the parent's environment.
        cwd: the child's working directory (relative paths resolved against the config
            file's directory), or ``None`` to inherit.
        url: the endpoint (http, sse, websocket).
        headers: extra HTTP headers for remote servers.
        timeout: start-up timeout in seconds (spawn/connect plus ``initialize``).
        request_timeout: default per-request timeout in seconds, or ``None`` for the
            host's default.
        shutdown_timeout: seconds to wait at each step of the shutdown ladder, or ``None``
            for the host's default.
        dependencies: servers that must be started before this one.
        enabled: ``False`` to keep the entry without starting it.
        limits: resource limits for a stdio process, or ``None``.
        tools: which tools are exposed.
        priority: tie-breaker when several servers could serve the same resource URI
            (higher wins).
        domains: free-form labels the application can use to group or select servers.
        roots: ``file://`` URIs offered to this server as its roots (empty: the host's).
        line: line of the entry in the file, or ``None`` (configuration built in code).
    """

    name: str
    type: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default=_EMPTY)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default=_EMPTY)
    timeout: float = DEFAULT_TIMEOUT
    request_timeout: float | None = None
    shutdown_timeout: float | None = None
    dependencies: tuple[str, ...] = ()
    enabled: bool = True
    limits: Limits | None = None
    tools: ToolFilter = field(default_factory=ToolFilter)
    priority: int = 0
    domains: tuple[str, ...] = ()
    roots: tuple[str, ...] = ()
    line: int | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        # Make env/headers immutable (and hashable) even when built in code from dicts.
        for name in ("env", "headers"):
            value = getattr(self, name)
            if not isinstance(value, _FrozenDict):
                object.__setattr__(self, name, _FrozenDict(value.items()))


@dataclass(frozen=True)
class HostConfig:
    """A whole configuration.

    Attributes:
        servers: every server, enabled or not, in file order.
        path: the file it was read from, or ``None``.
        inputs: the ``inputs`` declared in the file (VS Code dialect).
        notes: things that were accepted but ignored (unknown top-level keys, fields of
            other clients) and likely mistakes that are not errors; each is
            ``file:line: field: note``. They are also logged at debug level.
    """

    servers: Mapping[str, ServerConfig]
    path: str | None = None
    inputs: tuple[InputSpec, ...] = ()
    notes: tuple[str, ...] = field(default=(), compare=False)

    def start_order(self) -> list[list[str]]:
        """Group the enabled servers in dependency layers.

        Every server in a layer depends only on servers of earlier layers, so a layer can
        be started in parallel once the previous one is up. Within a layer servers keep
        file order. Disabled servers are left out (an enabled server cannot depend on a
        disabled one: the loader refuses it).

        Returns:
            The layers, first to start first.
        """
        enabled = [name for name, server in self.servers.items() if server.enabled]
        done: set[str] = set()
        layers: list[list[str]] = []
        remaining = enabled
        while remaining:
            layer = [
                name
                for name in remaining
                if all(dep in done for dep in self.servers[name].dependencies)
            ]
            if not layer:  # only reachable for a HostConfig built by hand
                raise ConfigurationError(
                    "cannot order servers (a dependency cycle, or a dependency that is "
                    "unknown or disabled): " + ", ".join(remaining),
                    path=self.path,
                )
            layers.append(layer)
            done.update(layer)
            remaining = [name for name in remaining if name not in done]
        return layers


# ---------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------


def parse_memory(value: int | str) -> int:
    """Parse a memory size: an integer (bytes) or a string such as ``"512M"`` or ``"2G"``.

    Units are binary and case-insensitive: ``K`` = 1024, ``M`` = 1024², ``G`` = 1024³,
    ``T`` = 1024⁴; ``KB``/``KiB`` etc. mean the same. Fractions are allowed
    (``"1.5G"``).

    Args:
        value: the size.

    Returns:
        The size in bytes.

    Raises:
        ValueError: the value is not a positive size.
    """
    if isinstance(value, bool):
        raise ValueError("expected an integer or a string like '512M'")
    if isinstance(value, int):
        if value <= 0:
            raise ValueError("must be greater than 0")
        return value
    m = _MEMORY.match(value)
    if m is None:
        raise ValueError("expected a size like 536870912, '512M' or '2G' (units K, M, G, T)")
    size = int(float(m.group(1)) * _MEMORY_UNITS[m.group(2).upper()])
    if size <= 0:
        raise ValueError("must be greater than 0")
    return size


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, (list, tuple)):
        return "array"
    return type(value).__name__


def _suggest(key: str, known: Sequence[str]) -> str:
    norm = key.lower().replace("_", "").replace("-", "")
    for candidate in known:
        if candidate.lower() == norm:
            return f' (did you mean "{candidate}"?)'
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    if not close and len(norm) >= 3:
        # An abbreviation ("cpu" for "cpuSeconds", "env" for "envFile" is exact already).
        close = [c for c in known if c.lower().startswith(norm)][:1]
    return f' (did you mean "{close[0]}"?)' if close else ""


def _is_abs(path: str) -> bool:
    # Absolute for POSIX or Windows, whatever the platform running the parser.
    return path.startswith(("/", "\\")) or bool(re.match(r"[A-Za-z]:[\\/]", path))


def _path_to_uri(path: str) -> str:
    if re.match(r"[A-Za-z]:[\\/]", path):  # Windows drive path
        return "file:///" + urllib.parse.quote(path.replace("\\", "/"), safe="/:")
    return "file://" + urllib.parse.quote(posixpath.normpath(path), safe="/")


# ---------------------------------------------------------------------------------------
# The loader
# ---------------------------------------------------------------------------------------


class _Loader:
    """Validates one configuration; holds what every check needs to report an error."""

    def __init__(
        self,
        doc: Document | None,
        *,
        path: str | None,
        environ: Mapping[str, str],
        workspace_folder: str | None,
        user_home: str | None,
        inputs: Mapping[str, str] | None,
        read_text: Callable[[str], str] | None,
    ) -> None:
        self.doc = doc
        self.path = path
        self.name = display_name(path)
        self.environ = environ
        self.config_dir: str | None = None
        if path:
            self.config_dir = os.path.dirname(path) or "."
        if workspace_folder is None and self.config_dir is not None:
            workspace_folder = self.config_dir
            # .vscode/mcp.json and .cursor/mcp.json describe the folder above them.
            if os.path.basename(workspace_folder.rstrip("/\\")) in (".vscode", ".cursor"):
                workspace_folder = os.path.dirname(workspace_folder.rstrip("/\\")) or "."
        self.workspace_folder = workspace_folder
        if user_home is None:
            user_home = environ.get("HOME") or environ.get("USERPROFILE") or None
        self.user_home = user_home
        self.input_values: Mapping[str, str] = inputs if inputs is not None else {}
        self.read_text = read_text
        self.declared_inputs: dict[str, InputSpec] = {}
        self.notes: list[str] = []
        # When set (a disabled server), unresolvable references are kept literally.
        self.lenient = False
        # Collects ${input:id} references instead of resolving them (required_inputs).
        self.collected_inputs: list[str] | None = None

    # -- reporting --------------------------------------------------------------------

    def where(self, fpath: JSONPath) -> tuple[str, int | None]:
        line = self.doc.line(fpath) if self.doc is not None else None
        prefix = f"{self.name}:{line}" if line is not None else self.name
        if self.doc is None and self.path is None:
            prefix = ""
        return prefix, line

    def error(self, fpath: JSONPath, message: str, *, server: str | None = None) -> NoReturn:
        prefix, line = self.where(fpath)
        fname = format_path(fpath)
        parts = [p for p in (prefix, fname) if p]
        parts.append(message)
        raise ConfigurationError(
            ": ".join(parts), server=server, path=self.path, line=line, field=fname or None
        )

    def note(self, fpath: JSONPath, message: str) -> None:
        prefix, _ = self.where(fpath)
        parts = [p for p in (prefix, format_path(fpath)) if p]
        parts.append(message)
        text = ": ".join(parts)
        self.notes.append(text)
        logger.debug("%s", text)

    # -- typed getters ------------------------------------------------------------------

    def expect(self, fpath: JSONPath, value: Any, kind: str, server: str | None) -> None:
        ok = {
            "string": isinstance(value, str),
            "object": isinstance(value, Mapping),
            "array": isinstance(value, (list, tuple)),
            "boolean": isinstance(value, bool),
        }[kind]
        if not ok:
            self.error(fpath, f"expected {kind}, got {_json_type(value)}", server=server)

    def string_list(
        self, fpath: JSONPath, value: Any, server: str, *, nonempty: bool = False
    ) -> list[str]:
        if not isinstance(value, (list, tuple)):
            self.error(fpath, f"expected array of strings, got {_json_type(value)}", server=server)
        for i, item in enumerate(value):
            if not isinstance(item, str):
                self.error((*fpath, i), f"expected string, got {_json_type(item)}", server=server)
            if nonempty and not item:
                self.error((*fpath, i), "must not be empty", server=server)
        return list(value)

    def string_map(self, fpath: JSONPath, value: Any, server: str) -> dict[str, str]:
        if not isinstance(value, Mapping):
            self.error(fpath, f"expected object, got {_json_type(value)}", server=server)
        for key, item in value.items():
            if not isinstance(item, str):
                hint = " (write it in quotes)" if _json_type(item) in ("number", "boolean") else ""
                self.error(
                    (*fpath, key), f"expected string, got {_json_type(item)}{hint}", server=server
                )
        return dict(value)

    def seconds(
        self, fpath: JSONPath, value: Any, server: str, *, allow_zero: bool = False
    ) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.error(fpath, f"expected number of seconds, got {_json_type(value)}", server=server)
        if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
            bound = "0 or more" if allow_zero else "greater than 0"
            self.error(fpath, f"must be a finite number of seconds {bound}", server=server)
        return float(value)

    # -- expansion ------------------------------------------------------------------------

    def expand(self, fpath: JSONPath, value: str, server: str) -> str:
        """Expand every ``${...}`` reference in ``value`` (a single pass, no re-expansion)."""
        if "${" not in value:
            return value

        def replace(m: re.Match[str]) -> str:
            if m.group(0) == "$${":
                return "${"
            body = m.group(1)
            if body is None:
                if self.lenient:
                    return m.group(0)
                self.error(
                    fpath,
                    'malformed "${" reference (unterminated or nested; write "$${" for a '
                    'literal "${")',
                    server=server,
                )
            result = self.resolve(fpath, body, server)
            return m.group(0) if result is None else result

        return _REFERENCE.sub(replace, value)

    def resolve(self, fpath: JSONPath, body: str, server: str) -> str | None:
        """Return the value of one reference, ``None`` to keep it literally (lenient mode)."""
        if body in ("workspaceFolder", "workspaceFolderBasename"):
            if self.workspace_folder is None:
                return self.unavailable(
                    fpath,
                    f"${{{body}}} is not available (no workspace folder was given)",
                    server,
                )
            if body == "workspaceFolder":
                return self.workspace_folder
            return os.path.basename(self.workspace_folder.rstrip("/\\"))
        if body == "userHome":
            if self.user_home is None:
                return self.unavailable(
                    fpath, "${userHome} is not available (no home directory was given)", server
                )
            return self.user_home
        if body in ("pathSeparator", "/"):
            return os.sep
        if body.startswith("input:"):
            return self.input_value(fpath, body[len("input:") :], server)
        name, sep, default = body.partition(":-")
        explicit_env = name.startswith("env:")
        if explicit_env:
            name = name[len("env:") :]
            valid = bool(name) and "=" not in name and "\0" not in name
        else:
            valid = bool(_ENV_NAME.match(name))
        if not valid:
            shown = name if explicit_env else body.partition(":-")[0]
            self.error(
                fpath,
                f'unsupported reference "${{{"env:" if explicit_env else ""}{shown}}}" '
                "(supported: ${VAR}, ${VAR:-default}, ${env:VAR}, ${input:id}, "
                "${workspaceFolder}, ${userHome})",
                server=server,
            )
        current = self.environ.get(name)
        if sep:
            # Shell semantics of ":-": the default applies when unset *or empty*.
            return current if current else default
        if current is None:
            hint = f"${{{'env:' if explicit_env else ''}{name}:-default}}"
            return self.unavailable(
                fpath,
                f"environment variable {name} is not set (use {hint} for a default)",
                server,
            )
        return current

    def unavailable(self, fpath: JSONPath, message: str, server: str) -> str | None:
        if self.lenient or self.collected_inputs is not None:
            return None
        self.error(fpath, message, server=server)

    def input_value(self, fpath: JSONPath, input_id: str, server: str) -> str | None:
        if not input_id:
            self.error(fpath, 'empty input id in "${input:}"', server=server)
        if self.collected_inputs is not None:
            if input_id not in self.collected_inputs:
                self.collected_inputs.append(input_id)
            return None
        value = self.input_values.get(input_id)
        if value is None:
            spec = self.declared_inputs.get(input_id)
            if spec is not None and spec.default is not None:
                return spec.default
            if self.lenient:
                return None
            declared = "" if spec is not None else ' (it is not declared in "inputs")'
            self.error(
                fpath,
                f'input "{input_id}" has no value{declared}: the application must supply it '
                f"(see mcphost.config.required_inputs)",
                server=server,
            )
        return value

    def local_path(self, fpath: JSONPath, value: str, server: str) -> str:
        """Expand a path-valued field: references, a leading ``~``, relative to the file."""
        value = self.expand(fpath, value, server)
        if value == "~" or value.startswith(("~/", "~\\")):
            if self.user_home is None:
                if self.lenient:
                    return value
                self.error(fpath, '"~" used but no home directory was given', server=server)
            value = self.user_home + value[1:]
        if self.config_dir is not None and not _is_abs(value):
            value = os.path.normpath(os.path.join(self.config_dir, value))
        return value

    # -- the document -----------------------------------------------------------------------

    def load(self, data: Any) -> HostConfig:
        if not isinstance(data, Mapping):
            self.error((), f"expected a JSON object at the top level, got {_json_type(data)}")
        top_keys = [k for k in ("servers", "mcpServers") if k in data]
        for key in data:
            if key not in ("servers", "mcpServers", "inputs"):
                hint = _suggest(key, ("servers", "mcpServers", "inputs"))
                self.note((key,), f"unknown top-level key ignored{hint}")
        if not top_keys:
            self.error(
                (),
                'no servers: expected a "servers" object (VS Code) or an "mcpServers" object '
                "(Claude Desktop, Cursor, Claude Code)",
            )
        if "inputs" in data:
            self.load_inputs(data["inputs"])
        entries: dict[str, tuple[str, Any]] = {}
        for top in top_keys:
            block = data[top]
            if not isinstance(block, Mapping):
                self.error((top,), f"expected object, got {_json_type(block)}")
            for name, raw in block.items():
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
        self.check_dependencies(servers, entries)
        return HostConfig(
            servers=_ReadOnlyServers(servers),
            path=self.path,
            inputs=tuple(self.declared_inputs.values()),
            notes=tuple(self.notes),
        )

    def load_inputs(self, raw: Any) -> None:
        if not isinstance(raw, (list, tuple)):
            self.error(("inputs",), f"expected array, got {_json_type(raw)}")
        for i, item in enumerate(raw):
            ipath: JSONPath = ("inputs", i)
            if not isinstance(item, Mapping):
                self.error(ipath, f"expected object, got {_json_type(item)}")
            for key in item:
                if key not in _INPUT_FIELDS:
                    self.error((*ipath, key), "unknown field" + _suggest(key, _INPUT_FIELDS))
            if "id" not in item:
                self.error(ipath, 'missing "id"')
            input_id = item["id"]
            if not isinstance(input_id, str) or not input_id:
                self.error((*ipath, "id"), "expected a non-empty string")
            if input_id in self.declared_inputs:
                self.error((*ipath, "id"), f'input "{input_id}" is declared twice')
            kind = item.get("type", "promptString")
            if kind not in _INPUT_TYPES:
                shown_kind = repr(kind) if isinstance(kind, str) else _json_type(kind)
                self.error(
                    (*ipath, "type"),
                    f"unsupported input type {shown_kind} (mcphost supports promptString and "
                    "pickString)",
                )
            description = item.get("description", "")
            if not isinstance(description, str):
                self.error(
                    (*ipath, "description"), f"expected string, got {_json_type(description)}"
                )
            password = item.get("password", False)
            if not isinstance(password, bool):
                self.error((*ipath, "password"), f"expected boolean, got {_json_type(password)}")
            default = item.get("default")
            if default is not None and not isinstance(default, str):
                self.error((*ipath, "default"), f"expected string, got {_json_type(default)}")
            options: list[str] = []
            raw_options = item.get("options", [])
            if not isinstance(raw_options, (list, tuple)):
                self.error((*ipath, "options"), f"expected array, got {_json_type(raw_options)}")
            for j, option in enumerate(raw_options):
                # VS Code allows plain strings or {"label", "value"} objects.
                if isinstance(option, Mapping) and isinstance(option.get("value"), str):
                    options.append(option["value"])
                elif isinstance(option, str):
                    options.append(option)
                else:
                    self.error(
                        (*ipath, "options", j),
                        f'expected string or {{"value": string}}, got {_json_type(option)}',
                    )
            self.declared_inputs[input_id] = InputSpec(
                id=input_id,
                description=description,
                password=password,
                default=default,
                type=kind,
                options=tuple(options),
            )

    def load_server(self, top: str, name: str, raw: Any) -> ServerConfig:
        spath: JSONPath = (top, name)
        if not _SERVER_NAME.match(name):
            self.error(
                spath,
                f"invalid server name {json.dumps(name, ensure_ascii=False)}: a name "
                'starts with a letter and has only letters, digits, "_" and "-" (no dots: '
                'the host routes "server.tool" on the first dot)',
                server=name,
            )
        if not isinstance(raw, Mapping):
            self.error(spath, f"expected object, got {_json_type(raw)}", server=name)
        for key in raw:
            if key in _FIELDS:
                continue
            if key in _FOREIGN_FIELDS:
                if key not in ("disabled", "transport", "transportType"):
                    self.note((*spath, key), "ignored (a field of another MCP client)")
                continue
            self.error((*spath, key), "unknown field" + _suggest(key, _FIELDS), server=name)

        def fp(*parts: str | int) -> JSONPath:
            return (*spath, *parts)

        # enabled / disabled
        enabled = True
        if "enabled" in raw:
            self.expect(fp("enabled"), raw["enabled"], "boolean", name)
            enabled = raw["enabled"]
        if "disabled" in raw:
            self.expect(fp("disabled"), raw["disabled"], "boolean", name)
            if "enabled" in raw and raw["enabled"] == raw["disabled"]:
                self.error(fp("disabled"), 'contradicts "enabled"', server=name)
            enabled = not raw["disabled"]
        self.lenient = not enabled

        kind = self.server_type(spath, raw, name)
        for key in _STDIO_ONLY if kind != "stdio" else _REMOTE_ONLY:
            if key in raw:
                if kind == "stdio":
                    why = "only applies to http, sse and websocket servers"
                else:
                    why = f'only applies to stdio servers (this one is "{kind}")'
                self.error(fp(key), why, server=name)

        command: str | None = None
        args: tuple[str, ...] = ()
        env: dict[str, str] = {}
        cwd: str | None = None
        url: str | None = None
        headers: dict[str, str] = {}
        limits: Limits | None = None
        if kind == "stdio":
            if "command" not in raw:
                self.error(spath, 'a stdio server needs "command"', server=name)
            self.expect(fp("command"), raw["command"], "string", name)
            command = self.expand(fp("command"), raw["command"], name)
            if not command.strip():
                self.error(fp("command"), "must not be empty", server=name)
            raw_args = self.string_list(fp("args"), raw.get("args", []), name)
            args = tuple(self.expand(fp("args", i), a, name) for i, a in enumerate(raw_args))
            if not raw_args and " " in raw["command"].strip() and "${" not in raw["command"]:
                self.note(
                    fp("command"),
                    'contains spaces and there are no "args": commands run without a shell, '
                    'so put the arguments in "args"',
                )
            if "envFile" in raw:
                env.update(self.env_file(fp("envFile"), raw["envFile"], name))
            raw_env = self.string_map(fp("env"), raw.get("env", {}), name)
            for key, value in raw_env.items():
                if not key or "=" in key or "\0" in key:
                    self.error(fp("env", key), "invalid environment variable name", server=name)
                expanded = self.expand(fp("env", key), value, name)
                if "\0" in expanded:
                    self.error(fp("env", key), "contains a NUL character", server=name)
                env[key] = expanded
            if "cwd" in raw:
                self.expect(fp("cwd"), raw["cwd"], "string", name)
                cwd = self.local_path(fp("cwd"), raw["cwd"], name)
            if "limits" in raw and raw["limits"] is not None:
                limits = self.limits(fp("limits"), raw["limits"], name)
        else:
            if "url" not in raw:
                self.error(spath, f'a "{kind}" server needs "url"', server=name)
            self.expect(fp("url"), raw["url"], "string", name)
            url = self.expand(fp("url"), raw["url"], name)
            self.check_url(fp("url"), url, kind, name)
            raw_headers = self.string_map(fp("headers"), raw.get("headers", {}), name)
            for key, value in raw_headers.items():
                if not _HEADER_NAME.match(key):
                    self.error(fp("headers", key), "invalid HTTP header name", server=name)
                expanded = self.expand(fp("headers", key), value, name)
                if any(c in expanded for c in "\r\n\0"):
                    self.error(
                        fp("headers", key),
                        "header value contains a line break or NUL character",
                        server=name,
                    )
                headers[key] = expanded

        timeout = DEFAULT_TIMEOUT
        if "timeout" in raw:
            timeout = self.seconds(fp("timeout"), raw["timeout"], name)
            if timeout > _SUSPICIOUS_TIMEOUT:
                self.note(fp("timeout"), "is in seconds; this value looks like milliseconds")
        request_timeout = None
        if raw.get("requestTimeout") is not None:
            request_timeout = self.seconds(fp("requestTimeout"), raw["requestTimeout"], name)
        shutdown_timeout = None
        if raw.get("shutdownTimeout") is not None:
            shutdown_timeout = self.seconds(
                fp("shutdownTimeout"), raw["shutdownTimeout"], name, allow_zero=True
            )

        dependencies: list[str] = []
        for i, dep in enumerate(
            self.string_list(fp("dependencies"), raw.get("dependencies", []), name)
        ):
            if dep == name:
                self.error(fp("dependencies", i), "a server cannot depend on itself", server=name)
            if dep not in dependencies:
                dependencies.append(dep)

        tools = ToolFilter()
        if "tools" in raw and raw["tools"] is not None:
            tools = self.tool_filter(fp("tools"), raw["tools"], name)

        priority = 0
        if "priority" in raw:
            value = raw["priority"]
            if isinstance(value, bool) or not isinstance(value, int):
                self.error(
                    fp("priority"), f"expected integer, got {_json_type(value)}", server=name
                )
            priority = value

        domains = tuple(
            self.string_list(fp("domains"), raw.get("domains", []), name, nonempty=True)
        )
        roots = tuple(
            self.root(fp("roots", i), r, name)
            for i, r in enumerate(self.string_list(fp("roots"), raw.get("roots", []), name))
        )
        self.lenient = False
        line = self.doc.line(spath, exact=True) if self.doc is not None else None
        return ServerConfig(
            name=name,
            type=kind,
            command=command,
            args=args,
            env=_FrozenDict(env.items()),
            cwd=cwd,
            url=url,
            headers=_FrozenDict(headers.items()),
            timeout=timeout,
            request_timeout=request_timeout,
            shutdown_timeout=shutdown_timeout,
            dependencies=tuple(dependencies),
            enabled=enabled,
            limits=limits,
            tools=tools,
            priority=priority,
            domains=domains,
            roots=roots,
            line=line,
        )

    def server_type(self, spath: JSONPath, raw: Mapping[str, Any], name: str) -> str:
        given: list[tuple[str, str]] = []
        for key in ("type", "transport", "transportType"):
            if key in raw:
                value = raw[key]
                if not isinstance(value, str):
                    self.error(
                        (*spath, key), f"expected string, got {_json_type(value)}", server=name
                    )
                kind = _TYPE_ALIASES.get(value.lower())
                if kind is None:
                    if key != "type":
                        self.note((*spath, key), "unrecognised value ignored")
                        continue
                    self.error(
                        (*spath, key),
                        f"unknown type {value!r} (expected stdio, http, sse or websocket)",
                        server=name,
                    )
                given.append((key, kind))
        if given:
            key, kind = given[0]
            for other_key, other in given[1:]:
                if other != kind and other_key == "transport":
                    self.error((*spath, other_key), f'contradicts "{key}" ({kind})', server=name)
            return kind
        has_command = "command" in raw
        has_url = "url" in raw
        if has_command and has_url:
            self.error(
                spath,
                'has both "command" and "url": set "type" to say which transport to use',
                server=name,
            )
        if has_command:
            return "stdio"
        if has_url:
            url = raw["url"]
            if isinstance(url, str):
                scheme = url.split(":", 1)[0].lower() if ":" in url else ""
                if scheme in ("ws", "wss"):
                    return "websocket"
                path = urllib.parse.urlsplit(url).path if "${" not in url else url
                if path.rstrip("/").endswith("/sse"):
                    return "sse"
            return "http"
        self.error(
            spath,
            'needs "command" (a stdio server) or "url" (an http, sse or websocket server)',
            server=name,
        )

    def check_url(self, fpath: JSONPath, url: str, kind: str, name: str) -> None:
        if self.lenient and "${" in url:
            return
        schemes = ("ws", "wss") if kind == "websocket" else ("http", "https")
        try:
            parts = urllib.parse.urlsplit(url)
        except ValueError:
            self.error(fpath, "not a valid URL", server=name)
        if parts.scheme.lower() not in schemes or not parts.netloc:
            self.error(
                fpath,
                f"expected a {schemes[0]}:// or {schemes[1]}:// URL for a {kind} server",
                server=name,
            )

    def env_file(self, fpath: JSONPath, raw: Any, name: str) -> dict[str, str]:
        self.expect(fpath, raw, "string", name)
        if self.lenient:
            return {}  # a disabled server's envFile is not read (it may not exist)
        file_path = self.local_path(fpath, raw, name)
        shown = os.path.basename(file_path.rstrip("/\\")) or "envFile"
        if self.read_text is None:
            self.error(
                fpath, "cannot read the envFile: no read_text function was given", server=name
            )
        try:
            text = self.read_text(file_path)
        except (OSError, ValueError) as exc:
            self.error(fpath, f"cannot read {shown} ({type(exc).__name__})", server=name)
        return self.parse_env_file(fpath, text, shown, name)

    def parse_env_file(self, fpath: JSONPath, text: str, shown: str, name: str) -> dict[str, str]:
        result: dict[str, str] = {}
        for number, raw_line in enumerate(text.lstrip("\ufeff").splitlines(), 1):
            line = raw_line.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("export ") or line.startswith("export\t"):
                line = line[len("export") :].lstrip()
            key, sep, value = line.partition("=")
            key = key.strip()
            if not sep or not _DOTENV_NAME.match(key):
                # Never quote the line: it may hold a secret.
                self.error(fpath, f"{shown}:{number}: expected KEY=VALUE", server=name)
            value = value.strip()
            if value[:1] in ('"', "'"):
                quote = value[0]
                end = self.closing_quote(value, quote)
                rest = value[end + 1 :].strip() if end > 0 else ""
                if end < 0 or (rest and not rest.startswith("#")):
                    self.error(
                        fpath,
                        f"{shown}:{number}: unterminated or malformed quoted value",
                        server=name,
                    )
                inner = value[1:end]
                if quote == '"':
                    inner = re.sub(
                        r"\\(.)",
                        lambda m: {"n": "\n", "t": "\t", "r": "\r"}.get(m.group(1), m.group(1)),
                        inner,
                    )
                value = inner
            else:
                # An unquoted value ends at " #" (an inline comment).
                value = re.split(r"\s#", value, maxsplit=1)[0].rstrip()
            result[key] = value
        return result

    @staticmethod
    def closing_quote(value: str, quote: str) -> int:
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

    def limits(self, fpath: JSONPath, raw: Any, name: str) -> Limits | None:
        self.expect(fpath, raw, "object", name)
        for key in raw:
            if key not in _LIMIT_FIELDS:
                self.error(
                    (*fpath, key), "unknown field" + _suggest(key, _LIMIT_FIELDS), server=name
                )
        memory = None
        if raw.get("memory") is not None:
            value = raw["memory"]
            if isinstance(value, bool) or not isinstance(value, (int, str)):
                self.error(
                    (*fpath, "memory"),
                    f'expected integer (bytes) or string like "512M", got {_json_type(value)}',
                    server=name,
                )
            try:
                memory = parse_memory(value)
            except ValueError as exc:
                self.error((*fpath, "memory"), str(exc), server=name)
        cpu = None
        if raw.get("cpuSeconds") is not None:
            value = raw["cpuSeconds"]
            if isinstance(value, bool) or not isinstance(value, int):
                self.error(
                    (*fpath, "cpuSeconds"),
                    f"expected integer, got {_json_type(value)}",
                    server=name,
                )
            if value <= 0:
                self.error((*fpath, "cpuSeconds"), "must be greater than 0", server=name)
            cpu = value
        if memory is None and cpu is None:
            return None
        return Limits(memory_bytes=memory, cpu_seconds=cpu)

    def tool_filter(self, fpath: JSONPath, raw: Any, name: str) -> ToolFilter:
        self.expect(fpath, raw, "object", name)
        for key in raw:
            if key not in _TOOLS_FIELDS:
                self.error(
                    (*fpath, key), "unknown field" + _suggest(key, _TOOLS_FIELDS), server=name
                )
        allow = self.string_list((*fpath, "allow"), raw.get("allow", []), name, nonempty=True)
        deny = self.string_list((*fpath, "deny"), raw.get("deny", []), name, nonempty=True)
        return ToolFilter(allow=tuple(allow), deny=tuple(deny))

    def root(self, fpath: JSONPath, raw: str, name: str) -> str:
        value = self.expand(fpath, raw, name)
        if self.lenient and "${" in value:
            return value
        if not value:
            self.error(fpath, "must not be empty", server=name)
        scheme = urllib.parse.urlsplit(value).scheme if "://" in value else ""
        if scheme:
            if scheme.lower() != "file":
                self.error(fpath, "roots must be file:// URIs or paths", server=name)
            return value
        if value == "~" or value.startswith(("~/", "~\\")):
            if self.user_home is None:
                self.error(fpath, '"~" used but no home directory was given', server=name)
            value = self.user_home + value[1:]
        if not _is_abs(value):
            if self.workspace_folder is None:
                self.error(
                    fpath,
                    "a relative root needs a workspace folder (or the config path)",
                    server=name,
                )
            value = os.path.join(self.workspace_folder, value)
            if not _is_abs(value):
                # The workspace folder itself is relative: keep a relative path.
                return os.path.normpath(value)
        return _path_to_uri(value)

    def check_dependencies(
        self, servers: Mapping[str, ServerConfig], entries: Mapping[str, tuple[str, Any]]
    ) -> None:
        for name, server in servers.items():
            top = entries[name][0]
            for i, dep in enumerate(server.dependencies):
                fpath: JSONPath = (top, name, "dependencies", i)
                if dep not in servers:
                    hint = _suggest(dep, list(servers))
                    self.error(fpath, f'unknown server "{dep}"{hint}', server=name)
                if server.enabled and not servers[dep].enabled:
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


class _ReadOnlyServers(Mapping[str, ServerConfig]):
    """The servers of a :class:`HostConfig`: read-only, file order, hashable."""

    __slots__ = ("_data",)

    def __init__(self, data: dict[str, ServerConfig]) -> None:
        self._data = data

    def __getitem__(self, key: str) -> ServerConfig:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __hash__(self) -> int:
        return hash(tuple(self._data.items()))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return dict(self._data.items()) == dict(other.items())
        return NotImplemented

    def __repr__(self) -> str:
        return repr(self._data)


# ---------------------------------------------------------------------------------------
# Public functions
# ---------------------------------------------------------------------------------------


def parse_config(
    text: str,
    *,
    path: str | None = None,
    environ: Mapping[str, str],
    workspace_folder: str | None = None,
    user_home: str | None = None,
    inputs: Mapping[str, str] | None = None,
    read_text: Callable[[str], str] | None = None,
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

    Returns:
        The validated configuration.

    Raises:
        ConfigurationError: the text is not valid JSON(C) or the configuration is invalid;
            the message reads ``file:line: field: what is wrong``.
    """
    doc = loads(text, path=path)
    loader = _Loader(
        doc,
        path=path,
        environ=environ,
        workspace_folder=workspace_folder,
        user_home=user_home,
        inputs=inputs,
        read_text=read_text,
    )
    return loader.load(doc.value)


def config_from_data(
    data: Mapping[str, Any],
    *,
    path: str | None = None,
    environ: Mapping[str, str],
    workspace_folder: str | None = None,
    user_home: str | None = None,
    inputs: Mapping[str, str] | None = None,
    read_text: Callable[[str], str] | None = None,
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

    Returns:
        The validated configuration.

    Raises:
        ConfigurationError: the configuration is invalid.
    """
    loader = _Loader(
        None,
        path=path,
        environ=environ,
        workspace_folder=workspace_folder,
        user_home=user_home,
        inputs=inputs,
        read_text=read_text,
    )
    return loader.load(data)


def required_inputs(text: str | Mapping[str, Any], *, path: str | None = None) -> list[InputSpec]:
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
        ConfigurationError: the text is not valid JSON, or ``inputs`` is malformed.
    """
    doc = loads(text, path=path) if isinstance(text, str) else None
    data = doc.value if doc is not None else text
    loader = _Loader(
        doc,
        path=path,
        environ={},
        workspace_folder=None,
        user_home=None,
        inputs=None,
        read_text=None,
    )
    if not isinstance(data, Mapping):
        loader.error((), f"expected a JSON object at the top level, got {_json_type(data)}")
    if "inputs" in data:
        loader.load_inputs(data["inputs"])
    loader.collected_inputs = []
    for top in ("servers", "mcpServers"):
        block = data.get(top)
        if not isinstance(block, Mapping):
            continue
        for name, raw in block.items():
            if not isinstance(raw, Mapping):
                continue
            if raw.get("enabled") is False or raw.get("disabled") is True:
                continue
            for fpath, value in _expandable_strings((top, name), raw):
                loader.expand(fpath, value, name)
    specs = []
    for input_id in loader.collected_inputs:
        spec = loader.declared_inputs.get(input_id)
        specs.append(spec if spec is not None else InputSpec(id=input_id, password=True))
    return specs


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
