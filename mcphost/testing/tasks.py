"""Tasks (2025-11-25) in the fake server: task-augmented ``tools/call`` and ``tasks/*``."""

from __future__ import annotations

import threading
import time
import uuid

from .common import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    JSON,
    RELATED_TASK,
    TERMINAL,
    Call,
    Msg,
    RpcError,
    now,
)
from .core import ServerCore


class Task:
    """A 2025-11-25 task created by a task-augmented ``tools/call``."""

    def __init__(self, task_id: str, ttl: JSON, poll_interval: int) -> None:
        created = now()
        self.task: Msg = {
            "taskId": task_id,
            "status": "working",
            "createdAt": created,
            "lastUpdatedAt": created,
            "ttl": ttl,
            "pollInterval": poll_interval,
        }
        self.outcome: tuple[str, Msg] | None = None
        self.call: Call | None = None


class Tasks(ServerCore):
    """Creates tasks, runs them in the background and answers ``tasks/*``."""

    def _start_task(self, call: Call, tool: Msg) -> Msg:
        ttl = call.params["task"].get("ttl", self.spec.get("taskTtl", 60000))
        task = Task(str(uuid.uuid4()), ttl, int(self.spec.get("taskPollInterval", 50)))
        # The background run is a separate Call: cancelling the (already answered) request
        # must not stop it; only tasks/cancel does.
        run = Call(None, "tools/call", call.params)
        run.task_id = task.task["taskId"]
        task.call = run
        with self._cond:
            self.tasks[run.task_id] = task
            created = {"task": dict(task.task)}
        thread = threading.Thread(target=self._run_task, args=(task, tool), daemon=True)
        call.after = thread.start
        return created

    def _run_task(self, task: Task, tool: Msg) -> None:
        run = task.call
        assert run is not None
        outcome = self.run_tool(run, tool)
        if outcome is None:
            return  # cancelled (tasks/cancel already set the status) or hanging
        kind, payload = outcome
        status = "completed"
        message = None
        if kind == "error":
            status = "failed"
            message = str(payload.get("message", ""))
        elif payload.get("isError") is True:
            status = "failed"
            message = "tool returned isError"
        with self._cond:
            if task.task["status"] in TERMINAL:
                return
            task.outcome = outcome
        self._set_status(task, status, message)

    def _set_status(self, task: Task, status: str, message: str | None) -> Msg:
        with self._cond:
            task.task["status"] = status
            task.task["lastUpdatedAt"] = now()
            if message is not None:
                task.task["statusMessage"] = message
            snapshot = dict(task.task)
            self._cond.notify_all()
        if self.spec.get("taskStatusNotifications"):
            self.notify("notifications/tasks/status", snapshot)
        return snapshot

    def _get_task(self, call: Call) -> Task:
        tid = call.params.get("taskId")
        with self._cond:
            task = self.tasks.get(str(tid))
        if task is None:
            raise RpcError(INVALID_PARAMS, f"Unknown task: {tid}")
        return task

    def m_tasks_get(self, call: Call) -> Msg:
        task = self._get_task(call)
        with self._cond:
            return dict(task.task)

    def m_tasks_result(self, call: Call) -> Msg | None:
        task = self._get_task(call)
        with self._cond:
            self._cond.wait_for(
                lambda: task.task["status"] in TERMINAL or call.cancelled or self.closing
            )
            status = task.task["status"]
            outcome = task.outcome
        if status not in TERMINAL:
            return None
        delay = self.spec.get("taskResultDelay")
        if isinstance(delay, (int, float)) and delay > 0:
            time.sleep(delay)  # the task is over; its result is slow to come
        meta = {RELATED_TASK: {"taskId": task.task["taskId"]}}
        if status == "cancelled" or outcome is None:
            raise RpcError(INTERNAL_ERROR, "Task was cancelled", {"taskId": task.task["taskId"]})
        kind, payload = outcome
        if kind == "error":
            raise RpcError(
                int(payload.get("code", -32000)),
                str(payload.get("message", "")),
                payload.get("data"),
            )
        result = dict(payload)
        result["_meta"] = {**(result.get("_meta") or {}), **meta}
        return result

    def m_tasks_list(self, call: Call) -> Msg:
        with self._cond:
            tasks = [dict(t.task) for t in self.tasks.values()]
        return self._paginate(call, tasks, "tasks")

    def m_tasks_cancel(self, call: Call) -> Msg:
        task = self._get_task(call)
        with self._cond:
            if task.task["status"] in TERMINAL:
                raise RpcError(
                    INVALID_PARAMS,
                    "Task {} is already {}".format(task.task["taskId"], task.task["status"]),
                )
            if task.call is not None:
                task.call.cancelled = True
        return self._set_status(task, "cancelled", "cancelled by client")

