"""FileTokenStore: one private file per server and issuer, written atomically, shared by hosts."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import stat
import sys
from pathlib import Path

import pytest

from mcphost.auth.filestore import FileTokenStore, default_directory
from mcphost.auth.store import ClientInfo, Credentials, Tokens, TokenStore
from mcphost.errors import ConfigurationError, UsageError

ISSUER = "https://auth.example.com/tenant"


def creds(server: str = "notes", issuer: str = ISSUER, access: str = "at-secret-1",
          refresh: str | None = "rt-secret-1") -> Credentials:
    return Credentials(server, issuer, "https://mcp.example.com/mcp",
                       ClientInfo("client-1", "cs-secret-1", "client_secret_basic", "http://127.0.0.1:5/cb"),
                       Tokens(access, refresh_token=refresh, expires_at=1_900_000_000.0, scope="read"))


async def test_round_trip_and_the_interface(tmp_path: Path) -> None:
    store = FileTokenStore(tmp_path / "tokens")
    assert isinstance(store, TokenStore)
    assert await store.get("notes") is None and await store.list() == []
    await store.put(creds())
    assert await store.get("notes", ISSUER) == creds()
    assert await store.get("notes") == creds()
    assert await store.get("notes", "https://other.example") is None
    assert await store.get("other") is None
    await store.delete("notes", ISSUER)
    assert await store.get("notes") is None
    await store.delete("notes")  # nothing left: no error


async def test_one_file_per_server_and_issuer_newest_first(tmp_path: Path) -> None:
    store = FileTokenStore(tmp_path)
    await store.put(creds(issuer="https://a.example"))
    await store.put(creds(issuer="https://b.example", access="at-b"))
    await store.put(creds(server="docs"))
    files = sorted(p.name for p in tmp_path.iterdir())
    assert len(files) == 3 and all(n.endswith(".json") for n in files)
    assert sum(n.startswith("notes.") for n in files) == 2
    os.utime(store.path_of("notes", "https://a.example"), ns=(1, 1))  # b is the newer
    got = await store.get("notes")
    assert got is not None and got.issuer == "https://b.example"
    assert [(c.server, c.issuer) for c in await store.list()] == [
        ("docs", ISSUER), ("notes", "https://a.example"), ("notes", "https://b.example")]
    await store.delete("notes")
    assert [c.server for c in await store.list()] == ["docs"]


@pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")
async def test_private_modes_and_no_temporary_file_left(tmp_path: Path) -> None:
    old = os.umask(0)  # even a permissive umask gives a private file
    try:
        store = FileTokenStore(tmp_path / "deep" / "tokens")
        await store.put(creds())
        await store.put(creds(access="at-secret-2"))
    finally:
        os.umask(old)
    path = store.path_of("notes", ISSUER)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert [p.name for p in path.parent.iterdir()] == [path.name]
    assert json.loads(path.read_text())["tokens"]["access_token"] == "at-secret-2"


async def test_a_rotated_refresh_token_is_what_another_store_reads(tmp_path: Path) -> None:
    first, second = FileTokenStore(tmp_path), FileTokenStore(tmp_path)
    await first.put(creds())
    seen = await second.get("notes")
    assert seen is not None and seen.tokens is not None and seen.tokens.refresh_token == "rt-secret-1"
    await first.put(creds(access="at-secret-2", refresh="rt-secret-2"))
    seen = await second.get("notes", ISSUER)
    assert seen is not None and seen.tokens is not None and seen.tokens.refresh_token == "rt-secret-2"


WRITER = """
import asyncio, sys
from mcphost.auth.filestore import FileTokenStore
from mcphost.auth.store import ClientInfo, Credentials, Tokens
async def main():
    store = FileTokenStore(sys.argv[1])
    for i in range(int(sys.argv[3])):
        token = sys.argv[2] + "-" + str(i) + "-" + "x" * 2000   # large enough to need several writes
        await store.put(Credentials("notes", "https://auth.example.com/tenant", "https://mcp.example.com/mcp",
                                    ClientInfo("client-1"), Tokens(token, refresh_token=token)))
