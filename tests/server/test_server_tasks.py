"""The task store of the server side (``mcphost.server.tasks``): owners, shapes of both eras,
questions answered in part, cancellation, bounds (tasks per client, result size, TTL)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mcphost.errors import RpcError, ServerError, UsageError
from mcphost.server.tasks import RELATED_TASK, TaskLimits, TaskStore


async def test_a_task_is_found_only_by_its_owner() -> None:
    store = TaskStore()
    mine = store.create("session:a", modern=True)
    assert len(mine.ident) >= 32  # 192 random bits
    assert store.find("session:a", mine.ident) is mine
    for owner, ident in (("session:b", mine.ident), ("session:a", "made-up"), ("session:a", 7)):
        with pytest.raises(RpcError) as refused:
            store.find(owner, ident)
        assert refused.value.code == -32602 and "unknown task" in refused.value.message
    assert store.owned("session:b") == []
    await store.aclose()


async def test_the_shapes_of_each_era() -> None:
    store = TaskStore(TaskLimits(poll_interval=0.25))
    modern = store.create("o", modern=True, ttl_ms=5000)
    created = modern.created_result()
    assert created["resultType"] == "task" and created["ttlMs"] == 5000 and created["pollIntervalMs"] == 250
    assert "ttl" not in created and "task" not in created and "requestState" not in created
    legacy = store.create("o", modern=False)
    assert set(legacy.created_result()) == {"task"}
    assert legacy.created_result()["task"]["ttl"] == 300_000  # the default TTL
    gate = asyncio.Event()

    async def work() -> dict[str, Any]:
        await gate.wait()
        return {"content": [{"type": "text", "text": "done"}], "isError": True}

    store.run(modern, work())
    store.run(legacy, work())
    assert modern.detailed()["status"] == "working" and "result" not in modern.detailed()
    gate.set()
    await asyncio.wait_for(asyncio.gather(modern.done.wait(), legacy.done.wait()), 10)
    # 2026-07-28: a tool's error is a completed task; 2025-11-25: failed, the result kept.
    assert modern.detailed()["status"] == "completed" and modern.detailed()["result"]["isError"] is True
    assert RELATED_TASK not in (modern.detailed()["result"].get("_meta") or {})
    assert legacy.status == "failed" and legacy.result is not None
    await store.aclose()


async def test_questions_answered_in_part_then_in_full() -> None:
    store = TaskStore()
    task = store.create("o", modern=True)
    first = asyncio.ensure_future(store.ask(task, "elicitation/create", {"message": "one"}))
    second = asyncio.ensure_future(store.ask(task, "elicitation/create", {"message": "two"}))
    await asyncio.sleep(0)  # both questions are asked (no waiting on time: one loop turn)
    asked = task.detailed()
    assert asked["status"] == "input_required"
    keys = sorted(asked["inputRequests"])
    assert keys == ["elicitation-1", "elicitation-2"]
    assert asked["inputRequests"]["elicitation-1"] == {"method": "elicitation/create", "params": {"message": "one"}}
    store.update(task, {"elicitation-1": {"action": "accept"}, "unknown": {"x": 1}, "elicitation-2": "not an object"})
    assert await first == {"action": "accept"}
    assert sorted(task.detailed()["inputRequests"]) == ["elicitation-2"]
    store.update(task, {"elicitation-2": {"action": "decline"}})
    assert await second == {"action": "decline"}
    assert task.status == "working" and "inputRequests" not in task.detailed()
    await store.aclose()


async def test_a_legacy_question_is_sent_marked_with_its_task() -> None:
    store = TaskStore()
    task = store.create("o", modern=False)
    told: list[dict[str, Any]] = []
    task.notify = told.append
    seen: list[tuple[str, dict[str, Any]]] = []

    async def send(method: str, params: dict[str, Any]) -> Any:
        seen.append((method, params))
        assert task.status == "input_required"
        return {"action": "accept"}

    assert await store.ask(task, "elicitation/create", {"message": "m"}, send) == {"action": "accept"}
    assert seen == [("elicitation/create", {"message": "m", "_meta": {RELATED_TASK: {"taskId": task.ident}}})]
    assert [t["status"] for t in told] == ["input_required", "working"]
    await store.aclose()


async def test_cancel_ends_the_work_and_the_open_questions() -> None:
    store = TaskStore()
    task = store.create("o", modern=True)
    hooked = asyncio.Event()

    async def on_cancel() -> None:
        hooked.set()

    task.on_cancel = on_cancel
    asked = asyncio.ensure_future(store.ask(task, "sampling/createMessage", {}))
    store.run(task, asyncio.get_running_loop().create_future())  # work that never ends by itself
    await asyncio.sleep(0)
    assert store.cancel(task) is True
    assert task.status == "cancelled" and task.detailed().keys().isdisjoint({"result", "error", "inputRequests"})
    with pytest.raises(RpcError):
        await asked
    await asyncio.wait_for(hooked.wait(), 10)
    assert store.cancel(task) is False  # idempotent
    await store.aclose()


async def test_errors_of_the_work_fail_the_task() -> None:
    store = TaskStore(TaskLimits(max_result=64))

    async def failing(exc: BaseException) -> dict[str, Any]:
        raise exc

    async def big() -> dict[str, Any]:
        return {"content": [{"type": "text", "text": "x" * 100}]}

    cases = [(failing(ServerError("downstream", code=-32001, data={"why": 1})), -32001),
             (failing(RpcError(-32602, "bad")), -32602), (failing(ValueError("boom")), -32603), (big(), -32603)]
    tasks = []
    for work, _code in cases:
        task = store.create("o", modern=True)
        store.run(task, work)
        tasks.append(task)
    await asyncio.wait_for(asyncio.gather(*(t.done.wait() for t in tasks)), 10)
    assert [t.detailed()["error"]["code"] for t in tasks] == [code for _w, code in cases]
    assert tasks[0].error == {"code": -32001, "message": "downstream", "data": {"why": 1}}
    assert tasks[2].error is not None and tasks[2].error["message"] == "internal error"  # no traceback, no text of ours
    assert tasks[3].error is not None and "larger than 64 bytes" in tasks[3].error["message"]
    assert all("result" not in t.detailed() for t in tasks)
    await store.aclose()


async def test_bounds_per_client_and_in_all() -> None:
    store = TaskStore(TaskLimits(max_per_client=2, max_tasks=3))
    store.create("a", modern=True)
    store.create("a", modern=True)
    with pytest.raises(RpcError) as refused:
        store.create("a", modern=True)
    assert refused.value.code == -32000 and "at most 2 per client" in refused.value.message
    store.create("b", modern=True)
    with pytest.raises(RpcError) as full:
        store.create("c", modern=True)
    assert "at most 3 in all" in full.value.message
    store.forget("a")
    assert store.owned("a") == [] and len(store) == 1
    await store.aclose()


async def test_a_task_is_forgotten_when_its_ttl_ends() -> None:
    store = TaskStore(TaskLimits(ttl=0.05, max_ttl=0.05))
    task = store.create("o", modern=True, ttl_ms=10_000_000)  # asked for more than max_ttl
    assert task.ttl_ms == 50  # clamped to max_ttl
    store.run(task, asyncio.get_running_loop().create_future())
    await asyncio.wait_for(task.done.wait(), 10)  # the expiry cancels a task still running
    assert task.status == "cancelled"
    with pytest.raises(RpcError):
        store.find("o", task.ident)
    await store.aclose()


def test_limits_are_checked() -> None:
    for bad in ({"max_per_client": 0}, {"max_tasks": "1"}, {"max_result": -1}, {"ttl": 0}, {"max_ttl": -1},
                {"poll_interval": "x"}, {"immediate": -1}):
        with pytest.raises(UsageError):
            TaskLimits(**bad)
    assert TaskLimits(ttl=10_000, max_ttl=60).ttl == 60
