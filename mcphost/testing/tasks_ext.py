"""The tasks extension of 2026-07-28 (``io.modelcontextprotocol/tasks``) in the fake server.

A ``tools/call`` of a tool whose ``execution.taskSupport`` is ``optional`` or ``required``,
from a client whose request capabilities name the extension, is answered with a
``CreateTaskResult`` (``resultType: "task"``); the behaviour runs in the background. Its MRTR
rounds become ``input_required`` states answered by ``tasks/update``; ``tasks/get`` returns
the detailed task (``result``, ``error`` or ``inputRequests`` inlined); ``tasks/cancel`` is
cooperative. A client that did not opt in gets -32021 from a task-only tool.
"""

from __future__ import annotations

import threading
import uuid

from .behaviours import mrtr_rounds
from .common import (
    INVALID_PARAMS,
    MISSING_CAPABILITY,
    TASKS_EXTENSION,
    TERMINAL,
    Call,
    Msg,
    RpcError,
    now,
)
from .core import ServerCore

MAX_TASKS = 1000


class ModernTask:
    """One task of the 2026-07-28 extension and what the client sent to it."""

    def __init__(self, task_id: str, ttl_ms: int, poll_ms: int) -> None:
        created = now()
        self.task: Msg = {
            "taskId": task_id,
            "status": "working",
            "createdAt": created,
            "lastUpdatedAt": created,
            "ttlMs": ttl_ms,
            "pollIntervalMs": poll_ms,
        }
        self.outcome: tuple[str, Msg] | None = None
        self.requests: Msg | None = None  # the open round's input requests
        self.responses: Msg = {}
        self.cancelled = False
        self.run: Call | None = None


class TasksExt(ServerCore):
    """Creates extension tasks and answers ``tasks/get``, ``tasks/update``, ``tasks/cancel``."""

    def _start_modern_task(self, call: Call, tool: Msg) -> Msg:
        b: Msg = tool.get("behavior") or {}
        before: Msg | None = None
        if b.get("inputBeforeTask") and (b.get("inputRounds") or b.get("request") is not None):
            # MRTR first, synchronously; the task starts once every round is answered.
            interim, before = self.input_round(
                call, mrtr_rounds(b), "tool:" + str(tool.get("name")), bool(b.get("inputOptional"))
            )
            if interim is not None:
                return interim
        with self._cond:
            if len(self.modern_tasks) >= MAX_TASKS:
                raise RpcError(INVALID_PARAMS, f"at most {MAX_TASKS} tasks")
            task = ModernTask(
                str(uuid.uuid4()),
                int(self.spec.get("taskTtl", 60000)),
                int(self.spec.get("taskPollInterval", 50)),
            )
            self.modern_tasks[task.task["taskId"]] = task
            created = dict(task.task)
        thread = threading.Thread(
            target=self._run_modern_task, args=(task, tool, call, before), daemon=True
        )
        call.after = thread.start
        self.record({"event": "task", "taskId": created["taskId"], "tool": tool.get("name")})
        return {"resultType": "task", **created}

    def _run_modern_task(self, task: ModernTask, tool: Msg, call: Call, before: Msg | None) -> None:
        b: Msg = tool.get("behavior") or {}
        asks = b.get("request") is not None or b.get("inputRounds")
        rounds = mrtr_rounds(b) if asks and before is None else []
        collected: Msg = dict(before or {})
        for requests in rounds:
            self._set_modern_status(task, "input_required", requests)
            with self._cond:
                self._cond.wait_for(
                    lambda r=requests: task.cancelled or self.closing  # type: ignore[misc]
                    or all(k in task.responses for k in r)
                )
                if task.cancelled or self.closing:
                    return
                collected.update({k: task.responses[k] for k in requests})
            self._set_modern_status(task, "working", None)
        params = {k: v for k, v in call.params.items() if k != "requestState"}
        params["inputResponses"] = collected
        run = Call(None, "tools/call", params)
        run.modern, run.caps, run.level = True, call.caps, call.level
        run.task_id = task.task["taskId"]
        with self._cond:
            task.run = run
            if task.cancelled:
                return
        outcome = self.run_tool(run, tool)
        if outcome is None:
            return
        with self._cond:
            if task.task["status"] in TERMINAL:
                return
            task.outcome = outcome
        self._set_modern_status(task, "failed" if outcome[0] == "error" else "completed", None)

    def _set_modern_status(self, task: ModernTask, status: str, requests: Msg | None) -> None:
        with self._cond:
            task.task["status"] = status
            task.task["lastUpdatedAt"] = now()
            task.requests = requests
            self._cond.notify_all()

    def _modern_task(self, call: Call) -> ModernTask:
        if TASKS_EXTENSION not in (call.caps.get("extensions") or {}):
            raise RpcError(
                MISSING_CAPABILITY,
                f"{call.method} needs the tasks extension in the request's capabilities",
                {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
            )
        tid = call.params.get("taskId")
        with self._cond:
            task = self.modern_tasks.get(str(tid))
        if task is None:
            raise RpcError(INVALID_PARAMS, f"Unknown task: {tid}")
        return task

    def m_task_get(self, call: Call) -> Msg:
        task = self._modern_task(call)
        with self._cond:
            out = dict(task.task)
            if task.requests is not None:
                # Only what is still unanswered (a partial tasks/update removes keys).
                out["inputRequests"] = {
                    k: v for k, v in task.requests.items() if k not in task.responses
                }
            if task.outcome is not None:
                kind, payload = task.outcome
                out["error" if kind == "error" else "result"] = payload
        return out

    def m_task_update(self, call: Call) -> Msg:
        task = self._modern_task(call)
        responses = call.params.get("inputResponses")
        if not isinstance(responses, dict):
            raise RpcError(INVALID_PARAMS, "inputResponses must be an object")
        with self._cond:
            task.responses.update(responses)
            self._cond.notify_all()
        self.record({"event": "taskUpdate", "taskId": task.task["taskId"], "keys": sorted(responses)})
        return {}

    def m_task_cancel(self, call: Call) -> Msg:
        """Cooperative and idempotent: a terminal task gets the same empty acknowledgement."""
        task = self._modern_task(call)
        with self._cond:
            if task.task["status"] in TERMINAL:
                return {}
            task.cancelled = True
            if task.run is not None:
                task.run.cancelled = True
        self._set_modern_status(task, "cancelled", None)
        return {}
