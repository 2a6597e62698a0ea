"""The fake server's process and stdio: newline-delimited JSON-RPC on stdin/stdout.

The main thread only waits for the exit decision, which keeps it free to run the SIGTERM
handler; a daemon thread reads stdin as bytes and hands each line to the dispatcher. The
process-level faults live here: exit at start, noise on stdout at start, a huge first
message, a flood of notifications, a child process, ignoring SIGTERM or end of input.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any

from .common import JSON, raw_lines
from .core import ServerCore


class StdioLoop(ServerCore):
    """Runs the server on this process's stdin and stdout."""

    def run(self) -> int:
        """Run until stdin EOF (or an exit fault); returns the exit code."""
        spec = self.spec
        if spec.get("pid_file"):
            with open(spec["pid_file"], "w", encoding="utf-8") as f:
                f.write(str(os.getpid()))
        if spec.get("stderr") is not None:
            self._stderr_write(spec["stderr"])
        if spec.get("exitAtStart") is not None:
            self._exit_now(int(spec["exitAtStart"]))
        self._install_sigterm()
        if spec.get("spawnChild"):
            self._spawn_child(spec["spawnChild"])
        garbage = spec.get("garbage")
        if garbage:
            self.write_raw(raw_lines(garbage))
        if spec.get("hugeMessageOnStart"):
            n = int(spec["hugeMessageOnStart"])
            self.send(self._log_msg("info", "x" * n))
        for i in range(int(spec.get("notificationFlood") or 0)):
            self.send(self._log_msg("info", f"flood {i}"))

        reader = threading.Thread(target=self._read_loop, name="fake-mcp-reader", daemon=True)
        reader.start()
        # The main thread only waits, so the SIGTERM handler can always run promptly.
        while not self._exit_event.wait(3600):
            pass
        code = self._exit_code or 0
        self._flush_all()
        return code

    def _install_sigterm(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        if not hasattr(signal, "SIGTERM"):  # pragma: no cover
            return

        def on_sigterm(signum: int, frame: object) -> None:
            self.record({"event": "sigterm"})
            self._log("SIGTERM received")
            if self.spec.get("ignoreSigterm"):
                return
            if os.name == "posix":
                # Die *by* the signal, so the parent sees the real exit status (-15).
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                os.kill(os.getpid(), signal.SIGTERM)
            os._exit(143)  # pragma: no cover

        signal.signal(signal.SIGTERM, on_sigterm)

    def _spawn_child(self, opts: JSON) -> None:
        devnull = isinstance(opts, dict) and opts.get("stdio") == "devnull"
        kwargs: dict[str, Any] = {}
        if devnull:
            kwargs = {
                "stdin": subprocess.DEVNULL,
                "stdout": subprocess.DEVNULL,
                "stderr": subprocess.DEVNULL,
            }
        # Same process group as this server (no new session): an orphan if only we are killed.
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1000)"], **kwargs)
        self._stderr_write(f"child pid {child.pid}")

    def _finish(self, code: int) -> None:
        with self._cond:
            self._exit_code = code
        self._exit_event.set()

    # -------------------------------------------------------------------- input

    def _read_loop(self) -> None:
        buf = bytearray()
        fd = self._stdin_fd
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                break
            start = 0
            while True:
                idx = chunk.find(b"\n", start)
                if idx < 0:
                    buf += chunk[start:]
                    break
                if buf:
                    buf += chunk[start:idx]
                    line = bytes(buf)
                    buf.clear()
                else:
                    line = chunk[start:idx]
                start = idx + 1
                self._on_line(line)
        if buf.strip():
            self._on_line(bytes(buf))
        self._on_eof()

    def _on_eof(self) -> None:
        self.record({"event": "eof"})
        self._log("stdin EOF")
        if self.spec.get("ignoreStdinEof"):
            return  # keep running until killed
        with self._cond:
            self.closing = True
            for call in self.calls.values():
                call.cancelled = True
            self._cond.notify_all()
            handlers = list(self._handlers)
        # Let handlers that are about to answer do so (bounded), then exit.
        deadline = time.monotonic() + 2.0
        for t in handlers:
            t.join(timeout=max(0.0, deadline - time.monotonic()))
        self._finish(int(self.spec.get("exitOnStdinEof") or 0))
