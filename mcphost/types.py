"""Typed shapes of MCP data as mcphost returns and accepts them.

Layer 0. These are ``TypedDict``s: at run time every value is a plain ``dict`` exactly as
the server sent it (unknown extra fields included, as the spec allows), so they cost nothing.
``total=False`` marks shapes whose fields vary by protocol version.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal, TypedDict, Union

__all__ = [
    "Embedder",
    "JSON",
    "JSONObject",
    "Implementation",
    "Tool",
    "Prompt",
    "PromptArgument",
    "Resource",
    "ResourceTemplate",
    "ContentBlock",
    "CallToolResult",
    "GetPromptResult",
    "ReadResourceResult",
    "GatheredResources",
    "ServerCapabilities",
    "ServerInfo",
    "Root",
    "CompleteResult",
    "LogMessage",
    "ProgressUpdate",
    "SamplingParams",
    "SamplingResult",
    "ElicitationParams",
    "ElicitationResult",
    "HostEvent",
    "Task",
    "Callback",
    "ServerState",
]

JSON = Union[None, bool, int, float, str, list[Any], dict[str, Any]]
JSONObject = dict[str, Any]

ServerState = Literal[
    "disabled", "stopped", "starting", "ready", "unavailable", "stopping", "failed"
]


class Implementation(TypedDict, total=False):
    name: str
    version: str
    title: str
    description: str
    websiteUrl: str
    icons: list[JSONObject]


class Tool(TypedDict, total=False):
    name: str
    title: str
    description: str
    inputSchema: JSONObject
    outputSchema: JSONObject
    annotations: JSONObject
    execution: JSONObject
    icons: list[JSONObject]
    _meta: JSONObject


class PromptArgument(TypedDict, total=False):
    name: str
    title: str
    description: str
    required: bool


class Prompt(TypedDict, total=False):
    name: str
    title: str
    description: str
    arguments: list[PromptArgument]
    icons: list[JSONObject]


class Resource(TypedDict, total=False):
    uri: str
    name: str
    title: str
    description: str
    mimeType: str
    size: int
    annotations: JSONObject


class ResourceTemplate(TypedDict, total=False):
    uriTemplate: str
    name: str
    title: str
    description: str
    mimeType: str
    annotations: JSONObject


class ContentBlock(TypedDict, total=False):
    type: str  # text | image | audio | resource | resource_link
    text: str
    data: str
    mimeType: str
    resource: JSONObject
    uri: str
    name: str
    annotations: JSONObject


class CallToolResult(TypedDict, total=False):
    content: list[ContentBlock]
    structuredContent: Any
    isError: bool
    _meta: JSONObject


class GetPromptResult(TypedDict, total=False):
    description: str
    messages: list[JSONObject]


class ReadResourceResult(TypedDict, total=False):
    contents: list[JSONObject]


class GatheredResources(TypedDict):
    """``gather_resources()``: the resources read, by priority, and the reads that failed."""

    resources: list[JSONObject]
    errors: list[JSONObject]


class ServerCapabilities(TypedDict, total=False):
    tools: JSONObject
    prompts: JSONObject
    resources: JSONObject
    logging: JSONObject
    completions: JSONObject
    tasks: JSONObject
    experimental: JSONObject


class ServerInfo(TypedDict):
    """One server's entry in :meth:`MCPHost.get_tools`."""

    state: ServerState
    serverInfo: Implementation | None
    protocolVersion: str | None
    instructions: str | None
    capabilities: ServerCapabilities
    tools: list[Tool]
    prompts: list[Prompt]
    resources: list[Resource]
    resourceTemplates: list[ResourceTemplate]
    #: Why the server is not ready (its start failure, how it went away), else None.
    error: str | None


class Root(TypedDict, total=False):
    uri: str
    name: str


class CompleteResult(TypedDict, total=False):
    values: list[str]
    total: int
    hasMore: bool


class LogMessage(TypedDict, total=False):
    level: str
    logger: str
    data: Any


class ProgressUpdate(TypedDict, total=False):
    progressToken: str | int
    progress: float
    total: float
    message: str


class SamplingParams(TypedDict, total=False):
    messages: list[JSONObject]
    modelPreferences: JSONObject
    systemPrompt: str
    includeContext: str
    temperature: float
    maxTokens: int
    stopSequences: list[str]
    metadata: JSONObject
    tools: list[JSONObject]
    toolChoice: JSONObject


class SamplingResult(TypedDict, total=False):
    role: str
    content: Any
    model: str
    stopReason: str


class ElicitationParams(TypedDict, total=False):
    mode: str
    message: str
    requestedSchema: JSONObject
    url: str
    elicitationId: str


class ElicitationResult(TypedDict, total=False):
    action: Literal["accept", "decline", "cancel"]
    content: JSONObject


class Task(TypedDict, total=False):
    taskId: str
    status: str
    statusMessage: str
    createdAt: str
    lastUpdatedAt: str
    ttl: int | None
    pollInterval: int


class HostEvent(TypedDict, total=False):
    """An event delivered to ``on_event`` handlers."""

    type: str  # state_changed | capabilities_changed | config_reloaded | ... (docs/api.md)
    server: str | None  # None for events of the whole host (config_reloaded)
    data: Any


Callback = Callable[[str, str, JSONObject], Union[JSONObject, Awaitable[JSONObject]]]

#: A host's ``tool_search``: ``list[str] -> list[list[float]]``, or a coroutine function of
#: that shape (here, not in the search room, so that naming it loads no search).
Embedder = Callable[[list[str]], Union[Sequence[Sequence[float]], Awaitable[Sequence[Sequence[float]]]]]
