"""The reference server ``@modelcontextprotocol/server-everything`` served over HTTP, for
the remote interop tests.

``EverythingServer("http")`` runs ``npx -y @modelcontextprotocol/server-everything
streamableHttp`` (Streamable HTTP at ``http://127.0.0.1:<port>/mcp``), ``"sse"`` runs its
``sse`` mode (the legacy HTTP+SSE transport at ``/sse``, messages POSTed to ``/message``).

The server runs in a session (process group) of its own on a free port; ``start()`` waits,
bounded, until the port accepts connections (the first ``npx`` may download the package);
``stop()`` ends the whole group and waits until no process of it is left; ``restart()``
starts a new server on the same port. What the server
prints (both streams, in order) goes to a file: :meth:`log` reads it, so a test can see the
server's side of a session (its id, its end).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import time
from typing import Final

from helpers import NPX, accepts, free_port, group_alive

__all__ = ["EverythingServer", "MODES", "PATHS", "free_port"]

PACKAGE: Final = "@modelcontextprotocol/server-everything"
#: The server's command-line argument per mcphost transport type.
MODES: Final = {"http": "streamableHttp", "sse": "sse"}
#: The endpoint path the configuration names per mode.
PATHS: Final = {"http": "/mcp", "sse": "/sse"}
#: The first run of npx may download the package.
START_TIMEOUT: Final = 180.0
STOP_TIMEOUT: Final = 10.0
_POLL: Final = 0.05


class EverythingServer:
    """One server-everything process serving ``mode`` (``"http"`` or ``"sse"``)."""

    def __init__(self, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {sorted(MODES)}, not {mode!r}")
        self.mode = mode
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self._log_file = tempfile.NamedTemporaryFile(  # noqa: SIM115 (closed by stop())
            prefix=f"everything-{mode}-", suffix=".log", delete=False)
        self.log_path = self._log_file.name

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{PATHS[self.mode]}"

    def log(self) -> str:
        """Everything the server printed so far."""
        with open(self.log_path, encoding="utf-8", errors="replace") as fh:
            return fh.read()

    def start(self, timeout: float = START_TIMEOUT, attempts: int = 3, port: int = 0) -> EverythingServer:
        """Start the server (on ``port``, else a free one) and wait until its port accepts
        connections (bounded)."""
        assert NPX is not None, "npx is not installed"
        deadline = time.monotonic() + timeout
        for _ in range(attempts):
            self.port = port or free_port()
            env = {**os.environ, "PORT": str(self.port)}
            self.process = subprocess.Popen(
                [NPX, "-y", PACKAGE, MODES[self.mode]],
                stdin=subprocess.DEVNULL, stdout=self._log_file, stderr=subprocess.STDOUT,
                env=env, start_new_session=True,
            )
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    break  # exited: the port was taken meanwhile, or npx failed
                if accepts(self.port) and self.process.poll() is None:
                    return self
                time.sleep(_POLL)
            else:
                self.stop()
                raise RuntimeError(f"server-everything {self.mode} did not listen on port {self.port} "
                                   f"within {timeout} s; it printed:\n{self.log()[-2000:]}")
            self._end_group()
        self.stop()
        raise RuntimeError(f"server-everything {self.mode} exited before listening; it printed:\n"
                           f"{self.log()[-2000:]}")

    def _end_group(self) -> None:
        """End the process group (TERM, then KILL) and wait until none of it is left."""
        process = self.process
        if process is None:
            return
        pgid = process.pid  # start_new_session: the leader's pid is the group's id
        for sig, wait in ((signal.SIGTERM, STOP_TIMEOUT / 2), (signal.SIGKILL, STOP_TIMEOUT / 2)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(wait)
            deadline = time.monotonic() + wait
            while group_alive(pgid) and time.monotonic() < deadline:
                time.sleep(_POLL)
            if process.poll() is not None and not group_alive(pgid):
                break
        process.wait(STOP_TIMEOUT)
        assert not group_alive(pgid), f"processes of group {pgid} survived SIGKILL"
        self.process = None

    def restart(self) -> None:
        """End the server and start a new one on the same port (it knows no session of the
        old one)."""
        self._end_group()
        self.start(attempts=1, port=self.port)

    def stop(self) -> None:
        """End the server (idempotent); its log stays readable until the file is removed."""
        try:
            self._end_group()
        finally:
            if not self._log_file.closed:
                self._log_file.close()

    def remove_log(self) -> None:
        with contextlib.suppress(OSError):
            os.unlink(self.log_path)

    def __enter__(self) -> EverythingServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        try:
            self.stop()
        finally:
            self.remove_log()
