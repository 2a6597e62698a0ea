"""JSON Schema validation for mcphost: compile once, validate fast, explain on failure.

This package owns validating data (tool arguments, tool results, MCP messages, mcp.json)
against JSON Schemas, drafts 2020-12 (default) and 07. Schemas compile into trees of
Python closures (no ``exec``/``eval``); compiled validators are cached by the schema's
canonical JSON plus options. It is sans-I/O: a ``$ref`` to anything outside the schema
is never fetched.

Example::

    from mcphost import schema

    v = schema.compile({"type": "object", "properties": {"path": {"type": "string"}},
                        "required": ["path"]})
    v.is_valid({"path": "a.txt"})          # True
    v.validate({})                         # ValidationError: $: missing required property 'path'

Modules: :mod:`.compiler` (schema walk, ``$ref``, dynamic scope), :mod:`.keywords`
(keyword → closure builders), :mod:`.nodes` (compiled nodes, type dispatch, annotations),
:mod:`.refs` (URIs, ``$id``, anchors), :mod:`.regex` (ECMA-262 patterns: the choice of
engine), :mod:`.regex_syntax` (parsing them), :mod:`.regex_translate` (their ``re``
spelling), :mod:`.nfa` (the automaton every matcher shares), :mod:`.linear`
(linear-time search), :mod:`.backtrack` (budgeted back-references), :mod:`.ambiguity`
(when ``re`` is safe), :mod:`.numbers` (exact ``multipleOf``), :mod:`.equality` (JSON
equality at any depth), :mod:`.bounds` (compile cost and limits), :mod:`.formats`
(``format`` checkers), :mod:`.meta` (bundled meta-schemas), :mod:`.report` (error paths
and messages), :mod:`.flat` (the fast path of flat object schemas of scalars). See ``docs/schema.md``.

Nothing from a schema or an instance can make validation raise anything but
:class:`~mcphost.errors.ValidationError` or :class:`~mcphost.errors.SchemaError`, or take
time worse than linear in the instance for a compiled schema.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from typing import Any

from mcphost.errors import SchemaError, ValidationError
from mcphost.schema.bounds import DEFAULT_MAX_NODES, compile_cost, gc_paused, node_budget
from mcphost.schema.compiler import Compiler
from mcphost.schema.flat import flat_check
from mcphost.schema.nodes import DepthExceeded, Node
from mcphost.schema.refs import DRAFT7, DRAFT2020, Registry
from mcphost.schema.report import Collector, IPath, Stop, format_path

__all__ = ["DEFAULT_MAX_NODES", "Validator", "clear_cache", "compile", "compile_cost", "validate"]

_DIALECTS = {
    "2020-12": DRAFT2020, "draft2020-12": DRAFT2020, "draft-2020-12": DRAFT2020,
    "draft-07": DRAFT7, "draft7": DRAFT7, "draft-7": DRAFT7, "07": DRAFT7, "7": DRAFT7,
}
_CACHE_SIZE = 512
_cache: dict[tuple[Any, ...], Validator] = {}
_cache_lock = threading.Lock()


class Validator:
    """A compiled schema.

    Attributes:
        schema: the schema (a private deep copy of what was compiled).
        is_valid: ``is_valid(instance) -> bool``; the fastest call, no error details.
            It is an attribute holding the compiled closure itself, so calling it costs
            exactly the validation.
    """

    __slots__ = ("_check", "_root", "is_valid", "max_depth", "schema")

    is_valid: Callable[[Any], bool]

    def __init__(self, schema: Any, root: Node, guarded: bool, max_depth: int) -> None:
        self.schema = schema
        self._root = root
        self._check = root.check
        self.max_depth = max_depth
        if guarded:
            check = root.check

            def is_valid(instance: Any) -> bool:
                try:
                    return check(instance)
                except (DepthExceeded, RecursionError):
                    return False

            self.is_valid = is_valid
        else:
            # No $ref cycle: validation depth is bounded by the schema's own depth. A flat
            # object of scalars (the commonest tool input) gets a specialised fast path.
            self.is_valid = flat_check(schema, root.check) or root.check

    def validate(self, instance: Any, *, all_errors: bool = False) -> None:
        """Validate ``instance``.

        Args:
            instance: the data (as parsed from JSON: dict, list, str, int, float, bool,
                None; tuples count as arrays).
            all_errors: collect every error (on ``.errors`` of the raised one) instead of
                stopping at the first, which is faster.

        Raises:
            ValidationError: the instance is invalid; ``.path``, ``.keyword``,
                ``.schema_path``, ``.value`` describe the first error.
        """
        try:
            if self._check(instance):
                return
        except (DepthExceeded, RecursionError):
            raise self._depth_error(instance) from None
        errors = self._explain(instance, all_errors)
        first = errors[0]
        first.errors = errors
        raise first

    def iter_errors(self, instance: Any) -> list[ValidationError]:
        """Every error for ``instance`` (an empty list when it is valid)."""
        try:
            if self._check(instance):
                return []
        except (DepthExceeded, RecursionError):
            return [self._depth_error(instance)]
        return self._explain(instance, True)

    def _explain(self, instance: Any, collect_all: bool) -> list[ValidationError]:
        out = Collector(collect_all)
        try:
            self._root.explain(instance, (), "", out)
        except Stop:
            pass
        except (DepthExceeded, RecursionError):
            return [self._depth_error(instance)]
        if not out.errors:  # pragma: no cover - defensive: the fast path said invalid
            out.errors.append(ValidationError("$: does not match the schema", value=instance))
        return out.errors

    def _depth_error(self, instance: Any) -> ValidationError:
        path = format_path(_too_deep(instance, self.max_depth))
        shown = path if len(path) <= 80 else f"{path[:40]}...{path[-30:]}"
        return ValidationError(
            f"{shown}: instance is nested too deeply to validate (max_depth {self.max_depth})",
            path=path,
            keyword="maxDepth",
            value=None,
        )


def _too_deep(instance: Any, limit: int) -> IPath:
    """Where ``instance`` first nests deeper than ``limit`` (depth-first, iterative), or
    its deepest point when it never does (then Python's own stack ran out first)."""
    deepest: IPath = ()
    stack: list[tuple[Any, IPath]] = [(instance, ())]
    while stack:
        x, ipath = stack.pop()
        if len(ipath) > len(deepest):
            deepest = ipath
            if len(ipath) > limit:
                break
        if isinstance(x, dict):
            stack.extend((v, (*ipath, k)) for k, v in reversed(list(x.items())))
        elif isinstance(x, (list, tuple)):
            stack.extend((v, (*ipath, i)) for i, v in reversed(list(enumerate(x))))
    return deepest


def _canonical(value: Any, what: str) -> str:
    try:
        # allow_nan=False: NaN and Infinity are not JSON (RFC 8259 section 6).
        return json.dumps(
            value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        )
    except (TypeError, ValueError) as exc:
        raise SchemaError(f"{what} is not JSON: {exc}") from None
    except RecursionError:
        raise SchemaError(f"{what} is nested too deeply") from None


def compile(  # noqa: A001 - the natural name; shadows the builtin only in this module
    schema: Any,
    *,
    default_dialect: str = "2020-12",
    strict: bool = False,
    format_assert: bool = False,
    max_depth: int = 512,
    resources: Mapping[str, Any] | None = None,
    max_nodes: int = DEFAULT_MAX_NODES,
    cache: bool = True,
) -> Validator:
    """Compile a JSON Schema into a :class:`Validator` (cached unless ``cache`` is false).

    Args:
        schema: the schema (a dict or a bool).
        default_dialect: ``"2020-12"`` or ``"draft-07"``, used when the schema has no
            ``$schema`` (older MCP versions publish draft-07 schemas without it).
        strict: refuse what is otherwise tolerated: remote ``$ref`` (otherwise ``true``),
            patterns with nested quantifiers (otherwise matched in linear time) and
            patterns that only run under a step budget (back-references, costly
            look-around).
        format_assert: make ``format`` an assertion rather than an annotation.
        max_depth: maximum nesting of schemas, and of recursion through cyclic
            ``$ref`` during validation.
        resources: extra schema documents by URI, for ``$ref`` to resolve against (they
            are never fetched; this is how a caller provides them).
        max_nodes: refuse schemas (with their ``resources``) whose :func:`compile_cost`
            exceeds this, before compiling anything.
        cache: ``False`` compiles a validator of the caller's own, neither looked up in
            nor kept by the cache: it lives only as long as the caller holds it (a large
            schema used once, such as the configuration's, costs no memory afterwards).

    Returns:
        The validator; equal schemas with equal options return the same object (when
        cached).

    Raises:
        SchemaError: the schema is invalid, unresolvable, or refused.
    """
    dialect = _DIALECTS.get(default_dialect)
    if dialect is None:
        raise ValueError(f"default_dialect must be '2020-12' or 'draft-07', not {default_dialect!r}")
    text = _canonical(schema, "schema")
    res_text = _canonical(dict(resources), "resources") if resources else ""
    if not cache:
        with gc_paused():
            return _build(text, res_text, dialect, strict, format_assert, max_depth, max_nodes)
    key = (text, dialect, strict, format_assert, max_depth, res_text, max_nodes)
    cached = _cache.get(key)
    if cached is not None:
        return cached
    with gc_paused():
        validator = _build(text, res_text, dialect, strict, format_assert, max_depth, max_nodes)
    with _cache_lock:
        cached = _cache.get(key)
        if cached is not None:
            return cached
        if len(_cache) >= _CACHE_SIZE:
            del _cache[next(iter(_cache))]  # evict the oldest entry
        _cache[key] = validator
    return validator


def _build(
    text: str,
    res_text: str,
    dialect: str,
    strict: bool,
    format_assert: bool,
    max_depth: int,
    max_nodes: int,
) -> Validator:
    # Work on a private copy: no shared sub-objects, no later mutation by the caller.
    try:
        schema = json.loads(text)
        resources = json.loads(res_text) if res_text else {}
        cost = compile_cost(schema) + compile_cost(resources)
        if cost > max_nodes:
            raise SchemaError(
                f"invalid schema: too large to compile ({cost} nodes, max_nodes {max_nodes})"
            )
        registry = Registry(dialect)
        for uri, doc in resources.items():
            registry.add_document(doc, uri.partition("#")[0])
        root_loc = registry.add_document(schema, "")
        compiler = Compiler(
            registry,
            strict=strict,
            format_assert=format_assert,
            max_depth=max_depth,
            max_nodes=node_budget(cost, max_nodes),
        )
        ctx = compiler.enter(compiler.enter((), ""), root_loc.base)
        root = compiler.node(schema, root_loc, ctx)
    except RecursionError:
        raise SchemaError("invalid schema: nested too deeply to compile") from None
    return Validator(schema, root, compiler.guard, max_depth)


def validate(instance: Any, schema: Any, **options: Any) -> None:
    """Validate ``instance`` against ``schema`` (compiled and cached).

    Args:
        instance: the data.
        schema: the JSON Schema.
        **options: ``all_errors`` for :meth:`Validator.validate`; anything else goes to
            :func:`compile`.

    Raises:
        SchemaError: the schema is invalid.
        ValidationError: the instance is invalid.
    """
    all_errors = bool(options.pop("all_errors", False))
    compile(schema, **options).validate(instance, all_errors=all_errors)


def clear_cache() -> None:
    """Forget every cached validator (mostly for tests)."""
    with _cache_lock:
        _cache.clear()
