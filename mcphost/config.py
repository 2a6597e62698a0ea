"""Configuration: parsing, expansion and validation of ``mcp.json``.

This module owns the meaning of an ``mcp.json`` file: which dialects are accepted, which
fields a server entry may carry, how ``${...}`` references are expanded, and what is an
error. It turns text (or a dict built in code) into frozen :class:`HostConfig` /
:class:`ServerConfig` values, or raises :class:`~mcphost.errors.ConfigurationError` with a
message of the form ``mcp.json:12: servers.brave.env.BRAVE_API_KEY: ...``.

The structure of the file (types, required fields, names, transport keywords, unknown
fields, ranges, which fields each kind of server takes) is the JSON Schema
``schemas/mcp.json.schema.json``, which the loader validates every configuration against
(compiled once, on first use) and which editors can use too; its errors are reported in
this module's style. The code here does what a schema cannot: expansion, inference of the
transport, and rules across fields and servers.

It is a layer-1 module (no I/O): the environment, the user's home directory, the workspace
folder, the values of ``${input:...}`` prompts and a ``read_text(path)`` function (for
``envFile``) are all passed in by the caller. (The schema itself is read from the package.)
The full format is described in ``docs/config.md``.

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
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from mcphost._json import json_kind
from mcphost.errors import ConfigurationError, ValidationError
from mcphost.jsonpos import Document, JSONPath, display_name, format_path, loads

if TYPE_CHECKING:
    from mcphost.schema import Validator

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

#: Server names: the host routes ``server.tool`` on the first dot, so names have none. (The
#: rule itself lives in the schema, ``$defs/serverName``; a test keeps the two equal.)
SERVER_NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9_-]*$"

#: The JSON Schema every configuration is validated against: ``schemas/`` at the root of a
#: source checkout, ``mcphost/schemas/`` in an installed wheel (pyproject force-includes it).
SCHEMA_FILE = "mcp.json.schema.json"

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

# Fields other clients write into server entries that mcphost accepts (the schema lists
# them) and ignores, with a note. They are never offered as "did you mean" suggestions.
# ("disabled" is honoured, "transport"/"transportType" are read as the type.)
_IGNORED_FIELDS = frozenset(
    {
        "description",
        "autoApprove",
        "alwaysAllow",
        "gallery",
        "version",
        "dev",
        "sandbox",
        "trust",
        "icon",
        "name",
    }
)
# Which fields belong to which kind of server. The schema enforces this for servers whose
# transport is given by "type" or inferred from command/url; the loader applies it when the
# type comes from fastmcp's "transport" or Cline's "transportType" (which the schema does
# not interpret).
_STDIO_ONLY = ("command", "args", "env", "envFile", "cwd", "limits")
_REMOTE_ONLY = ("url", "headers")
# Fields whose value is a transport keyword, never a secret: schema errors about them quote
# the value (``got "grpc"``). No other value from the file is ever quoted.
_KEYWORD_FIELDS = frozenset({"type", "transport", "transportType"})

# ${...} references. Alternatives, in order: the escape "$${" (a literal "${"), a complete
# reference without nested braces, and a stray "${" (unterminated or nested: an error).
_REFERENCE = re.compile(r"\$\$\{|\$\{([^{}]*)\}|\$\{")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_DOTENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\Z")
_MEMORY = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([KMGT]?)(?:I?B)?\s*\Z", re.IGNORECASE)
_MEMORY_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
# A start-up timeout above this many seconds is most likely milliseconds: note it.
_SUSPICIOUS_TIMEOUT = 3600.0
# References whose values are paths of this machine, not secrets.
_NOT_SECRET = frozenset({"workspaceFolder", "workspaceFolderBasename", "userHome", "pathSeparator", "/"})


# ---------------------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------------------


_V = TypeVar("_V")


class _FrozenMap(Mapping[str, _V]):
    """An immutable, hashable mapping that keeps the order it was given."""

    __slots__ = ("_data", "_hash")

    def __init__(self, items: Iterable[tuple[str, _V]] = ()) -> None:
        self._data: dict[str, _V] = dict(items)
        self._hash: int | None = None

    def __getitem__(self, key: str) -> _V:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __hash__(self) -> int:
        # Order-free, like the equality Mapping defines.
        if self._hash is None:
            self._hash = hash(frozenset(self._data.items()))
        return self._hash

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return dict(self._data.items()) == dict(other.items())
        return NotImplemented

    def __repr__(self) -> str:
        return repr(self._data)


class _FrozenDict(_FrozenMap[str]):
    """A frozen ``str -> str`` mapping whose repr hides the values.

    Used for ``env`` and ``headers``: they often hold tokens, and a ``ServerConfig`` ends
    up in logs and tracebacks through its repr.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return "{" + ", ".join(f"{k!r}: '***'" for k in self._data) + "}"


