"""What a failed start says: the translation of start failures into ``ServerStartupError``.

Layer 4 (pure: no I/O). The supervisor runs starts; this module words their failures, once,
in one place:

- what a transport raised (a ``TransportError`` naming the socket error or HTTP status), what
  the session raised (the server exited during the handshake, answered wrongly), and a start
  that ran out of time, each become one :class:`~mcphost.errors.ServerStartupError` whose
  ``transient`` says whether another try may succeed;
- a server that died of one of its configured limits says so ("out of memory under its limit
  (256 MiB)"): which limit is the stdio transport's finding (``Gone.process.limit``, from
  the exit signal and stderr), the words are the host's;
- a start tried several times says how many, and how the other tries failed.

The stderr tail is data (``stderr_tail``), never glued to a message: ``str()`` of the error
shows it. Errors are made whole here and not changed afterwards.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Final

from ..errors import (
    ConfigurationError,
    MCPHostError,
    ServerStartupError,
    ServerUnavailableError,
    TimeoutError,
    TransportError,
)

if TYPE_CHECKING:
    from ..transports.base import Gone

__all__ = [
    "INSTALL_TIMEOUT",
    "after_attempts",
    "headline",
    "host_failed",
    "limit_cause",
    "out_of_time",
    "translate",
    "unavailable_with_cause",
]

logger = logging.getLogger("mcphost.host.startup_errors")

#: The first start of a server launched through a package runner may include a download.
INSTALL_TIMEOUT: Final = 300.0


def limit_cause(limits: Any, gone: Gone | None) -> str | None:
    """The host's words for the configured limit a server's process died of, as its
    transport reported it (``Gone.process.limit``); None if it did not."""
    kind = gone.process.limit if gone is not None and gone.process is not None else None
    if limits is None or kind is None:
        return None
    if kind == "cpu":
        return f"killed by its CPU limit ({limits.cpu_seconds} s)"
    if kind == "memory":
        return f"out of memory under its limit ({limits.memory_bytes / (1 << 20):g} MiB)"
    if kind == "files":
        return f"ran out of file descriptors under its limit ({limits.open_files})"
    if kind == "processes":
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


def translate(name: str, exc: MCPHostError, tail: list[str], limits: Any, gone: Gone | None = None) -> ServerStartupError:
    """The start error for what the transport or the session raised while starting, with
    ``gone`` (how the transport ended, if it did) for the limit the process died of (a
    ``ConfigurationError`` is not translated: the caller raises it as it is)."""
    if isinstance(exc, ServerStartupError):
        return exc
    if isinstance(exc, TransportError):
        # The transport's words (the socket error, the HTTP status) are the reason; a
        # remote server has no stderr (its transport's tail() holds its HTTP failures).
        return ServerStartupError(exc.message, server=name, transient=exc.transient)
    if isinstance(exc, ServerUnavailableError):
        tail = exc.stderr_tail or tail
        cause = limit_cause(limits, gone)
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


def unavailable_with_cause(err: MCPHostError, limits: Any, gone: Gone | None) -> MCPHostError:
    """How a ready server went away, with the limit it died of when that is why (``gone``:
    how its transport ended)."""
    cause = limit_cause(limits, gone)
    if not cause:
        return err
    exit_code = getattr(err, "exit_code", None)
    tail = list(getattr(err, "stderr_tail", []))
    return ServerUnavailableError(f"{headline(err)}: {cause}", server=err.server, exit_code=exit_code,
                                  stderr_tail=tail)
