"""The schema compiler: walks a schema once and builds a tree of :class:`Node` closures.

It owns the cross-cutting parts of compilation: the keyword → builder table walk
(:data:`mcphost.schema.keywords.BUILDERS`), ``type``, ``$ref`` and ``$dynamicRef``,
``unevaluated*``, memoisation of nodes (so recursive schemas compile to a finite graph),
and the safety rules:

* a ``$ref`` cycle that never descends into the instance (``{"$ref": "#"}``) would loop
  forever, so it is a :class:`~mcphost.errors.SchemaError`;
* a ``$ref`` cycle that does descend is bound late and counts its depth
  (:func:`~mcphost.schema.nodes.cyclic_check`), so deep instances stop at ``max_depth``;
* a remote reference is never fetched.

``$dynamicRef`` is resolved statically. The dynamic scope at any point of evaluation is the
chain of schema resources entered to get there, which the compiler knows; it compiles each
schema once per distinct binding of the dynamic anchors in scope (the ``ctx`` tuple), so at
run time a ``$dynamicRef`` is as cheap as a ``$ref`` (JSON Schema 2020-12 core, 8.2.3.2).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from mcphost.errors import SchemaError
from mcphost.schema.bounds import DEFAULT_MAX_NODES
from mcphost.schema.keywords import BUILDERS
from mcphost.schema.nodes import (
    FALSE_NODE,
    TRUE_NODE,
    AnnFn,
    Check,
    Kw,
    Node,
    cyclic_check,
)
from mcphost.schema.refs import DRAFT7, DRAFT2020, Loc, Registry
from mcphost.schema.report import Collector, IPath, json_type

if TYPE_CHECKING:
    from mcphost.schema.regex import Pattern

__all__ = ["Compiler"]

logger = logging.getLogger("mcphost.schema")

Ctx = tuple[tuple[str, str], ...]
#: Schemas nested at most this deep validate without the recursion guard.
UNGUARDED_DEPTH = 32
#: keyword -> position of its builder in BUILDERS
_TRIGGERS = {t: i for i, (triggers, _, _) in enumerate(BUILDERS) for t in triggers}
_TYPES = frozenset({"array", "boolean", "integer", "null", "number", "object", "string"})


class Compiler:
    """Compiles the documents of one :class:`Registry` into nodes."""

    def __init__(
        self,
        registry: Registry,
        *,
        strict: bool,
        format_assert: bool,
        max_depth: int,
        max_nodes: int = DEFAULT_MAX_NODES,
    ) -> None:
        self.reg = registry
        self.strict = strict
        self.format_assert = format_assert
        self.max_depth = max_depth
        self.memo: dict[tuple[int, Ctx], Node] = {}
        self.in_progress: dict[tuple[int, Ctx], int] = {}
        #: instance-descending keywords on the current compile path; a $ref back to a
        #: node entered at the same level is a cycle that never consumes input.
        self.level = 0
        self.depth = 0
        #: set when some $ref closes a cycle (validation then needs the depth guard).
        self.cyclic = False
        #: set when validation may raise DepthExceeded or RecursionError, so the
        #: validator must catch them: a $ref cycle, a deep schema, uniqueItems (which
        #: freezes items of any depth). Other schemas skip the guard's cost.
        self.guard = False
        self._remote_logged: set[str] = set()
        #: nodes built so far, and the most allowed: a subschema is compiled once per
        #: distinct $dynamicRef scope, which a hostile schema could multiply.
        self.built = 0
        self.max_nodes = max_nodes

    # --- helpers used by keyword builders ----------------------------------------------

    def error(self, loc: Loc, keyword: str, message: str) -> SchemaError:
        """A SchemaError naming the location of the offending keyword."""
        return SchemaError(f"invalid schema at {loc.where()}/{keyword}: {keyword} {message}")

    def pattern(self, source: Any, loc: Loc, keyword: str) -> Pattern:
        """Compile an ECMA-262 pattern, as a SchemaError when invalid or refused."""
        if not isinstance(source, str):
            raise self.error(loc, keyword, "must be a string (a regular expression)")
        # The regex engine (six modules, about half a megabyte) is loaded by the first schema
        # that has a pattern: the MCP message schemas have none, nor do most tools' inputs.
        from mcphost.schema.regex import RegexError, compile_pattern

        try:
            return compile_pattern(source, self.strict)
        except RegexError as exc:
            raise self.error(loc, keyword, f"is not a usable regular expression: {exc}") from None

    def sub(self, value: Any, loc: Loc, suffix: str, ctx: Ctx, consumes: bool) -> Node:
        """Compile the subschema at ``loc.pointer/suffix``.

        Args:
            consumes: the keyword applies the subschema to a part of the instance
                (properties, items...) rather than to the instance itself (allOf, $ref...).
        """
        child = Loc(loc.base, f"{loc.pointer}/{suffix}", loc.dialect)
        if consumes:
            self.level += 1
        try:
            return self.node(value, child, ctx)
        finally:
            if consumes:
                self.level -= 1

    def checker(self, node: Node) -> Check:
        """The check of ``node``, bound late (with the depth guard) if still compiling."""
        if node.complete:
            return node.check
        self.cyclic = self.guard = True
        return cyclic_check(node, self.max_depth)

    def annotator(self, node: Node) -> AnnFn:
        """The annotator of ``node``, built lazily if the node is still compiling."""
        if node.complete:
            return node.annotator()

        def late(x: Any) -> Any:
            return node.annotator()(x)

        return late

    # --- nodes -------------------------------------------------------------------------

    def enter(self, ctx: Ctx, uri: str) -> Ctx:
        """The dynamic scope after entering resource ``uri``: outermost binding wins."""
        anchors = self.reg.dynamic.get(uri)
        if not anchors:
            return ctx
        bound = {name for name, _ in ctx}
        new = [(name, uri) for name in anchors if name not in bound]
        return tuple(sorted(ctx + tuple(new))) if new else ctx

    def node(self, schema: Any, loc: Loc, ctx: Ctx) -> Node:
        """Compile one (sub)schema in dynamic context ``ctx`` (memoised)."""
        if schema is True:
            return TRUE_NODE
        if schema is False:
            return FALSE_NODE
        if not isinstance(schema, dict):
            raise SchemaError(
                f"invalid schema at {loc.where()}: expected an object or a boolean, "
                f"got {json_type(schema)}"
            )
        loc = self.reg.loc_of(schema, loc)
        if loc.dialect == DRAFT2020 and "$id" in schema:
            ctx = self.enter(ctx, loc.base)
        key = (id(schema), ctx)
        node = self.memo.get(key)
        if node is not None:
            if not node.complete and self.in_progress.get(key) == self.level:
                raise SchemaError(
                    f"invalid schema at {loc.where()}: a $ref cycle reaches this schema "
                    "again without descending into the instance, so validation would "
                    "never end"
                )
            return node
        self.depth += 1
        if self.depth > UNGUARDED_DEPTH:
            # A few Python frames per level: a deep schema applied to an equally deep
            # instance can exhaust Python's stack, which must end as a ValidationError.
            self.guard = True
        if self.depth > self.max_depth:
            raise SchemaError(
                f"invalid schema at {loc.where()}: nested deeper than max_depth "
                f"({self.max_depth})"
            )
        self.built += 1
        if self.built > self.max_nodes:
            raise SchemaError(
                f"invalid schema at {loc.where()}: compiles to more than {self.max_nodes} "
                "subschemas (too large, or too many $dynamicRef scopes)"
            )
        node = Node()
        self.memo[key] = node
        self.in_progress[key] = self.level
        try:
            self._build(node, schema, loc, ctx)
        finally:
            del self.in_progress[key]
            self.depth -= 1
        node.finalize()
        return node

    def _build(self, node: Node, s: dict[str, Any], loc: Loc, ctx: Ctx) -> None:
        dialect = loc.dialect
        if dialect == DRAFT7 and "$ref" in s:
            # Draft-07 section 8.3: all other properties of a "$ref" object are ignored.
            node.kws.append(self._ref(s, loc, ctx, "$ref"))
            return
        if "type" in s:
            node.types = self._types(s["type"], loc)
        # The builders this schema's keywords trigger, in BUILDERS order: looked up per
        # key, because scanning the whole table per node dominated large compilations.
        found = {_TRIGGERS[k] for k in s if k in _TRIGGERS}
        for i in sorted(found):
            _, builder, dialects = BUILDERS[i]
            if dialect in dialects:
                kw = builder(self, s, loc, ctx)
                if kw is not None:
                    node.kws.append(kw)
        if "$ref" in s:
            node.kws.append(self._ref(s, loc, ctx, "$ref"))
        if dialect == DRAFT2020:
            if "$dynamicRef" in s:
                node.kws.append(self._ref(s, loc, ctx, "$dynamicRef"))
            if "unevaluatedProperties" in s:
                node.uneval_props = self.sub(
                    s["unevaluatedProperties"], loc, "unevaluatedProperties", ctx, True
                )
            if "unevaluatedItems" in s:
                node.uneval_items = self.sub(
                    s["unevaluatedItems"], loc, "unevaluatedItems", ctx, True
                )

    def _types(self, value: Any, loc: Loc) -> frozenset[str] | None:
        names = [value] if isinstance(value, str) else value
        if (
            not isinstance(names, list)
            or not names
            or not all(isinstance(n, str) and n in _TYPES for n in names)
            or len(set(names)) != len(names)
        ):
            raise self.error(
                loc, "type", f"must be one of {sorted(_TYPES)} or a unique array of them, "
                f"got {value!r}",
            )
        types = frozenset(names)
        return None if types >= {"array", "boolean", "null", "number", "object", "string"} else types

    def _ref(self, s: dict[str, Any], loc: Loc, ctx: Ctx, keyword: str) -> Kw:
        ref = s[keyword]
        if not isinstance(ref, str):
            raise self.error(loc, keyword, "must be a string (a URI reference)")
        resolved = self.reg.resolve(ref, loc)
        target: Node
        if resolved is None:
            full = ref
            if self.strict:
                raise SchemaError(
                    f"invalid schema at {loc.where()}/{keyword}: remote reference {ref!r} "
                    "is not available locally and is never fetched (strict mode)"
                )
            if ref not in self._remote_logged:
                self._remote_logged.add(ref)
                logger.debug("remote $ref %s is not fetched; treated as true", ref)
            target = TRUE_NODE
        else:
            schema, tloc, full = resolved
            if keyword == "$dynamicRef":
                schema, tloc = self._dynamic_target(schema, tloc, full, ctx)
            target = self.node(schema, tloc, self.enter(ctx, tloc.base))
        fn = self.checker(target)
        node = target

        def explain(x: Any, ipath: IPath, spath: str, out: Collector) -> None:
            node.explain(x, ipath, f"{spath}/{keyword}", out)

        def make_annotate() -> AnnFn:
            return self.annotator(node)

        return Kw(keyword, None, fn, explain, make_annotate)

    def _dynamic_target(self, schema: Any, tloc: Loc, full: str, ctx: Ctx) -> tuple[Any, Loc]:
        frag = full.partition("#")[2]
        # Only a reference whose initial target carries a matching $dynamicAnchor is
        # dynamic ("bookending"); otherwise it behaves like $ref.
        if not frag or frag.startswith("/") or not isinstance(schema, dict):
            return schema, tloc
        if schema.get("$dynamicAnchor") != frag:
            return schema, tloc
        for name, uri in ctx:
            if name == frag:
                return self.reg.dynamic[uri][frag]
        return schema, tloc
