"""What ``mcphost inspect`` prints: a first look at every server, for people.

Per server: its state, protocol version, name and version, how long it took to start, its
error if any; its tools with their parameters (type, required, default, allowed values,
description, wrapped to the terminal), prompts with their arguments, resources and
templates. Everything a server sent goes through :func:`~mcphost.cli.report.clean`.
Colour only on a terminal, and never with ``NO_COLOR`` set.
"""

from __future__ import annotations

import json
import textwrap
from typing import Any, Final

from ..errors import TAIL_HEADING
from .report import clean, excerpt

__all__ = ["Style", "render_inspect"]

_MAX_RESOURCES: Final = 50


class Style:
    """ANSI styles, or none."""

    def __init__(self, colour: bool) -> None:
        self.colour = colour

    def _wrap(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.colour else text

    def bold(self, text: str) -> str:
        return self._wrap("1", text)

    def dim(self, text: str) -> str:
        return self._wrap("2", text)

    def state(self, state: str) -> str:
        code = {"ready": "32", "failed": "31", "unavailable": "31", "starting": "33"}.get(state, "2")
        return self._wrap(code, state)


def _type_of(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "any"
    t = schema.get("type")
    if isinstance(t, list):
        return "|".join(str(x) for x in t)
    if isinstance(t, str):
        if t == "array":
            return f"array[{_type_of(schema.get('items'))}]"
        return t
    if "enum" in schema:
        return "enum"
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            # dict.fromkeys: each alternative once, in order ("string|string" says nothing)
            return "|".join(dict.fromkeys(_type_of(s) for s in schema[key]))
    return "any"


def _properties(tool: dict[str, Any]) -> tuple[dict[str, Any], set[str]]:
    schema = tool.get("inputSchema") or {}
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict):
        return {}, set()
    required = schema.get("required") or []
    return props, {r for r in required if isinstance(r, str)} if isinstance(required, list) else set()


def _params(tool: dict[str, Any]) -> str:
    props, required = _properties(tool)
    if not props:
        return "()"
    parts = [f"{name}{'' if name in required else '?'}: {_type_of(sub)}" for name, sub in props.items()]
    return "(" + ", ".join(parts) + ")"


def _short(text: Any, width: int = 70) -> str:
    if not isinstance(text, str):
        return ""
    line = clean(" ".join(text.split()))
    return line if len(line) <= width else line[: width - 1] + "…"


def _detail(sub: Any) -> str:
    """Default, allowed values and description of one parameter, in one line."""
    if not isinstance(sub, dict):
        return ""
    bits = []
    if "default" in sub:
        bits.append(f"default {json.dumps(sub['default'], ensure_ascii=False)[:40]}")
    if isinstance(sub.get("enum"), list):
        bits.append("one of " + ", ".join(json.dumps(v, ensure_ascii=False)[:30] for v in sub["enum"][:10]))
    desc = sub.get("description")
    if isinstance(desc, str) and desc.strip():
        bits.append(" ".join(desc.split()))
    return clean("; ".join(bits))


def _wrapped(text: str, indent: str, width: int) -> list[str]:
    return textwrap.wrap(text, width=max(40, width), initial_indent=indent, subsequent_indent=indent + "  ",
                         max_lines=4, placeholder=" …") or []


def _error(name: str, text: str) -> str:
    """One line: the error without the server's name (it heads the block), with the stderr
    line that says why."""
    first, *tail = text.splitlines()
    first = first.removeprefix(f"{name}: ")
    if first.endswith(TAIL_HEADING):  # get_tools() gives str() of the error: its tail after the heading
        said = excerpt([line.strip() for line in tail], 1)
        first = first.removesuffix(TAIL_HEADING) + (f" (stderr: {said[0]})" if said else "")
    return clean(first)[:300]


def render_inspect(caps: dict[str, Any], *, width: int = 100, style: Style | None = None,
                   metrics: dict[str, Any] | None = None) -> str:
    """The human-readable report of ``get_tools()`` (and start times from ``metrics``)."""
    st = style or Style(False)
    lines: list[str] = []
    for name, info in caps.items():
        server_info = info.get("serverInfo") or {}
        state = str(info.get("state"))
        head = f"== {st.bold(clean(name))}  [{st.state(state)}]"
        # A server that never answered (disabled, failed at start) has neither: say nothing.
        if info.get("protocolVersion"):
            head += f"  protocol {clean(info['protocolVersion'])}"
            if info.get("era"):
                head += f" ({clean(info['era'])} era)"
        if server_info:
            head += "  (" + clean(f"{server_info.get('name', '?')} {server_info.get('version', '')}".strip()) + ")"
        started = (metrics or {}).get(name, {}).get("start_seconds")
        if isinstance(started, (int, float)):
            head += st.dim(f"  started in {started:.2f} s")
        lines.append(head)
        if info.get("error"):
            lines.append(f"  error: {_error(name, str(info['error']))}")
        tools = info.get("tools") or []
        if state in ("disabled", "failed") and not tools:
            lines.append("")
            continue
        lines.append(f"  tools ({len(tools)}):")
        for tool in tools:
            lines.append(clean(f"    {name}.{tool.get('name')}{_params(tool)}"))
            desc = _short(tool.get("description"), 10_000)
            lines.extend(_wrapped(desc, "        ", width) if desc else [])
            props, required = _properties(tool)
            for pname, sub in props.items():
                detail = _detail(sub)
                if detail:
                    mark = "" if pname in required else "?"
                    lines.extend(_wrapped(f"- {clean(pname)}{mark}: {detail}", "          ", width))
        prompts = info.get("prompts") or []
        if prompts:
            lines.append(f"  prompts ({len(prompts)}):")
            for prompt in prompts:
                args = ", ".join(
                    str(a.get("name", "?")) + ("" if a.get("required") else "?")
                    for a in prompt.get("arguments") or []
                    if isinstance(a, dict)
                )
                lines.append(clean(f"    {name}.{prompt.get('name')}({args})"))
                desc = _short(prompt.get("description"), 10_000)
                lines.extend(_wrapped(desc, "        ", width) if desc else [])
        resources = info.get("resources") or []
        if resources:
            lines.append(f"  resources ({len(resources)}):")
            for res in resources[:_MAX_RESOURCES]:
                lines.append(f"    {clean(res.get('uri'))}  {_short(res.get('name'), 40)}")
            if len(resources) > _MAX_RESOURCES:
                lines.append(f"    … and {len(resources) - _MAX_RESOURCES} more")
        templates = info.get("resourceTemplates") or []
        if templates:
            lines.append(f"  resource templates ({len(templates)}):")
            for tpl in templates:
                lines.append(f"    {clean(tpl.get('uriTemplate'))}  {_short(tpl.get('name'), 40)}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def render_metrics(metrics: dict[str, Any]) -> str:
    """A table of ``get_metrics()``: per server its state, start time, tools called, calls,
    errors, and the latency of its requests (p50/p95)."""
    header = ("server", "state", "start", "calls", "errors", "p50", "p95")
    rows = [header]
    for name, m in metrics.items():
        stats = [*m.get("tools", {}).values(), *m.get("methods", {}).values()]
        p50 = max((s["p50Seconds"] for s in stats if s.get("p50Seconds") is not None), default=None)
        p95 = max((s["p95Seconds"] for s in stats if s.get("p95Seconds") is not None), default=None)
        start = m.get("start_seconds")
        rows.append((
            clean(name), str(m.get("state", "")), "-" if start is None else f"{start:.2f} s",
            str(m.get("requests", 0)), str(m.get("errors", 0)),
            "-" if p50 is None else f"{p50 * 1000:.1f} ms", "-" if p95 is None else f"{p95 * 1000:.1f} ms",
        ))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["", "metrics:"]
    for row in rows:
        lines.append("  " + "  ".join(cell.ljust(w) if i < 2 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths))).rstrip())
    return "\n".join(lines) + "\n"
