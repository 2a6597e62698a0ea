"""What a failed start says: the translation of start failures into ``ServerStartupError``.

Layer 4 (pure: no I/O). The supervisor runs starts; this module words their failures, once,
in one place:

- what a transport raised (a ``TransportError`` naming the socket error or HTTP status), what
  the session raised (the server exited during the handshake, answered wrongly), and a start
  that ran out of time, each become one :class:`~mcphost.errors.ServerStartupError` whose
  ``transient`` says whether another try may succeed;
- a server that died of one of its configured limits says so ("out of memory under its limit
  (256 MiB)");
- a start tried several times says how many, and how the other tries failed.

The stderr tail is data (``stderr_tail``), never glued to a message: ``str()`` of the error
shows it. Errors are made whole here and not changed afterwards.
"""

from __future__ import annotations

import logging
import os
import re
import signal
from typing import Any, Final

from ..errors import (
    ConfigurationError,
    MCPHostError,
    ServerStartupError,
    ServerUnavailableError,
    TimeoutError,
    TransportError,
)

__all__ = [
    "INSTALL_TIMEOUT",
    "after_attempts",
    "headline",
    "host_failed",
    "is_package_runner",
    "limit_cause",
    "out_of_time",
    "translate",
    "unavailable_with_cause",
]

logger = logging.getLogger("mcphost.host.startup_errors")

#: The first start of a server launched through a package runner may include a download.
INSTALL_TIMEOUT: Final = 300.0
_RUNNERS: Final = frozenset({"npx", "uvx", "pipx", "bunx", "pnpx", "dlx"})


def is_package_runner(config: Any) -> bool:
    """Is the server started through a package runner that may download it first?"""
    command = getattr(config, "command", None)
    if not isinstance(command, str):
        return False
    name = os.path.basename(command).lower().removesuffix(".cmd").removesuffix(".exe")
    args = list(getattr(config, "args", ()))
    return name in _RUNNERS or (name in ("npm", "pnpm", "yarn") and bool(args) and args[0] in ("exec", "dlx"))


_OOM: Final = re.compile(r"(?i)out of memory|MemoryError|allocation failed|cannot allocate memory|ENOMEM")
_EMFILE: Final = re.compile(r"(?i)too many open files|EMFILE")
_NPROC: Final = re.compile(r"(?i)resource temporarily unavailable|EAGAIN|can't start new thread")


def limit_cause(limits: Any, exit_code: int | None, tail: list[str]) -> str | None:
    """Whether a server that ended died of one of its configured limits, said plainly."""
    if limits is None or exit_code is None or exit_code == 0:
        return None
    text = "\n".join(tail[-20:])
    cpu = limits.cpu_seconds
    if cpu and exit_code in (-signal.SIGXCPU, -signal.SIGKILL):
        return f"killed by its CPU limit ({cpu} s)"
    memory = limits.memory_bytes
    if memory and (_OOM.search(text) or exit_code in (-signal.SIGSEGV, -signal.SIGABRT)):
        return f"out of memory under its limit ({memory / (1 << 20):g} MiB)"
    if limits.open_files and _EMFILE.search(text):
        return f"ran out of file descriptors under its limit ({limits.open_files})"
    if limits.processes and _NPROC.search(text):
        return f"could not start a process under its limit ({limits.processes})"
    return None


def headline(err: MCPHostError) -> str:
    """The first line of an error's message (a host start's lists every server below it)."""
    return err.message.partition("\n")[0]


def exit_text(exit_code: int | None) -> str:
    if exit_code is None:
        return ""
    if exit_code < 0:
        return f" (killed by signal {-exit_code})"
    return f" with code {exit_code}"


def out_of_time(name: str, timeout: float, tail: list[str], *, budget: bool = False) -> ServerStartupError:
    """A start that was not ready within its start-up timeout (or what was left of the
    start budget): another try may do better."""
    what = "what was left of the start budget" if budget else "its start-up timeout"
    return ServerStartupError(f"not ready within {what} of {timeout:g} s", server=name, stderr_tail=tail,
                              transient=True)


def translate(name: str, exc: MCPHostError, tail: list[str], limits: Any) -> ServerStartupError:
    """The start error for what the transport or the session raised while starting
    (a ``ConfigurationError`` is not translated: the caller raises it as it is)."""
    if isinstance(exc, ServerStartupError):
        return exc
    if isinstance(exc, TransportError):
        # The transport's words (the socket error, the HTTP status) are the reason; a
        # remote server has no stderr (its transport's tail() holds its HTTP failures).
        return ServerStartupError(exc.message, server=name, transient=exc.transient)
    if isinstance(exc, ServerUnavailableError):
        tail = exc.stderr_tail or tail
        cause = limit_cause(limits, exc.exit_code, tail)
        text = f"server exited during start-up{exit_text(exc.exit_code)}" + (f": {cause}" if cause else "")
        return ServerStartupError(text, server=name, stderr_tail=tail, transient=True)
    # It answered, wrongly (a protocol or JSON-RPC error): another try would only repeat it.
    # A request of the start that timed out may be answered in time on another try.
    return ServerStartupError(f"start-up failed: {exc.message}", server=name,
                              stderr_tail=getattr(exc, "stderr_tail", None) or tail,
                              transient=isinstance(exc, TimeoutError))


def after_attempts(err: ServerStartupError, failed: list[ServerStartupError],
                   note: str = "") -> ServerStartupError:
    """The last start error, saying how many tries there were and how the others failed
    (``note``: why no more were made, e.g. the start budget was spent)."""
    if len(failed) <= 1 and not note:
        return ServerStartupError(err.message, server=err.server, stderr_tail=err.stderr_tail,
                                  failures=err.failures, attempts=list(failed), transient=err.transient)
    last = headline(err)
    others = list(dict.fromkeys(r for r in map(headline, failed[:-1]) if r != last))
    said = f" (tried {len(failed)} times" if len(failed) > 1 else " ("
    if others:
        said += f"; before: {'; '.join(others)}"
    if note:
        said += ("; " if len(failed) > 1 or others else "") + note
    _, sep, rest = err.message.partition("\n")
    return ServerStartupError(last + said + ")" + sep + rest, server=err.server, stderr_tail=err.stderr_tail,
                              failures=err.failures, attempts=list(failed), transient=err.transient)


def host_failed(failures: dict[str, MCPHostError]) -> MCPHostError:
    """The error of an all-or-nothing host start: every server that failed, and why (a
    single ``ConfigurationError`` as it is)."""
    only = next(iter(failures.values())) if len(failures) == 1 else None
    if isinstance(only, ConfigurationError):
        return only
    details = "\n".join(f"- {err}" for err in failures.values())
    return ServerStartupError(f"{len(failures)} server(s) failed to start: {', '.join(failures)}\n{details}",
                              server=only.server if only is not None else None,
                              stderr_tail=getattr(only, "stderr_tail", None), failures=failures)


def unavailable_with_cause(err: MCPHostError, limits: Any) -> MCPHostError:
    """How a ready server went away, with the limit it died of when that is why."""
    exit_code = getattr(err, "exit_code", None)
    tail = list(getattr(err, "stderr_tail", []))
    cause = limit_cause(limits, exit_code, tail)
    if not cause:
        return err
    return ServerUnavailableError(f"{headline(err)}: {cause}", server=err.server, exit_code=exit_code,
                                  stderr_tail=tail)
