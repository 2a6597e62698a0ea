"""Tool schemas as validators: compiled once per tool list, checked on every call.

Layer 4. Arguments are checked against the tool's ``inputSchema`` before anything is sent;
results against its ``outputSchema`` (spec 2025-06-18+: with an outputSchema "the client
SHOULD validate" structured results). Validators are compiled on first use with the
negotiated version's default dialect and cached on the server's handle until its tool list
changes; a schema that does not compile is logged once and not used.

A server controls its schemas: a large one is compiled in a worker thread (its cost is
estimated first, :func:`~mcphost.schema.compile_cost`), so that no server can freeze the
event loop, and so every other server, with a 5 MB schema. The compiler bounds the size
it accepts and runs every pattern in linear time (docs/schema.md).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Final

from ..errors import MCPHostError, OutputValidationError, UsageError, ValidationError
from .handle import ServerHandle
from .observe import refused

__all__ = ["Validation"]

logger = logging.getLogger("mcphost.host.validation")

#: Schemas costing more than this (``compile_cost`` units, about one per JSON value) are
#: compiled off the event loop.
THREAD_COST: Final = 20_000
_ABSENT: Final = object()


class Validation:
    """The host's validation settings and the per-tool validator caches on the handles."""

    def __init__(self, *, arguments: bool, output: str) -> None:
        if output not in ("error", "warn", "off"):
            raise UsageError(f"validate_output must be 'error', 'warn' or 'off', not {output!r}")
        self.arguments = arguments
        #: ``error``, ``warn`` or ``off``.
        self.output = output

    def input_validator(self, handle: ServerHandle, tool: dict[str, Any]) -> Any:
        """The compiled ``inputSchema`` of ``tool``, or ``False`` when there is none."""
        validator = handle.validators.get(tool["name"])
        if validator is None:
            validator = handle.validators[tool["name"]] = self._compile(handle, tool, "inputSchema")
        return validator

    async def input_validator_async(self, handle: ServerHandle, tool: dict[str, Any]) -> Any:
        """:meth:`input_validator`, compiling a large schema in a worker thread."""
        validator = handle.validators.get(tool["name"])
        if validator is None:
            validator = await self._compile_off_loop(handle, tool, "inputSchema")
            handle.validators[tool["name"]] = validator
        return validator

    async def _compile_off_loop(self, handle: ServerHandle, tool: dict[str, Any], key: str) -> Any:
        from ..schema import compile_cost

        schema = tool.get(key)
        if isinstance(schema, dict) and compile_cost(schema) > THREAD_COST:
            return await asyncio.to_thread(self._compile, handle, tool, key)
        return self._compile(handle, tool, key)

    def output_ok(self, handle: ServerHandle, tool: dict[str, Any], result: dict[str, Any]) -> bool:
        """Does ``result`` surely pass :meth:`check_output`? The compiled ``outputSchema``'s
        fast ``is_valid`` on its ``structuredContent`` (a flat object schema of scalars is
        specialised); ``False`` means "ask :meth:`check_output_async`", which also compiles
        the schema on first use and says what is wrong."""
        validator = handle.output_validators.get(tool["name"])
        if validator is None:
            return False
        if validator is False:
            return True
        structured = result.get("structuredContent", _ABSENT)
        return structured is not _ABSENT and validator.is_valid(structured) is True

    async def check_output_async(self, handle: ServerHandle, tool: dict[str, Any], result: dict[str, Any]) -> None:
        """:meth:`check_output`, compiling a large ``outputSchema`` in a worker thread."""
        if tool["name"] not in handle.output_validators:
            handle.output_validators[tool["name"]] = await self._compile_off_loop(handle, tool, "outputSchema")
        self.check_output(handle, tool, result)

    def check_arguments(self, handle: ServerHandle, tool: dict[str, Any], arguments: dict[str, Any]) -> None:
        """Raise the full ``ValidationError`` (the fast ``is_valid`` said no)."""
        validator = self.input_validator(handle, tool)
        if validator is False:
            return
        try:
            validator.validate(arguments)
        except ValidationError as exc:
            message = f"invalid arguments for tool {tool['name']!r}: {exc.message}"
            handle.metrics.tool(tool["name"]).count_error("validation", message, sent=False)
            raise refused(exc.restated(message, server=handle.name), "tools/call") from None

    def check_output(self, handle: ServerHandle, tool: dict[str, Any], result: dict[str, Any]) -> None:
        name = tool["name"]
        validator = handle.output_validators.get(name)
        if validator is None:
            validator = handle.output_validators[name] = self._compile(handle, tool, "outputSchema")
        if validator is False:
            return
        try:
            if "structuredContent" not in result:
                raise ValidationError(
                    "the tool declares an outputSchema but returned no structuredContent",
                    keyword="outputSchema",
                )
            validator.validate(result["structuredContent"])
        except ValidationError as exc:
            message = f"structuredContent of tool {name!r} does not match its outputSchema: {exc.message}"
            handle.metrics.tool(name).count_error("validation", message)
            if self.output == "warn":
                logger.warning("%s: %s", handle.name, message)
                return
            # The server's fault, not the caller's: an OutputValidationError (a ProtocolError).
            raise OutputValidationError.of(exc, message, server=handle.name) from None

    @staticmethod
    def _compile(handle: ServerHandle, tool: dict[str, Any], key: str) -> Any:
        schema = tool.get(key)
        if not isinstance(schema, (dict, bool)):
            return False
        from ..schema import compile as compile_schema

        session = handle.session
        dialect = session.version.schema_dialect if session is not None else "draft-07"
        try:
            return compile_schema(schema, default_dialect=dialect)
        except MCPHostError as exc:
            logger.warning(
                "%s: %s of tool %r is invalid (%s); it is not used for validation",
                handle.name, key, tool["name"], exc,
            )
            return False
