"""How much of anything a server controls the host accepts (layer 1, values only).

A server may be buggy or hostile: every size, count and depth it controls is bounded, each
bound configurable through ``MCPHost(bounds=Bounds(...))``. A violation is that server's
``ProtocolError`` (or a refused request), never a stall or a memory blow-up of the host.
``docs/reliability.md`` lists every bound with its default. A bad bound is the caller's
``UsageError`` (still a ``ValueError``, as it was before the error tree said whose fault).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from ._json import MAX_TOKENS
from .errors import UsageError

__all__ = ["Bounds", "NAME_RULE", "CONTROL"]

#: SEP-986: tool names SHOULD be 1-128 characters of ASCII letters, digits, ``_ - .``.
NAME_RULE: Final = re.compile(r"[A-Za-z0-9._-]{1,128}")
#: Characters never accepted in a name: C0/C1 controls, DEL, and the bidi/zero-width
#: formatting characters a terminal or a model would misread.
CONTROL: Final = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")


@dataclass(frozen=True)
class Bounds:
    """Limits on what one server may send.

    Attributes:
        max_list_items: items in one listing (all pages of tools, prompts, resources,
            templates, tasks); more is a ``ProtocolError`` (TR10 asks for a cap).
        max_pages: pages followed in one listing (a longer listing stops with a warning).
        max_name_length: characters in a tool, prompt or resource name; longer: dropped.
        max_description_length: characters kept of a description (longer: cut, marked).
        max_error_length: characters of a server's text quoted in an error message.
        max_message_tokens: JSON tokens (``[``, ``{``, ``,``, ``:`` outside strings) one
            received message over 1 MiB may hold, on every transport. Such a message is
            counted a slice per event-loop turn before it is decoded; past the bound it is
            refused undecoded: the call it answered fails with a ``ProtocolError`` (a
            request or notification of the server is only logged).
    """

    max_list_items: int = 10_000
    max_pages: int = 1_000
    max_name_length: int = 1_024
    max_description_length: int = 65_536
    max_error_length: int = 2_000
    max_message_tokens: int = MAX_TOKENS

    def __post_init__(self) -> None:
        for name in ("max_list_items", "max_pages", "max_name_length", "max_description_length",
                     "max_error_length", "max_message_tokens"):
            value = getattr(self, name)
            if type(value) is not int or value < 1:
                raise UsageError(f"Bounds.{name} must be a positive integer, not {value!r}")


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters)"
