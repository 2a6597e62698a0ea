"""The JSON-RPC peer over an in-memory transport: correlation, errors, serving, ends."""

from __future__ import annotations

import asyncio
import json
from typing import Any, ClassVar

import pytest
from fakeclock import FakeClock
from helpers import wait_for

from mcphost._json import dumps
from mcphost.errors import (
    ProtocolError,
    ServerError,
    ServerUnavailableError,
    TimeoutError,
    UsageError,
)
from mcphost.rpc.peer import Call, Peer
from mcphost.transports.base import Gone
from mcphost.transports.memory import MemoryTransport, memory_pair


class Other:
    """The far end, driven by the test: records what arrives, sends what it is told."""

    def __init__(self, end: MemoryTransport) -> None:
        self.end = end
        self.received: list[Any] = []
        self.arrived = asyncio.Event()
        self.gone: Gone | None = None
        end.set_receiver(self)

    def on_messages(self, messages: list[Any]) -> None:
        self.received.extend(messages)
        self.arrived.set()

    def on_undeliverable(self, request_id: Any, reason: str) -> None:
        raise AssertionError(reason)

    def on_gone(self, gone: Gone) -> None:
        self.gone = gone

    async def next(self) -> Any:
        while not self.received:
            self.arrived.clear()
            await asyncio.wait_for(self.arrived.wait(), 5)
        return self.received.pop(0)

    def send(self, msg: Any) -> None:
        self.end.send(dumps(msg))


async def pair(**kwargs: Any) -> tuple[Peer, Other]:
    a, b = memory_pair()
    peer = Peer("srv", a, **kwargs)
    peer.start()
    return peer, Other(b)


async def test_request_and_response_are_correlated_out_of_order() -> None:
    peer, other = await pair()
    first = asyncio.ensure_future(peer.request("m", {"n": 1}))
    second = asyncio.ensure_future(peer.request("m", {"n": 2}))
    r1, r2 = await other.next(), await other.next()
    assert r1["params"] == {"n": 1} and r2["params"] == {"n": 2} and r1["id"] != r2["id"]
    other.send({"jsonrpc": "2.0", "id": r2["id"], "result": {"v": 2}})
    other.send({"jsonrpc": "2.0", "id": r1["id"], "result": {"v": 1}})
    assert await first == {"v": 1}
    assert await second == {"v": 2}
    assert peer.pending == 0 and peer.stats.requests == 2


async def test_error_response_raises_server_error() -> None:
    peer, other = await pair()
    call = asyncio.ensure_future(peer.request("m"))
    req = await other.next()
    other.send({"jsonrpc": "2.0", "id": req["id"], "error": {"code": -32001, "message": "nope", "data": [1]}})
    with pytest.raises(ServerError) as info:
        await call
    assert (info.value.code, info.value.data) == (-32001, [1])
    assert "m failed: nope" in str(info.value)


async def test_unencodable_params_are_the_callers_mistake() -> None:
    peer, _ = await pair()
    with pytest.raises(UsageError, match="not JSON-serialisable"):
        await peer.request("m", {"x": object()})
    assert peer.pending == 0


async def test_timeout_gives_up_and_tells_the_owner() -> None:
    abandoned: list[tuple[str, str]] = []
    peer, other = await pair(on_abandoned=lambda call, why: abandoned.append((call.method, why)))
    with pytest.raises(TimeoutError, match="timed out after 0.05 s"):
        await peer.request("slow", timeout=0.05)
    assert abandoned == [("slow", "request timed out")]
    assert peer.pending == 0 and peer.stats.timeouts == 1
    # A late answer is ignored.
    req = await other.next()
    other.send({"jsonrpc": "2.0", "id": req["id"], "result": {}})
    other.send({"jsonrpc": "2.0", "method": "sync"})
    assert await wait_for(lambda: peer.stats.notifications == 1)
    assert peer.stats.protocol_errors == 0


