"""Reporting and ``${...}`` expansion for one configuration document.

:class:`Expander` holds what every check needs to name an error (``file:line: field:
what``) and what references expand to: the environment, the workspace folder, the user's
home, the values of ``${input:...}``. Every value a reference expands to is remembered in
``secrets`` so that logs and errors can redact it. Layer 1: everything is passed in.
"""

from __future__ import annotations

import logging
import os.path
import posixpath
import re
from collections.abc import Callable, Mapping
from typing import NoReturn

from mcphost.errors import ConfigurationError

from .jsonpos import Document, JSONPath, display_name, format_path
from .model import InputSpec

logger = logging.getLogger("mcphost.config")

# ${...} references. Alternatives, in order: the escape "$${" (a literal "${"), a complete
# reference without nested braces, and a stray "${" (unterminated or nested: an error).
_REFERENCE = re.compile(r"\$\$\{|\$\{([^{}]*)\}|\$\{")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# References whose values are paths of this machine, not secrets.
_NOT_SECRET = frozenset({"workspaceFolder", "workspaceFolderBasename", "userHome", "pathSeparator", "/"})


def _is_abs(path: str) -> bool:
    # Absolute for POSIX or Windows, whatever the platform running the parser.
    return path.startswith(("/", "\\")) or bool(re.match(r"[A-Za-z]:[\\/]", path))


def _path_to_uri(path: str) -> str:
    import urllib.parse  # urllib.parse (with ipaddress, ~0.4 MB): loaded by a URL, not by every host

    if re.match(r"[A-Za-z]:[\\/]", path):  # Windows drive path
        return "file:///" + urllib.parse.quote(path.replace("\\", "/"), safe="/:")
    return "file://" + urllib.parse.quote(posixpath.normpath(path), safe="/")


