"""The application's SIGTERM: stop every server, then die of the signal.

Layer 4. Installed by the supervisor when a host starts, only when the application has no
SIGTERM handler of its own (and only in the main thread, off Windows); removed when the
host has stopped. The shutdown it starts runs in a task this object holds — a task no
one holds may be garbage-collected mid-run. The servers themselves are stopped through the
host's own shutdown (the transports' ladders); nothing here signals a server. A second
SIGTERM while that shutdown runs (a supervisor that asked nicely once and will not wait
out a server's graceful timeout) does what a second Ctrl-C does: every server's process
tree is killed at once, synchronously (``kill_now``: the transports' ``kill_now()``), and
the application dies of SIGTERM right away.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Awaitable, Callable

__all__ = ["SigtermShutdown"]

logger = logging.getLogger("mcphost.host.signals")


class SigtermShutdown:
    """Owns the SIGTERM handler of one host and the shutdown task it starts."""

    def __init__(self, shutdown: Callable[[], Awaitable[object]], kill_now: Callable[[], object]) -> None:
        self._shutdown = shutdown
        self._kill_now = kill_now
        self._installed = False
        #: The shutdown a SIGTERM started. It ends by ending the process; only the loop's
        #: teardown cancels it.
        self.task: asyncio.Task[None] | None = None

    def install(self) -> None:
        if self._installed or sys.platform == "win32":
            return
        if threading.current_thread() is not threading.main_thread():
            return
        if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
            return  # the application handles SIGTERM itself
        loop = asyncio.get_running_loop()
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signal.SIGTERM, self.on_sigterm)
            self._installed = True

    def remove(self) -> None:
        if self._installed:
            self._installed = False
            with contextlib.suppress(Exception):
                asyncio.get_running_loop().remove_signal_handler(signal.SIGTERM)

    def on_sigterm(self) -> None:
        if self.task is not None:
            logger.warning("second SIGTERM received: killing every server now")
            try:
                self._kill_now()
            finally:
                self._die()
            return
        logger.warning("SIGTERM received: shutting down every server")
        self.task = asyncio.get_running_loop().create_task(self._stop_then_exit(), name="mcphost-sigterm")

    async def _stop_then_exit(self) -> None:
        try:
            await self._shutdown()
        except Exception:
            # Dying of the signal matters more than a failed stop (each failure is logged).
            logger.exception("shutdown after SIGTERM failed")
        self._die()

    def _die(self) -> None:
        """Die of SIGTERM as the sender intended."""
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)
