"""The ``mcp.json`` schema, and its errors in the loader's words.

Every configuration is first validated against schemas/mcp.json.schema.json: types,
required fields, the server name pattern, the transport keywords, unknown fields, number
ranges, which fields belong to which kind of server. The loader then does only what a
schema cannot: ${...} expansion and the checks of expanded values, inference of the type,
cross-field and cross-server rules (duplicate names across dialects, duplicate input ids,
enabled/disabled, dependencies), reading envFile.

Schema errors become ConfigurationErrors in the loader's style. The message is the
failing subschema's "errorMessage" (or "patternErrorMessage" for a pattern; VS Code shows
the same two keywords), else a rule derived from the keyword. Values from the file are
never quoted (they may be secrets); only their JSON type ("got number") and, for the
transport keyword fields, the keyword.
"""

from __future__ import annotations

import json
import math
import os
import re
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcphost._json import json_kind
from mcphost.errors import ValidationError

from .jsonpos import JSONPath

if TYPE_CHECKING:
    from mcphost.schema import Validator

#: The JSON Schema every configuration is validated against: ``schemas/`` at the root of a
#: source checkout, ``mcphost/schemas/`` in an installed wheel (pyproject force-includes it).
SCHEMA_FILE = "mcp.json.schema.json"
# Fields whose value is a transport keyword, never a secret: schema errors about them quote
# the value (``got "grpc"``). No other value from the file is ever quoted.
_KEYWORD_FIELDS = frozenset({"type", "transport", "transportType"})


def suggest(key: str, known: Sequence[str]) -> str:
    """`` (did you mean "x"?)`` for a misspelt key, or ``""``."""
    norm = key.lower().replace("_", "").replace("-", "")
    for candidate in known:
        if candidate.lower() == norm:
            return f' (did you mean "{candidate}"?)'
    import difflib  # loaded by the first misspelt key, not by every host

    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    if not close and len(norm) >= 3:
        # An abbreviation ("cpu" for "cpuSeconds", "env" for "envFile" is exact already).
        close = [c for c in known if c.lower().startswith(norm)][:1]
    return f' (did you mean "{close[0]}"?)' if close else ""


def _schema_file() -> str:
    """Where the bundled ``mcp.json`` schema is (wheel first, then a source checkout)."""
    package = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    for candidate in (os.path.join(package, "schemas", SCHEMA_FILE),
                      os.path.join(os.path.dirname(package), "schemas", SCHEMA_FILE)):
        if os.path.isfile(candidate):
            return candidate
    raise FileNotFoundError(f"mcphost is installed without its schemas ({SCHEMA_FILE} not found)")


def _nothing() -> _SchemaCheck | None:
    return None


# The compiled schema, held weakly: its validators and its JSON (some 650 KiB of Python
# heap) live while a load uses them, not for the rest of the process. A load (the first,
# or a reload) after the last one let go reads and compiles it again (milliseconds).
_held: Callable[[], _SchemaCheck | None] = _nothing


def config_schema() -> _SchemaCheck:
    """The compiled schema: the one a load still holds, else read and compiled anew."""
    global _held
    check = _held()
    if check is None:
        with open(_schema_file(), encoding="utf-8") as f:
            root = json.loads(f.read())
        check = _SchemaCheck(root)
        _held = weakref.ref(check)
    return check


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
        # Uncached (cache=False): the schema package's cache would keep them for good.
        self.validator = json_schema.compile(root, cache=False)
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
                {"$ref": f"{self.uri}#{pointer}"}, resources={self.uri: self.root}, cache=False
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
                _Problem((*path, key), "unknown field" + suggest(key, known), presence=True)
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


def plain(value: Any) -> Any:
    """Configuration data given in code, as JSON-shaped values (mappings -> dict, tuples -> list)."""
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value
