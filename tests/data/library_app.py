"""A small application that uses mcphost as a library, for the second Ctrl-C test.

It runs ``asyncio.run(main())`` and holds its host open with ``async with`` — nothing
about signals of its own. argv[1] is the ``mcp.json`` document (JSON). It prints
``ready <pid> ...`` (each server's pid) once every server is up, and ``stopping`` when the
first server starts to stop (after the first Ctrl-C).
"""

import asyncio
import json
import sys

from mcphost import MCPHost


async def main() -> None:
    config = json.loads(sys.argv[1])
    told = False

    def on_event(event: dict) -> None:
        nonlocal told
        if event["type"] == "state_changed" and event["data"]["to"] == "stopping" and not told:
            told = True
            print("stopping", flush=True)

    async with MCPHost(config, shutdown_timeout=60) as host:
        host.on_event(on_event)
        print("ready", *(host.servers[name].pid() for name in sorted(host.servers)), flush=True)
        await asyncio.sleep(3600)


asyncio.run(main())
