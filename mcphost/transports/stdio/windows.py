"""Windows: a server's process tree is a Job Object.

Layer 2, the stdio room: the Windows implementation of :class:`~.platform.ProcessTree`.
The child starts in a process group of its own (``CREATE_NEW_PROCESS_GROUP``: the host's
Ctrl-C does not reach it, and ``CTRL_BREAK_EVENT`` can be sent to it alone) and is put in
a Job Object of its own right after the spawn. Every process it starts then belongs to the
job (breaking away is not allowed), so the job is the tree: ``TerminateJobObject`` kills it
whole, the job's count of active processes says whether anything of it is left, and the
job is made with ``JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE``, so that what is left dies with its
last handle even if the host itself is killed. No POSIX signal is named (Windows has no
``SIGKILL``); a stray is ended with ``TerminateProcess`` (``os.kill`` on Windows).

Limits: a process the child starts in the instant between the spawn and the assignment
to the job is outside it (Node and Python take tens of milliseconds to start anything);
``limits`` (memory, CPU...) are not applied. The Win32 calls go through :class:`JobApi`:
ctypes on Windows, a fake in ``tests/transports/test_stdio_platform.py``; ``docs/platforms.md``
says what is verified where.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from collections.abc import Callable, Sequence
from typing import Any, Final, Protocol

from .platform import Limits

__all__ = ["CREATE_NEW_PROCESS_GROUP", "JobApi", "Windows"]

logger = logging.getLogger("mcphost.transports.stdio.windows")

#: ``subprocess.CREATE_NEW_PROCESS_GROUP`` (named here: ``subprocess`` has it on Windows only).
CREATE_NEW_PROCESS_GROUP: Final = 0x00000200
#: What ``os.kill`` needs to call ``TerminateProcess`` on Windows: any number but the two
#: console events.
_TERMINATE: Final = 15


class JobApi(Protocol):
    """The Win32 calls the Windows tree makes (handles are ints)."""

    def create_job(self) -> int:
        """A new job whose processes die when its last handle closes."""

    def assign(self, job: int, pid: int) -> None:
        """Put process ``pid`` in ``job`` (raises OSError)."""

    def active(self, job: int) -> int:
        """How many processes of ``job`` are running."""

    def terminate(self, job: int) -> None:
        """Kill every process of ``job``."""

    def close(self, job: int) -> None:
        """Close the handle of ``job`` (what is left of it dies)."""

    def ctrl_break(self, pid: int) -> None:
        """Send ``CTRL_BREAK_EVENT`` to the process group ``pid`` (raises OSError when it
        shares no console with the host)."""


class Windows:
    """Job Objects: the tree is the job (see the module's text)."""

    def __init__(self, *, api: JobApi | None = None, kill: Callable[[int, int], None] = os.kill) -> None:
        self._api = api
        self._kill = kill
        self._jobs: dict[int, int] = {}  # leader pid -> its job's handle

    def _calls(self) -> JobApi:
        if self._api is None:  # pragma: no cover - Windows only
            self._api = _kernel32()
        return self._api

    def spawn_options(self, limits: Limits) -> dict[str, Any]:
        return {"creationflags": CREATE_NEW_PROCESS_GROUP}  # no limit applies (docs/platforms.md)

    def limit_hit(self, limits: Limits, exit_code: int | None, tail: Sequence[str]) -> str | None:
        return None

    def adopt(self, leader: int) -> None:
        api = self._calls()
        try:
            job = api.create_job()
        except OSError as exc:
            logger.warning("pid %s: no job object (%s): only that process will be stopped", leader, exc)
            return
        try:
            api.assign(job, leader)
        except OSError as exc:
            api.close(job)
            logger.warning("pid %s: not put in a job object (%s): only that process will be stopped", leader, exc)
            return
        self._jobs[leader] = job

    def release(self, leader: int) -> None:
        job = self._jobs.pop(leader, None)
        if job is not None:
            self._calls().close(job)

    def terminate(self, leader: int) -> bool:
        if not self._running(leader):
            return False
        try:
            self._calls().ctrl_break(leader)
        except OSError:
            return False  # no console shared with the server: the ladder's kill follows
        return True

    def kill(self, leader: int) -> bool:
        job = self._jobs.get(leader)
        if job is None:
            return self.kill_pid(leader)
        api = self._calls()
        if api.active(job) == 0:
            return False
        api.terminate(job)
        return True

    def alive(self, leader: int) -> bool:
        job = self._jobs.get(leader)
        return job is not None and self._calls().active(job) > 0

    def _running(self, leader: int) -> bool:
        job = self._jobs.get(leader)
        return job is None or self._calls().active(job) > 0

    def strays(self, leader: int, marker: str | None = None) -> list[int]:
        return []  # the job holds every process the server starts

    def kill_pid(self, pid: int) -> bool:
        try:
            self._kill(pid, _TERMINATE)  # TerminateProcess
        except OSError:
            return False
        return True

    def reap(self, leader: int) -> None:
        return None


if sys.platform == "win32":  # pragma: no cover - Windows only
    import ctypes
    from ctypes import wintypes

    _JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE = 0x2000
    _JobObjectBasicAccountingInformation = 1
    _JobObjectExtendedLimitInformation = 9
    _PROCESS_SET_QUOTA = 0x0100
    _PROCESS_TERMINATE = 0x0001

    class _BasicLimits(ctypes.Structure):
        _fields_ = [("PerProcessUserTimeLimit", ctypes.c_int64), ("PerJobUserTimeLimit", ctypes.c_int64),
                    ("LimitFlags", wintypes.DWORD), ("MinimumWorkingSetSize", ctypes.c_size_t),
                    ("MaximumWorkingSetSize", ctypes.c_size_t), ("ActiveProcessLimit", wintypes.DWORD),
                    ("Affinity", ctypes.c_size_t), ("PriorityClass", wintypes.DWORD),
                    ("SchedulingClass", wintypes.DWORD)]

    class _IoCounters(ctypes.Structure):
        _fields_ = [(name, ctypes.c_uint64) for name in (
            "ReadOperationCount", "WriteOperationCount", "OtherOperationCount",
            "ReadTransferCount", "WriteTransferCount", "OtherTransferCount")]

    class _ExtendedLimits(ctypes.Structure):
        _fields_ = [("BasicLimitInformation", _BasicLimits), ("IoInfo", _IoCounters),
                    ("ProcessMemoryLimit", ctypes.c_size_t), ("JobMemoryLimit", ctypes.c_size_t),
                    ("PeakProcessMemoryUsed", ctypes.c_size_t), ("PeakJobMemoryUsed", ctypes.c_size_t)]

    class _Accounting(ctypes.Structure):
        _fields_ = [("TotalUserTime", ctypes.c_int64), ("TotalKernelTime", ctypes.c_int64),
                    ("ThisPeriodTotalUserTime", ctypes.c_int64), ("ThisPeriodTotalKernelTime", ctypes.c_int64),
                    ("TotalPageFaultCount", wintypes.DWORD), ("TotalProcesses", wintypes.DWORD),
                    ("ActiveProcesses", wintypes.DWORD), ("TotalTerminatedProcesses", wintypes.DWORD)]

    class _Kernel32:
        def __init__(self) -> None:
            self._k = ctypes.WinDLL("kernel32", use_last_error=True)
            self._k.CreateJobObjectW.restype = wintypes.HANDLE
            self._k.OpenProcess.restype = wintypes.HANDLE

        def _check(self, ok: Any) -> Any:
            if not ok:
                raise ctypes.WinError(ctypes.get_last_error())
            return ok

        def create_job(self) -> int:
            job = self._check(self._k.CreateJobObjectW(None, None))
            limits = _ExtendedLimits()
            limits.BasicLimitInformation.LimitFlags = _JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
            try:
                self._check(self._k.SetInformationJobObject(
                    wintypes.HANDLE(job), _JobObjectExtendedLimitInformation,
                    ctypes.byref(limits), ctypes.sizeof(limits)))
            except OSError:
                self._k.CloseHandle(wintypes.HANDLE(job))
                raise
            return int(job)

        def assign(self, job: int, pid: int) -> None:
            process = self._check(self._k.OpenProcess(_PROCESS_SET_QUOTA | _PROCESS_TERMINATE, False, pid))
            try:
                self._check(self._k.AssignProcessToJobObject(wintypes.HANDLE(job), wintypes.HANDLE(process)))
            finally:
                self._k.CloseHandle(wintypes.HANDLE(process))

        def active(self, job: int) -> int:
            info = _Accounting()
            if not self._k.QueryInformationJobObject(
                    wintypes.HANDLE(job), _JobObjectBasicAccountingInformation,
                    ctypes.byref(info), ctypes.sizeof(info), None):
                return 0
            return int(info.ActiveProcesses)

        def terminate(self, job: int) -> None:
            self._k.TerminateJobObject(wintypes.HANDLE(job), 1)

        def close(self, job: int) -> None:
            self._k.CloseHandle(wintypes.HANDLE(job))

        def ctrl_break(self, pid: int) -> None:
            os.kill(pid, signal.CTRL_BREAK_EVENT)

    def _kernel32() -> JobApi:
        return _Kernel32()

else:

    def _kernel32() -> JobApi:
        raise OSError("job objects exist only on Windows")
