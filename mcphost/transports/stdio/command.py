"""What a stdio server runs: its command, found on the child's PATH, and its environment.

Layer 2, the stdio room. Commands run without a shell (arguments are never interpreted);
the child inherits only an allow-list of the parent's environment plus its own ``env``
(DESIGN §3). The package runners (``npx``, ``uvx``...) are recognised here too: their first
start may download the server, which the host allows more time for.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from typing import Final

from ...errors import ConfigurationError

__all__ = ["ENV_ALLOWLIST", "child_environment", "is_package_runner", "resolve_command"]

logger = logging.getLogger("mcphost.transports.stdio.command")

# DESIGN §3: a child inherits only these, plus its own env. Beyond the basics: what makes
# package runners (npx, uvx) and TLS work behind a proxy or a private CA, and the
# per-user folders they keep caches in.
ENV_ALLOWLIST: Final = (
    ("APPDATA", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATH", "PATHEXT", "PROCESSOR_ARCHITECTURE",
     "SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "TMP", "USERNAME", "USERPROFILE", "COMSPEC")
    if sys.platform == "win32"
    else ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR")
) + (
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy",
    "all_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE", "PYTHONUTF8",
)
#: Variables passed on by prefix: the package runners' own settings (npm's registry and
#: proxy, uv's and pip's index URL, trusted host, certificate: uvx, pipx and npx start most
#: servers and must reach a private index); XDG folders.
ENV_PREFIXES: Final = ("npm_config_", "NPM_CONFIG_", "UV_", "PIP_", "PIPX_", "XDG_")


def child_environment(
    parent: Mapping[str, str], own: Mapping[str, str], *, inherit: bool = False, name: str = ""
) -> dict[str, str]:
    """The environment of a child: the allow-listed parent variables (every one with
    ``inherit``), then ``own``. The names left out are logged once per call at DEBUG."""
    if inherit:
        env = dict(parent)
    else:
        env = {key: parent[key] for key in ENV_ALLOWLIST if key in parent}
        env.update((k, v) for k, v in parent.items() if k.startswith(ENV_PREFIXES))
        if logger.isEnabledFor(logging.DEBUG):
            dropped = sorted(k for k in parent if k not in env)
            if dropped:
                # Names only: values may be secrets.
                logger.debug("%s: not passed to the server: %s", name or "server", ", ".join(dropped))
    env.update(own)
    return env


def resolve_command(command: str, env: Mapping[str, str], cwd: str | None) -> str:
    """Find the executable the way the child's PATH would, or raise ConfigurationError.

    Commands run without a shell: ``"npx -y pkg /tmp"`` is one (missing) program, not four
    words; when that is what is wrong, the error says where the arguments go."""
    try:
        return _resolve(command, env, cwd)
    except ConfigurationError:
        first, _, rest = command.strip().partition(" ")
        if rest and shutil.which(first, path=env.get("PATH", os.defpath)) is not None:
            raise ConfigurationError(
                f'command {os.path.basename(first)!r} is followed by its arguments in "command": '
                'put them in "args" (commands run without a shell)'
            ) from None
        raise


def _resolve(command: str, env: Mapping[str, str], cwd: str | None) -> str:
    if os.sep in command or (os.altsep and os.altsep in command):
        path = command if os.path.isabs(command) or cwd is None else os.path.join(cwd, command)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return command
        raise ConfigurationError(f"command {os.path.basename(command)!r} not found or not executable")
    found = shutil.which(command, path=env.get("PATH", os.defpath))
    if found is None:
        raise ConfigurationError(f"command {command!r} not found on PATH")
    return found


_RUNNERS: Final = frozenset({"npx", "uvx", "pipx", "bunx", "pnpx", "dlx"})


def is_package_runner(command: str | None, args: Sequence[str] = ()) -> bool:
    """Is ``command`` a package runner that may download the server before it starts
    (``npx -y pkg``, ``uvx pkg``, ``npm exec``...)?"""
    if not isinstance(command, str):
        return False
    name = os.path.basename(command).lower().removesuffix(".cmd").removesuffix(".exe")
    return name in _RUNNERS or (name in ("npm", "pnpm", "yarn") and bool(args) and args[0] in ("exec", "dlx"))
