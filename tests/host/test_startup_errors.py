"""What a failed start says (mcphost/host/startup_errors.py), and the rules around it:
transports raise TransportError, not the host's ServerStartupError; the stderr tail is data."""

from __future__ import annotations

import ast
from pathlib import Path

import mcphost
from mcphost.errors import (
    ConnectionFault,
    ProtocolError,
    ServerStartupError,
    ServerUnavailableError,
    TransportError,
)
from mcphost.host.startup_errors import after_attempts, translate, unavailable_with_cause
from mcphost.transports.base import Gone, ProcessEnd

PACKAGE = Path(mcphost.__file__).parent


class Limits:
    cpu_seconds = None
    memory_bytes = 256 << 20
    open_files = None
    processes = None


def test_a_transport_error_keeps_its_words_and_says_if_another_try_may_work() -> None:
    busy = translate("a", TransportError("HTTP 503 Service Unavailable", server="a", http_status=503), [], None)
    assert isinstance(busy, ServerStartupError) and isinstance(busy, ConnectionFault)
    assert busy.message == "HTTP 503 Service Unavailable" and busy.transient
    refused = translate("a", TransportError("HTTP 401 Unauthorized", server="a", http_status=401), [], None)
    assert not refused.transient  # asking again is refused again
    assert translate("a", TransportError("cannot connect", os_error="connection refused"), [], None).transient


def test_an_exit_during_start_is_transient_and_its_tail_is_data() -> None:
    exited = ServerUnavailableError("server exited with code 3", server="a", exit_code=3, stderr_tail=["boom"])
    err = translate("a", exited, ["older line"], None)
    assert err.message == "server exited during start-up with code 3" and err.transient
    assert err.stderr_tail == ["boom"]
    assert str(err) == "a: server exited during start-up with code 3; last stderr lines:\n  boom"
    died = ServerUnavailableError("gone", server="a", exit_code=-9, stderr_tail=["MemoryError"])
    # Which limit is the transport's finding; the words are the host's.
    ended = Gone("server was killed by signal 9", process=ProcessEnd(-9, limit="memory"))
    assert "out of memory under its limit (256 MiB)" in translate("a", died, [], Limits(), ended).message
    assert "limit" not in translate("a", died, [], Limits(), Gone("gone", process=ProcessEnd(-9))).message


def test_a_wrong_answer_is_not_transient() -> None:
    err = translate("a", ProtocolError("bad initialize result", server="a"), ["x"], None)
    assert err.message == "start-up failed: bad initialize result" and not err.transient
    assert err.stderr_tail == ["x"]


def test_tries_are_counted_in_a_new_error_and_the_old_ones_are_left_alone() -> None:
    first = ServerStartupError("server exited during start-up with code 1", server="a", stderr_tail=["t"],
                               transient=True)
    last = ServerStartupError("not ready within its start-up timeout of 30 s", server="a", transient=True)
    err = after_attempts(last, [first, last], "its start budget of 60 s is spent")
    assert err is not last and last.message == "not ready within its start-up timeout of 30 s"
    assert err.message == ("not ready within its start-up timeout of 30 s (tried 2 times; before: server exited "
                           "during start-up with code 1; its start budget of 60 s is spent)")
    assert err.attempts == [first, last] and err.transient


def test_a_limit_cause_makes_a_new_error() -> None:
    gone = ServerUnavailableError("server was killed by signal 9", server="a", exit_code=-9,
                                  stderr_tail=["cannot allocate memory"])
    ended = Gone("server was killed by signal 9", process=ProcessEnd(-9, limit="memory"))
    told = unavailable_with_cause(gone, Limits(), ended)
    assert told is not gone and gone.message == "server was killed by signal 9"
    assert told.message == "server was killed by signal 9: out of memory under its limit (256 MiB)"
    assert unavailable_with_cause(gone, None, ended) is gone
    assert unavailable_with_cause(gone, Limits(), None) is gone  # a remote transport: no process


def test_transports_do_not_raise_the_hosts_start_error() -> None:
    for path in sorted((PACKAGE / "transports").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
        names |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for alias in node.names}
        assert "ServerStartupError" not in names, path.name


def test_the_stderr_tail_is_glued_nowhere_but_in_str() -> None:
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name != "errors.py":
            assert "last stderr lines:" not in path.read_text(encoding="utf-8"), path.relative_to(PACKAGE)
