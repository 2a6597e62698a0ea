"""Command line of the fake MCP server: ``python -m mcphost.testing [--spec JSON | --spec-file F]
[--era legacy|modern|both] [--http PORT [--host H]] [--script NAME]``.

This module owns argument parsing, loading the spec (inline JSON, a ``.json`` file, or a
``.py`` file exposing ``SPEC``) and the usage text listing every spec key. Standard library
only, like the rest of :mod:`mcphost.testing`.
"""

from __future__ import annotations

import argparse
import json
import os
import runpy
import sys
from typing import Any

from mcphost.testing.common import ERAS
from mcphost.testing.http import serve_http
from mcphost.testing.scripts import SCRIPTS
from mcphost.testing.server import serve

SPEC_HELP = """\
spec keys (a JSON object; every key optional; full reference in docs/testing.md):
  server      name, version, instructions, protocolVersion (forced answer), capabilities
  features    tools: [{name, description, inputSchema, outputSchema?, annotations?,
                       execution?: {taskSupport}, behavior?}]   (absent: one "echo" tool)
              prompts: [{name, description, arguments: [{name, required}], messages}]
              resources: [{uri, name, mimeType, text|blob}]
              resourceTemplates: [{uriTemplate, name, mimeType, text}]
              completions: {ref-name-or-uri: {argName: [values]}}
              updateOnSubscribe, pageSize, cursorLoop, invalidCursorError
  behavior    echo, result, error, isError, delay, progress, progressInterval, log,
              request, notify, exit (+ stderr), hang, huge, mutate, waitCancelled
  batching    batch (2025-03-26 array responses), batchNotifications
  tasks       tasks, taskPollInterval (ms), taskTtl (ms), taskStatusNotifications,
              taskResultDelay (s: tasks/result answers that much after the task ended)
  on start    onInitialized (requests to the client), notifyOnInitialized (notifications)
  faults      exitAtStart, stderr, exitOnCall, neverAnswer, answerLate, initializeDelay,
              garbage, garbageEvery, hugeMessageOnStart, ignoreStdinEof, ignoreSigterm,
              spawnChild, notificationFlood, invalidJsonRpc, exitOnStdinEof
  recording   record (JSONL file of everything received), pid_file, verbose
  2026-07-28  era (legacy|modern|both), supportedVersions, rejectVersionTimes,
              neverAnswerMethods, discoverError, cache, omitResultType, omitServerInfo,
              omitRequestState, listenCloseAfter, ignoreClientCapabilities;
              behavior: inputRounds, inputOptional, inputBeforeTask, resultType, updated,
              listChanged, template, delayArg, closeStream (HTTP); prompts/resources:
              inputRounds
  http        httpJson, httpSse, sseRetry, httpMaxBody, httpMaxSessions, allowedHosts,
              headerChecks
"""


def load_spec(text: str | None, path: str | None) -> dict[str, Any]:
    """Return the spec from inline JSON or a file (``.py`` files must define ``SPEC``)."""
    if text is not None and path is not None:
        raise ValueError("give --spec or --spec-file, not both")
    if path is not None:
        if path.endswith(".py"):
            spec = runpy.run_path(path).get("SPEC")
            if spec is None:
                raise ValueError(f"{path} does not define SPEC")
        else:
            with open(path, encoding="utf-8") as f:
                spec = json.load(f)
    elif text is not None:
        spec = json.loads(text)
    else:
        spec = {}
    if not isinstance(spec, dict):
        raise ValueError("the spec must be a JSON object")
    return spec


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mcphost.testing",
        description="A scriptable fake MCP server speaking newline-delimited JSON-RPC on "
        "stdin/stdout (logs on stderr). Without a spec it serves one 'echo' tool.",
        epilog=SPEC_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--spec", help="the spec as a JSON object")
    parser.add_argument("--spec-file", help="a .json file, or a .py file defining SPEC")
    parser.add_argument(
        "--era",
        choices=ERAS,
        help="legacy (initialize; the default), modern (2026-07-28 only) or both (dual-era); "
        "overrides the spec key 'era'",
    )
    parser.add_argument(
        "--http",
        type=int,
        metavar="PORT",
        help="serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio (0: any free "
        "port); the URL is printed as the first line on stdout",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address for --http (127.0.0.1)")
    parser.add_argument(
        "--script",
        choices=sorted(SCRIPTS),
        help="a built-in spec: 'conformance' is the official conformance suite's reference "
        "server contract; --spec keys are merged over it",
    )
    args = parser.parse_args(argv)
    try:
        spec = load_spec(args.spec, args.spec_file)
    except (OSError, ValueError) as exc:
        parser.error(f"bad spec: {exc}")
    if args.script is not None:
        spec = {**SCRIPTS[args.script](), **spec}
    if args.era is not None:
        spec["era"] = args.era
    if spec.get("era", "legacy") not in ERAS:
        parser.error(f"bad spec: era must be one of {', '.join(ERAS)}")
    if args.http is not None:
        return serve_http(spec, args.host, args.http)
    return serve(spec)


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Daemon threads may still be blocked (hanging tools, reads): leave without joining them.
    os._exit(code)
