"""A :class:`~mcphost.auth.store.TokenStore` that keeps each login in a file: ``FileTokenStore``.

One file per server and authorization server (``<server>.<hash of the issuer>.json``) in
one directory, so a login survives the process and is shared by every host (and the
``mcphost auth`` commands) pointed at the same directory. What it promises:

- **private**: the directory is made ``0700`` and each file ``0600`` (POSIX; Windows keeps
  the user's profile ACLs). A file is created with that mode, never widened afterwards.
- **never torn**: a file is written whole to a temporary file in the same directory,
  flushed to disk (``fsync``), then renamed over the old one (``os.replace`` is atomic),
  and the directory is synced. A reader sees the old file or the new one.
- **shared**: two hosts (two processes) may use one directory at once. The last writer
  wins; nothing is cached, so a refresh token one host rotated is what the other reads
  next.
- **never logged**: no token reaches a log line or a ``repr()``; a file that cannot be
  read is logged by its name and the reason only, and treated as absent.

The directory is given (layer 1 reads no environment): :func:`default_directory` computes
the usual one from an environment and a home directory handed to it
(``$XDG_CONFIG_HOME/mcphost/tokens``, else ``~/.config/mcphost/tokens``; on Windows
``%APPDATA%\\mcphost\\tokens``). File I/O here is synchronous: files are a few hundred
bytes, written once per login or refresh.
"""

from __future__ import annotations

import builtins
import contextlib
import hashlib
import json
import logging
import os
import secrets
from collections.abc import Mapping
from pathlib import Path

from ..errors import ConfigurationError, UsageError
from .store import Credentials

__all__ = ["MAX_FILE_SIZE", "FileTokenStore", "default_directory"]

logger = logging.getLogger("mcphost.auth.filestore")

#: A credentials file larger than this is not read (ours are well under 4 KiB).
MAX_FILE_SIZE = 256 * 1024
_SUFFIX = ".json"
# The class defines a method named ``list`` (the TokenStore interface): its annotations
# name these instead of the builtin.
_Paths = list[Path]
_TMP_PREFIX = ".tmp-"


def default_directory(environ: Mapping[str, str], home: str | os.PathLike[str], *,
                      windows: bool = False) -> Path:
    """Where tokens are kept unless told otherwise, from ``environ`` and the user's ``home``."""
    if windows and environ.get("APPDATA"):
        return Path(environ["APPDATA"]) / "mcphost" / "tokens"
    base = environ.get("XDG_CONFIG_HOME", "")
    # XDG Base Directory: a relative value is invalid and is ignored.
    config = Path(base) if base and os.path.isabs(base) else Path(home) / ".config"
    return config / "mcphost" / "tokens"


def _issuer_key(issuer: str) -> str:
    return hashlib.sha256(issuer.encode("utf-8")).hexdigest()[:24]


class FileTokenStore:
    """Credentials kept in ``directory``, one file per server and issuer (see the module)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    def __repr__(self) -> str:
        return f"FileTokenStore({str(self.directory)!r})"

    # -- the TokenStore interface -----------------------------------------------------------

    async def get(self, server: str, issuer: str | None = None) -> Credentials | None:
        if issuer is not None:
            return self._read(self.path_of(server, issuer), server)
        # "saved last": the newest file of this server that reads as its credentials.
        found: builtins.list[tuple[int, Credentials]] = []
        for path in self._files(server):
            credentials = self._read(path, server)
            with contextlib.suppress(OSError):
                if credentials is not None:
                    found.append((path.stat().st_mtime_ns, credentials))
        return max(found, key=lambda item: item[0])[1] if found else None

    async def put(self, credentials: Credentials) -> None:
        _check_name(credentials.server)
        data = json.dumps(credentials.to_json(), indent=2, sort_keys=True).encode("utf-8")
        path = self.path_of(credentials.server, credentials.issuer)
        try:
            self._write(path, data)
        except OSError as exc:
            raise ConfigurationError(f"cannot write the token file {path.name} in the token directory: "
                                     f"{exc.strerror or type(exc).__name__}", server=credentials.server) from None
        logger.debug("saved the credentials of %s (issuer %s)", credentials.server, credentials.issuer)

    async def delete(self, server: str, issuer: str | None = None) -> None:
        paths = [self.path_of(server, issuer)] if issuer is not None else self._files(server)
        for path in paths:
            try:
                path.unlink()
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise ConfigurationError(f"cannot delete the token file {path.name}: "
                                         f"{exc.strerror or type(exc).__name__}", server=server) from None
            logger.debug("deleted %s", path.name)

    async def list(self) -> builtins.list[Credentials]:
        out = []
        for path in self._all_files():
            credentials = self._read(path, path.name.split(".", 1)[0])
            if credentials is not None:
                out.append(credentials)
        return sorted(out, key=lambda c: (c.server, c.issuer))

    def servers(self) -> builtins.list[str]:
        """The names of the servers something is kept for (from the file names alone)."""
        return sorted({p.name.split(".", 1)[0] for p in self._all_files()})

    # -- files ------------------------------------------------------------------------------

    def path_of(self, server: str, issuer: str) -> Path:
        """The file of ``server``'s credentials with ``issuer``."""
        _check_name(server)
        return self.directory / f"{server}.{_issuer_key(issuer)}{_SUFFIX}"

    def _all_files(self) -> _Paths:
        try:
            names = sorted(os.listdir(self.directory))
        except FileNotFoundError:
            return []
        except OSError as exc:
            logger.warning("cannot list the token directory: %s", exc.strerror or type(exc).__name__)
            return []
        return [self.directory / n for n in names if n.endswith(_SUFFIX) and not n.startswith(_TMP_PREFIX)]

    def _files(self, server: str) -> _Paths:
        _check_name(server)
        return [p for p in self._all_files() if p.name.split(".", 1)[0] == server]

    def _read(self, path: Path, server: str) -> Credentials | None:
        try:
            with open(path, "rb") as fh:
                raw = fh.read(MAX_FILE_SIZE + 1)
        except FileNotFoundError:
            return None
        except OSError as exc:
            logger.warning("cannot read the credentials file %s: %s", path.name, exc.strerror or type(exc).__name__)
            return None
        try:
            if len(raw) > MAX_FILE_SIZE:
                raise ValueError(f"larger than {MAX_FILE_SIZE} bytes")
            credentials = Credentials.from_json(json.loads(raw))
            if credentials.server != server or path.name != self.path_of(server, credentials.issuer).name:
                raise ValueError("it names another server or issuer than its file name")
        except (ValueError, UnicodeDecodeError) as exc:
            # The reason only: a JSON error message could quote the file's text.
            reason = str(exc) if not isinstance(exc, json.JSONDecodeError) else "not JSON"
            logger.warning("ignoring the credentials file %s: %s", path.name, reason)
            return None
        return credentials

    def _write(self, path: Path, data: bytes) -> None:
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = self.directory / f"{_TMP_PREFIX}{path.name}.{secrets.token_hex(6)}"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0) | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(tmp, flags, 0o600)
        try:
            with open(fd, "wb", closefd=True) as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        _sync_directory(self.directory)


def _check_name(server: str) -> None:
    # Server names are ^[A-Za-z][A-Za-z0-9_-]*$ (config): never a path, never a dot.
    if not server or not server[0].isascii() or not server[0].isalpha() or \
            not all(c.isascii() and (c.isalnum() or c in "_-") for c in server):
        raise UsageError(f"token store: not a server name: {server!r}")


def _sync_directory(directory: Path) -> None:
    """Make the rename durable (POSIX; a directory cannot be opened on Windows)."""
    if os.name != "posix":
        return
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)
