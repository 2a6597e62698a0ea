"""Matching URIs against RFC 6570 URI templates (the reverse of expansion).

Sans-I/O (layer 1). Servers publish ``resources/templates/list`` entries such as
``file:///{path}`` or ``repo://{owner}/{repo}/issues{?state}``; the host routes a URI to the
server whose template matches it. Each template compiles once to a regular expression.
All operators of levels 1-4 are understood (``+ # . / ; ? &``, the explode modifier ``*``
and prefixes ``:n``); matching is deliberately permissive for query-style operators, which
may appear in any order or not at all.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["UriTemplate", "compile_template"]

_EXPR = re.compile(r"\{([^{}]*)\}")
_VARSPEC = re.compile(r"^([A-Za-z0-9_%.]+)(\*|:\d+)?$")

# RFC 6570 would percent-encode "/" in a simple expansion, but servers publish templates
# such as file:///{path} and expect paths to match, so only ? and # end a value (lazily).
_UNRESERVED_VALUE = r"[^?#]*?"
_RESERVED_VALUE = r".*?"


class UriTemplate:
    """A compiled template: :meth:`match` returns the variables, or ``None``."""

    __slots__ = ("_query_groups", "_regex", "literal_length", "template", "variables")

    def __init__(self, template: str) -> None:
        self.template = template
        self.variables: list[str] = []
        self._query_groups: set[int] = set()
        pattern = []
        pos = 0
        literal = 0
        for m in _EXPR.finditer(template):
            text = template[pos : m.start()]
            literal += len(text)
            pattern.append(re.escape(text))
            pattern.append(self._expression(m.group(1)))
            pos = m.end()
        tail = template[pos:]
        literal += len(tail)
        pattern.append(re.escape(tail))
        self.literal_length = literal
        self._regex = re.compile("^" + "".join(pattern) + "$", re.DOTALL)

    def _expression(self, body: str) -> str:
        op = body[:1] if body[:1] in "+#./;?&" else ""
        names = []
        for spec in (body[len(op) :]).split(","):
            m = _VARSPEC.match(spec.strip())
            if not m:
                raise ValueError(f"invalid URI template expression {{{body}}}")
            names.append(m.group(1))
        group_names = []
        for name in names:
            group = "v" + str(len(self.variables))
            self.variables.append(name)
            group_names.append(group)
        if op in ("?", "&"):
            # One group takes the whole query; its pairs are parsed after the match.
            group = group_names[0]
            self._query_groups.add(int(group[1:]))
            lead = re.escape(op)
            return f"(?P<{group}>(?:{lead}[^#]*)?)"
        if op in ("+", "#"):
            parts = [f"(?P<{g}>{_RESERVED_VALUE})" for g in group_names]
            lead = "#" if op == "#" else ""
            return (re.escape(lead) + "?" if lead else "") + ",".join(parts)
        if op in ("/", ".", ";"):
            sep = re.escape(op)
            parts = [f"(?:{sep}(?P<{g}>{_UNRESERVED_VALUE}))?" for g in group_names]
            return "".join(parts)
        parts = [f"(?P<{g}>{_UNRESERVED_VALUE})" for g in group_names]
        return "(?:,)?".join(parts) if len(parts) > 1 else parts[0]

    def match(self, uri: str) -> dict[str, str] | None:
        """Return ``{variable: value}`` if ``uri`` is an expansion of this template."""
        m = self._regex.match(uri)
        if m is None:
            return None
        out: dict[str, str] = {}
        for index, name in enumerate(self.variables):
            value = m.groupdict().get("v" + str(index))
            if value is None or (not value and index in self._query_groups):
                continue
            if value[:1] in ("?", "&"):
                for pair in value[1:].split("&"):
                    key, _, val = pair.partition("=")
                    if key:
                        out[_unquote(key)] = _unquote(val)
                continue
            out[name] = _unquote(value)
        return out


@lru_cache(maxsize=1024)
def compile_template(template: str) -> UriTemplate:
    """Compile (and cache) a template; raises ``ValueError`` for an invalid one."""
    return UriTemplate(template)


def _unquote(text: str) -> str:
    """``text`` with its %-escapes decoded (``urllib.parse.unquote``, which returns a text
    without "%" as it is: that text needs no urllib.parse, ~0.4 MB with ipaddress)."""
    if "%" not in text:
        return text
    from urllib.parse import unquote as decode

    return decode(text)
