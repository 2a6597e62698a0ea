"""Exact number tests for ``multipleOf`` and the count keywords.

This module owns the arithmetic that must not overflow or round. JSON numbers are
arbitrary-precision decimals, but Python parses them into ``int`` (unbounded) and
``float`` (binary, overflowing to inf past 1.8e308), so a naive ``x / m`` raises
``OverflowError`` for ``10**400 / 0.1`` and answers wrongly for ``0.3 / 0.1``. Here:

* the fast path is still float division, when its quotient is integral and below 2**53;
* otherwise every number is taken *as written* (a float by its shortest ``repr``, which is
  the decimal the JSON text held) as an exact fraction ``a/b``, and ``x`` is a multiple of
  ``m`` iff ``(a_x * b_m) % (b_x * a_m) == 0``: integer arithmetic, no overflow, no
  rounding (JSON Schema 2020-12 validation 6.2.1: "a numeric instance is valid only if
  division by this keyword's value results in an integer").
"""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import Decimal
from typing import Any

__all__ = ["exact_ratio", "is_count", "multiple_of", "multiple_of_check"]


def exact_ratio(v: Any) -> tuple[int, int] | None:
    """``(numerator, denominator)`` of a JSON number as written; None for inf/NaN."""
    if isinstance(v, int):
        return int(v), 1
    if not math.isfinite(v):
        return None
    # repr() is the shortest decimal that round-trips: what the JSON text said.
    return Decimal(repr(float(v))).as_integer_ratio()


def multiple_of_check(m: Any) -> Callable[[Any], bool]:
    """``x -> bool``: whether number ``x`` is an integer multiple of ``m`` (finite, > 0),
    exactly. ``m``'s exact value is worked out once, here."""
    ratio = exact_ratio(m)
    if ratio is None or ratio[0] <= 0:
        raise ValueError("multipleOf must be a finite number greater than 0")
    c, d = ratio  # m == c / d

    def exact(x: Any) -> bool:
        xr = exact_ratio(x)
        if xr is None:
            return False  # inf and NaN are not JSON numbers, and not multiples of anything
        a, b = xr
        return (a * d) % (b * c) == 0  # (a/b) / (c/d) is an integer

    def fast(x: Any) -> bool:
        # Float division, trusted only while the quotient is small enough that every
        # float near it is not already an integer (2**53); it also forgives the binary
        # rounding of decimal literals (0.3 / 0.1), as before.
        try:
            q = x / m
        except OverflowError:  # an int too large for a float
            return False
        return bool(q.is_integer() and -(2**53) < q < 2**53)  # False for inf and NaN

    if isinstance(m, int):

        def check_int(x: Any) -> bool:
            if type(x) is int:
                return x % m == 0
            if isinstance(x, int):
                return int(x) % c == 0
            return fast(x) or exact(x)

        return check_int

    def check(x: Any) -> bool:
        if isinstance(x, int):
            return (int(x) * d) % c == 0  # x / (c/d) is an integer
        return fast(x) or exact(x)

    return check


def multiple_of(x: Any, m: Any) -> bool:
    """Whether number ``x`` is an integer multiple of ``m`` (> 0), exactly."""
    return multiple_of_check(m)(x)


def is_count(v: Any) -> bool:
    """A non-negative integer (``5`` or ``5.0``), as the count keywords require."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    if isinstance(v, int):
        return v >= 0
    return v >= 0 and v.is_integer()
