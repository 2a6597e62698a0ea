"""2,000 mutated mcp.json files: each loads or raises ConfigurationError with a line."""

from __future__ import annotations

import json
import random
from typing import Any

from mcphost import ConfigurationError
from mcphost.config import parse_config

SEEDS = [
    {"mcpServers": {"fs": {"command": "npx", "args": ["-y", "pkg", "${workspaceFolder}"], "timeout": 60},
                    "brave": {"command": "npx", "env": {"KEY": "${BRAVE:-x}"}, "dependencies": ["fs"]}}},
    {"servers": {"a": {"type": "stdio", "command": "python", "args": ["-m", "x"], "envFile": ".env",
                       "limits": {"memory": "512M", "cpuSeconds": 5}, "tools": {"allow": ["r*"], "deny": ["rm"]}},
                 "b": {"type": "http", "url": "https://example.invalid/mcp", "headers": {"A": "${input:tok}"}}},
     "inputs": [{"id": "tok", "type": "promptString", "password": True}]},
    {"mcpServers": {"x": {"url": "https://h.invalid/sse", "enabled": False, "priority": 2, "domains": ["d"]}}},
]
CHUNKS = ['"', "{", "}", "[", "]", ",", ":", "null", "true", "-1", "1e999", '"${"', '"${input:}"', "\\u0000",
          "//", "/*", "\n", '"mcpServers"', '"command"', '"args"', "\ufeff", "0x1", "NaN", '""', "\ud800"]


def mutate(rng: random.Random, text: str) -> str:
    chars = list(text)
    for _ in range(rng.randint(1, 6)):
        op = rng.randrange(5)
        pos = rng.randrange(len(chars) + 1)
        if op == 0 and chars:
            del chars[min(pos, len(chars) - 1)]
        elif op == 1:
            chars.insert(pos, rng.choice(CHUNKS))
        elif op == 2 and chars:
            chars[min(pos, len(chars) - 1)] = rng.choice(CHUNKS)
        elif op == 3:
            chars = chars[:pos]
        else:
            start = rng.randrange(len(chars) + 1)
            chars[pos:pos] = chars[start:start + rng.randint(1, 20)]
    return "".join(chars)


def mutate_value(rng: random.Random, value: Any, depth: int = 0) -> Any:
    """Structure-aware: swap a value for another type, drop or add keys."""
    if isinstance(value, dict) and value and depth < 6:
        key = rng.choice(list(value))
        out = dict(value)
        roll = rng.randrange(4)
        if roll == 0:
            del out[key]
        elif roll == 1:
            out[key] = rng.choice([None, 0, -5, 1.5, "", "x", [], {}, True, [1, "a"], {"k": None}, "${UNSET}"])
        elif roll == 2:
            out[rng.choice(["extra", "cmd", "url", "type", "disabled", "env"])] = rng.choice(["stdio", 3, None, {}])
        else:
            out[key] = mutate_value(rng, value[key], depth + 1)
        return out
    if isinstance(value, list) and value and depth < 6:
        out = list(value)
        i = rng.randrange(len(out))
        out[i] = mutate_value(rng, out[i], depth + 1) if rng.random() < 0.5 else rng.choice([None, 7, {}, "s"])
        return out
    return rng.choice([value, None, 0, "", "${X}", [], {}])


def test_mutated_configurations_load_or_fail_with_a_line() -> None:
    rng = random.Random(20261123)
    failures = 0
    for n in range(2000):
        seed = rng.choice(SEEDS)
        if n % 2:
            text = mutate(rng, json.dumps(seed, indent=1))
        else:
            text = json.dumps(mutate_value(rng, seed), indent=1)
        try:
            parse_config(text, path="/cfg/mcp.json", environ={"BRAVE": "b"}, inputs={"tok": "t"},
                         read_text=lambda p: "A=1\n")
        except ConfigurationError as exc:
            failures += 1
            message = str(exc)
            assert message.startswith("mcp.json"), message  # the file, never its folder
            assert exc.line is not None and exc.line >= 1, message  # and the line
            assert "/cfg/" not in message, message
    assert 0 < failures < 2000  # both outcomes are exercised
