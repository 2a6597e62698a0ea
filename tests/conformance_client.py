"""A client under test for the official MCP conformance suite (``@modelcontextprotocol/conformance``).

Run by the suite's runner as ``python conformance_client.py <server url>``: it appends the
mock server's URL as the last argument and names the scenario in ``MCP_CONFORMANCE_SCENARIO``
(0.2.0 also sets ``MCP_CONFORMANCE_PROTOCOL_VERSION``, the wire to speak, and
``MCP_CONFORMANCE_CONTEXT`` for the scenarios that need data). The script uses mcphost's
public API only: one server ``{"type": "http", "url": <url>}``, the application's handlers
(elicitation accepted with the schema's defaults, sampling, roots), then what the scenario
asks. Exits 0 on success; otherwise 1 with a one-line error on stderr. mcphost's own log
goes to stderr only when ``MCPHOST_CONFORMANCE_LOG`` names a level (``DEBUG``: with the wire).

The ``auth/*`` scenarios are handed to ``conformance_auth.py`` (its OAuth client). Used by
tests/test_conformance.py; runnable by hand against ``npx conformance client``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from mcphost import MCPHost, ProtocolError
from mcphost.policy import NO_RETRY

SERVER = "conformance"
#: Seconds for one request: under the runner's own 30 s limit, so a hang is reported here.
REQUEST_TIMEOUT = 20.0
#: The wire a run speaks when the runner does not say (0.1.16 sets no version).
DEFAULT_WIRE = "2025-11-25"
#: The stateless wires: the server's ``protocol`` is then ``modern`` (``server/discover`` first).
MODERN_WIRES = ("2026-07-28",)


class ScenarioFailed(Exception):
    """The client saw something the scenario does not allow."""


# -- what the application answers to the server's requests ------------------------------------


def elicitation_defaults(server: str, params: dict[str, Any]) -> dict[str, Any]:
    """Accept a form elicitation with every default its ``requestedSchema`` gives (SEP-1034).

    mcphost hands the request to the application as it came: filling the form, defaults
    included, is the application's part, as a user accepting a pre-filled form would.
    """
    schema = params.get("requestedSchema") or {}
    properties = schema.get("properties") or {}
    content = {name: prop["default"] for name, prop in properties.items() if isinstance(prop, dict) and "default" in prop}
    return {"action": "accept", "content": content}


def sampling(server: str, params: dict[str, Any]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": {"type": "text", "text": "conformance sampling reply"},
        "model": "mcphost-conformance",
        "stopReason": "endTurn",
    }


def roots(server: str) -> list[dict[str, str]]:
    return [{"uri": "file:///tmp/mcphost-conformance", "name": "conformance"}]


# -- the scenarios ----------------------------------------------------------------------------


def tool_names(host: MCPHost) -> list[str]:
    return [tool["name"] for tool in host.get_tools(SERVER)[SERVER]["tools"]]


def require_tool(host: MCPHost, name: str) -> None:
    if name not in tool_names(host):
        raise ScenarioFailed(f"the server offers no tool {name!r} (tools: {tool_names(host)})")


async def call(host: MCPHost, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    require_tool(host, tool)
    result: dict[str, Any] = dict(await host.call_tool(f"{SERVER}.{tool}", arguments or {}))
    if result.get("isError"):
        raise ScenarioFailed(f"{tool} returned isError: {json.dumps(result.get('content'))[:300]}")
    return result


async def initialize(host: MCPHost) -> None:
    # Starting the host did initialize + notifications/initialized + tools/list.
    tool_names(host)


async def tools_call(host: MCPHost) -> None:
    result = await call(host, "add_numbers", {"a": 5, "b": 3})
    text = " ".join(block.get("text", "") for block in result.get("content", []))
    if "8" not in text:
        raise ScenarioFailed(f"add_numbers(5, 3) answered {text!r}")


async def elicitation_client_defaults(host: MCPHost) -> None:
    await call(host, "test_client_elicitation_defaults")


async def sse_retry(host: MCPHost) -> None:
    await call(host, "test_reconnection")


async def json_schema_preservation(host: MCPHost) -> None:
    """Echo the inputSchema of ``json_schema_2020_12_tool`` back as it was listed."""
    tools = {tool["name"]: tool for tool in host.get_tools(SERVER)[SERVER]["tools"]}
    if "json_schema_2020_12_tool" not in tools:
        raise ScenarioFailed(f"the server offers no json_schema_2020_12_tool (tools: {sorted(tools)})")
    await call(host, "json_schema_echo", {"schema": tools["json_schema_2020_12_tool"]["inputSchema"]})


def sample_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    """A value for each required property of a tool's ``inputSchema`` (what a model would fill)."""
    samples = {"string": "sample", "integer": 1, "number": 1.5, "boolean": True, "array": [], "object": {}}
    properties = schema.get("properties") or {}
    return {name: samples.get(str((properties.get(name) or {}).get("type")), "sample")
            for name in schema.get("required") or ()}


