"""The options of ``MCPHost(...)``, checked where they are given: in the constructor.

Layer 4 (pure: no I/O). One class for every bad option, :class:`~mcphost.errors.UsageError`
(the caller's mistake; still a ``ValueError``), raised by the constructor and naming the
option, what it must be and what it was, so that a wrong option never surfaces later as a
bare ``TypeError`` in ``initialize()`` or is silently ignored. :data:`CHECKS` holds one
check per option; a test makes sure every parameter of ``MCPHost.__init__`` has one.

``request_timeout=None`` is accepted: it means "no timeout" (the specifications' principle
of no timeout budgets). ``max_pages`` and ``bounds`` cannot both be given: ``max_pages`` is
a shorthand for ``Bounds(max_pages=...)``, and one of the two would be ignored.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable, Mapping
from typing import Any, Final

from ..auth.store import TokenStore
from ..bounds import Bounds
from ..errors import UsageError
from ..policy import RetryPolicy
from .observe import check_level
from .permissions import Permissions

__all__ = ["CHECKS", "DEFAULT_MAX_PAGES", "check_options"]

logger = logging.getLogger("mcphost.host.options")

#: ``max_pages`` when not given (the one of :class:`~mcphost.bounds.Bounds`).
DEFAULT_MAX_PAGES: Final = Bounds().max_pages


def _fail(name: str, wanted: str, value: Any) -> UsageError:
    shown = repr(value) if isinstance(value, (str, int, float, bool, type(None))) else type(value).__name__
    return UsageError(f"MCPHost option {name} must be {wanted}, not {shown}")


def _flag(name: str, value: Any, *, none: bool = False) -> None:
    if not isinstance(value, bool) and not (none and value is None):
        raise _fail(name, "True or False" + (" (or None)" if none else ""), value)


def _seconds(name: str, value: Any, *, none: bool = False, zero: bool = False) -> None:
    if value is None and none:
        return
    ok = (not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)
          and (value >= 0 if zero else value > 0))
    if not ok:
        what = "a number of seconds " + ("of 0 or more" if zero else "above 0") + (" (or None)" if none else "")
        raise _fail(name, what, value)


def _count(name: str, value: Any, *, least: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise _fail(name, f"an integer of {least} or more", value)


def _choice(name: str, value: Any, choices: tuple[str, ...]) -> None:
    if not isinstance(value, str) or value not in choices:
        raise _fail(name, " or ".join(repr(c) for c in choices), value)


def _instance(name: str, value: Any, cls: type, wanted: str) -> None:
    if value is not None and not isinstance(value, cls):
        raise _fail(name, f"{wanted} (or None)", value)


def _callable(name: str, value: Any) -> None:
    if value is not None and not callable(value):
        raise _fail(name, "a function (or None)", value)


def _strings(name: str, value: Any, wanted: str) -> None:
    """``None``, or an iterable (not a string) of strings."""
    if value is None:
        return
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise _fail(name, wanted, value)


def _roots(value: Any) -> None:
    if value is None:
        return
    if isinstance(value, (str, bytes, os.PathLike, Mapping)) or not hasattr(value, "__iter__"):
        raise _fail("roots", "a list of paths, URIs or {'uri': ...} (or None)", value)


def _environ(value: Any) -> None:
    if value is None:
        return
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str)
                                                 for k, v in value.items()):
        raise _fail("environ", "a mapping of strings to strings (or None)", value)


def _inputs(value: Any) -> None:
    if value is not None and not isinstance(value, Mapping) and not callable(value):
        raise _fail("inputs", "a mapping of input ids to values, or a function (or None)", value)


def _log_level(value: Any) -> None:
    check_level(value)


def _token_store(value: Any) -> None:
    if value is not None and not isinstance(value, TokenStore):
        raise _fail("token_store", "a mcphost.auth.TokenStore (get, put, delete, list), or None", value)


def _tool_search(value: Any) -> None:
    if value is not None:  # the search room loads only for a host that has a tool_search
        from .search_semantic import check_embedder

        check_embedder(value)  # the search room's own check, in its own words


#: One check per option of ``MCPHost.__init__`` (``config`` is checked by ``initialize``).
CHECKS: Final[Mapping[str, Callable[[Any], None]]] = {
    "roots": _roots,
    "validate_arguments": lambda v: _flag("validate_arguments", v),
    "request_timeout": lambda v: _seconds("request_timeout", v, none=True),
    "shutdown_timeout": lambda v: _seconds("shutdown_timeout", v, zero=True),
    "max_message_size": lambda v: _count("max_message_size", v, least=1),
    "max_pages": lambda v: _count("max_pages", v, least=1),
    "environ": _environ,
    "inherit_env": lambda v: _flag("inherit_env", v),
    "inputs": _inputs,
    "client_info": lambda v: _instance("client_info", v, Mapping, "a mapping such as {'name', 'version'}"),
    "handle_signals": lambda v: _flag("handle_signals", v),
    "validate_output": lambda v: _choice("validate_output", v, ("error", "warn", "off")),
    "validate_messages": lambda v: _choice("validate_messages", v, ("strict", "lenient", "off")),
    "servers": lambda v: _strings("servers", v, "a list of server names (or None)"),
    "transport_factory": lambda v: _callable("transport_factory", v),
    "bounds": lambda v: _instance("bounds", v, Bounds, "a mcphost.bounds.Bounds"),
    "unavailable_after_timeouts": lambda v: _count("unavailable_after_timeouts", v, least=0),
    "require_all": lambda v: _flag("require_all", v, none=True),
    "watch": lambda v: _flag("watch", v),
    "retry": lambda v: _instance("retry", v, RetryPolicy, "a mcphost.policy.RetryPolicy"),
    "log_level": _log_level,
    "trace_bodies": lambda v: _flag("trace_bodies", v),
    "permissions": lambda v: _instance("permissions", v, Permissions, "a mcphost.Permissions"),
    "tool_search": _tool_search,
    "keepalive": lambda v: _seconds("keepalive", v, zero=True),
    "on_authorize": lambda v: _callable("on_authorize", v),
    "token_store": _token_store,
}


def check_options(options: Mapping[str, Any]) -> None:
    """Check the constructor's options (``locals()`` of ``MCPHost.__init__``; names it does
    not know, such as ``self`` and ``config``, are left alone).

    Raises:
        UsageError: the first bad option, named, with what it must be.
    """
    for name, check in CHECKS.items():
        if name in options:
            check(options[name])
    bounds = options.get("bounds")
    max_pages = options.get("max_pages", DEFAULT_MAX_PAGES)
    if bounds is not None and max_pages not in (DEFAULT_MAX_PAGES, bounds.max_pages):
        raise UsageError(
            f"MCPHost options max_pages={max_pages!r} and bounds (max_pages={bounds.max_pages}) disagree: "
            "give max_pages in Bounds(max_pages=...) only"
        )