_EMPTY: Mapping[str, str] = _FrozenDict()


@dataclass(frozen=True)
class Limits:
    """Resource limits for a stdio server's process.

    Attributes:
        memory_bytes: memory limit in bytes (RLIMIT_DATA), or ``None`` for no limit.
        cpu_seconds: CPU-time limit in seconds, or ``None`` for no limit.
        open_files: most open file descriptors, or ``None``.
        processes: most processes of the user (RLIMIT_NPROC), or ``None``.
    """

    memory_bytes: int | None = None
    cpu_seconds: int | None = None
    open_files: int | None = None
    processes: int | None = None


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
        inherit_env: the child gets the host's whole environment, not the allow-list.
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
    inherit_env: bool = False

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
        secrets: every value a ``${VAR}``, ``${env:VAR}`` or ``${input:id}`` reference was
            expanded to (4 characters or more): the host keeps them out of its logs and of
            the errors it returns.
    """

    servers: Mapping[str, ServerConfig]
    path: str | None = None
    inputs: tuple[InputSpec, ...] = ()
    notes: tuple[str, ...] = field(default=(), compare=False)
    secrets: frozenset[str] = field(default=frozenset(), compare=False, repr=False)
    #: Servers not selected (``only=``): listed disabled, neither expanded nor validated.
    left_out: frozenset[str] = field(default=frozenset(), compare=False)

    def __post_init__(self) -> None:
        # Read-only even when built in code from a dict (or by dataclasses.replace).
        if not isinstance(self.servers, _FrozenMap):
            object.__setattr__(self, "servers", _FrozenMap(self.servers.items()))

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
# The schema: structure
# ---------------------------------------------------------------------------------------
#
# Every configuration is first validated against schemas/mcp.json.schema.json: types,
# required fields, the server name pattern, the transport keywords, unknown fields, number
# ranges, which fields belong to which kind of server. The loader below then does only what a
# schema cannot: ${...} expansion and the checks of expanded values, inference of the type,
# cross-field and cross-server rules (duplicate names across dialects, duplicate input ids,
# enabled/disabled, dependencies), reading envFile.
#
# Schema errors become ConfigurationErrors in the loader's style. The message is the
# failing subschema's "errorMessage" (or "patternErrorMessage" for a pattern; VS Code shows
# the same two keywords), else a rule derived from the keyword. Values from the file are
# never quoted (they may be secrets); only their JSON type ("got number") and, for the
# transport keyword fields, the keyword.


def _schema_file() -> Path:
    """Where the bundled ``mcp.json`` schema is (wheel first, then a source checkout)."""
    package = Path(__file__).resolve().parent
    for candidate in (package / "schemas" / SCHEMA_FILE, package.parent / "schemas" / SCHEMA_FILE):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"mcphost is installed without its schemas ({SCHEMA_FILE} not found)")


@functools.lru_cache(maxsize=1)
def _config_schema() -> _SchemaCheck:
    """The compiled schema: read and compiled once per process, on first use."""
    root = json.loads(_schema_file().read_text(encoding="utf-8"))
    return _SchemaCheck(root)


# Instance paths as mcphost.schema reports them: $.name, [3], ['any key'].
_INSTANCE_STEP = re.compile(
    r"\.([A-Za-z_][A-Za-z0-9_]*)|\[([0-9]+)\]|\['((?:[^'\\]|\\.)*)'\]", re.DOTALL
)
_TYPE_PLURALS = {
    "string": "strings",
    "object": "objects",
    "array": "arrays",
    "number": "numbers",
    "integer": "integers",
    "boolean": "booleans",
}


def _instance_path(text: str) -> JSONPath:
    """``"$.servers['brave-search'].args[1]"`` -> ``("servers", "brave-search", "args", 1)``."""
    parts: list[str | int] = []
    pos = 1 if text.startswith("$") else 0
    while pos < len(text):
        m = _INSTANCE_STEP.match(text, pos)
        if m is None:  # pragma: no cover - mcphost.schema only writes the forms above
            break
        if m.group(1) is not None:
            parts.append(m.group(1))
        elif m.group(2) is not None:
            parts.append(int(m.group(2)))
        else:
            parts.append(re.sub(r"\\(.)", r"\1", m.group(3), flags=re.DOTALL))
        pos = m.end()
    return tuple(parts)


def _number(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


@dataclass(frozen=True)
class _Problem:
    """One schema error, in the loader's terms."""

    path: JSONPath
    message: str
    # Errors about an object as a whole (a missing field...) sort after its members' own
    # errors: "comand: unknown field" explains "needs command" and is reported first.
    last: bool = False
    # A field that is not allowed at all is reported before what is wrong with its value.
    presence: bool = False