async def exercise_everything(host: MCPHost) -> None:
    """Scenarios that only want the client to use what the server offers: list it all, call
    each tool (with the calls of ``MCP_CONFORMANCE_CONTEXT.toolCalls`` when given), read each
    resource, get each prompt."""
    info = host.get_tools(SERVER)[SERVER]
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    calls = context.get("toolCalls")
    if calls is None:
        calls = [{"name": tool["name"], "arguments": sample_arguments(tool.get("inputSchema") or {})}
                 for tool in info["tools"]]
    for entry in calls:
        await host.call_tool(f"{SERVER}.{entry['name']}", entry.get("arguments") or {})
    for resource in info["resources"]:
        await host.get_resource(resource["uri"], server=SERVER)
    for prompt in info["prompts"]:
        await host.get_prompt(f"{SERVER}.{prompt['name']}")


async def request_state(host: MCPHost) -> None:
    """Call every multi-round-trip tool of the mock, all at once: each call's rounds are its
    own (the mock keeps one state per tool, so a tool is not called twice at once)."""
    await asyncio.gather(*(host.call_tool(f"{SERVER}.{name}", {}) for name in tool_names(host)))


async def skills_listed(host: MCPHost) -> list[dict[str, Any]]:
    entries = await host.list_skills(SERVER)
    if not entries:
        raise ScenarioFailed("the server lists no skill")
    return entries


async def skills_no_prefetch(host: MCPHost) -> None:
    """List the skills and stop there: no skill is needed, so none of its files is read."""
    await skills_listed(host)


async def skills_verify(host: MCPHost) -> None:
    """Load each listed skill, then read its files, as an application would when a skill is
    needed. A skill that fails verification is refused (reported on stderr) and none of its
    files is read: the scenario passes when mcphost refuses what the mock tampered with."""
    for entry in await skills_listed(host):
        try:
            skill = await host.load_skill(entry["uri"], server=SERVER)
        except ProtocolError as exc:
            print(f"conformance client: skill refused: {exc}", file=sys.stderr)
            continue
        for file in skill["resources"]:
            if file.get("uri") != skill["uri"]:
                await host.read_skill_file(skill["uri"], file["uri"], server=SERVER)


SCENARIOS: dict[str, Callable[[MCPHost], Awaitable[None]]] = {
    "initialize": initialize,
    "request-metadata": initialize,
    "sep-2322-client-request-state": request_state,
    "tools_call": tools_call,
    "elicitation-sep1034-client-defaults": elicitation_client_defaults,
    "sse-retry": sse_retry,
    "json-schema-2020-12-preservation": json_schema_preservation,
    "json-schema-ref-no-deref": initialize,
    "http-standard-headers": exercise_everything,
    "http-custom-headers": exercise_everything,
    "http-invalid-tool-headers": exercise_everything,
    "sep-2640-client-no-prefetch": skills_no_prefetch,
    "sep-2640-client-verify-digest": skills_verify,
    "sep-2640-client-verify-size": skills_verify,
    "sep-2640-client-verify-frontmatter": skills_verify,
}


async def run(url: str, scenario: str) -> None:
    if scenario.startswith("auth/"):
        # The OAuth scenarios have a client of their own (one command serves a whole
        # ``--requirements`` run, which mixes both kinds).
        import conformance_auth

        await conformance_auth.run(url, scenario)
        return
    action = SCENARIOS.get(scenario)
    if action is None:
        raise ScenarioFailed(f"scenario {scenario!r} is not handled by this client")
    wire = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION") or DEFAULT_WIRE
    # The era through the configuration, as an application would choose it.
    protocol = "modern" if wire in MODERN_WIRES else "legacy"
    config = {"mcpServers": {SERVER: {"type": "http", "url": url, "protocol": protocol}}}
    host = MCPHost(
        config,
        request_timeout=REQUEST_TIMEOUT,
        shutdown_timeout=2.0,
        retry=NO_RETRY,
        handle_signals=False,
        # The scenarios' own calls are sent as given (http-custom-headers sends nulls a
        # schema does not allow, to see them left out of the headers).
        validate_arguments=False,
        # What the mock servers send is held to the schemas of the version spoken.
        validate_messages="strict",
        client_info={"name": "mcphost-conformance", "version": "1.0.0"},
    )
    host.on_elicitation(elicitation_defaults)
    host.on_sampling(sampling)
    host.on_roots(roots)
    async with host:
        state = host.get_tools(SERVER)[SERVER]["state"]
        if state != "ready":
            raise ScenarioFailed(f"server {state}: {host.get_tools(SERVER)[SERVER]['error']}")
        await action(host)


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: conformance_client.py <server url>  (MCP_CONFORMANCE_SCENARIO names the scenario)", file=sys.stderr)
        return 2
    url = argv[-1]
    level = os.environ.get("MCPHOST_CONFORMANCE_LOG")
    if level:
        logging.basicConfig(level=level.upper(), stream=sys.stderr, format="%(name)s %(levelname)s %(message)s")
    else:  # the one-line error below says it all
        logging.getLogger("mcphost").addHandler(logging.NullHandler())
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    try:
        asyncio.run(run(url, scenario))
    except Exception as exc:  # one line, whatever failed
        message = " ".join(str(exc).split()) or repr(exc)
        print(f"conformance client: {scenario}: {type(exc).__name__}: {message}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
