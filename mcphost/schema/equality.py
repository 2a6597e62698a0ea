"""JSON equality for ``enum``, ``const`` and ``uniqueItems``, without recursion.

This module owns comparing instances under JSON equality (JSON Schema 2020-12 core 4.2.2:
``1 == 1.0``, ``true != 1``, objects equal whatever their key order) by turning a value
into a hashable *frozen* form. Instances come from servers and callers, so nesting is
unbounded: :func:`freeze` recurses only for the first few levels (fast for the usual
shallow values), walks deeper values with an explicit stack (no RecursionError), and
refuses to build a form deeper than its ``limit`` (hashing a deeply nested tuple recurses
in C):

* ``enum``/``const`` know how deep their own values are; a deeper instance cannot equal any
  of them, so it simply is not a member;
* ``uniqueItems`` compares instance items with each other; past ``limit`` it raises
  :class:`~mcphost.schema.nodes.DepthExceeded`, which the validator reports as
  ``ValidationError(keyword="maxDepth")``.
"""

from __future__ import annotations

from typing import Any

from mcphost.schema.nodes import Check, DepthExceeded

__all__ = ["equality_check", "freeze", "nesting"]

_LIST, _DICT, _BOOL = object(), object(), object()
_TRUE, _FALSE = (_BOOL, True), (_BOOL, False)
_CONTAINER = object()


def _scalar(v: Any) -> Any:
    """The frozen form of a scalar, or _CONTAINER for an array/object."""
    t = type(v)
    if t is str or t is int or t is float or v is None:
        return v
    if t is bool:
        return _TRUE if v else _FALSE
    if isinstance(v, bool):
        return _TRUE if v else _FALSE
    if isinstance(v, (list, tuple, dict)):
        return _CONTAINER
    return v


def freeze(v: Any, limit: int = 512) -> Any:
    """A hashable form of a JSON value under JSON equality.

    Raises:
        DepthExceeded: ``v`` nests arrays/objects deeper than ``limit``.
    """
    t = type(v)
    if t is str or t is int or t is float or v is None:
        return v
    if t is bool:
        return _TRUE if v else _FALSE
    # Most values are shallow: plain recursion (fast) up to _RECURSE levels, the
    # explicit-stack walk beyond.
    try:
        return _recursive(v, _RECURSE if limit > _RECURSE else limit)
    except _Deeper:
        if limit <= _RECURSE:
            raise DepthExceeded(limit) from None
        return _iterative(v, limit)


_RECURSE = 32


class _Deeper(Exception):
    pass


def _recursive(v: Any, budget: int) -> Any:
    t = type(v)
    if t is str or t is int or t is float or v is None:
        return v
    if t is bool:
        return _TRUE if v else _FALSE
    if budget <= 0:
        if _scalar(v) is _CONTAINER:
            raise _Deeper
    elif t is list or t is tuple or (t is not dict and isinstance(v, (list, tuple))):
        b = budget - 1
        # Scalars are their own frozen form: no call for them (most items).
        return (_LIST, tuple([
            i if type(i) in _SELF_FROZEN else _recursive(i, b) for i in v
        ]))
    elif t is dict or isinstance(v, dict):
        b = budget - 1
        return (_DICT, frozenset([
            (k, i if type(i) in _SELF_FROZEN else _recursive(i, b)) for k, i in v.items()
        ]))
    return _scalar(v)


_SELF_FROZEN = frozenset({str, int, float})


def _iterative(v: Any, limit: int) -> Any:
    leaf = _scalar(v)
    if leaf is not _CONTAINER:
        return leaf
    # A frame: (is a dict, iterator over its items, frozen children so far, key in parent)
    stack: list[tuple[bool, Any, list[Any], Any]] = [(isinstance(v, dict), _items(v), [], None)]
    while True:
        is_dict, it, acc, key = stack[-1]
        for item in it:
            k, child = item if is_dict else (None, item)
            leaf = _scalar(child)
            if leaf is _CONTAINER:
                if len(stack) >= limit:
                    raise DepthExceeded(limit)
                stack.append((isinstance(child, dict), _items(child), [], k))
                break
            acc.append((k, leaf) if is_dict else leaf)
        else:
            stack.pop()
            frozen = (_DICT, frozenset(acc)) if is_dict else (_LIST, tuple(acc))
            if not stack:
                return frozen
            parent_is_dict, _, parent_acc, _ = stack[-1]
            parent_acc.append((key, frozen) if parent_is_dict else frozen)


def _items(v: Any) -> Any:
    return iter(v.items()) if isinstance(v, dict) else iter(v)


def nesting(v: Any) -> int:
    """How deeply ``v`` nests arrays and objects (0 for a scalar); iterative."""
    deepest = 0
    stack = [(v, 0)]
    while stack:
        x, d = stack.pop()
        if isinstance(x, dict):
            stack.extend((c, d + 1) for c in x.values())
        elif isinstance(x, (list, tuple)):
            stack.extend((c, d + 1) for c in x)
        else:
            deepest = max(deepest, d)
            continue
        deepest = max(deepest, d + 1)
    return deepest


def equality_check(values: list[Any]) -> Check:
    """``x -> bool``: whether ``x`` equals one of ``values`` (``enum``, ``const``)."""
    strs = {v for v in values if type(v) is str}
    nums = {v for v in values if type(v) in (int, float)}
    bools = {v for v in values if type(v) is bool}
    has_none = any(v is None for v in values)
    containers = [v for v in values if type(v) in (list, dict)]
    # An instance nested deeper than every listed value equals none of them: freezing
    # stops there instead of walking (or failing on) an arbitrarily deep instance.
    limit = max((nesting(v) for v in containers), default=0) + 1
    other = {freeze(v, limit) for v in containers}

    def frozen_member(x: Any) -> bool:
        try:
            return freeze(x, limit) in other
        except DepthExceeded:
            return False

    def member(x: Any) -> bool:
        t = type(x)
        if t is str:
            return x in strs
        if t is int or t is float:
            return x in nums
        if t is bool:
            return x in bools
        if x is None:
            return has_none
        if t is list or t is dict:
            return bool(other) and frozen_member(x)
        plain = _plain(x)  # a subclass (IntEnum, OrderedDict, tuple...)
        if type(plain) is not t:
            return member(plain)
        return bool(other) and frozen_member(x)

    return member


def _plain(x: Any) -> Any:
    if isinstance(x, bool):
        return bool(x)
    if isinstance(x, int):
        return int(x)
    if isinstance(x, float):
        return float(x)
    if isinstance(x, str):
        return str(x)
    if isinstance(x, dict):
        return dict(x)
    if isinstance(x, (list, tuple)):
        return list(x)
    return x