class Expander:
    """Names errors and expands references; :class:`~mcphost.config.load` builds on it."""

    def __init__(
        self,
        doc: Document | None,
        *,
        path: str | None,
        environ: Mapping[str, str],
        workspace_folder: str | None,
        user_home: str | None,
        inputs: Mapping[str, str] | None,
        read_text: Callable[[str], str] | None,
    ) -> None:
        self.doc = doc
        self.path = path
        self.name = display_name(path)
        self.environ = environ
        self.config_dir: str | None = None
        if path:
            self.config_dir = os.path.dirname(path) or "."
        if workspace_folder is None and self.config_dir is not None:
            workspace_folder = self.config_dir
            # .vscode/mcp.json and .cursor/mcp.json describe the folder above them.
            if os.path.basename(workspace_folder.rstrip("/\\")) in (".vscode", ".cursor"):
                workspace_folder = os.path.dirname(workspace_folder.rstrip("/\\")) or "."
        self.workspace_folder = workspace_folder
        if user_home is None:
            user_home = environ.get("HOME") or environ.get("USERPROFILE") or None
        self.user_home = user_home
        self.input_values: Mapping[str, str] = inputs if inputs is not None else {}
        self.read_text = read_text
        self.declared_inputs: dict[str, InputSpec] = {}
        self.notes: list[str] = []
        #: Paths of the canonical document -> the paths the user wrote (another dialect).
        self.paths: dict[JSONPath, JSONPath] = {}
        #: Values references were expanded to (see HostConfig.secrets).
        self.secrets: set[str] = set()
        # When set (a disabled server), unresolvable references are kept literally.
        self.lenient = False
        # Collects ${input:id} references instead of resolving them (required_inputs).
        self.collected_inputs: list[str] | None = None
        #: When a dict (``defer_unset``): a server whose ``${VAR}`` is unset is recorded
        #: here with its error instead of failing the whole document; the rest of that
        #: entry is then read leniently (references kept literally).
        self.deferred: dict[str, ConfigurationError] | None = None

    # -- reporting --------------------------------------------------------------------

    def written(self, fpath: JSONPath) -> JSONPath:
        """The path the user wrote for ``fpath`` of the canonical document (another dialect
        may have called the field differently: :mod:`mcphost.config.dialects`)."""
        for _ in range(3):
            for size in range(len(fpath), 0, -1):
                mapped = self.paths.get(fpath[:size])
                if mapped is not None:
                    fpath = (*mapped, *fpath[size:])
                    break
            else:
                break
        return fpath

    def where(self, fpath: JSONPath) -> tuple[str, int | None]:
        line = self.doc.line(fpath) if self.doc is not None else None
        prefix = f"{self.name}:{line}" if line is not None else self.name
        if self.doc is None and self.path is None:
            prefix = ""
        return prefix, line

    def error(self, fpath: JSONPath, message: str, *, server: str | None = None) -> NoReturn:
        raise self.problem(fpath, message, server=server)

    def problem(self, fpath: JSONPath, message: str, *, server: str | None = None) -> ConfigurationError:
        """The error ``file:line: field: message`` (not raised)."""
        fpath = self.written(fpath)
        prefix, line = self.where(fpath)
        fname = format_path(fpath)
        parts = [p for p in (prefix, fname) if p]
        parts.append(message)
        return ConfigurationError(
            ": ".join(parts), server=server, path=self.path, line=line, field=fname or None
        )

    def note(self, fpath: JSONPath, message: str) -> None:
        fpath = self.written(fpath)
        prefix, _ = self.where(fpath)
        parts = [p for p in (prefix, format_path(fpath)) if p]
        parts.append(message)
        text = ": ".join(parts)
        self.notes.append(text)
        logger.debug("%s", text)

    # -- expansion ------------------------------------------------------------------------

    def expand(self, fpath: JSONPath, value: str, server: str) -> str:
        """Expand every ``${...}`` reference in ``value`` (a single pass, no re-expansion)."""
        if "${" not in value:
            return value

        def replace(m: re.Match[str]) -> str:
            if m.group(0) == "$${":
                return "${"
            body = m.group(1)
            if body is None:
                if self.lenient:
                    return m.group(0)
                self.error(
                    fpath,
                    'malformed "${" reference (unterminated or nested; write "$${" for a '
                    'literal "${")',
                    server=server,
                )
            result = self.resolve(fpath, body, server)
            if result is None:
                return m.group(0)
            if len(result) >= 4 and body not in _NOT_SECRET:
                self.secrets.add(result)
            return result

        return _REFERENCE.sub(replace, value)

    def resolve(self, fpath: JSONPath, body: str, server: str) -> str | None:
        """Return the value of one reference, ``None`` to keep it literally (lenient mode)."""
        if body in ("workspaceFolder", "workspaceFolderBasename"):
            if self.workspace_folder is None:
                return self.unavailable(
                    fpath,
                    f"${{{body}}} is not available (no workspace folder was given)",
                    server,
                )
            if body == "workspaceFolder":
                return self.workspace_folder
            return os.path.basename(self.workspace_folder.rstrip("/\\"))
        if body == "userHome":
            if self.user_home is None:
                return self.unavailable(
                    fpath, "${userHome} is not available (no home directory was given)", server
                )
            return self.user_home
        if body in ("pathSeparator", "/"):
            return os.sep
        if body.startswith("input:"):
            return self.input_value(fpath, body[len("input:") :], server)
        name, sep, default = body.partition(":-")
        explicit_env = name.startswith("env:")
        if explicit_env:
            name = name[len("env:") :]
            valid = bool(name) and "=" not in name and "\0" not in name
        else:
            valid = bool(_ENV_NAME.match(name))
        if not valid:
            shown = name if explicit_env else body.partition(":-")[0]
            self.error(
                fpath,
                f'unsupported reference "${{{"env:" if explicit_env else ""}{shown}}}" '
                "(supported: ${VAR}, ${VAR:-default}, ${env:VAR}, ${input:id}, "
                "${workspaceFolder}, ${userHome})",
                server=server,
            )
        current = self.environ.get(name)
        if sep:
            # Shell semantics of ":-": the default applies when unset *or empty*.
            return current if current else default
        if current is None:
            hint = f"${{{'env:' if explicit_env else ''}{name}:-default}}"
            message = f"environment variable {name} is not set (use {hint} for a default)"
            if self.deferred is not None and server and not self.lenient and self.collected_inputs is None:
                # require_all=False: this server fails, the others are still served.
                self.deferred.setdefault(server, self.problem(fpath, message, server=server))
                self.lenient = True
                return None
            return self.unavailable(fpath, message, server)
        return current

    def unavailable(self, fpath: JSONPath, message: str, server: str) -> str | None:
        if self.lenient or self.collected_inputs is not None:
            return None
        self.error(fpath, message, server=server)

    def input_value(self, fpath: JSONPath, input_id: str, server: str) -> str | None:
        if not input_id:
            self.error(fpath, 'empty input id in "${input:}"', server=server)
        if self.collected_inputs is not None:
            if input_id not in self.collected_inputs:
                self.collected_inputs.append(input_id)
            return None
        value = self.input_values.get(input_id)
        if value is None:
            spec = self.declared_inputs.get(input_id)
            if spec is not None and spec.default is not None:
                return spec.default
            if self.lenient:
                return None
            declared = "" if spec is not None else ' (it is not declared in "inputs")'
            self.error(
                fpath,
                f'input "{input_id}" has no value{declared}: the application must supply it '
                f"(see mcphost.config.required_inputs)",
                server=server,
            )
        return value

    def local_path(self, fpath: JSONPath, value: str, server: str) -> str:
        """Expand a path-valued field: references, a leading ``~``, relative to the file."""
        value = self.expand(fpath, value, server)
        if value == "~" or value.startswith(("~/", "~\\")):
            if self.user_home is None:
                if self.lenient:
                    return value
                self.error(fpath, '"~" used but no home directory was given', server=server)
            value = self.user_home + value[1:]
        if self.config_dir is not None and not _is_abs(value):
            value = os.path.normpath(os.path.join(self.config_dir, value))
        return value

    def root(self, fpath: JSONPath, raw: str, name: str) -> str:
        value = self.expand(fpath, raw, name)
        if self.lenient and "${" in value:
            return value
        if not value:
            self.error(fpath, "must not be empty", server=name)
        scheme = ""
        if "://" in value:
            import urllib.parse  # urllib.parse (with ipaddress, ~0.4 MB): loaded by a URL, not by every host

            scheme = urllib.parse.urlsplit(value).scheme
        if scheme:
            if scheme.lower() != "file":
                self.error(fpath, "roots must be file:// URIs or paths", server=name)
            return value
        if value == "~" or value.startswith(("~/", "~\\")):
            if self.user_home is None:
                self.error(fpath, '"~" used but no home directory was given', server=name)
            value = self.user_home + value[1:]
        if not _is_abs(value):
            if self.workspace_folder is None:
                self.error(
                    fpath,
                    "a relative root needs a workspace folder (or the config path)",
                    server=name,
                )
            value = os.path.join(self.workspace_folder, value)
            if not _is_abs(value):
                # The workspace folder itself is relative: keep a relative path.
                return os.path.normpath(value)
        return _path_to_uri(value)
