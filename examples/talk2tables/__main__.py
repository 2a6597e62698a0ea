"""``python -m examples.talk2tables "which products are low on stock?"``: one question, answered.

By default both servers run as child processes over stdio and the scripted demo model writes
the SQL, so the command needs nothing installed, running or paid for. Options:

- ``--transport sse``: the servers are served over SSE in this process (on 127.0.0.1), and
  the orchestrator connects to them as the document's configuration does;
- ``--config mcp_config.yaml`` (or ``.json``): the document's configuration, servers already
  running (see README.md);
- ``--model openai|anthropic|gemini|auto``: a real model through its adapter (its SDK and API
  key needed; ``auto`` takes the first present, else the demo model);
- ``--json``: the whole ``Query_Result`` as JSON; ``--log-level DEBUG``: the document's JSON
  event log on stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from typing import Any

from mcphost.logs import JSONFormatter

from . import configs
from .llm import DemoLLM, LLMInterface
from .orchestrator import Talk2TablesOrchestrator
from .providers import AnthropicLLM, GeminiLLM, OpenAILLM, from_environment

logger = logging.getLogger("talk2tables.main")


def _model(choice: str) -> LLMInterface:
    if choice == "demo":
        return DemoLLM()
    if choice == "auto":
        return from_environment() or DemoLLM()
    adapter = {"openai": OpenAILLM, "anthropic": AnthropicLLM, "gemini": GeminiLLM}[choice]
    if not adapter.available():
        raise SystemExit(f"--model {choice}: its SDK ({adapter.sdk}) and an API key ({' or '.join(adapter.keys)}) "
                         "are needed")
    return adapter()


async def _ask(config: Any, question: str, model: LLMInterface) -> dict[str, Any]:
    async with Talk2TablesOrchestrator(config) as orchestrator:
        return await orchestrator.process_query(question, model)


async def answer(question: str, *, transport: str = "stdio", config: str | None = None,
                 model: LLMInterface | None = None) -> dict[str, Any]:
    """The ``Query_Result`` of one question (what the command prints)."""
    llm = model or DemoLLM()
    if config is not None:
        return await _ask(config, question, llm)
    if transport == "sse":
        async with configs.serve_sse() as sse:
            return await _ask(sse, question, llm)
    return await _ask(configs.stdio_config(), question, llm)


def render(result: dict[str, Any]) -> str:
    """A result for a terminal: the answer as a table, then how it was found."""
    if not result["success"]:
        lines = [f"Could not answer: {result['error']}", f"Suggestion: {result['suggestions']}"]
        lines += [f"  attempt {a['attempt']}: {a['sql']}\n    -> {a['error_type']}: {a['error']}"
                  for a in result["recovery"]["attempts"]]
        return "\n".join(lines)
    columns, rows = result["result"]["columns"], result["result"]["rows"]
    cells = [[str(c) for c in columns], *[["" if v is None else str(v) for v in row] for row in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    table = ["  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in cells]
    table.insert(1, "  ".join("-" * w for w in widths))
    meta = result["metadata"]
    return "\n".join([*table, "", f"SQL: {result['sql']}", f"Why: {result['explanation']}",
                      f"Servers: {', '.join(meta['mcp_servers_used'])}; {len(rows)} row(s) in "
                      f"{meta['execution_time']:.3f} s"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m examples.talk2tables", description=__doc__.split("\n", 1)[0])
    parser.add_argument("question", help="a question about products, inventory and sales")
    parser.add_argument("--transport", choices=("stdio", "sse"), default="stdio")
    parser.add_argument("--config", help="a configuration file (the document's mcp_config.yaml or .json)")
    parser.add_argument("--model", choices=("demo", "auto", "openai", "anthropic", "gemini"), default="demo")
    parser.add_argument("--json", action="store_true", help="print the whole result as JSON")
    parser.add_argument("--log-level", default="WARNING", type=str.upper,
                        choices=("DEBUG", "INFO", "WARNING", "ERROR"), help="JSON event log on stderr at this level")
    args = parser.parse_args(argv)
    model = _model(args.model)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JSONFormatter(nested=True))
    handler.setLevel(args.log_level)
    loggers = [logging.getLogger(name) for name in ("talk2tables", "mcphost")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
        lg.setLevel(args.log_level)
    try:
        result = asyncio.run(answer(args.question, transport=args.transport, config=args.config, model=model))
    finally:  # main() may be called in a process that goes on (tests): its loggers are given back
        for lg, level in zip(loggers, levels):
            lg.removeHandler(handler)
            lg.setLevel(level)
    print(json.dumps(result, indent=2, default=str) if args.json else render(result))
    return 0 if result["success"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
