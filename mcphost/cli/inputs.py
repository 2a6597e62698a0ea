"""``${input:id}`` values for the command line: ``--input``, the environment, a prompt.

In this order: ``--input id=value`` (repeatable), ``MCPHOST_INPUT_<ID>`` from the
environment (the id upper-cased, other characters as ``_``), the input's default, and on a
terminal a prompt (hidden for ``password`` inputs). Without any of them the error lists
every missing id and the three ways to give it.
"""

from __future__ import annotations

import getpass
import os
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import ConfigurationError

__all__ = ["env_name", "parse_inputs", "resolver"]


def env_name(input_id: str) -> str:
    return "MCPHOST_INPUT_" + re.sub(r"[^A-Za-z0-9]", "_", input_id).upper()


def parse_inputs(items: Sequence[str]) -> dict[str, str]:
    """``["id=value", ...]`` from ``--input``."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigurationError(f"--input {item!r}: expected ID=VALUE")
        out[key] = value
    return out


def resolver(given: Mapping[str, str], environ: Mapping[str, str], interactive: bool) -> Any:
    """The ``inputs=`` callable for ``MCPHost``: asked once per input the file uses."""
    missing: list[str] = []

    def resolve(spec: Any) -> str | None:
        if spec.id in given:
            return given[spec.id]
        from_env = environ.get(env_name(spec.id))
        if from_env is not None:
            return from_env
        if spec.default is not None:
            return str(spec.default)
        if interactive:
            return _ask(spec)
        missing.append(spec.id)
        return None

    resolve.missing = missing  # type: ignore[attr-defined]
    return resolve


def _ask(spec: Any) -> str:
    label = spec.description or spec.id
    if spec.options:
        print(f"{label}: one of {', '.join(spec.options)}", file=sys.stderr)
    prompt = f"{label} (${{input:{spec.id}}}): "
    if spec.password:
        return getpass.getpass(prompt, stream=sys.stderr)
    sys.stderr.write(prompt)
    sys.stderr.flush()
    return sys.stdin.readline().rstrip("\n")


def missing_error(ids: Sequence[str]) -> ConfigurationError:
    listed = ", ".join(ids)
    first = ids[0]
    return ConfigurationError(
        f"the configuration needs a value for ${{input:...}}: {listed}. Give it with "
        f"--input {first}=VALUE, or set {env_name(first)} in the environment, or run in a "
        "terminal to be asked"
    )


def interactive_default() -> bool:
    return sys.stdin.isatty() and sys.stderr.isatty() and os.environ.get("CI") is None
