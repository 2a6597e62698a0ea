"""``mcphost check``: what can be checked without starting anything.

The file is read and validated as ``inspect`` reads it (dialects, schema, expansion, URLs
that must parse); then, per enabled server: its command is found (on the PATH the child
gets, or as the absolute or relative path written), its ``cwd`` exists. A ``${VAR}`` that
is unset is the normal case in CI: it is listed as "needs VAR at run time" and fails the
check only with ``--strict``. Every problem is one line; nothing is started.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import Any

from ..errors import ConfigurationError
from ..transports.stdio.command import child_environment, resolve_command
from . import inputs as cli_inputs
from .report import clean, print_notes

__all__ = ["check"]

_UNSET = re.compile(r"environment variable (\S+) is not set")


def _unset_names(server: str, raw: Any, environ: dict[str, str]) -> list[str]:
    """Every ``${VAR}`` of the server's entry that is unset (the loader stops at the first)."""
    names: list[str] = []
    text = repr(raw)
    for match in re.finditer(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}", text):
        if match.group(1) not in environ and match.group(1) not in names:
            names.append(match.group(1))
    return names


def _raw_entries(text: str) -> dict[str, Any]:
    import json

    try:
        data = json.loads(text)
    except ValueError:
        return {}
    out: dict[str, Any] = {}
    if isinstance(data, dict):
        for key in ("mcpServers", "servers"):
            block = data.get(key)
            if isinstance(block, dict):
                out.update(block)
    return out


def _server_problems(cfg: Any, environ: dict[str, str]) -> list[str]:
    problems: list[str] = []
    if cfg.type != "stdio" or not cfg.command:
        return problems
    if cfg.cwd is not None and not os.path.isdir(cfg.cwd):
        problems.append(f"cwd {os.path.basename(cfg.cwd.rstrip(os.sep)) or cfg.cwd!r} does not exist (or is not a folder)")
        return problems
    env = environ if cfg.inherit_env else child_environment(environ, dict(cfg.env))
    try:
        resolve_command(cfg.command, env, cfg.cwd)
    except ConfigurationError as exc:
        problems.append(exc.message)
    return problems


async def check(args: argparse.Namespace) -> int:
    """Load and validate the configuration, start nothing; every problem on its own line."""
    from .. import config as config_mod
    from ..host.configload import load_config, read_config_text
    from .commands import config_path

    path = config_path(args, args.config)
    given = cli_inputs.parse_inputs(args.input)
    text = read_config_text(path)  # a ConfigurationError names what is wrong with the file
    placeholders: dict[str, str] = {}
    try:
        placeholders = {spec.id: given.get(spec.id, "<input>") for spec in config_mod.required_inputs(text, path=path)}
    except ConfigurationError:
        pass  # the full load below says what is wrong
    environ = dict(os.environ)
    loaded = await load_config(path, environ=environ, inputs=placeholders, defer_unset=True)
    print_notes(getattr(loaded, "notes", ()))
    raw = _raw_entries(text)
    errors: list[str] = []
    needs: list[str] = []
    for name, cfg in loaded.servers.items():
        if name in loaded.unresolved:
            names = _unset_names(name, raw.get(name), environ) or [
                m.group(1) for m in [_UNSET.search(str(loaded.unresolved[name]))] if m]
            needs.append(f"{name}: needs {', '.join(names)} at run time (not set now)")
            continue
        if not cfg.enabled:
            continue
        errors.extend(f"{name}: {problem}" for problem in _server_problems(cfg, environ))
    base = os.path.basename(path)
    for line in errors:
        print(f"mcphost: error: {clean(line)}", file=sys.stderr)
    for line in needs:
        print(f"mcphost: {'error' if args.strict else 'note'}: {clean(line)}", file=sys.stderr)
    servers = ", ".join(loaded.servers) or "no servers"
    if errors or (needs and args.strict):
        print(f"mcphost: {base} has {len(errors) + (len(needs) if args.strict else 0)} problem(s) "
              f"({len(loaded.servers)} server(s): {servers})")
        return 2
    print(f"mcphost: {base} is valid ({len(loaded.servers)} server(s): {servers})")
    return 0