class _SchemaCheck:
    """The compiled ``mcp.json`` schema, and the translation of its errors."""

    def __init__(self, root: dict[str, Any]) -> None:
        from mcphost import schema as json_schema  # lazy: `import mcphost` stays light

        self.root = root
        self.uri = str(root.get("$id") or "urn:mcphost:mcp.json")
        self.validator = json_schema.compile(root)
        self._compile = json_schema.compile
        self._parts: dict[str, Validator] = {}

    # -- navigating the schema -------------------------------------------------------------

    def resolve(self, ref: str) -> tuple[Any, str]:
        """The subschema a local ``$ref`` points at, and its JSON pointer."""
        _, _, pointer = ref.partition("#")
        node: Any = self.root
        for raw in pointer.split("/")[1:] if pointer else ():
            key = raw.replace("~1", "/").replace("~0", "~")
            node = node[int(key)] if isinstance(node, list) else node[key]
        return node, pointer

    def locate(self, schema_path: str, start: Any = None) -> tuple[Any, str]:
        """Follow a schema path as reported (through ``$ref``) to its subschema and pointer."""
        node: Any = self.root if start is None else start
        pointer = ""
        for raw in schema_path.split("/")[1:]:
            if raw == "$ref" and isinstance(node, dict) and isinstance(node.get("$ref"), str):
                node, pointer = self.resolve(node["$ref"])
                continue
            key = raw.replace("~1", "/").replace("~0", "~")
            node = node[int(key)] if isinstance(node, list) else node[key]
            pointer = f"{pointer}/{raw}"
        return node, pointer

    def part(self, pointer: str) -> Validator:
        """A validator for the subschema at ``pointer`` (its ``$ref`` resolved in the file)."""
        validator = self._parts.get(pointer)
        if validator is None:
            validator = self._compile(
                {"$ref": f"{self.uri}#{pointer}"}, resources={self.uri: self.root}
            )
            self._parts[pointer] = validator
        return validator

    # -- errors -----------------------------------------------------------------------------

    def problems(self, data: Any) -> list[_Problem]:
        """Every schema error in ``data``, in document order (empty when it is valid)."""
        if self.validator.is_valid(data):
            return []
        found: dict[tuple[JSONPath, str], _Problem] = {}
        for error in self.validator.iter_errors(data):
            for problem in self.explain(error, (), None):
                found.setdefault((problem.path, problem.message), problem)
        order = _DocumentOrder(data)
        return sorted(found.values(), key=order.key)

    def explain(self, error: ValidationError, base: JSONPath, start: Any) -> list[_Problem]:
        """Translate one error of ``mcphost.schema`` (at ``base``, for a schema ``start``)."""
        path = (*base, *_instance_path(error.path))
        keyword = error.keyword or ""
        value = error.value
        if keyword == "false":
            return [_Problem(path, "is not allowed here", presence=True)]
        if keyword == "maxDepth":
            return [_Problem(path, "is nested too deeply")]
        owner, owner_pointer = self.locate(error.schema_path.rpartition("/")[0], start)
        if not isinstance(owner, dict):  # pragma: no cover - keywords live in objects
            return [_Problem(path, "is invalid")]
        custom = owner.get("errorMessage")
        custom = custom if isinstance(custom, str) else None
        if keyword == "additionalProperties":
            properties = owner.get("properties", {})
            # Suggest only fields with a meaning: not those accepting anything (the fields of
            # other clients, which are documented and ignored).
            known = [k for k, sub in properties.items() if set(sub) - {"description", "$comment"}]
            return [
                _Problem((*path, key), "unknown field" + _suggest(key, known), presence=True)
                for key in value
                if key not in properties
            ]
        if keyword == "propertyNames":
            names = self.part(f"{owner_pointer}/propertyNames")
            wrapper = {"$ref": f"#{owner_pointer}/propertyNames"}
            out: list[_Problem] = []
            for key in value:
                for sub in names.iter_errors(key)[:1]:
                    out.extend(self.explain(sub, (*path, key), wrapper))
            return out
        if keyword == "required":
            return [
                _Problem(path, custom or f'missing "{key}"', last=True)
                for key in owner.get("required", ())
                if key not in value
            ]
        if keyword in ("anyOf", "oneOf"):
            return [_Problem(path, custom or "matches none of the accepted forms", last=True)]
        if keyword == "not":
            negated = owner.get("not")
            # "not": {} refuses the field itself; "not": {"required": [...]} a combination
            # of fields (has both "command" and "url"), reported where the object starts.
            refuses_all = negated == {} or negated is True
            return [_Problem(path, custom or "is not allowed here", presence=refuses_all)]
        if keyword == "type":
            got = json_kind(value)
            if custom:
                return [_Problem(path, f"{custom}, got {got}")]
            message = f"expected {self.describe_type(owner)}, got {got}"
            if (
                owner.get("type") == "string"
                and got in ("number", "boolean")
                and owner_pointer.endswith("/additionalProperties")
            ):
                message += " (write it in quotes)"  # "PORT": 8080 in env or headers
            return [_Problem(path, message)]
        if keyword == "pattern":
            rule = owner.get("patternErrorMessage") or custom
            if not isinstance(rule, str):
                rule = f"must match the pattern {owner.get('pattern')}"
            return [_Problem(path, rule + self.shown(path, value))]
        if keyword in ("enum", "const"):
            if custom is None:
                allowed = owner["enum"] if keyword == "enum" else [owner["const"]]
                words = [json.dumps(v, ensure_ascii=False) for v in allowed]
                custom = "expected " + (
                    words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]
                )
            return [_Problem(path, custom + self.shown(path, value))]
        return [_Problem(path, custom or self.rule(keyword, owner))]

    @staticmethod
    def shown(path: JSONPath, value: Any) -> str:
        if isinstance(value, str):
            if path and path[-1] in _KEYWORD_FIELDS:
                return f", got {json.dumps(value, ensure_ascii=False)}"
            return ""
        return f", got {json_kind(value)}"

    def describe_type(self, owner: Mapping[str, Any]) -> str:
        kinds = owner.get("type")
        names = [kinds] if isinstance(kinds, str) else list(kinds or ())
        if names == ["array"]:
            items = owner.get("items")
            if isinstance(items, dict) and isinstance(items.get("$ref"), str):
                items = self.resolve(items["$ref"])[0]
            item_type = items.get("type") if isinstance(items, dict) else None
            # A type list (["string", "object"]) names no single plural.
            if isinstance(item_type, str) and item_type in _TYPE_PLURALS:
                return f"array of {_TYPE_PLURALS[item_type]}"
        return " or ".join(str(n) for n in names) or "a valid value"

    @staticmethod
    def rule(keyword: str, owner: Mapping[str, Any]) -> str:
        limit = owner.get(keyword)
        shown = _number(limit)
        if keyword == "minLength":
            return "must not be empty" if limit == 1 else f"must be at least {shown} characters"
        return {
            "maxLength": f"must be at most {shown} characters",
            "minimum": f"must be {shown} or more",
            "exclusiveMinimum": f"must be greater than {shown}",
            "maximum": f"must be {shown} or less",
            "exclusiveMaximum": f"must be less than {shown}",
            "multipleOf": f"must be a multiple of {shown}",
            "minItems": f"must have at least {shown} items",
            "maxItems": f"must have at most {shown} items",
            "uniqueItems": "must not contain duplicates",
            "minProperties": f"must have at least {shown} fields",
            "maxProperties": f"must have at most {shown} fields",
        }.get(keyword, f"is invalid ({keyword})")


