"""How the command line tells people what went wrong: one line per problem, the stderr
lines that matter, nothing a server sent printed as is.

A failed server's stderr is mostly noise around one line: Node prints the throwing source
line, a caret, the error, a stack and its own version; Python prints a traceback. The
excerpt keeps the lines that say something (``Error: API_KEY environment variable is
required``), not the frames.
"""

from __future__ import annotations

import re
import sys
from typing import Any, Final, TextIO

from ..bounds import CONTROL
from ..errors import MCPHostError, ServerStartupError

__all__ = ["clean", "error_lines", "excerpt", "print_error", "print_notes"]

_FRAME: Final = re.compile(
    r"^\s*(at |File \"|Traceback \(most recent call last\)|\^+\s*$|Node\.js v\d|"
    r"npm (ERR|error|notice)! (A complete log|\s*$)|-{3,}|={3,})"
)
_SOURCE_POSITION: Final = re.compile(r"\S+\.(js|mjs|cjs|ts|py|rb|go):\d+(:\d+)?")
_SAYS: Final = re.compile(r"(?i)\b(error|exception|fatal|denied|required|missing|not found|invalid|cannot|failed|refused)\b")


def clean(text: Any) -> str:
    """What a server sent, safe to print: control and formatting characters (escape
    sequences that retitle the terminal or overwrite lines, bidi overrides) are shown as
    ``\\xNN`` escapes instead of acting."""
    text = text if isinstance(text, str) else str(text)
    return CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def excerpt(tail: list[str], lines: int = 3) -> list[str]:
    """The stderr lines that say what went wrong: stack frames, carets (and the source line
    they point into), file:line headers, runtime versions and blank lines dropped; lines
    that name an error preferred; the last ``lines``."""
    meaningful: list[str] = []
    for line in tail:
        text = line.strip()
        if re.fullmatch(r"\^+~*", text):
            if meaningful:
                meaningful.pop()  # the source line the caret points into: code, not a message
            continue
        if not text or _FRAME.match(line) or _SOURCE_POSITION.fullmatch(text):
            continue
        meaningful.append(text)
    saying = [line for line in meaningful if _SAYS.search(line)]
    chosen = saying or meaningful
    return [clean(line)[:300] for line in chosen[-lines:]]


def _first_line(exc: MCPHostError) -> str:
    return MCPHostError.__str__(exc).partition("\n")[0]  # the message, without the tail


# What a remote transport appends to a failure it records: "(POST initialize)".
_REQUEST_SUFFIX: Final = re.compile(r"\s*\((GET|POST|DELETE|PUT) [^)]*\)\s*$")


def _repeats(line: str, message: str) -> bool:
    """Does a tail line only repeat what the message says (a remote server's tail holds
    its HTTP failures, which the message already quotes)?"""
    core = _REQUEST_SUFFIX.sub("", line.strip())
    return bool(core) and core in message


def error_lines(exc: MCPHostError, verbose: bool = False, remote: frozenset[str] = frozenset()) -> list[str]:
    """The lines printed for ``exc``: one per failed server, each with what its stderr
    says (the whole tail, up to 20 lines, with ``verbose``). For the servers in
    ``remote`` the tail is what their transport recorded, not a stderr: labelled so."""
    if isinstance(exc, ServerStartupError) and exc.failures:
        out: list[str] = []
        for err in exc.failures.values():
            out.extend(error_lines(err, verbose, remote))
        return out
    first = _first_line(exc)
    if exc.server and not first.startswith(f"{exc.server}:"):
        first = f"{exc.server}: {first}"
    head = f"mcphost: error: {clean(first)}"
    tail = [line for line in getattr(exc, "stderr_tail", None) or [] if not _repeats(line, first)]
    if not tail:
        return [head]
    if verbose:
        return [head, *(f"    {clean(line)[:300]}" for line in tail[-20:])]
    said = excerpt(tail)
    label = "transport" if exc.server in remote else "stderr"
    if len(said) == 1:
        return [f"{head} ({label}: {said[0]})"]
    return [head, *(f"    {line}" for line in said)]


def print_error(exc: MCPHostError, verbose: bool = False, out: TextIO | None = None,
                remote: frozenset[str] = frozenset()) -> None:
    out = out or sys.stderr
    for line in error_lines(exc, verbose, remote):
        print(line, file=out)


def print_notes(notes: Any, out: TextIO | None = None) -> None:
    """Configuration notes (ignored keys, "did you mean", suspicious values)."""
    out = out or sys.stderr
    for note in notes or ():
        print(f"mcphost: note: {clean(note)}", file=out)
