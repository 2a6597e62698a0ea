"""A raw JSON-lines driver for the fake server, independent of mcphost's own host code."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mcphost.testing import server_config

WAIT = 10.0  # upper bound of every wait; tests never need anywhere near it


class FakeProc:
    """One fake server process with line-by-line access to stdout and stderr."""

    def __init__(
        self,
        spec: dict[str, Any] | None = None,
        *,
        cwd: str | None = None,
        raw_args: list[str] | None = None,
    ) -> None:
        cfg = server_config(spec)
        args = cfg["args"] if raw_args is None else ["-m", "mcphost.testing", *raw_args]
        self.proc = subprocess.Popen(
            [cfg["command"], *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **cfg["env"]},
            cwd=cwd,
            start_new_session=True,
        )
        self.out: queue.Queue[bytes | None] = queue.Queue()
        self.err: queue.Queue[str | None] = queue.Queue()
        self.stderr_lines: list[str] = []
        self.backlog: list[Any] = []  # messages read while looking for something else
        self._next_id = 1000
        threading.Thread(target=self._pump_out, daemon=True).start()
        threading.Thread(target=self._pump_err, daemon=True).start()

    def _pump_out(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.out.put(line.rstrip(b"\n"))
        self.out.put(None)

    def _pump_err(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            text = line.decode("utf-8", "replace").rstrip("\n")
            self.stderr_lines.append(text)
            self.err.put(text)
        self.err.put(None)

    # -- sending
    def send(self, msg: Any) -> None:
        data = msg if isinstance(msg, bytes) else json.dumps(msg).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(data + b"\n")
        self.proc.stdin.flush()

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def call(self, method: str, params: dict[str, Any] | None = None, **extra: Any) -> int:
        rid = self.new_id()
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method, **extra}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return rid

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)

    # -- receiving
    def recv_raw(self, timeout: float = WAIT) -> bytes | None:
        """The next stdout line (None at EOF); fails the test after ``timeout``."""
        try:
            return self.out.get(timeout=timeout)
        except queue.Empty:
            pytest.fail(f"no output within {timeout}s; stderr: {self.stderr_lines[-5:]}")

    def recv(self, timeout: float = WAIT) -> Any:
        if self.backlog:
            return self.backlog.pop(0)
        line = self.recv_raw(timeout)
        assert line is not None, f"server closed stdout; stderr: {self.stderr_lines[-5:]}"
        return json.loads(line)

    def wait_for(self, pred: Callable[[Any], bool], timeout: float = WAIT) -> Any:
        """The first message matching ``pred``; others are kept in order for later."""
        deadline = time.monotonic() + timeout
        for i, msg in enumerate(self.backlog):
            if pred(msg):
                return self.backlog.pop(i)
        while True:
            line = self.recv_raw(max(0.0, deadline - time.monotonic()))
            assert line is not None, f"server closed stdout; stderr: {self.stderr_lines[-5:]}"
            msg = json.loads(line)
            if pred(msg):
                return msg
            self.backlog.append(msg)

    def response(self, rid: Any, timeout: float = WAIT) -> dict[str, Any]:
        msg: dict[str, Any] = self.wait_for(
            lambda m: isinstance(m, dict) and m.get("id") == rid and "method" not in m, timeout
        )
        return msg

    def result(self, rid: Any) -> Any:
        resp = self.response(rid)
        assert "result" in resp, resp
        return resp["result"]

    def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        return self.result(self.call(method, params))

    def error(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        resp = self.response(self.call(method, params))
        assert "error" in resp, resp
        err: dict[str, Any] = resp["error"]
        return err

    def initialize(self, version: str = "2025-11-25", capabilities: Any = None) -> Any:
        result = self.request(
            "initialize",
            {
                "protocolVersion": version,
                "capabilities": capabilities or {},
                "clientInfo": {"name": "test", "version": "0"},
            },
        )
        self.notify("notifications/initialized")
        return result

    def drain(self, timeout: float = WAIT) -> list[Any]:
        """Every message until stdout closes (bounded)."""
        msgs = list(self.backlog)
        self.backlog.clear()
        deadline = time.monotonic() + timeout
        while True:
            line = self.recv_raw(max(0.0, deadline - time.monotonic()))
            if line is None:
                return msgs
            msgs.append(json.loads(line))

    def stderr_line(self, pred: Callable[[str], bool], timeout: float = WAIT) -> str:
        deadline = time.monotonic() + timeout
        for line in list(self.stderr_lines):
            if pred(line):
                return line
        while True:
            try:
                got = self.err.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                pytest.fail(f"no matching stderr line; got {self.stderr_lines}")
            assert got is not None, f"stderr closed; got {self.stderr_lines}"
            if pred(got):
                return got

    def wait(self, timeout: float = WAIT) -> int:
        return self.proc.wait(timeout=timeout)

    def kill(self) -> None:
        if self.proc.poll() is None or os.name == "posix":
            try:
                if os.name == "posix":
                    os.killpg(self.proc.pid, signal.SIGKILL)
                else:
                    self.proc.kill()
            except (ProcessLookupError, PermissionError):
                pass
        try:
            self.proc.wait(timeout=WAIT)
        finally:
            for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()


@pytest.fixture
def fake() -> Iterator[Callable[..., FakeProc]]:
    """Factory for fake server processes; every one is killed (with its group) afterwards."""
    procs: list[FakeProc] = []

    def start(spec: dict[str, Any] | None = None, **kwargs: Any) -> FakeProc:
        p = FakeProc(spec, **kwargs)
        procs.append(p)
        return p

    yield start
    for p in procs:
        p.kill()


def wait_record(
    path: Any, pred: Callable[[dict[str, Any]], bool], timeout: float = WAIT
) -> list[Any]:
    """Poll a record file (bounded) until an entry matches; returns all entries."""
    deadline = time.monotonic() + timeout
    while True:
        entries = read_record(path)
        if any(isinstance(e, dict) and pred(e) for e in entries):
            return entries
        if time.monotonic() > deadline:
            pytest.fail(f"record never matched: {entries}")
        time.sleep(0.01)


def read_record(path: Any) -> list[Any]:
    try:
        with open(path, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []


@pytest.fixture
def records() -> Callable[..., list[Any]]:
    """``records(path, pred=None)``: the record file's entries, waiting (bounded) for ``pred``."""

    def get(path: Any, pred: Callable[[dict[str, Any]], bool] | None = None) -> list[Any]:
        return read_record(path) if pred is None else wait_record(path, pred)

    return get
