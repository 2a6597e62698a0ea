"""What a stdio server runs: its command, found on the child's PATH, and its environment.

Layer 2, the stdio room. Commands run without a shell (arguments are never interpreted);
the child inherits only an allow-list of the parent's environment plus its own ``env``
(DESIGN §3). The package runners (``npx``, ``uvx``...) are recognised here too: their first
start may download the server, which the host allows more time for.

On Windows (:func:`command_line` with ``windows=True``, tested on any system) a command is
found the way Windows finds it: on the child's ``PATH`` with each extension of its
``PATHEXT`` (``npx`` is ``npx.cmd``). A ``.cmd`` or ``.bat`` file runs through ``cmd.exe``,
which would interpret ``&``, ``|``, ``%``... in its arguments (CVE-2024-24576, "BatBadBut"):
npm's own shims (``npx.cmd``, ``npm.cmd``) are skipped, their script run by the ``node.exe``
beside them; for any other batch file an argument holding one of those characters is
refused (:class:`~mcphost.errors.ConfigurationError`), never passed.
"""

from __future__ import annotations

import logging
import ntpath
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Final

from ...errors import ConfigurationError

__all__ = ["ENV_ALLOWLIST", "child_environment", "command_line", "is_package_runner", "resolve_command"]

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
        if rest and _which()(first, path=env.get("PATH", os.defpath)) is not None:
            raise ConfigurationError(
                f'command {os.path.basename(first)!r} is followed by its arguments in "command": '
                'put them in "args" (commands run without a shell)'
            ) from None
        raise


def _which() -> Callable[..., str | None]:
    """``shutil.which``, imported when a command is looked up on PATH: shutil brings bz2 and
    lzma with their libraries (about half a megabyte resident), which a host whose commands
    are given by their path never needs."""
    import shutil

    return shutil.which


def _resolve(command: str, env: Mapping[str, str], cwd: str | None) -> str:
    if os.sep in command or (os.altsep and os.altsep in command):
        path = command if os.path.isabs(command) or cwd is None else os.path.join(cwd, command)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return command
        raise ConfigurationError(f"command {os.path.basename(command)!r} not found or not executable")
    found = _which()(command, path=env.get("PATH", os.defpath))
    if found is None:
        raise ConfigurationError(f"command {command!r} not found on PATH")
    return found


def command_line(
    command: str,
    args: Sequence[str],
    env: Mapping[str, str],
    cwd: str | None,
    *,
    windows: bool = sys.platform == "win32",
    isfile: Callable[[str], bool] = os.path.isfile,
) -> list[str]:
    """The program and arguments to run for ``command args`` (raises ConfigurationError)."""
    if not windows:
        return [resolve_command(command, env, cwd), *args]
    program = _find_windows(command, env, cwd, isfile)
    if program.lower().endswith((".cmd", ".bat")):
        runner = _npm_script(program, isfile)
        return [*runner, *args] if runner else [program, *_batch_safe(args)]
    return [program, *args]


#: Extensions Windows tries when ``PATHEXT`` is not set.
_PATHEXT: Final = ".COM;.EXE;.BAT;.CMD"
#: Characters cmd.exe interprets in a batch file's arguments.
_CMD_SPECIAL: Final = frozenset('"%^&|<>!()\r\n')


def _env_value(env: Mapping[str, str], name: str) -> str | None:
    for key, value in env.items():  # Windows names are case-insensitive (Path, PATH)
        if key.upper() == name:
            return value
    return None


def _find_windows(command: str, env: Mapping[str, str], cwd: str | None, isfile: Callable[[str], bool]) -> str:
    exts = [e for e in (_env_value(env, "PATHEXT") or _PATHEXT).split(";") if e]

    def candidates(base: str) -> list[str]:
        if any(base.lower().endswith(e.lower()) for e in exts):
            return [base]  # an extension given: that file only
        return [base + e for e in exts]

    if "\\" in command or "/" in command:
        base = command if ntpath.isabs(command) or cwd is None else ntpath.join(cwd, command)
        for path in candidates(base):
            if isfile(path):
                return path
        raise ConfigurationError(f"command {ntpath.basename(command)!r} not found")
    for folder in (_env_value(env, "PATH") or "").split(";"):
        folder = folder.strip().strip('"')
        if not folder:
            continue
        for path in candidates(ntpath.join(folder, command)):
            if isfile(path):
                return path
    raise ConfigurationError(f"command {command!r} not found on PATH (with PATHEXT)")


def _npm_script(program: str, isfile: Callable[[str], bool]) -> list[str]:
    """npm's shims (``npx.cmd``, ``npm.cmd``) as the ``node.exe`` and script they start
    (no cmd.exe); empty for any other batch file."""
    folder, name = ntpath.split(program)
    stem = name.rsplit(".", 1)[0].lower()
    if stem in ("npx", "npm"):
        node = ntpath.join(folder, "node.exe")
        script = ntpath.join(folder, "node_modules", "npm", "bin", f"{stem}-cli.js")
        if isfile(node) and isfile(script):
            return [node, script]
    return []


def _batch_safe(args: Sequence[str]) -> list[str]:
    for index, arg in enumerate(args):
        bad = sorted(_CMD_SPECIAL.intersection(arg))
        if bad:
            raise ConfigurationError(
                f"args[{index}] holds {' '.join(repr(c) for c in bad)}, which cmd.exe would interpret: "
                "a .cmd or .bat command cannot be given it safely (run the program it starts instead)"
            )
    return list(args)


_RUNNERS: Final = frozenset({"npx", "uvx", "pipx", "bunx", "pnpx", "dlx"})


def is_package_runner(command: str | None, args: Sequence[str] = ()) -> bool:
    """Is ``command`` a package runner that may download the server before it starts
    (``npx -y pkg``, ``uvx pkg``, ``npm exec``...)?"""
    if not isinstance(command, str):
        return False
    name = os.path.basename(command).lower().removesuffix(".cmd").removesuffix(".exe")
    return name in _RUNNERS or (name in ("npm", "pnpm", "yarn") and bool(args) and args[0] in ("exec", "dlx"))