async def test_cancelled_caller_abandons_the_call() -> None:
    abandoned: list[str] = []
    peer, other = await pair(on_abandoned=lambda call, why: abandoned.append(why))
    task = asyncio.ensure_future(peer.request("m"))
    await other.next()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert abandoned == ["request cancelled by the client"] and peer.pending == 0


async def test_progress_token_is_tagged_and_the_call_found_by_it() -> None:
    def tag(params: dict[str, Any] | None, token: Any, owned: bool) -> dict[str, Any]:
        return {**(params or {}), "token": token}

    peer, other = await pair(tag_progress=tag)
    seen: list[Any] = []
    task = asyncio.ensure_future(peer.request("m", {"a": 1}, progress=seen.append))
    req = await other.next()
    assert req["params"] == {"a": 1, "token": req["id"]}
    call = peer.progress_calls.get(req["id"])
    assert isinstance(call, Call) and call.progress is not None
    other.send({"jsonrpc": "2.0", "id": req["id"], "result": {}})
    await task
    assert req["id"] not in peer.progress_calls


async def test_a_registered_notification_handler_takes_its_method() -> None:
    notes: list[tuple[str, Any]] = []
    direct: list[Any] = []
    peer, other = await pair(on_notification=lambda m, p: notes.append((m, p)))
    peer.notification_handlers["fast"] = direct.append
    other.send({"jsonrpc": "2.0", "method": "fast", "params": {"n": 1}})
    other.send([{"jsonrpc": "2.0", "method": "fast", "params": {"n": 2}},  # a batch: the long path
                {"jsonrpc": "2.0", "method": "other"}])
    other.send({"jsonrpc": "2.0", "method": "other", "params": {"n": 3}})
    assert await wait_for(lambda: len(notes) == 2)
    assert direct == [{"n": 1}, {"n": 2}]
    assert notes == [("other", None), ("other", {"n": 3})]
    assert peer.stats.notifications == 4


async def test_notifications_and_requests_go_to_the_owner() -> None:
    notes: list[tuple[str, Any]] = []
    requests: list[tuple[Any, str, Any]] = []
    peer, other = await pair(
        on_notification=lambda m, p: notes.append((m, p)),
        on_request=lambda rid, m, p: requests.append((rid, m, p)),
    )
    other.send({"jsonrpc": "2.0", "method": "note", "params": {"x": 1}})
    other.send({"jsonrpc": "2.0", "id": "r1", "method": "ask", "params": {}})
    assert await wait_for(lambda: len(requests) == 1)
    assert notes == [("note", {"x": 1})]
    assert requests == [("r1", "ask", {})]
    peer.respond("r1", {"ok": True})
    assert await other.next() == {"jsonrpc": "2.0", "id": "r1", "result": {"ok": True}}


async def test_serve_answers_in_a_task_and_maps_exceptions() -> None:
    peer, other = await pair()

    class Refused(Exception):
        code = -32042
        message = "refused"
        data: ClassVar[dict[str, str]] = {"why": "policy"}

    async def fine() -> Any:
        return {"v": 1}

    async def bad() -> Any:
        raise Refused

    async def crash() -> Any:
        raise RuntimeError("boom")

    peer.serve(1, fine())
    peer.serve(2, bad())
    peer.serve(3, crash())
    got = {m["id"]: m for m in [await other.next() for _ in range(3)]}
    assert got[1]["result"] == {"v": 1}
    assert got[2]["error"] == {"code": -32042, "message": "refused", "data": {"why": "policy"}}
    assert got[3]["error"]["code"] == -32603 and got[3]["error"]["message"] == "boom"


async def test_cancelled_served_request_sends_nothing() -> None:
    peer, other = await pair()
    started = asyncio.Event()

    async def slow() -> Any:
        started.set()
        await asyncio.sleep(30)

    peer.serve(7, slow())
    await started.wait()
    peer.cancel_served(7)
    peer.cancel_served(["not", "hashable"])
    peer.respond(8, {})
    assert (await other.next())["id"] == 8  # nothing was sent for 7


