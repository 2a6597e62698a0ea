"""Reading the configuration for the host: the file, the ``${input:...}`` values, selection.

Layer 4 (it reads files and asks the application; parsing itself is the sans-I/O
``mcphost.config``). ``servers=`` keeps the named servers and what they depend on; every
other server is disabled.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
import os
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import ConfigurationError, RoutingError, UsageError

__all__ = ["load_config", "read_config_text", "select"]

logger = logging.getLogger("mcphost.host.configload")


async def load_config(
    source: str | os.PathLike[str] | Mapping[str, Any],
    *,
    environ: Mapping[str, str],
    inputs: Mapping[str, str] | Callable[[Any], Any] | None,
    only: tuple[str, ...] | None = None,
    defer_unset: bool = False,
) -> Any:
    """The parsed ``HostConfig`` of ``source`` (a path or the mapping of its content). With
    ``only``, just those servers and their dependencies are expanded and validated. With
    ``defer_unset`` (``require_all=False``), a server whose ``${VAR}`` is unset is left in
    ``HostConfig.unresolved`` with its error instead of failing the whole file."""
    from .. import config as config_mod

    home = environ.get("HOME") or os.path.expanduser("~")
    if isinstance(source, Mapping):
        values = await _resolve_inputs(config_mod.required_inputs(source, only=only), inputs)
        return _loaded(config_mod.config_from_data(
            source, environ=environ, user_home=home, workspace_folder=os.getcwd(),
            inputs=values, read_text=_read_text, only=only, defer_unset=defer_unset,
        ))
    if not isinstance(source, (str, os.PathLike)):
        raise UsageError(f"the configuration must be a path or a mapping, not {type(source).__name__}")
    path = os.fspath(source)
    text = read_config_text(path)
    if path.lower().endswith((".yaml", ".yml")):
        # Talk-2-Tables writes its configuration in YAML: read when PyYAML happens to be
        # installed (never a dependency), then checked like data given in code.
        data = _yaml(text, path)
        values = await _resolve_inputs(config_mod.required_inputs(data, path=path, only=only), inputs)
        return _loaded(config_mod.config_from_data(
            data, path=os.path.abspath(path), environ=environ, user_home=home, inputs=values,
            read_text=_read_text, only=only, defer_unset=defer_unset,
        ))
    values = await _resolve_inputs(config_mod.required_inputs(text, path=path, only=only), inputs)
    return _loaded(config_mod.parse_config(
        text, path=os.path.abspath(path), environ=environ, user_home=home, inputs=values,
        read_text=_read_text, only=only, defer_unset=defer_unset,
    ))


def _loaded(config: Any) -> Any:
    where = os.path.basename(config.path) if config.path else "the configuration given in code"
    logger.info("%s loaded: %d server(s)", where, len(config.servers), extra={"event": "config_loaded"})
    for group in getattr(config, "duplicates", ()):
        # The host specification calls duplicate servers a configuration error; a warning
        # here, since one server run twice under two names can be meant (docs/config.md).
        logger.warning("%s: servers %s have identical definitions: one server configured twice?", where,
                       ", ".join(group), extra={"event": "config_duplicate_servers"})
    return config


async def _resolve_inputs(
    specs: list[Any], provided: Mapping[str, str] | Callable[[Any], Any] | None
) -> dict[str, str]:
    if not specs:
        return {}
    if isinstance(provided, Mapping):
        return {k: str(v) for k, v in provided.items()}
    values: dict[str, str] = {}
    if provided is None:
        return values  # the loader names the first input that has no value
    for spec in specs:
        value = provided(spec)
        if inspect.isawaitable(value):
            value = await value
        if value is not None:
            values[spec.id] = str(value)
    return values


def select(config: Any, only: tuple[str, ...] | None) -> Any:
    """``config`` with every server outside ``only`` (and their dependencies) disabled."""
    if only is None:
        return config
    known = config.servers
    unknown = [name for name in only if name not in known]
    if unknown:
        listed = ", ".join(known) or "none"
        raise RoutingError(f"unknown server {unknown[0]!r} (servers: {listed})")
    keep: set[str] = set()
    todo = list(only)
    while todo:
        name = todo.pop()
        if name not in keep:
            keep.add(name)
            todo.extend(known[name].dependencies)
    servers = {
        name: cfg if name in keep else dataclasses.replace(cfg, enabled=False)
        for name, cfg in known.items()
    }
    return dataclasses.replace(config, servers=servers)


def read_config_text(path: str) -> str:
    """The text of a configuration file, or a ``ConfigurationError`` that names the file by
    its base name only (TR10.3: no absolute path in what the application gets) and an
    encoding error by its line."""
    name = os.path.basename(path.rstrip(os.sep)) or path
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise ConfigurationError(f"{name}: configuration file not found", path=path) from None
    except IsADirectoryError:
        raise ConfigurationError(f"{name}: is a directory, not a configuration file", path=path) from None
    except OSError as exc:
        raise ConfigurationError(
            f"{name}: cannot read configuration: {exc.strerror or type(exc).__name__}", path=path
        ) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigurationError(
            f"{name}:{line}: not valid UTF-8 (byte 0x{data[exc.start]:02x}); save the file as UTF-8",
            path=path, line=line,
        ) from None


def _read_text(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def fail_fast(config: Any, *choices: bool | None) -> bool:
    """Whether a failure fails the whole (start, gathering): the first choice given (a
    call's argument, then the constructor's), else the configuration's ``failFast``
    (Talk-2-Tables: ``orchestration.fail_fast``), else ``True``."""
    for choice in choices:
        if choice is not None:
            return bool(choice)
    configured = getattr(config, "fail_fast", None)
    return True if configured is None else bool(configured)


def _yaml(text: str, path: str) -> Any:
    name = os.path.basename(path)
    try:
        import yaml  # type: ignore[import-untyped,unused-ignore]
    except ImportError:
        raise ConfigurationError(
            f"{name}: reading YAML needs PyYAML (pip install pyyaml), or write the configuration as JSON",
            path=path) from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{name}:{mark.line + 1}" if mark is not None else name
        raise ConfigurationError(f"{where}: invalid YAML: {getattr(exc, 'problem', None) or exc}", path=path) from None
