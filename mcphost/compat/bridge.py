"""How a specification document's exception meets mcphost's exception tree.

Layer 5. Each document names its own exceptions (``ResourceDataError``,
``ToolExecutionError``...); mcphost raises its own (``RoutingError``, ``TimeoutError``...).
An application written against a document catches the document's names, one written
against mcphost catches mcphost's: :func:`document_error` makes one exception that both
``except`` clauses catch, a class that derives from the document's class and from the class
of the mcphost error it stands for (made once per pair, and named as the document names it).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Mapping
from typing import Any, TypeVar

from mcphost import MCPHost
from mcphost.errors import MCPHostError

__all__ = ["check_host_options", "document_error"]

logger = logging.getLogger("mcphost.compat")

E = TypeVar("E", bound=MCPHostError)

_pairs: dict[tuple[type[Any], type[Any]], type[Any]] = {}


def _pair(document: type[E], host: type[MCPHostError]) -> type[E]:
    if issubclass(document, host):
        return document
    key = (document, host)
    made = _pairs.get(key)
    if made is None:
        try:
            made = type(document.__name__, (document, host), {"__module__": document.__module__,
                                                               "__qualname__": document.__qualname__})
        except TypeError:  # two bases that cannot be combined: the document's class alone
            logger.debug("%s cannot also be a %s", document.__name__, host.__name__)
            made = document
        _pairs[key] = made
    return made


def document_error(document: type[E], message: str, cause: BaseException | None = None, *,
                   server: str | None = None) -> E:
    """An instance of ``document`` (the document's exception class) saying ``message``.

    When ``cause`` is an :class:`~mcphost.errors.MCPHostError`, the instance is also of
    ``cause``'s class and keeps its attributes (``server``, ``code``, ``stderr_tail``...);
    raise it ``from cause``.
    """
    if isinstance(cause, MCPHostError):
        cls = _pair(document, type(cause))
        error = cls.__new__(cls, message)
        error.__dict__.update(cause.__dict__)
        error.args = (message,)
        error.message = message
        if server is not None:
            error.server = server
        return error
    return document(message, server=server)


def check_host_options(options: Mapping[str, Any]) -> None:
    """A ``TypeError`` now, naming it, for an option ``MCPHost`` does not take (a facade
    that makes its host later would otherwise report a typo only then)."""
    try:
        inspect.signature(MCPHost).bind(None, **options)
    except TypeError as exc:
        raise TypeError(f"not an option of MCPHost: {exc}") from None