async def test_unencodable_result_becomes_an_internal_error() -> None:
    peer, other = await pair()
    peer.respond(1, {"x": object()})
    reply = await other.next()
    assert reply["error"]["code"] == -32603 and "not serialisable" in reply["error"]["message"]


async def test_bad_messages_are_counted_not_fatal() -> None:
    peer, other = await pair()
    other.send({"jsonrpc": "1.0", "id": 1, "result": {}})
    other.send([])  # an empty batch
    other.send({"jsonrpc": "2.0", "id": [1], "result": {}})
    call = asyncio.ensure_future(peer.request("m"))
    req = await other.next()
    other.send([{"jsonrpc": "2.0", "id": req["id"], "result": {"in": "batch"}}])
    assert await call == {"in": "batch"}
    assert peer.stats.protocol_errors == 3


async def test_a_request_with_params_not_an_object_is_answered_invalid_params() -> None:
    requests: list[Any] = []
    peer, other = await pair(on_request=lambda rid, m, p: requests.append((rid, m, p)))
    other.send({"jsonrpc": "2.0", "id": "a", "method": "ask", "params": "text"})
    other.send({"jsonrpc": "2.0", "method": "note", "params": 5})  # a notification: nobody waits
    other.send({"jsonrpc": "2.0", "id": None, "method": "ask", "params": 5})  # no id to answer
    other.send({"jsonrpc": "2.0", "id": "b", "method": "ask", "params": [1]})  # an array: the owner's
    reply = await other.next()
    assert reply == {"jsonrpc": "2.0", "id": "a", "error": {
        "code": -32602, "message": "request 'ask' has params of type string: params must be an object"}}
    assert await wait_for(lambda: len(requests) == 1)
    assert requests == [("b", "ask", [1])] and other.received == []
    assert peer.stats.protocol_errors == 2


async def test_result_check_and_its_fast_path() -> None:
    peer, other = await pair()

    def check(method: str, result: Any, augmented: bool) -> None:
        if "bad" in result:
            raise ProtocolError(f"{method}: bad result", server="srv")

    peer.result_check = check
    peer.plain_results = {"fast": lambda r: "ok" in r}
    calls = [asyncio.ensure_future(peer.request(m)) for m in ("fast", "slow", "fast")]
    results = [{"ok": 1}, {"bad": 1}, {"bad": 2}]
    for result in results:
        req = await other.next()
        other.send({"jsonrpc": "2.0", "id": req["id"], "result": result})
    assert await calls[0] == {"ok": 1}
    with pytest.raises(ProtocolError, match="slow: bad result"):
        await calls[1]
    with pytest.raises(ProtocolError, match="fast: bad result"):
        await calls[2]


async def test_undeliverable_fails_the_call_or_all_calls() -> None:
    peer, other = await pair()
    one = asyncio.ensure_future(peer.request("a"))
    two = asyncio.ensure_future(peer.request("b"))
    req = await other.next()
    await other.next()
    peer.on_undeliverable(req["id"], "too big")
    with pytest.raises(ProtocolError, match="a: too big"):
        await one
    assert not two.done()
    peer.on_undeliverable(None, "unknown owner")
    with pytest.raises(ProtocolError, match="unknown owner"):
        await two


async def test_gone_fails_everything_pending_and_later_calls() -> None:
    closed: list[Any] = []
    peer, other = await pair(on_closed=closed.append)
    task = asyncio.ensure_future(peer.request("m"))
    await other.next()
    other.end.peer_gone("server exited with code 3")
    with pytest.raises(ServerUnavailableError, match="exited with code 3"):
        await task
    assert len(closed) == 1 and peer.closed
    with pytest.raises(ServerUnavailableError, match="exited with code 3"):
        await peer.request("again")
    peer.notify("dropped")  # no error once closed


