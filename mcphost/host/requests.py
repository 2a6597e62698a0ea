"""The host's requests other than ``tools/call``: prompts, resources, completion, logging,
subscriptions, server tasks.

Layer 4. Each routes with the :class:`~mcphost.host.router.Router`, checks that the server
declared what the request needs (a clear ``RoutingError`` if not), times the request into
the server's metrics, and checks the shape of the result it returns. The log level and the
subscriptions a server was told are kept on its handle and told again to a renewed
session (:func:`reapply`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Mapping
from typing import TYPE_CHECKING, Any, cast

from ..client.tasks import TaskHandle
from ..errors import MCPHostError, ProtocolError, RoutingError, UsageError
from ..protocol.modern import TASK as TASK_RESULT
from ..rpc.calls import CallOptions
from ..types import CallToolResult, GetPromptResult, JSONObject, ReadResourceResult
from . import observe
from .handle import ServerHandle
from .registry import list_all

if TYPE_CHECKING:
    from ..client.era import ModernRules
    from ..client.session import ClientSession
    from .handlers import Handlers
    from .router import Router

logger = logging.getLogger("mcphost.host.requests")
__all__ = [
    "call_as_task",
    "complete",
    "get_prompt",
    "get_resource",
    "list_tasks",
    "reapply",
    "set_log_level",
    "subscription",
    "timed",
]


async def timed(handle: ServerHandle, awaitable: Awaitable[Any], method: str) -> Any:
    """Await ``awaitable`` (a request of ``method``), recorded in the server's metrics, its
    ``on_call`` hooks and the request logs."""
    started = time.perf_counter()
    try:
        result = await awaitable
    except MCPHostError as exc:
        observe.failed(handle, method, None, time.perf_counter() - started, exc)
        raise
    elapsed = time.perf_counter() - started
    handle.metrics.method(method).record_result(elapsed, False)
    observe.completed(handle, method, None, elapsed, False)
    return result


async def get_prompt(
    router: Router, name: str, arguments: Mapping[str, Any] | None, timeout: float | None
) -> GetPromptResult:
    if arguments is not None and not isinstance(arguments, Mapping):
        raise observe.refused(UsageError(f"arguments of prompt {name!r} must be a mapping, not {type(arguments).__name__}"))
    handle, prompt_name = router.prompt(name)
    session = handle.require_ready()
    params: dict[str, Any] = {"name": prompt_name}
    if arguments:
        params["arguments"] = {k: v if isinstance(v, str) else str(v) for k, v in arguments.items()}
    result = await timed(handle, session.request("prompts/get", params, timeout=timeout), "prompts/get")
    if type(result) is not dict or type(result.get("messages")) is not list:
        raise ProtocolError("prompts/get returned a malformed result (no 'messages' array)", server=handle.name)
    return cast(GetPromptResult, result)


async def get_resource(router: Router, uri: str, server: str | None, timeout: float | None) -> ReadResourceResult:
    handle = router.resource(uri, server)
    session = handle.require_ready()
    result = await timed(
        handle, session.request("resources/read", {"uri": uri}, timeout=timeout), "resources/read"
    )
    if type(result) is not dict or type(result.get("contents")) is not list:
        raise ProtocolError("resources/read returned a malformed result (no 'contents' array)", server=handle.name)
    return cast(ReadResourceResult, result)


async def set_log_level(handles: list[ServerHandle], level: str) -> None:
    for handle in handles:
        session = handle.require_ready()
        if not session.has_capability("logging"):
            raise observe.refused(RoutingError("server does not declare the logging capability", server=handle.name))
        if not session.log_level_in_meta(level):  # modern era: said in each request's _meta
            await timed(handle, session.request("logging/setLevel", {"level": level}), "logging/setLevel")
        handle.log_level = level  # told again to a renewed session


async def subscription(router: Router, method: str, uri: str, server: str | None) -> None:
    handle = router.resource(uri, server)
    session = handle.require_ready()
    if not session.has_capability("resources", "subscribe"):
        raise observe.refused(RoutingError("server does not support resource subscriptions", server=handle.name))
    if session.era == "modern":  # one subscriptions/listen stream names them all
        wanted = handle.subscriptions | {uri} if method == "resources/subscribe" else handle.subscriptions - {uri}
        session.listen(wanted)
    else:
        await timed(handle, session.request(method, {"uri": uri}), method)
    if method == "resources/subscribe":  # subscribed again on a renewed session
        handle.subscriptions.add(uri)
    else:
        handle.subscriptions.discard(uri)


async def reapply(handle: ServerHandle, session: ClientSession) -> dict[str, Any]:
    """Tell a renewed session what the old one was told: the log level, then each
    subscription. A refusal is logged and reported, the rest goes on."""
    done: dict[str, Any] = {"log_level": None, "subscriptions": [], "errors": []}
    steps: list[tuple[str, dict[str, Any]]] = []
    if handle.log_level is not None and session.has_capability("logging"):
        steps.append(("logging/setLevel", {"level": handle.log_level}))
    if handle.subscriptions and session.has_capability("resources", "subscribe"):
        steps.extend(("resources/subscribe", {"uri": uri}) for uri in sorted(handle.subscriptions))
    for method, params in steps:
        try:
            await timed(handle, session.request(method, params), method)
        except MCPHostError as exc:
            logger.warning("%s: %s after the session was renewed failed: %s", handle.name, method, exc)
            done["errors"].append(f"{method}: {exc}")
            continue
        if method == "logging/setLevel":
            done["log_level"] = params["level"]
        else:
            done["subscriptions"].append(params["uri"])
    return done


async def complete(
    router: Router,
    ref: Mapping[str, Any],
    argument: Mapping[str, Any],
    context: Mapping[str, Any] | None,
    server: str | None,
    timeout: float | None,
) -> JSONObject:
    if not isinstance(ref, Mapping) or not isinstance(argument, Mapping):
        raise observe.refused(UsageError("complete(ref, argument): both must be mappings"))
    kind = ref.get("type")
    sent = dict(ref)
    if kind == "ref/prompt":
        handle, name = router.split(str(ref.get("name")), "prompt")
        sent["name"] = name
    elif kind == "ref/resource":
        uri = str(ref.get("uri"))
        handle = router.handle(server) if server else router.template(uri)
    else:
        raise observe.refused(RoutingError(f"completion ref type {kind!r} is not 'ref/prompt' or 'ref/resource'"))
    session = handle.require_ready()
    if not session.supports_completions():
        raise observe.refused(RoutingError("server does not declare the completions capability", server=handle.name))
    params: dict[str, Any] = {"ref": sent, "argument": dict(argument)}
    if context and session.version.structured_content:  # context exists from 2025-06-18
        params["context"] = dict(context)
    result = await timed(
        handle, session.request("completion/complete", params, timeout=timeout), "completion/complete"
    )
    completion = result.get("completion") if isinstance(result, dict) else None
    if not isinstance(completion, dict):
        raise ProtocolError("completion/complete returned no 'completion' object", server=handle.name)
    return completion


async def call_as_task(
    handlers: Handlers,
    handle: ServerHandle,
    session: ClientSession,
    request: dict[str, Any],
    task: bool | Mapping[str, Any],
    timeout: float | None,
) -> TaskHandle:
    """``tools/call`` as a server task (2025-11-25; the tasks extension of 2026-07-28): the
    handle follows it at once."""
    if session.modern is not None and session.version.task_extension:
        return await _call_as_modern_task(handlers, handle, session, session.modern, request, timeout)
    if not session.version.tasks:
        raise RoutingError(
            f"tool {request['name']!r} needs a task, and tasks need protocol 2025-11-25 "
            f"(negotiated {session.protocol_version})",
            server=handle.name,
        )
    request["task"] = dict(task) if isinstance(task, Mapping) else {}
    created = await timed(handle, session.request("tools/call", request, timeout=timeout), "tools/call")
    info = created.get("task") if isinstance(created, dict) else None
    if not isinstance(info, dict) or not isinstance(info.get("taskId"), str):
        raise ProtocolError("tools/call with a task returned no CreateTaskResult", server=handle.name)
    tracked = TaskHandle(handle.name, session, cast(Any, info), timeout=timeout)
    handlers.tasks[(handle.name, tracked.task_id)] = tracked
    tracked.follow()
    return tracked


async def _call_as_modern_task(handlers: Handlers, handle: ServerHandle, session: ClientSession,
                               modern: ModernRules, request: dict[str, Any], timeout: float | None) -> TaskHandle:
    """2026-07-28: the server decides whether a call becomes a task (the host opts in to the
    extension on every request). A task is followed by the era's rules behind the handle; a
    call the server answered at once gives a handle that is already completed."""
    options = CallOptions(timeout, augmented=True)
    created = await timed(handle, session.call("tools/call", request, None, options), "tools/call")
    if not isinstance(created, dict):
        raise ProtocolError("tools/call returned a malformed result", server=handle.name)
    if created.get("resultType") != TASK_RESULT:
        answered: Any = {"taskId": "", "status": "completed"}
        done = TaskHandle(handle.name, session, answered, timeout=timeout, runner=lambda _h: _at_once(created))
        done.follow()
        return done

    async def run(tracked: TaskHandle) -> CallToolResult:
        def seen(task: dict[str, Any]) -> None:
            tracked.update(cast(Any, {k: v for k, v in task.items() if k != "_meta"}))

        return cast(CallToolResult, await modern.follow_task("tools/call", created, seen=seen))

    tracked = TaskHandle(handle.name, session, cast(Any, created), timeout=timeout, runner=run)
    handlers.tasks[(handle.name, tracked.task_id)] = tracked
    tracked.follow()
    return tracked


async def _at_once(result: dict[str, Any]) -> CallToolResult:
    return cast(CallToolResult, result)


async def list_tasks(handle: ServerHandle, max_pages: int, max_items: int = 10_000) -> list[JSONObject]:
    """``tasks/list`` of one server, every page."""
    session = handle.require_ready()
    try:
        items = await timed(handle, list_all(session, "tasks/list", "tasks", max_pages, max_items), "tasks/list")
    except ProtocolError as exc:
        raise ProtocolError("tasks/list returned no 'tasks' array", server=handle.name) from exc
    return cast(list[JSONObject], items)