class _DocumentOrder:
    """Sort keys putting JSON paths in document order (object members keep file order)."""

    def __init__(self, data: Any) -> None:
        self.data = data
        self.indexes: dict[int, dict[str, int]] = {}

    def key(self, problem: _Problem) -> tuple[float, ...]:
        node = self.data
        path = problem.path
        key: list[float] = []
        for part in path:
            if isinstance(node, Mapping) and isinstance(part, str):
                index = self.indexes.get(id(node))
                if index is None:
                    index = {k: i for i, k in enumerate(node)}
                    self.indexes[id(node)] = index
                key.append(index.get(part, math.inf))
                node = node.get(part)
            elif isinstance(node, (list, tuple)) and isinstance(part, int):
                key.append(part)
                node = node[part] if part < len(node) else None
            else:
                key.append(math.inf)
                node = None
        # Before the value's members (-2, -1), or after them (inf) for a missing member.
        key.append(math.inf if problem.last else -2 if problem.presence else -1)
        return tuple(key)


def _plain(value: Any) -> Any:
    """Configuration data given in code, as JSON-shaped values (mappings -> dict, tuples -> list)."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


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
        #: Values references were expanded to (see HostConfig.secrets).
        self.secrets: set[str] = set()
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

    # -- structure --------------------------------------------------------------------------

    def check_schema(self, data: Any) -> None:
        """Validate ``data`` against the schema; raise the first error in document order."""
        problems = _config_schema().problems(data)
        if problems:
            first = problems[0]
            path = first.path
            server = None
            if len(path) >= 2 and path[0] in ("servers", "mcpServers") and isinstance(path[1], str):
                server = path[1]
            self.error(path, first.message, server=server)

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
            if result is None:
                return m.group(0)
            if len(result) >= 4 and body not in _NOT_SECRET:
                self.secrets.add(result)
            return result

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

    def load(self, data: Any, only: Sequence[str] | None = None) -> HostConfig:
        left_out: list[tuple[str, str]] = []
        if only is not None:
            data, left_out = _selected(data, only)
        self.check_schema(data)
        for key in data:
            if key not in ("servers", "mcpServers", "inputs"):
                hint = _suggest(key, ("servers", "mcpServers", "inputs"))
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
        self.check_dependencies(servers, entries)
        for name, _top in left_out:
            # Not selected: neither expanded nor validated (an unset variable or a broken
            # entry there is no error for the servers that were chosen); listed, disabled.
            servers[name] = ServerConfig(name=name, type="stdio", enabled=False)
        return HostConfig(
            servers=_FrozenMap(servers.items()),
            path=self.path,
            inputs=tuple(self.declared_inputs.values()),
            notes=tuple(self.notes),
            secrets=frozenset(self.secrets),
            left_out=frozenset(name for name, _top in left_out),
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

    def load_server(self, top: str, name: str, raw: Mapping[str, Any]) -> ServerConfig:
        """Build one server from its entry (whose structure the schema has validated)."""
        spath: JSONPath = (top, name)
        for key in raw:
            if key in _IGNORED_FIELDS:
                self.note((*spath, key), "ignored (a field of another MCP client)")

        def fp(*parts: str | int) -> JSONPath:
            return (*spath, *parts)

        enabled = raw.get("enabled", True)
        if "disabled" in raw:
            if "enabled" in raw and raw["enabled"] == raw["disabled"]:
                self.error(fp("disabled"), 'contradicts "enabled"', server=name)
            enabled = not raw["disabled"]
        self.lenient = not enabled

        kind, source = self.server_type(spath, raw, name)
        if "type" not in raw and ("transport" in raw or "transportType" in raw):
            # The schema applies these rules when the type is given by "type" or inferred
            # without "transport"/"transportType"; here they follow the type those give.
            self.check_kind(spath, raw, kind, source, name)

        command: str | None = None
        args: tuple[str, ...] = ()
        env: dict[str, str] = {}
        cwd: str | None = None
        url: str | None = None
        headers: dict[str, str] = {}
        limits: Limits | None = None
        if kind == "stdio":
            command = self.expand(fp("command"), raw["command"], name)
            if not command.strip():  # after expansion (the schema refuses a blank literal)
                self.error(fp("command"), "must not be empty", server=name)
            raw_args = raw.get("args", ())
            args = tuple(self.expand(fp("args", i), a, name) for i, a in enumerate(raw_args))
            if not raw_args and " " in raw["command"].strip() and "${" not in raw["command"]:
                self.note(
                    fp("command"),
                    'contains spaces and there are no "args": commands run without a shell, '
                    'so put the arguments in "args"',
                )
            if "envFile" in raw:
                env.update(self.env_file(fp("envFile"), raw["envFile"], name))
            for key, value in raw.get("env", {}).items():
                expanded = self.expand(fp("env", key), value, name)
                if "\0" in expanded:
                    self.error(fp("env", key), "contains a NUL character", server=name)
                env[key] = expanded
            if "cwd" in raw:
                cwd = self.local_path(fp("cwd"), raw["cwd"], name)
            if raw.get("limits") is not None:
                limits = self.limits(fp("limits"), raw["limits"], name)
        else:
            url = self.expand(fp("url"), raw["url"], name)
            self.check_url(fp("url"), url, kind, name)
            for key, value in raw.get("headers", {}).items():
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
            shutdown_timeout = self.seconds(fp("shutdownTimeout"), raw["shutdownTimeout"], name)

        dependencies: list[str] = []
        for i, dep in enumerate(raw.get("dependencies", ())):
            if dep == name:
                self.error(fp("dependencies", i), "a server cannot depend on itself", server=name)
            if dep not in dependencies:
                dependencies.append(dep)

        tools = ToolFilter()
        if raw.get("tools") is not None:
            tools = ToolFilter(
                allow=tuple(raw["tools"].get("allow", ())),
                deny=tuple(raw["tools"].get("deny", ())),
            )
        roots = tuple(
            self.root(fp("roots", i), r, name) for i, r in enumerate(raw.get("roots", ()))
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
            priority=int(raw.get("priority", 0)),
            domains=tuple(raw.get("domains", ())),
            roots=roots,
            line=line,
            inherit_env=bool(raw.get("inheritEnv", False)),
        )

    def seconds(self, fpath: JSONPath, value: float, server: str) -> float:
        # The schema checks type and range; JSON has no infinity, but data built in code may.
        if not math.isfinite(value):
            self.error(fpath, "expected a finite number of seconds", server=server)
        return float(value)

    def check_kind(
        self, spath: JSONPath, raw: Mapping[str, Any], kind: str, source: str, name: str
    ) -> None:
        """The schema's rules on which fields a kind of server takes, for the given kind."""
        wrong: tuple[str, ...]
        if kind == "stdio":
            wrong, why = _REMOTE_ONLY, "only applies to http, sse and websocket servers"
        elif source == "url":
            wrong, why = _STDIO_ONLY, 'only applies to stdio servers (this one has a "url")'
        else:
            wrong, why = _STDIO_ONLY, f'only applies to stdio servers (this one is "{kind}")'
        for key in wrong:
            if key in raw:
                self.error((*spath, key), why, server=name)
        needed = "command" if kind == "stdio" else "url"
        if needed not in raw:
            what = "a stdio server" if kind == "stdio" else f'a "{kind}" server'
            self.error(spath, f'{what} needs "{needed}"', server=name)

    def server_type(self, spath: JSONPath, raw: Mapping[str, Any], name: str) -> tuple[str, str]:
        """Return the server's transport and where it came from (a field name).

        ``type`` wins, then fastmcp's ``transport``, then Cline's ``transportType`` (an
        unknown value of those two is noted and ignored); otherwise the type is inferred
        from ``command`` or ``url``. The schema has checked that ``type`` is a known keyword.
        """
        given: list[tuple[str, str]] = []
        for key in ("type", "transport", "transportType"):
            if key in raw:
                kind = _TYPE_ALIASES.get(raw[key].lower())
                if kind is None:
                    self.note((*spath, key), "unrecognised value ignored")
                    continue
                given.append((key, kind))
        if given:
            key, kind = given[0]
            for other_key, other in given[1:]:
                if other != kind and other_key == "transport":
                    self.error((*spath, other_key), f'contradicts "{key}" ({kind})', server=name)
            return kind, key
        # Inference. Without "transport"/"transportType" the schema has already refused an
        # entry with both or neither of command and url; with an unknown one, it is here.
        has_command = "command" in raw
        has_url = "url" in raw
        if has_command and has_url:
            self.error(
                spath,
                'has both "command" and "url": set "type" to say which transport to use',
                server=name,
            )
        if has_command:
            return "stdio", "command"
        if has_url:
            url = raw["url"]
            scheme = url.split(":", 1)[0].lower() if ":" in url else ""
            if scheme in ("ws", "wss"):
                return "websocket", "url"
            try:
                path = urllib.parse.urlsplit(url).path if "${" not in url else url
            except ValueError:
                path = url  # not a valid URL: check_url says so
            if path.rstrip("/").endswith("/sse"):
                return "sse", "url"
            return "http", "url"
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

    def env_file(self, fpath: JSONPath, raw: str, name: str) -> dict[str, str]:
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

    def limits(self, fpath: JSONPath, raw: Mapping[str, Any], name: str) -> Limits | None:
        memory = None
        value = raw.get("memory")
        if value is not None:
            try:
                # The schema checks the form; the size itself ("0M"...) is checked here.
                memory = parse_memory(int(value) if isinstance(value, float) else value)
            except ValueError as exc:
                self.error((*fpath, "memory"), str(exc), server=name)
        cpu = raw.get("cpuSeconds")
        files = raw.get("openFiles")
        procs = raw.get("processes")
        if memory is None and cpu is None and files is None and procs is None:
            return None
        return Limits(
            memory_bytes=memory,
            cpu_seconds=None if cpu is None else int(cpu),
            open_files=None if files is None else int(files),
            processes=None if procs is None else int(procs),
        )

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
    only: Sequence[str] | None = None,
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
    if only is not None:
        data, _ = _selected(data, only)  # the inputs of the servers chosen, and no other
    loader = _Loader(
        doc,
        path=path,
        environ={},
        workspace_folder=None,
        user_home=None,
        inputs=None,
        read_text=None,
    )
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
        return _plain(data)
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