async def test_aclose_fails_pending_without_telling_on_closed() -> None:
    closed: list[Any] = []
    peer, other = await pair(on_closed=closed.append)
    task = asyncio.ensure_future(peer.request("m"))
    await other.next()
    gone = await peer.aclose(1.0)
    assert isinstance(gone, Gone)
    with pytest.raises(ServerUnavailableError, match="shut down"):
        await task
    assert closed == []
    await asyncio.wait_for(peer.wait_closed(), 1)
    assert await wait_for(lambda: other.gone is not None)


async def test_messages_are_real_json_on_the_wire() -> None:
    a, b = memory_pair()
    peer = Peer("srv", a)
    peer.start()
    peer.notify("hello", {"é": "\u2028"})
    other = Other(b)
    msg = await other.next()
    assert msg == json.loads(json.dumps({"jsonrpc": "2.0", "method": "hello", "params": {"é": "\u2028"}}))
    assert a.statistics()["messages_out"] == 1 and b.statistics()["messages_in"] == 1


async def test_reset_on_progress_works_without_a_callback_and_has_a_default_maximum() -> None:
    clock = FakeClock()
    a, b = memory_pair()

    def tag(params: dict[str, Any] | None, token: Any, owned: bool) -> dict[str, Any]:
        return {**(params or {}), "token": token}

    peer = Peer("srv", a, scheduler=clock, tag_progress=tag)
    peer.start()
    other = Other(b)
    task = asyncio.ensure_future(peer.request("m", timeout=2.0, reset_timeout_on_progress=True))
    req = await other.next()
    assert req["params"]["token"] == req["id"]  # asked for progress although no callback
    call = peer.progress_calls.get(req["id"])
    assert call is not None and call.reset and call.deadline == clock.now + 20.0
    for _ in range(12):  # progress every 1.8 s would keep it alive forever ...
        clock.advance(1.8)
        peer.deadlines.progressed(call)
    # ... but 10x the timeout is the end.
    with pytest.raises(TimeoutError, match="hard maximum"):
        await task


# -- the peer's state ------------------------------------------------------------------------


async def test_the_peer_moves_open_closing_closed() -> None:
    from mcphost.protocol.machine import PeerState

    peer, _other = await pair()
    assert peer.state is PeerState.OPEN and not peer.closed
    closing = asyncio.get_running_loop().create_task(peer.aclose(1.0))
    await asyncio.sleep(0)
    assert peer.state in (PeerState.CLOSING, PeerState.CLOSED) and peer.closed
    await closing
    assert peer.state in (PeerState.CLOSED, PeerState.GONE)
    with pytest.raises(ServerUnavailableError):
        peer.start_request("x")


async def test_a_peer_whose_transport_goes_is_gone_and_tells_its_owner_once() -> None:
    from mcphost.protocol.machine import PeerState

    told: list[Any] = []
    peer, _other = await pair(on_closed=told.append)
    call = peer.start_request("x")
    peer.on_gone(Gone("the server exited"))
    peer.on_gone(Gone("again"))
    assert peer.state is PeerState.GONE and len(told) == 1
    with pytest.raises(ServerUnavailableError, match="the server exited"):
        await peer.wait(call)
    peer.on_messages([{"jsonrpc": "2.0", "id": call.rid, "result": {}}])  # ignored once gone


async def test_options_are_one_object_and_checked_before_sending() -> None:
    from mcphost.rpc.calls import CallOptions

    assert CallOptions.of() is None and CallOptions.of(timeout=None, max_timeout=0) is None
    peer, other = await pair()
    with pytest.raises(UsageError, match="timeout must be a number"):
        peer.start_request("x", None, None, CallOptions(timeout="soon"))  # type: ignore[arg-type]
    assert peer.pending == 0 and other.received == []