asyncio.run(main())
"""


async def test_two_processes_writing_never_tear_a_file(tmp_path: Path) -> None:
    root = str(Path(__file__).resolve().parent.parent.parent)
    env = {**os.environ, "PYTHONPATH": root}
    procs = [await asyncio.create_subprocess_exec(sys.executable, "-c", WRITER, str(tmp_path), name, "150", env=env)
             for name in ("one", "two")]
    store = FileTokenStore(tmp_path)
    done = [asyncio.ensure_future(p.wait()) for p in procs]
    reads = 0
    try:
        while not all(d.done() for d in done):
            got = await store.get("notes", ISSUER)
            if got is not None:  # a reader sees a whole file or none yet
                assert got.tokens is not None and got.tokens.access_token == got.tokens.refresh_token
                assert got.tokens.access_token.startswith(("one-", "two-"))
                reads += 1
            await asyncio.sleep(0)  # let the writers' watchers run
    finally:
        for p in procs:
            if p.returncode is None:
                p.kill()
        await asyncio.gather(*done)
    assert [p.returncode for p in procs] == [0, 0]
    last = await store.get("notes")
    assert last is not None and last.tokens is not None and last.tokens.access_token.split("-")[1] == "149"
    assert [p.name for p in tmp_path.iterdir()] == [store.path_of("notes", ISSUER).name]


async def test_a_damaged_file_is_ignored_and_its_text_never_logged(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = FileTokenStore(tmp_path)
    await store.put(creds())
    path = store.path_of("notes", ISSUER)
    path.write_text('{"server": "notes", "tokens": {"access_token": "at-torn-secret"')
    with caplog.at_level(logging.DEBUG, logger="mcphost"):
        assert await store.get("notes") is None
        assert await store.list() == []
        path.write_text(json.dumps({**creds().to_json(), "server": "docs"}))  # moved by hand
        assert await store.get("notes", ISSUER) is None
        path.write_bytes(b"x" * 300_000)
        assert await store.get("notes", ISSUER) is None
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert path.name in text and "secret-" not in text


async def test_bad_names_and_an_unwritable_directory_are_clear_errors(tmp_path: Path) -> None:
    store = FileTokenStore(tmp_path)
    for bad in ("../etc", "a/b", "", "a.b", "1x"):
        with pytest.raises(UsageError, match="not a server name"):
            await store.put(creds(server=bad))
    (tmp_path / "file").write_text("")
    blocked = FileTokenStore(tmp_path / "file" / "tokens")
    with pytest.raises(ConfigurationError, match="cannot write the token file") as info:
        await blocked.put(creds())
    assert "secret-" not in str(info.value) and str(tmp_path) not in str(info.value)
    assert await blocked.get("notes") is None and await blocked.list() == []


async def test_repr_names_the_directory_only(tmp_path: Path) -> None:
    store = FileTokenStore(tmp_path)
    await store.put(creds())
    assert "secret-" not in repr(store) + repr(await store.get("notes"))


def test_default_directory() -> None:
    assert default_directory({"XDG_CONFIG_HOME": "/x/conf"}, "/home/u") == Path("/x/conf/mcphost/tokens")
    assert default_directory({}, "/home/u") == Path("/home/u/.config/mcphost/tokens")
    # A relative XDG_CONFIG_HOME is invalid (XDG Base Directory): ignored.
    assert default_directory({"XDG_CONFIG_HOME": "conf"}, "/home/u") == Path("/home/u/.config/mcphost/tokens")
    assert default_directory({"APPDATA": "C:/Users/u/AppData/Roaming"}, "C:/Users/u", windows=True) == \
        Path("C:/Users/u/AppData/Roaming/mcphost/tokens")
