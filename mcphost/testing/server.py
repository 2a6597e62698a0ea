"""The scriptable fake MCP server itself: one class assembled from its concerns.

This module owns the running fake server. It is a standalone program that imports only the
standard library (never the rest of ``mcphost``), so it starts fast and cannot be broken by
the host code it is used to test. Its concerns each have a module: ``common`` (versions,
codes, a call), ``core`` (state and output), ``stdio`` (the process and its pipes),
``dispatch`` (JSON-RPC: lines, batches, answers), ``methods`` (the MCP requests),
``behaviours`` (what tools do), ``tasks``, ``modern`` (the 2026-07-28 era) and ``tasks_ext``
(its tasks extension). Another front (HTTP) can reuse all but ``stdio``.
"""

from __future__ import annotations

from .behaviours import Behaviours
from .common import LATEST_VERSION, SUPPORTED_VERSIONS, Call, Msg, RpcError
from .dispatch import Dispatcher
from .methods import Methods
from .modern import Modern
from .stdio import StdioLoop
from .tasks import Task, Tasks
from .tasks_ext import TasksExt

__all__ = ["LATEST_VERSION", "SUPPORTED_VERSIONS", "Call", "FakeServer", "RpcError", "Task", "serve"]


class FakeServer(StdioLoop, Dispatcher, Modern, Methods, Behaviours, Tasks, TasksExt):
    """A scriptable MCP server speaking newline-delimited JSON-RPC on stdin/stdout."""


def serve(spec: Msg) -> int:
    """Run the fake server on this process's stdin/stdout; returns the exit code."""
    return FakeServer(spec).run()
