"""Real models for Talk-2-Tables: OpenAI, Anthropic and Gemini, with tool calling through mcphost.

Each adapter is an :class:`~.llm.LLMInterface`. The model is given the servers' tools in its
API's shape (``host.tools_for(provider)``), and every tool call it makes is run and answered by
``host.dispatch(call)``, round after round, until it answers in text: that text is the JSON
answer the orchestrator parses (so a model may try a query with ``execute_query`` before it
commits to one; the orchestrator still runs, checks and recovers the final SQL itself).

Nothing here is required: an SDK is imported only when its adapter is built, and
:func:`from_environment` picks one only when its SDK is installed and its API key is set
(``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, ``GEMINI_API_KEY`` or ``GOOGLE_API_KEY``). Each takes
``client=`` (an SDK client, or anything shaped like one) and ``model=``.
"""

from __future__ import annotations

import importlib.util
import logging
import os
from typing import Any

from mcphost.compat.orchestrator import LLMCommunicationError

logger = logging.getLogger("talk2tables.providers")

__all__ = ["AnthropicLLM", "GeminiLLM", "OpenAILLM", "from_environment"]

SYSTEM = ("You translate questions about a product, inventory and sales database into SQLite SQL. "
          "You may call the tools to look at data. Finish with the JSON answer the user asks for.")


class _ToolCallingLLM:
    provider = ""
    sdk = ""
    keys: tuple[str, ...] = ()
    default_model = ""

    def __init__(self, *, client: Any = None, model: str | None = None, max_rounds: int = 6,
                 use_tools: bool = True) -> None:
        self.client = client if client is not None else self._client()
        self.model = model or self.default_model
        self.max_rounds = max_rounds
        self.use_tools = use_tools

    @classmethod
    def available(cls) -> bool:
        """True when the SDK is installed and an API key is set."""
        return importlib.util.find_spec(cls.sdk.split(".")[0]) is not None and any(os.environ.get(k) for k in cls.keys)

    def _client(self) -> Any:
        raise NotImplementedError

    def _tools(self, host: Any) -> list[dict[str, Any]]:
        return list(host.tools_for(self.provider)) if host is not None and self.use_tools else []

    async def complete(self, prompt: str, *, host: Any = None) -> str:
        try:
            return await self._loop(prompt, host)
        except LLMCommunicationError:
            raise
        except Exception as exc:  # an SDK's own errors (network, quota, auth) leave as the document's
            raise LLMCommunicationError(f"{self.provider}: {type(exc).__name__}: {exc}") from exc

    async def _loop(self, prompt: str, host: Any) -> str:
        raise NotImplementedError

    def _out_of_rounds(self) -> LLMCommunicationError:
        return LLMCommunicationError(f"{self.provider}: still calling tools after {self.max_rounds} rounds")


def _dump(obj: Any) -> dict[str, Any]:
    """An SDK object (pydantic) or a plain mapping, as a dict without unset fields."""
    if isinstance(obj, dict):
        return obj
    return dict(obj.model_dump(exclude_none=True))


class OpenAILLM(_ToolCallingLLM):
    """OpenAI Chat Completions with function tools."""

    provider, sdk, keys, default_model = "openai", "openai", ("OPENAI_API_KEY",), "gpt-4o-mini"

    def _client(self) -> Any:
        from openai import AsyncOpenAI  # type: ignore[import-not-found]

        return AsyncOpenAI()

    async def _loop(self, prompt: str, host: Any) -> str:
        messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}]
        tools = self._tools(host)
        for _ in range(self.max_rounds):
            kwargs: dict[str, Any] = {"model": self.model, "messages": messages}
            if tools:
                kwargs["tools"] = tools
            response = await self.client.chat.completions.create(**kwargs)
            message = response.choices[0].message
            calls = list(message.tool_calls or [])
            if not calls:
                return str(message.content or "")
            messages.append(_dump(message))
            for call in calls:
                messages.append(await host.dispatch(_dump(call)))
        raise self._out_of_rounds()


class AnthropicLLM(_ToolCallingLLM):
    """Anthropic Messages with tool use."""

    provider, sdk, keys, default_model = "anthropic", "anthropic", ("ANTHROPIC_API_KEY",), "claude-sonnet-4-5"

    def _client(self) -> Any:
        from anthropic import AsyncAnthropic  # type: ignore[import-not-found]

        return AsyncAnthropic()

    async def _loop(self, prompt: str, host: Any) -> str:
        messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
        tools = self._tools(host)
        for _ in range(self.max_rounds):
            kwargs: dict[str, Any] = {"model": self.model, "max_tokens": 2048, "system": SYSTEM, "messages": messages}
            if tools:
                kwargs["tools"] = tools
            response = await self.client.messages.create(**kwargs)
            blocks = [_dump(b) for b in response.content]
            uses = [b for b in blocks if b.get("type") == "tool_use"]
            if not uses:
                return "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
            messages.append({"role": "assistant", "content": blocks})
            messages.append({"role": "user", "content": [await host.dispatch(b) for b in uses]})
        raise self._out_of_rounds()


class GeminiLLM(_ToolCallingLLM):
    """Google Gemini (the ``google-genai`` SDK) with function declarations."""

    provider, sdk, keys, default_model = "gemini", "google.genai", ("GEMINI_API_KEY", "GOOGLE_API_KEY"), "gemini-2.5-flash"

    def _client(self) -> Any:
        from google import genai  # type: ignore[import-not-found]

        return genai.Client(api_key=os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY"))

    async def _loop(self, prompt: str, host: Any) -> str:
        contents: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": prompt}]}]
        declarations = self._tools(host)
        config: dict[str, Any] = {"system_instruction": SYSTEM}
        if declarations:
            config["tools"] = [{"function_declarations": declarations}]
        for _ in range(self.max_rounds):
            response = await self.client.aio.models.generate_content(model=self.model, contents=contents, config=config)
            calls = list(response.function_calls or [])
            if not calls:
                return str(response.text or "")
            contents.append(_dump(response.candidates[0].content))
            parts = []
            for call in calls:
                function_call = {k: v for k, v in _dump(call).items() if k in ("name", "args", "id")}
                reply = await host.dispatch({"functionCall": function_call})
                parts.append({"function_response": reply["functionResponse"]})
            contents.append({"role": "user", "parts": parts})
        raise self._out_of_rounds()


def from_environment(preferred: str | None = None) -> _ToolCallingLLM | None:
    """The first adapter whose SDK and key are present (``preferred`` first), else None."""
    adapters: list[type[_ToolCallingLLM]] = [OpenAILLM, AnthropicLLM, GeminiLLM]
    if preferred:
        adapters.sort(key=lambda a: a.provider != preferred)
    for adapter in adapters:
        if adapter.available():
            logger.info("using the %s model adapter", adapter.provider)
            return adapter()
    return None
