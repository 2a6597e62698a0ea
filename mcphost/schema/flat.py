"""The fast path of the commonest tool input: a flat object of scalars.

Layer 1, no I/O. Most ``inputSchema``s are ``{"type": "object", "properties": {name: {"type":
scalar}}, "required": [...], "additionalProperties": bool}``, with titles and descriptions.
For such a schema :func:`flat_check` builds one closure that looks each named property up
once and tests its Python type against a set: no tree of nodes, no call per property.

Exact by construction: the closure answers ``True`` only when it is sure (a dict, every
named property absent or of an accepted exact type, every required one present, no other
property when they are refused); on anything else (a float for an ``integer``, a subclass,
a missing property...) it returns what the full compiled check says. It is only ever built
from a schema that compiled, so the full check and its error messages stay the reference.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Final

__all__ = ["flat_check"]

logger = logging.getLogger("mcphost.schema.flat")

#: Keywords that never change whether an instance is valid (without ``format_assert``,
#: ``format`` is one too, but it is left to the full check).
_ANNOTATIONS: Final = frozenset(
    ("title", "description", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly")
)
#: The Python types (exact) that are surely of each JSON type with no further keyword. A
#: float for ``integer`` (1.0 is one) is not here: the full check decides it.
_TYPES: Final[dict[str, tuple[type, ...]]] = {
    "string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
    "null": (type(None),), "object": (dict,), "array": (list,),
}
#: ``$schema`` values whose meaning of the keywords above is the one specialised here.
_DIALECTS: Final = frozenset((
    "http://json-schema.org/draft-07/schema#", "http://json-schema.org/draft-07/schema",
    "https://json-schema.org/draft/2020-12/schema", "https://json-schema.org/draft/2020-12/schema#",
))
_ROOT_KEYS: Final = _ANNOTATIONS | {"type", "properties", "required", "additionalProperties", "$schema"}
_PROPERTY_KEYS: Final = _ANNOTATIONS | {"type"}


class _Absent:
    """The type of the value of a property that is not there."""

    __slots__ = ()


_ABSENT: Final = _Absent()


def _accepted(schema: Any) -> frozenset[type] | None:
    """The exact Python types surely valid against a property's schema; ``None`` when the
    schema is not a bare type test (or no type)."""
    if schema is True or schema == {}:
        return None
    if type(schema) is not dict or not _PROPERTY_KEYS.issuperset(schema):
        raise _NotFlat
    kinds = schema.get("type")
    names = [kinds] if type(kinds) is str else kinds
    if kinds is None or type(names) is not list or not names:
        raise _NotFlat
    accepted: set[type] = set()
    for name in names:
        if name not in _TYPES:
            raise _NotFlat
        accepted.update(_TYPES[name])
    return frozenset(accepted)


class _NotFlat(Exception):
    """The schema is not one this module specialises."""


def flat_check(schema: Any, full: Callable[[Any], bool]) -> Callable[[Any], bool] | None:
    """A faster ``is_valid`` for a flat object schema of scalars, or ``None`` for any other
    schema. ``full`` is the schema's compiled check, asked whenever the fast path is unsure."""
    if type(schema) is not dict or not _ROOT_KEYS.issuperset(schema):
        return None
    if "$schema" in schema and schema["$schema"] not in _DIALECTS:
        return None
    if schema.get("type", "object") not in ("object", ["object"]):
        return None
    props = schema.get("properties", {})
    required = schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if type(props) is not dict or type(required) is not list or type(extra) is not bool:
        return None
    if not all(type(name) is str for name in required):
        return None
    typed: list[tuple[str, frozenset[type]]] = []
    present: list[str] = []
    try:
        for name, sub in props.items():
            accepted = _accepted(sub)
            if accepted is None:
                if name in required:
                    present.append(name)
            elif name in required:
                typed.append((name, accepted))
            else:
                typed.append((name, accepted | {_Absent}))
    except _NotFlat:
        return None
    # A required name without a schema of its own: it must only be there.
    present.extend(name for name in required if name not in props and name not in present)
    known = frozenset(props) if extra is False else None
    logger.debug("flat object schema specialised: %d typed properties", len(typed))
    if known is None and not present and len(typed) <= 2:
        return _open(tuple(typed), full)
    return _general(tuple(typed), tuple(present), known, full)


def _open(typed: tuple[tuple[str, frozenset[type]], ...], full: Callable[[Any], bool]) -> Callable[[Any], bool]:
    """The commonest shapes unrolled (one call per check, no loop): other properties
    allowed, nothing required beyond what the typed properties require."""
    absent = _ABSENT
    if not typed:

        def check0(x: Any) -> bool:
            return True if type(x) is dict else full(x)

        return check0
    (n0, a0), *rest = typed
    if not rest:

        def check1(x: Any) -> bool:
            if type(x) is dict and type(x.get(n0, absent)) in a0:
                return True
            return full(x)

        return check1
    ((n1, a1),) = rest

    def check2(x: Any) -> bool:
        if type(x) is dict and type(x.get(n0, absent)) in a0 and type(x.get(n1, absent)) in a1:
            return True
        return full(x)

    return check2


def _general(
    typed: tuple[tuple[str, frozenset[type]], ...], present: tuple[str, ...], known: frozenset[str] | None,
    full: Callable[[Any], bool],
) -> Callable[[Any], bool]:
    absent = _ABSENT

    def check(x: Any) -> bool:
        if type(x) is dict:
            get = x.get
            for name, accepted in typed:
                if type(get(name, absent)) not in accepted:
                    return full(x)
            for name in present:
                if name not in x:
                    return False  # a required property is missing: surely invalid
            # False: a property the schema refuses.
            return known is None or known.issuperset(x)
        return full(x)

    return check
