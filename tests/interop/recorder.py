"""What the interop suites share: a recorder of what the host's handlers received (and the
replies they give), and readers of server-everything's results."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any


def texts(result: dict[str, Any]) -> list[str]:
    return [block["text"] for block in result["content"] if block.get("type") == "text"]


def raw_result(result: dict[str, Any]) -> Any:
    """The JSON the server-everything tools append as ``Raw result: {...}``."""
    for text in texts(result):
        if "Raw result:" in text:
            return json.loads(text.split("Raw result:", 1)[1])
    raise AssertionError(f"no 'Raw result' block in {result!r}")


class Recorder:
    """What a shared host's handlers received; the replies they give (set per test)."""

    def __init__(self) -> None:
        self.sampling: list[tuple[str, dict[str, Any]]] = []
        self.elicitation: list[tuple[str, dict[str, Any]]] = []
        self.events: list[dict[str, Any]] = []
        self.logs: list[tuple[str, dict[str, Any]]] = []
        self.progress: list[tuple[str, dict[str, Any]]] = []
        #: The answer, or a function of the request's params giving it.
        self.sampling_reply: dict[str, Any] | Callable[[dict[str, Any]], dict[str, Any]] = {}
        self.elicitation_reply: dict[str, Any] = {"action": "decline"}

    def reset(self) -> None:
        # In place: the host holds the bound ``append`` methods of these lists.
        for seen in (self.sampling, self.elicitation, self.events, self.logs, self.progress):
            seen.clear()
        self.sampling_reply = {}
        self.elicitation_reply = {"action": "decline"}

    def on_log(self, server: str, params: dict[str, Any]) -> None:
        self.logs.append((server, params))

    def on_progress(self, server: str, params: dict[str, Any]) -> None:
        self.progress.append((server, params))

    async def on_sampling(self, server: str, params: dict[str, Any]) -> dict[str, Any]:
        self.sampling.append((server, params))
        await asyncio.sleep(0)  # an async handler: the host must await it
        reply = self.sampling_reply
        return reply(params) if callable(reply) else reply

    def on_elicitation(self, server: str, params: dict[str, Any]) -> dict[str, Any]:
        self.elicitation.append((server, params))
        return self.elicitation_reply
