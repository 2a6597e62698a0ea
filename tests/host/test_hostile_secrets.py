"""A server that quotes the host's credentials back (in a 401 body, in a JSON-RPC error)
cannot make them appear in anything the host writes: logs at DEBUG, exception texts, the
reprs of the configuration. The server is a stdlib HTTP server run here."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from mcphost import MCPHost, MCPHostError
from mcphost.config.model import ServerConfig
from mcphost.host.secrets import Redactor, header_secrets
from mcphost.policy import NO_RETRY

TOKEN = "tok-5e6f7a8b9c0d1e2f"
QUERY_TOKEN = "qt-11aa22bb33cc"
API_KEY = "ak-99zz88yy77xx"
SECRETS = (TOKEN, QUERY_TOKEN, API_KEY)


class Echoing(BaseHTTPRequestHandler):
    """Answers every POST by quoting what it was sent: the bearer token alone, the URL."""

    mode = "401"

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        token = (self.headers.get("Authorization") or "").rpartition(" ")[2]
        quoted = f"the token {token} is not valid for {self.path}"
        if self.mode == "401":
            data = quoted.encode()
            self.send_response(401)
            self.send_header("Content-Type", "text/plain")
        else:
            rid = json.loads(body).get("id")
            data = json.dumps({"jsonrpc": "2.0", "id": rid,
                               "error": {"code": -32001, "message": quoted, "data": {"token": token}}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self.send_response(405)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


@contextmanager
def echoing(mode: str) -> Iterator[int]:
    handler = type("Handler", (Echoing,), {"mode": mode})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def texts_of(exc: BaseException, done: set[int] | None = None) -> list[str]:
    """Every text an exception carries: its inner failures' and its chained causes' too
    (each once; a printed traceback shows them)."""
    done = set() if done is None else done
    if id(exc) in done:
        return []
    done.add(id(exc))
    out = [str(exc), repr(exc), *map(str, exc.args)]
    out.extend(getattr(exc, "stderr_tail", None) or [])
    inner = [*(getattr(exc, "failures", None) or {}).values(), *(getattr(exc, "attempts", None) or ()),
             *(e for e in (exc.__cause__, exc.__context__) if e is not None)]
    for other in inner:
        out.extend(texts_of(other, done))
    return out


@pytest.mark.parametrize("mode", ["401", "rpc"])
async def test_a_server_quoting_the_token_shows_it_nowhere(mode: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    seen: list[str] = []
    with echoing(mode) as port:
        cfg = {"mcpServers": {"r": {
            "type": "http", "timeout": 10,
            "url": f"http://127.0.0.1:{port}/mcp?token={QUERY_TOKEN}&api_key={API_KEY}&page=1",
            "headers": {"Authorization": f"Bearer {TOKEN}"},
        }}}
        host = MCPHost(cfg, retry=NO_RETRY, shutdown_timeout=2)
        with pytest.raises(MCPHostError) as info:
            await host.initialize()
        seen.extend(texts_of(info.value))
        seen.append(repr(host.config))
        seen.append(str(host.config))
        seen.append(repr(host.config.servers["r"]))
        await host.shutdown()
    seen.append(caplog.text)
    everything = "\n".join(seen)
    assert "the token *** is not valid" in everything  # the server's text is there, masked
    assert "page=1" in everything  # what is not a credential stays
    for secret in SECRETS:
        assert secret not in everything


def test_reprs_of_configuration_hide_env_headers_and_url_credentials() -> None:
    server = ServerConfig(
        "s", "http", url=f"https://user:{TOKEN}@x.example/mcp?access_token={QUERY_TOKEN}&sig={API_KEY}",
        env={"API_KEY": API_KEY}, headers={"X-Api-Key": TOKEN}, args=(f"--endpoint=https://x/?key={API_KEY}",),
    )
    for text in (repr(server), str(server)):
        assert "user:***@x.example" in text and "access_token=***" in text and "sig=***" in text
        for secret in SECRETS:
            assert secret not in text


def test_header_tokens_and_basic_passwords_are_secrets() -> None:
    assert header_secrets(f"Bearer {TOKEN}") == [f"Bearer {TOKEN}", TOKEN]
    # "user:pa55word" in base64
    assert header_secrets("Basic dXNlcjpwYTU1d29yZA==")[-2:] == ["user:pa55word", "pa55word"]
    assert header_secrets(TOKEN) == [TOKEN]  # a bare value is the secret itself


def test_redactor_masks_tracebacks_and_any_url_credentials(caplog: pytest.LogCaptureFixture) -> None:
    redactor = Redactor()
    redactor.add([TOKEN])
    logger = logging.getLogger("mcphost.test.hostile")
    logger.addFilter(redactor)
    try:
        with caplog.at_level(logging.DEBUG, logger="mcphost"):
            try:
                raise ValueError(f"failed with {TOKEN}")
            except ValueError:
                logger.exception("while calling https://h/x?key=%s", API_KEY)
            logger.debug("to https://bob:%s@h/x", QUERY_TOKEN)
    finally:
        logger.removeFilter(redactor)
    text = caplog.text
    assert "failed with ***" in text and "key=***" in text and "bob:***@h" in text
    for secret in SECRETS:
        assert secret not in text


def test_redactor_cleans_chained_causes() -> None:
    redactor = Redactor()
    redactor.add([TOKEN])
    try:
        try:
            raise ValueError(f"inner {TOKEN}")
        except ValueError as inner:
            raise MCPHostError(f"outer {TOKEN}") from inner
    except MCPHostError as exc:
        cleaned = redactor.error(exc)
    assert str(cleaned) == "outer ***" and str(cleaned.__cause__) == "inner ***"
