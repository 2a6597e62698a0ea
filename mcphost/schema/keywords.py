"""Keyword builders: each turns one keyword (or keyword group) of a schema into a :class:`Kw`.

``BUILDERS`` is the keyword → builder table the compiler walks. A builder checks the
keyword's value (a bad value is a :class:`~mcphost.errors.SchemaError` naming the schema
location), compiles subschemas through the compiler, and returns closures specialised for
what the schema actually says (for example ``required`` with one name is a single ``in``).
Keywords that only make sense together are compiled as one group so the instance is
walked once: ``properties``/``patternProperties``/``additionalProperties``,
``prefixItems``/``items``/``additionalItems`` and ``contains``/``minContains``/``maxContains``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcphost.schema.equality import equality_check, freeze
from mcphost.schema.formats import FORMATS
from mcphost.schema.nodes import ARR, NUM, OBJ, STR, Ann, AnnFn, Check, Kw, Node
from mcphost.schema.numbers import is_count, multiple_of_check
from mcphost.schema.refs import DRAFT7, DRAFT2020, Loc, escape_pointer
from mcphost.schema.report import Collector, IPath, show

if TYPE_CHECKING:
    from mcphost.schema.compiler import Compiler

__all__ = ["BUILDERS", "freeze"]

Builder = Callable[["Compiler", dict[str, Any], Loc, Any], "Kw | None"]

_BOTH = (DRAFT2020, DRAFT7)


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _leaf(
    name: str, cat: str | None, fn: Check, message: Callable[[Any], str], spath_kw: str = ""
) -> Kw:
    def explain(x: Any, ipath: IPath, spath: str, out: Collector) -> None:
        out.emit(ipath, f"{spath}/{spath_kw or name}", name, x, message(x))

    return Kw(name, cat, fn, explain)


# --- any type -----------------------------------------------------------------------------


def b_enum(c: Compiler, s: dict[str, Any], loc: Loc, ctx: Any) -> Kw:
    values = s["enum"]
    if not isinstance(values, list):
        raise c.error(loc, "enum", "must be an array")
    fn = equality_check(values)
    listed = ", ".join(show(v, 30) for v in values[:8]) + (", ..." if len(values) > 8 else "")
    return _leaf("enum", None, fn, lambda x: f"{show(x)} is not one of [{listed}]")


def b_const(c: Compiler, s: dict[str, Any], loc: Loc, ctx: Any) -> Kw:
    value = s["const"]
    fn = equality_check([value])
    return _leaf("const", None, fn, lambda x: f"{show(x)} is not the constant {show(value)}")


def _subs(c: Compiler, s: dict[str, Any], loc: Loc, ctx: Any, key: str) -> list[Node]:
    subs = s[key]
    if not isinstance(subs, list) or not subs:
        raise c.error(loc, key, "must be a non-empty array of schemas")
    return [c.sub(sub, loc, f"{key}/{i}", ctx, False) for i, sub in enumerate(subs)]


def _union(anns: list[Ann]) -> Ann:
    props: set[str] | None = None
    items: set[int] | None = None
    for _, p, i in anns:
        if p:
            props = set(p) if props is None else props | p
        if i:
            items = set(i) if items is None else items | i
    return (True, props, items)


def b_all_of(c: Compiler, s: dict[str, Any], loc: Loc, ctx: Any) -> Kw:
    nodes = _subs(c, s, loc, ctx, "allOf")
    checks = [c.checker(n) for n in nodes]
    if len(checks) == 1:
        fn = checks[0]
    else:
        all_checks = tuple(checks)

        def fn(x: Any) -> bool:
            for f in all_checks:
                if not f(x):
                    return False
            return True

    def explain(x: Any, ipath: IPath, spath: str, out: Collector) -> None:
        for i, n in enumerate(nodes):
            if not n.check(x):
                n.explain(x, ipath, f"{spath}/allOf/{i}", out)

    def make_annotate() -> AnnFn:
        anns = [c.annotator(n) for n in nodes]

        def annotate(x: Any) -> Ann:
            results = [a(x) for a in anns]
            if not all(r[0] for r in results):
                return (False, None, None)
            return _union(results)

        return annotate

    return Kw("allOf", None, fn, explain, make_annotate)


def b_any_of(c: Compiler, s: dict[str, Any], loc: Loc, ctx: Any) -> Kw:
    nodes = _subs(c, s, loc, ctx, "anyOf")
    checks = tuple(c.checker(n) for n in nodes)

    def fn(x: Any) -> bool:
        for f in checks:
            if f(x):
                return True
        return False

    def explain(x: Any, ipath: IPath, spath: str, out: Collector) -> None:
        out.emit(
            ipath, f"{spath}/anyOf", "anyOf", x,
            f"{show(x)} does not match any of the {len(nodes)} alternatives (anyOf)",
        )

    def make_annotate() -> AnnFn:
        anns = [c.annotator(n) for n in nodes]

        def annotate(x: Any) -> Ann:
            # Every branch is evaluated: all valid branches contribute annotations.
            results = [r for r in (a(x) for a in anns) if r[0]]
            return _union(results) if results else (False, None, None)

        return annotate

    return Kw("anyOf", None, fn, explain, make_annotate)


def b_one_of(c: Compiler, s: dict[str, Any], loc: Loc, ctx: Any) -> Kw:
    nodes = _subs(c, s, loc, ctx, "oneOf")
    checks = tuple(c.checker(n) for n in nodes)

    def fn(x: Any) -> bool:
        found = False
        for f in checks:
            if f(x):
                if found:
                    return False
                found = True
        return found

    def explain(x: Any, ipath: IPath, spath: str, out: Collector) -> None:
        matched = [i for i, f in enumerate(checks) if f(x)]
        if matched:
            msg = f"{show(x)} matches more than one schema in oneOf (indexes {matched})"
        else:
            msg = f"{show(x)} matches none of the {len(nodes)} schemas in oneOf"
        out.emit(ipath, f"{spath}/oneOf", "oneOf", x, msg)

    def make_annotate() -> AnnFn:
        anns = [c.annotator(n) for n in nodes]

        def annotate(x: Any) -> Ann:
            results = [r for r in (a(x) for a in anns) if r[0]]
            return results[0] if len(results) == 1 else (False, None, None)

        return annotate

    return Kw("oneOf", None, fn, explain, make_annotate)


def b_not(c: Compiler, s: dict[str, Any], loc: Loc, ctx: Any) -> Kw:
    f = c.checker(c.sub(s["not"], loc, "not", ctx, False))

    def fn(x: Any) -> bool:
        return not f(x)

    return _leaf("not", None, fn, lambda x: f"{show(x)} must not match the 'not' schema")


def b_if(c: Compiler, s: dict[str, Any], loc: Loc, ctx: Any) -> Kw | None:
    if_node = c.sub(s["if"], loc, "if", ctx, False)
    then_node = c.sub(s["then"], loc, "then", ctx, False) if "then" in s else None
    else_node = c.sub(s["else"], loc, "else", ctx, False) if "else" in s else None
    if then_node is None and else_node is None:
        # "if" alone never affects validity, only annotations.
        def fn_true(x: Any) -> bool:
            return True

        fn: Check = fn_true
    else:
        fi = c.checker(if_node)
        ft = c.checker(then_node) if then_node is not None else None
        fe = c.checker(else_node) if else_node is not None else None

        def fn(x: Any) -> bool:
            if fi(x):
                return ft is None or ft(x)
            return fe is None or fe(x)

    def explain(x: Any, ipath: IPath, spath: str, out: Collector) -> None:
        if if_node.check(x):
            if then_node is not None:
                then_node.explain(x, ipath, f"{spath}/then", out)
        elif else_node is not None:
            else_node.explain(x, ipath, f"{spath}/else", out)

    def make_annotate() -> AnnFn:
        ai = c.annotator(if_node)
        at = c.annotator(then_node) if then_node is not None else None
        ae = c.annotator(else_node) if else_node is not None else None

        def annotate(x: Any) -> Ann:
            first = ai(x)
            branch = at if first[0] else ae
            if branch is None:
                return first if first[0] else (True, None, None)
            second = branch(x)
            if not second[0]:
                return second
            return _union([first, second]) if first[0] else second

        return annotate

    return Kw("if", None, fn, explain, make_annotate)


# --- numbers ------------------------------------------------------------------------------


def b_multiple_of(c: Compiler, s: dict[str, Any], loc: Loc, ctx: Any) -> Kw:
    m = s["multipleOf"]
    if not _is_num(m) or m <= 0:
        raise c.error(loc, "multipleOf", "must be a number greater than 0")
    fn = multiple_of_check(m)  # exact: no overflow, no rounding (see numbers.py)
    return _leaf("multipleOf", NUM, fn, lambda x: f"{show(x)} is not a multiple of {show(m)}")


def _bound(c: Compiler, s: dict[str, Any], loc: Loc, key: str) -> Any:
    v = s[key]
    if not _is_num(v):
        raise c.error(loc, key, "must be a number")
    return v


def b_minimum(c: Compiler, s: dict[str, Any], loc: Loc, ctx: Any) -> Kw:
    m = _bound(c, s, loc, "minimum")
    if s.get("exclusiveMinimum") is True:  # draft-04 style boolean, accepted for old schemas

        def fn_ex(x: Any) -> bool:
            return bool(x > m)

        return _leaf("minimum", NUM, fn_ex, lambda x: f"{show(x)} is not greater than {show(m)}")

    def fn(x: Any) -> bool:
        return bool(x >= m)

    return _leaf("minimum", NUM, fn, lambda x: f"{show(x)} is less than the minimum {show(m)}")


def b_maximum(c: Compiler, s: dict[str, Any], loc: Loc, ctx: Any) -> Kw:
    m = _bound(c, s, loc, "maximum")
    if s.get("exclusiveMaximum") is True:

        def fn_ex(x: Any) -> bool:
            return bool(x < m)

        return _leaf("maximum", NUM, fn_ex, lambda x: f"{show(x)} is not less than {show(m)}")

    def fn(x: Any) -> bool:
        return bool(x <= m)

    return _leaf(
        "maximum", NUM, fn, lambda x: f"{show(x)} is greater than the maximum {show(m)}"
    )


def b_exclusive_minimum(c: Compiler, s: dict[str, Any], loc: Loc, ctx: Any) -> Kw | None:
    if isinstance(s["exclusiveMinimum"], bool):
        return None  # draft-04 form, handled with "minimum"
    m = _bound(c, s, loc, "exclusiveMinimum")

    def fn(x: Any) -> bool:
        return bool(x > m)

    return _leaf(
        "exclusiveMinimum", NUM, fn,
        lambda x: f"{show(x)} is less than or equal to the exclusive minimum {show(m)}",
    )


def b_exclusive_maximum(c: Compiler, s: dict[str, Any], loc: Loc, ctx: Any) -> Kw | None:
    if isinstance(s["exclusiveMaximum"], bool):
        return None
    m = _bound(c, s, loc, "exclusiveMaximum")

    def fn(x: Any) -> bool:
        return bool(x < m)

    return _leaf(
        "exclusiveMaximum", NUM, fn,
        lambda x: f"{show(x)} is greater than or equal to the exclusive maximum {show(m)}",
    )


# --- strings ------------------------------------------------------------------------------


def _count(c: Compiler, s: dict[str, Any], loc: Loc, key: str) -> int:
    v = s[key]
    if not is_count(v):
        raise c.error(loc, key, "must be a non-negative integer")
    return int(v)


def b_min_length(c: Compiler, s: dict[str, Any], loc: Loc, ctx: Any) -> Kw:
    n = _count(c, s, loc, "minLength")

    def fn(x: Any) -> bool:
        return len(x) >= n  # Python str length counts code points, as JSON Schema does

    return _leaf(
        "minLength", STR, fn, lambda x: f"{show(x)} is shorter than {n} character(s)"
    )


def b_max_length(c: Compiler, s: dict[str, Any], loc: Loc, ctx: Any) -> Kw:
    n = _count(c, s, loc, "maxLength")

    def fn(x: Any) -> bool:
        return len(x) <= n

    return _leaf("maxLength", STR, fn, lambda x: f"{show(x)} is longer than {n} character(s)")


def b_pattern(c: Compiler, s: dict[str, Any], loc: Loc, ctx: Any) -> Kw:
    pattern = c.pattern(s["pattern"], loc, "pattern")
    return _leaf(
        "pattern", STR, pattern.search,
        lambda x: f"{show(x)} does not match the pattern {show(pattern.source)}",
    )


def b_format(c: Compiler, s: dict[str, Any], loc: Loc, ctx: Any) -> Kw | None:
    name = s["format"]
    if not isinstance(name, str):
        raise c.error(loc, "format", "must be a string")
    checker = FORMATS.get(name)
    if not c.format_assert or checker is None:
        return None  # an annotation only (2020-12 validation section 7.2.1)
    return _leaf("format", STR, checker, lambda x: f"{show(x)} is not a valid {name}")


# --- arrays -------------------------------------------------------------------------------


def b_items(c: Compiler, s: dict[str, Any], loc: Loc, ctx: Any) -> Kw | None:
    prefix_key, rest_key = "prefixItems", "items"
    prefix_raw: Any = None
    rest_raw: Any = None
    if loc.dialect == DRAFT2020 and not isinstance(s.get("items"), list):
        prefix_raw = s.get("prefixItems")
        rest_raw = s.get("items")
    else:
        # draft-07 (or a 2020-12 schema written in the old array form): "items" as an
        # array is positional and "additionalItems" applies to the rest.
        prefix_key, rest_key = "items", "additionalItems"
        items = s.get("items")
        if isinstance(items, list):
            prefix_raw, rest_raw = items, s.get("additionalItems")
        else:
            prefix_raw, rest_raw, rest_key = None, items, "items"
    if prefix_raw is None and rest_raw is None:
        return None
    if prefix_raw is not None and not isinstance(prefix_raw, list):
        raise c.error(loc, prefix_key, "must be an array of schemas")
    prefix = [
        c.sub(p, loc, f"{prefix_key}/{i}", ctx, True) for i, p in enumerate(prefix_raw or [])
    ]
    rest = c.sub(rest_raw, loc, rest_key, ctx, True) if rest_raw is not None else None
    pchecks = tuple(c.checker(n) for n in prefix)
    npre = len(prefix)
    rcheck = c.checker(rest) if rest is not None else None
    fn: Check
    if not prefix and rest is not None:
        if rest.value is False:

            def fn(x: Any) -> bool:
                return len(x) == 0
        else:
            assert rcheck is not None
            rc = rcheck

            def fn(x: Any) -> bool:
                return all(map(rc, x))
    else:

        def fn(x: Any) -> bool:
            for f, v in zip(pchecks, x):
                if not f(v):
                    return False
            if rcheck is not None and len(x) > npre:
                for i in range(npre, len(x)):
                    if not rcheck(x[i]):
                        return False
            return True

    def explain(x: Any, ipath: IPath, spath: str, out: Collector) -> None:
        for i, v in enumerate(x):
            if i < npre:
                n, sp = prefix[i], f"{spath}/{prefix_key}/{i}"
            elif rest is not None:
                n, sp = rest, f"{spath}/{rest_key}"
            else:
                break
            if n.check(v):
                continue
            if n is rest and rest.value is False:
                out.emit(
                    ipath, sp, rest_key, x,
                    f"array has {len(x)} items but at most {npre} are allowed",
                )
                return
            n.explain(v, (*ipath, i), sp, out)

    def make_annotate() -> AnnFn:
        def annotate(x: Any) -> Ann:
            if not fn(x):
                return (False, None, None)
            upto = len(x) if rest is not None else min(npre, len(x))
            return (True, None, set(range(upto)))

        return annotate

    return Kw(prefix_key if prefix else rest_key, ARR, fn, explain, make_annotate)


def b_contains(c: Compiler, s: dict[str, Any], loc: Loc, ctx: Any) -> Kw:
    node = c.sub(s["contains"], loc, "contains", ctx, True)
    f = c.checker(node)
    lo, hi = 1, None
    if loc.dialect == DRAFT2020:
        if "minContains" in s:
            lo = _count(c, s, loc, "minContains")
        if "maxContains" in s:
            hi = _count(c, s, loc, "maxContains")
    fn: Check
    if lo == 1 and hi is None:

        def fn(x: Any) -> bool:
            return any(map(f, x))
    elif lo == 0 and hi is None:

        def fn(x: Any) -> bool:
            return True
    else:

        def fn(x: Any) -> bool:
            n = 0
            for v in x:
                if f(v):
                    n += 1
                    if hi is not None and n > hi:
                        return False
            return n >= lo

    def explain(x: Any, ipath: IPath, spath: str, out: Collector) -> None:
        n = sum(1 for v in x if f(v))
        if n < lo:
            kw = "contains" if lo == 1 else "minContains"
            msg = (
                "array does not contain any item matching the 'contains' schema"
                if n == 0 and lo == 1
                else f"array contains {n} matching item(s), at least {lo} required"
            )
        else:
            kw = "maxContains"
            msg = f"array contains {n} matching item(s), at most {hi} allowed"
        out.emit(ipath, f"{spath}/{kw}", kw, x, msg)

    def make_annotate() -> AnnFn:
        def annotate(x: Any) -> Ann:
            matched = {i for i, v in enumerate(x) if f(v)}
            n = len(matched)
            if n < lo or (hi is not None and n > hi):
                return (False, None, None)
            return (True, None, matched)

        return annotate

    return Kw("contains", ARR, fn, explain, make_annotate)


def b_min_items(c: Compiler, s: dict[str, Any], loc: Loc, ctx: Any) -> Kw:
    n = _count(c, s, loc, "minItems")

    def fn(x: Any) -> bool:
        return len(x) >= n

    return _leaf("minItems", ARR, fn, lambda x: f"array has {len(x)} items, at least {n} required")


def b_max_items(c: Compiler, s: dict[str, Any], loc: Loc, ctx: Any) -> Kw:
    n = _count(c, s, loc, "maxItems")

    def fn(x: Any) -> bool:
        return len(x) <= n

    return _leaf("maxItems", ARR, fn, lambda x: f"array has {len(x)} items, at most {n} allowed")


def b_unique_items(c: Compiler, s: dict[str, Any], loc: Loc, ctx: Any) -> Kw | None:
    flag = s["uniqueItems"]
    if not isinstance(flag, bool):
        raise c.error(loc, "uniqueItems", "must be a boolean")
    if not flag:
        return None
    # Items nested deeper than max_depth raise DepthExceeded: the validator must catch it.
    c.guard = True
    limit = c.max_depth

    def fn(x: Any) -> bool:
        return len(x) < 2 or len({freeze(v, limit) for v in x}) == len(x)

    def message(x: Any) -> str:
        seen: dict[Any, int] = {}
        for i, v in enumerate(x):
            key = freeze(v, limit)
            if key in seen:
                return f"array items {seen[key]} and {i} are equal ({show(v)})"
            seen[key] = i
        return "array items are not unique"  # pragma: no cover

    return _leaf("uniqueItems", ARR, fn, message)


# --- objects ------------------------------------------------------------------------------


def _string_list(c: Compiler, loc: Loc, key: str, v: Any) -> list[str]:
    if not isinstance(v, list) or not all(isinstance(i, str) for i in v):
        raise c.error(loc, key, "must be an array of strings")
    return v


def b_required(c: Compiler, s: dict[str, Any], loc: Loc, ctx: Any) -> Kw | None:
    names = _string_list(c, loc, "required", s["required"])
    if not names:
        return None
    fn: Check
    if len(names) == 1:
        (only,) = names

        def fn(x: Any) -> bool:
            return only in x
    else:
        wanted = frozenset(names)

        def fn(x: Any) -> bool:
            return x.keys() >= wanted  # type: ignore[no-any-return]

    def explain(x: Any, ipath: IPath, spath: str, out: Collector) -> None:
        for name in names:
            if name not in x:
                out.emit(
                    ipath, f"{spath}/required", "required", x,
                    f"missing required property {name!r}",
                )

    return Kw("required", OBJ, fn, explain)


def _named_properties(props: dict[str, Node], checks: dict[str, Check], known: frozenset[str] | None) -> Check:
    """The check of named ``properties`` (and, with ``known``, no other property).

    A property whose schema is a bare type test is accepted by its Python type without a
    call (``{"type": "string"}`` and the like: most tool arguments); the others are called.
    """
    typed = []
    called = []
    for k, f in checks.items():
        exact = props[k].exact_types()
        if exact:
            typed.append((k, exact, f))
        else:
            called.append((k, f))
    typed_items = tuple(typed)
    called_items = tuple(called)

    def named(x: Any) -> bool:
        for k, exact, f in typed_items:
            if k in x:
                v = x[k]
                if type(v) not in exact and not f(v):
                    return False
        for k, f in called_items:
            if k in x and not f(x[k]):
                return False
        return True

    if known is None:
        return named

    def closed(x: Any) -> bool:
        return known.issuperset(x) and named(x)

    return closed


def b_properties(c: Compiler, s: dict[str, Any], loc: Loc, ctx: Any) -> Kw | None:
    raw_props = s.get("properties", {})
    raw_patterns = s.get("patternProperties", {})
    if not isinstance(raw_props, dict):
        raise c.error(loc, "properties", "must be an object")
    if not isinstance(raw_patterns, dict):
        raise c.error(loc, "patternProperties", "must be an object")
    props = {
        k: c.sub(v, loc, f"properties/{escape_pointer(k)}", ctx, True)
        for k, v in raw_props.items()
    }
    patterns = [
        (
            c.pattern(k, loc, "patternProperties").search,
            c.sub(v, loc, f"patternProperties/{escape_pointer(k)}", ctx, True),
            k,
        )
        for k, v in raw_patterns.items()
    ]
    add = (
        c.sub(s["additionalProperties"], loc, "additionalProperties", ctx, True)
        if "additionalProperties" in s
        else None
    )
    pchecks = {k: c.checker(n) for k, n in props.items()}
    pats = tuple((search, c.checker(n)) for search, n, _ in patterns)
    addcheck = c.checker(add) if add is not None else None
    pget = pchecks.get
    fn: Check
    if not pats and (add is None or add.value is True or add.value is False):
        if add is None and not pchecks:
            return None
        # Only the named properties are checked (with additionalProperties: true the
        # keyword stays, for its annotation: all properties are evaluated).
        fn = _named_properties(props, pchecks, frozenset(pchecks) if add is not None and add.value is False else None)
    else:

        def fn(x: Any) -> bool:
            for k, v in x.items():
                f = pget(k)
                matched = f is not None
                if matched and not f(v):  # type: ignore[misc]
                    return False
                for search, pf in pats:
                    if search(k):
                        matched = True
                        if not pf(v):
                            return False
                if not matched and addcheck is not None and not addcheck(v):
                    return False
            return True

    def explain(x: Any, ipath: IPath, spath: str, out: Collector) -> None:
        for k, v in x.items():
            node = props.get(k)
            matched = node is not None
            if node is not None and not node.check(v):
                node.explain(v, (*ipath, k), f"{spath}/properties/{escape_pointer(k)}", out)
            for search, pnode, src in patterns:
                if search(k):
                    matched = True
                    if not pnode.check(v):
                        sp = f"{spath}/patternProperties/{escape_pointer(src)}"
                        pnode.explain(v, (*ipath, k), sp, out)
            if not matched and add is not None and not add.check(v):
                sp = f"{spath}/additionalProperties"
                if add.value is False:
                    out.emit(
                        ipath, sp, "additionalProperties", x,
                        f"unexpected property {k!r} (additional properties are not allowed)",
                    )
                else:
                    add.explain(v, (*ipath, k), sp, out)

    def make_annotate() -> AnnFn:
        def annotate(x: Any) -> Ann:
            if not fn(x):
                return (False, None, None)
            if add is not None:
                return (True, set(x), None)
            seen = {k for k in x if k in pchecks or any(search(k) for search, _ in pats)}
            return (True, seen, None)

        return annotate

    name = "properties" if props else ("patternProperties" if patterns else "additionalProperties")
    return Kw(name, OBJ, fn, explain, make_annotate)


def b_min_properties(c: Compiler, s: dict[str, Any], loc: Loc, ctx: Any) -> Kw:
    n = _count(c, s, loc, "minProperties")

    def fn(x: Any) -> bool:
        return len(x) >= n

    return _leaf(
        "minProperties", OBJ, fn,
        lambda x: f"object has {len(x)} properties, at least {n} required",
    )


def b_max_properties(c: Compiler, s: dict[str, Any], loc: Loc, ctx: Any) -> Kw:
    n = _count(c, s, loc, "maxProperties")

    def fn(x: Any) -> bool:
        return len(x) <= n

    return _leaf(
        "maxProperties", OBJ, fn,
        lambda x: f"object has {len(x)} properties, at most {n} allowed",
    )


def b_property_names(c: Compiler, s: dict[str, Any], loc: Loc, ctx: Any) -> Kw:
    node = c.sub(s["propertyNames"], loc, "propertyNames", ctx, True)
    f = c.checker(node)

    def fn(x: Any) -> bool:
        return all(map(f, x))

    def explain(x: Any, ipath: IPath, spath: str, out: Collector) -> None:
        for k in x:
            if not f(k):
                inner = Collector(False)
                try:
                    node.explain(k, (), "", inner)
                except Exception:
                    pass
                why = inner.errors[0].message.split(": ", 1)[-1] if inner.errors else "invalid"
                out.emit(
                    ipath, f"{spath}/propertyNames", "propertyNames", x,
                    f"invalid property name {k!r}: {why}",
                )

    return Kw("propertyNames", OBJ, fn, explain)


def _dependent_required(
    c: Compiler, loc: Loc, key: str, deps: dict[str, list[str]]
) -> Kw | None:
    pairs = tuple((k, tuple(v)) for k, v in deps.items() if v)
    if not pairs:
        return None

    def fn(x: Any) -> bool:
        for k, needed in pairs:
            if k in x:
                for r in needed:
                    if r not in x:
                        return False
        return True

    def explain(x: Any, ipath: IPath, spath: str, out: Collector) -> None:
        for k, needed in pairs:
            if k in x:
                for r in needed:
                    if r not in x:
                        out.emit(
                            ipath, f"{spath}/{key}/{escape_pointer(k)}", key, x,
                            f"property {r!r} is required when {k!r} is present",
                        )

    return Kw(key, OBJ, fn, explain)


def b_dependent_required(c: Compiler, s: dict[str, Any], loc: Loc, ctx: Any) -> Kw | None:
    deps = s["dependentRequired"]
    if not isinstance(deps, dict):
        raise c.error(loc, "dependentRequired", "must be an object")
    for v in deps.values():
        _string_list(c, loc, "dependentRequired", v)
    return _dependent_required(c, loc, "dependentRequired", deps)


def _dependent_schemas(
    c: Compiler, loc: Loc, ctx: Any, key: str, deps: dict[str, Any]
) -> Kw | None:
    nodes = {k: c.sub(v, loc, f"{key}/{escape_pointer(k)}", ctx, False) for k, v in deps.items()}
    pairs = tuple((k, c.checker(n)) for k, n in nodes.items() if n.value is not True)
    if not pairs:
        return None

    def fn(x: Any) -> bool:
        for k, f in pairs:
            if k in x and not f(x):
                return False
        return True

    def explain(x: Any, ipath: IPath, spath: str, out: Collector) -> None:
        for k, n in nodes.items():
            if k in x and not n.check(x):
                n.explain(x, ipath, f"{spath}/{key}/{escape_pointer(k)}", out)

    def make_annotate() -> AnnFn:
        anns = {k: c.annotator(n) for k, n in nodes.items()}

        def annotate(x: Any) -> Ann:
            results = [a(x) for k, a in anns.items() if k in x]
            if not all(r[0] for r in results):
                return (False, None, None)
            return _union(results)

        return annotate

    return Kw(key, OBJ, fn, explain, make_annotate)


def b_dependent_schemas(c: Compiler, s: dict[str, Any], loc: Loc, ctx: Any) -> Kw | None:
    deps = s["dependentSchemas"]
    if not isinstance(deps, dict):
        raise c.error(loc, "dependentSchemas", "must be an object")
    return _dependent_schemas(c, loc, ctx, "dependentSchemas", deps)


class _Both:
    """Two keyword closures sharing one keyword name (draft-07 ``dependencies``)."""

    @staticmethod
    def join(a: Kw | None, b: Kw | None) -> Kw | None:
        if a is None or b is None:
            return a or b
        fa, fb, ea, eb = a.fn, b.fn, a.explain, b.explain

        def fn(x: Any) -> bool:
            return fa(x) and fb(x)

        def explain(x: Any, ipath: IPath, spath: str, out: Collector) -> None:
            if not fa(x):
                ea(x, ipath, spath, out)
            if not fb(x):
                eb(x, ipath, spath, out)

        return Kw(a.name, a.cat, fn, explain, b.make_annotate)


def b_dependencies(c: Compiler, s: dict[str, Any], loc: Loc, ctx: Any) -> Kw | None:
    deps = s["dependencies"]
    if not isinstance(deps, dict):
        raise c.error(loc, "dependencies", "must be an object")
    required = {k: _string_list(c, loc, "dependencies", v) for k, v in deps.items()
                if isinstance(v, list)}
    schemas = {k: v for k, v in deps.items() if not isinstance(v, list)}
    return _Both.join(
        _dependent_required(c, loc, "dependencies", required),
        _dependent_schemas(c, loc, ctx, "dependencies", schemas) if schemas else None,
    )


#: (keywords that trigger the builder, builder, dialects), in evaluation order: cheap
#: checks first so invalid instances fail fast.
BUILDERS: list[tuple[tuple[str, ...], Builder, tuple[str, ...]]] = [
    (("enum",), b_enum, _BOTH),
    (("const",), b_const, _BOTH),
    (("minimum",), b_minimum, _BOTH),
    (("maximum",), b_maximum, _BOTH),
    (("exclusiveMinimum",), b_exclusive_minimum, _BOTH),
    (("exclusiveMaximum",), b_exclusive_maximum, _BOTH),
    (("multipleOf",), b_multiple_of, _BOTH),
    (("minLength",), b_min_length, _BOTH),
    (("maxLength",), b_max_length, _BOTH),
    (("pattern",), b_pattern, _BOTH),
    (("format",), b_format, _BOTH),
    (("required",), b_required, _BOTH),
    (("minProperties",), b_min_properties, _BOTH),
    (("maxProperties",), b_max_properties, _BOTH),
    (("dependentRequired",), b_dependent_required, (DRAFT2020,)),
    (("properties", "patternProperties", "additionalProperties"), b_properties, _BOTH),
    (("propertyNames",), b_property_names, _BOTH),
    (("dependentSchemas",), b_dependent_schemas, (DRAFT2020,)),
    (("dependencies",), b_dependencies, (DRAFT7,)),
    (("minItems",), b_min_items, _BOTH),
    (("maxItems",), b_max_items, _BOTH),
    (("uniqueItems",), b_unique_items, _BOTH),
    (("prefixItems", "items", "additionalItems"), b_items, _BOTH),
    (("contains",), b_contains, _BOTH),
    (("allOf",), b_all_of, _BOTH),
    (("anyOf",), b_any_of, _BOTH),
    (("oneOf",), b_one_of, _BOTH),
    (("not",), b_not, _BOTH),
    (("if",), b_if, _BOTH),
]
