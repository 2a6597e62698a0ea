"""Compiled schema nodes: the closures that validate, annotate and explain.

A :class:`Node` is one compiled (sub)schema. Its ``check`` is a single closure
``instance -> bool`` specialised for the keywords the schema has: the ``type`` test and a
per-JSON-type conjunction of keyword closures are fused into one dispatch on
``type(instance)``, so ``{"type": "string"}`` costs one call and a schema with only
object keywords never looks at them for a string.

Each keyword compiles to a :class:`Kw`: a fast ``fn`` (used by ``check``), an ``explain``
(the slow pass that names the failing instance path and keyword), and, for applicators, a
``make_annotate`` factory used only when an ``unevaluatedProperties``/``unevaluatedItems``
keyword needs to know what its siblings evaluated (JSON Schema 2020-12 core, section 11).
Schemas without ``unevaluated*`` never pay for annotation tracking.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from mcphost.schema.report import Collector, IPath, json_type, show

__all__ = [
    "ARR", "NUM", "OBJ", "STR", "Ann", "AnnFn", "Check", "DepthExceeded", "Explain", "Kw",
    "Node", "cat_of", "conj", "cyclic_check", "FALSE_NODE", "TRUE_NODE",
]

Check = Callable[[Any], bool]
Ann = tuple[bool, "set[str] | None", "set[int] | None"]
AnnFn = Callable[[Any], Ann]
Explain = Callable[[Any, IPath, str, Collector], None]

OBJ, ARR, STR, NUM = "object", "array", "string", "number"
_NONE = type(None)
_FAIL: Ann = (False, None, None)


def _true(x: Any) -> bool:
    return True


def _false(x: Any) -> bool:
    return False


def cat_of(x: Any) -> str | None:
    """The keyword category of an instance: object, array, string, number or None."""
    t = type(x)
    if t is dict:
        return OBJ
    if t is str:
        return STR
    if t is list:
        return ARR
    if t is int or t is float:
        return NUM
    if isinstance(x, bool) or x is None:
        return None
    if isinstance(x, (int, float)):
        return NUM
    if isinstance(x, str):
        return STR
    if isinstance(x, dict):
        return OBJ
    if isinstance(x, (list, tuple)):
        return ARR
    return None


def _base_type(x: Any) -> type | None:
    """The JSON-ish Python type a subclass (or tuple) instance stands for."""
    if isinstance(x, bool):
        return bool
    if isinstance(x, int):
        return int
    if isinstance(x, float):
        return float
    if isinstance(x, str):
        return str
    if isinstance(x, dict):
        return dict
    if isinstance(x, (list, tuple)):
        return list
    return None


_PYCAT: dict[type, str] = {
    dict: OBJ, list: ARR, str: STR, int: NUM, float: NUM, bool: "boolean", _NONE: "null",
}
_JSON_OF: dict[type, tuple[str, ...]] = {
    dict: ("object",), list: ("array",), str: ("string",), int: ("integer", "number"),
    float: ("number",), bool: ("boolean",), _NONE: ("null",),
}


def type_matches(x: Any, types: frozenset[str]) -> bool:
    """Whether instance ``x`` has one of the JSON ``types`` (1.0 is an integer)."""
    base = type(x) if type(x) in _JSON_OF else _base_type(x)
    if base is None:
        return False
    if base is float and "integer" in types and x.is_integer():
        return True
    return any(j in types for j in _JSON_OF[base])


def conj(fns: list[Check]) -> Check:
    """One closure for ``f1(x) and f2(x) and ...`` (unrolled for short lists)."""
    n = len(fns)
    if n == 0:
        return _true
    if n == 1:
        return fns[0]
    if n == 2:
        a, b = fns

        def conj2(x: Any) -> bool:
            return a(x) and b(x)

        return conj2
    if n == 3:
        a, b, c = fns

        def conj3(x: Any) -> bool:
            return a(x) and b(x) and c(x)

        return conj3
    all_fns = tuple(fns)

    def conj_n(x: Any) -> bool:
        for f in all_fns:
            if not f(x):
                return False
        return True

    return conj_n


def _integral(f: Check) -> Check:
    """``f`` for floats allowed only when integral (``"type": "integer"`` with 1.0)."""

    def check(x: Any) -> bool:
        return x.is_integer() and f(x)

    return check


def _assemble(types: frozenset[str] | None, cat_fns: dict[str, Check], gen: Check | None) -> Check:
    """Fuse the ``type`` test, per-category keyword closures and generic keywords."""
    table: dict[type, Any] = {}
    for pt, cat in _PYCAT.items():
        f = cat_fns.get(cat)
        allowed = types is None or any(j in types for j in _JSON_OF[pt])
        if pt is float and types is not None and "number" not in types and "integer" in types:
            entry: Any = float.is_integer if f is None else _integral(f)
        elif not allowed:
            entry = False
        else:
            entry = f if f is not None else True
        table[pt] = entry
    untyped_ok = types is None
    get = table.get

    def slow(x: Any) -> bool:
        e = get(type(x))
        if e is None:
            base = _base_type(x)
            if base is None:
                return untyped_ok
            e = table[base]
        if e is True or e is False:
            return bool(e)
        return e(x)  # type: ignore[no-any-return]

    live = [(pt, e) for pt, e in table.items() if e is not False]
    calls = [(pt, e) for pt, e in live if e is not True]
    typepart: Check | None
    if not calls and len(live) == len(table):
        typepart = None
    elif len(live) == 1:
        (p, e1), = live
        if e1 is True:

            def typepart(x: Any) -> bool:
                return type(x) is p or slow(x)
        else:
            f1: Check = e1

            def typepart(x: Any) -> bool:
                if type(x) is p:
                    return f1(x)
                return slow(x)
    elif len(calls) == 1 and len(live) == len(table):
        (p, e1), = calls
        f2: Check = e1

        def typepart(x: Any) -> bool:
            if type(x) is p:
                return f2(x)
            return slow(x)
    elif (
        len(calls) == 2
        and calls[0][0] is int
        and calls[1][0] is float
        and calls[0][1] is calls[1][1]
        and len(live) == len(table)
    ):
        f3: Check = calls[0][1]

        def typepart(x: Any) -> bool:
            t = type(x)
            if t is int or t is float:
                return f3(x)
            return slow(x)
    else:

        def typepart(x: Any) -> bool:
            e = get(type(x))
            if e is True:
                return True
            if e is False:
                return False
            if e is None:
                return slow(x)
            return e(x)  # type: ignore[no-any-return]

    if gen is None:
        return typepart or _true
    if typepart is None:
        return gen
    tp, gn = typepart, gen

    def typed_and_generic(x: Any) -> bool:
        return tp(x) and gn(x)

    return typed_and_generic


class DepthExceeded(Exception):
    """Validation recursed through cyclic ``$ref``s deeper than ``max_depth``."""

    def __init__(self, limit: int) -> None:
        super().__init__(limit)
        self.limit = limit


class _Depth(threading.local):
    value = 0


_depth = _Depth()


def cyclic_check(node: Node, limit: int) -> Check:
    """A late-bound check for a ``$ref`` back-edge, counting recursion depth per thread.

    Only references that close a cycle pay for this; everything else is bound directly.
    """
    state = _depth

    def check(x: Any) -> bool:
        d = state.value
        if d >= limit:
            raise DepthExceeded(limit)
        state.value = d + 1
        try:
            return node.check(x)
        finally:
            state.value = d

    return check


class Kw:
    """One compiled keyword (or keyword group, like properties+additionalProperties)."""

    __slots__ = ("cat", "explain", "fn", "make_annotate", "name")

    def __init__(
        self,
        name: str,
        cat: str | None,
        fn: Check,
        explain: Explain,
        make_annotate: Callable[[], AnnFn] | None = None,
    ) -> None:
        self.name = name
        self.cat = cat
        self.fn = fn
        self.explain = explain
        self.make_annotate = make_annotate


class Node:
    """One compiled (sub)schema."""

    __slots__ = ("_ann", "check", "kws", "types", "uneval_items", "uneval_props", "value")

    def __init__(self, value: bool | None = None) -> None:
        self.value = value
        self.types: frozenset[str] | None = None
        self.kws: list[Kw] = []
        self.uneval_props: Node | None = None
        self.uneval_items: Node | None = None
        self._ann: AnnFn | None = None
        self.check: Check = _true if value is not False else _false
        if value is None:
            # Replaced by finalize(); a cyclic $ref reads it late through cyclic_check.
            self.check = _unfinished

    @property
    def complete(self) -> bool:
        """True once finalize() has installed the real check."""
        return self.check is not _unfinished

    def finalize(self) -> None:
        """Install the fused fast check (called once all keywords are compiled)."""
        if self.uneval_props is not None or self.uneval_items is not None:
            ann = self.annotator()

            def check_annotated(x: Any) -> bool:
                return ann(x)[0]

            self.check = check_annotated
            return
        by_cat: dict[str, list[Check]] = {}
        gens: list[Check] = []
        for kw in self.kws:
            if kw.cat is None:
                gens.append(kw.fn)
            else:
                by_cat.setdefault(kw.cat, []).append(kw.fn)
        cat_fns = {cat: conj(fns) for cat, fns in by_cat.items()}
        self.check = _assemble(self.types, cat_fns, conj(gens) if gens else None)

    def exact_types(self) -> frozenset[type]:
        """The Python types whose every instance is valid here, when this schema is only a
        ``type`` test (``{"type": "string"}`` gives ``{str}``); empty otherwise.

        Lets a caller accept the common case with one ``type(v) in ...`` test instead of a
        call to ``check``.
        """
        if (
            self.value is not None
            or self.types is None
            or self.kws
            or self.uneval_props is not None
            or self.uneval_items is not None
            or not self.complete
        ):
            return frozenset()
        types = self.types
        return frozenset(
            pt for pt, names in _JSON_OF.items()
            if any(j in types for j in names)
            and not (pt is float and "number" not in types)  # 1.0 as an integer: checked
        )

    def type_ok(self, x: Any) -> bool:
        """Whether ``x`` satisfies this schema's ``type`` keyword (true when absent)."""
        return self.types is None or type_matches(x, self.types)

    def annotator(self) -> AnnFn:
        """``x -> (valid, evaluated property names, evaluated item indices)``."""
        if self._ann is not None:
            return self._ann
        if self.value is not None:
            verdict: Ann = (self.value, None, None)

            def constant(x: Any) -> Ann:
                return verdict

            self._ann = constant
            return constant
        parts: list[tuple[str | None, Any, bool]] = []
        for kw in self.kws:
            if kw.make_annotate is not None:
                parts.append((kw.cat, kw.make_annotate(), True))
            else:
                parts.append((kw.cat, kw.fn, False))
        types = self.types
        up = self.uneval_props.check if self.uneval_props is not None else None
        ui = self.uneval_items.check if self.uneval_items is not None else None

        def annotate(x: Any) -> Ann:
            if types is not None and not type_matches(x, types):
                return _FAIL
            c = cat_of(x)
            props: set[str] | None = None
            items: set[int] | None = None
            for cat, f, is_ann in parts:
                if cat is not None and cat != c:
                    continue
                if is_ann:
                    ok, p, i = f(x)
                    if not ok:
                        return _FAIL
                    if p:
                        props = set(p) if props is None else props | p
                    if i:
                        items = set(i) if items is None else items | i
                elif not f(x):
                    return _FAIL
            if up is not None and c == OBJ:
                for k in x:
                    if (props is None or k not in props) and not up(x[k]):
                        return _FAIL
                props = set(x)
            if ui is not None and c == ARR:
                for idx, v in enumerate(x):
                    if (items is None or idx not in items) and not ui(v):
                        return _FAIL
                items = set(range(len(x)))
            return (True, props, items)

        self._ann = annotate
        return annotate

    def collect(self, x: Any) -> tuple[set[str], set[int]]:
        """Annotations of the sibling keywords, ignoring failures (explain pass only)."""
        props: set[str] = set()
        items: set[int] = set()
        c = cat_of(x)
        for kw in self.kws:
            if kw.make_annotate is None or (kw.cat is not None and kw.cat != c):
                continue
            ok, p, i = kw.make_annotate()(x)
            if ok:
                props |= p or set()
                items |= i or set()
        return props, items

    def explain(self, x: Any, ipath: IPath, spath: str, out: Collector) -> None:
        """Emit the errors that make ``x`` invalid against this node."""
        if self.value is not None:
            if not self.value:
                out.emit(ipath, spath, "false", x, "no value is allowed here (schema is false)")
            return
        before = len(out.errors)
        if self.types is not None and not type_matches(x, self.types):
            expected = " or ".join(sorted(self.types))
            out.emit(
                ipath, f"{spath}/type", "type", x,
                f"expected {expected}, got {json_type(x)} {show(x)}",
            )
        c = cat_of(x)
        for kw in self.kws:
            if (kw.cat is None or kw.cat == c) and not kw.fn(x):
                kw.explain(x, ipath, spath, out)
        if (self.uneval_props is not None and c == OBJ) or (
            self.uneval_items is not None and c == ARR
        ):
            self._explain_unevaluated(x, ipath, spath, out, c)
        if len(out.errors) == before and not self.check(x):
            out.emit(ipath, spath, "schema", x, "does not match the schema")

    def _explain_unevaluated(
        self, x: Any, ipath: IPath, spath: str, out: Collector, c: str | None
    ) -> None:
        props, items = self.collect(x)
        if c == OBJ and self.uneval_props is not None:
            sub = self.uneval_props
            for k in x:
                if k not in props and not sub.check(x[k]):
                    if sub.value is False:
                        out.emit(
                            ipath, f"{spath}/unevaluatedProperties", "unevaluatedProperties",
                            x, f"unexpected property {k!r} (not evaluated by any subschema)",
                        )
                    else:
                        sub.explain(x[k], (*ipath, k), f"{spath}/unevaluatedProperties", out)
        if c == ARR and self.uneval_items is not None:
            sub = self.uneval_items
            for i, v in enumerate(x):
                if i not in items and not sub.check(v):
                    if sub.value is False:
                        out.emit(
                            ipath, f"{spath}/unevaluatedItems", "unevaluatedItems", x,
                            f"unexpected item at index {i} (not evaluated by any subschema)",
                        )
                    else:
                        sub.explain(v, (*ipath, i), f"{spath}/unevaluatedItems", out)


def _unfinished(x: Any) -> bool:  # pragma: no cover - replaced before any validation
    raise AssertionError("schema node used before it was compiled")


TRUE_NODE = Node(True)
FALSE_NODE = Node(False)
