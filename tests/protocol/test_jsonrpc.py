"""JSON-RPC envelope: encoding, classification with clear errors, correlation."""

from __future__ import annotations

import json

import pytest

from mcphost.errors import ProtocolError
from mcphost.protocol import jsonrpc


def test_dumps_is_compact_single_line_utf8() -> None:
    data = jsonrpc.dumps({"a": "é\nx", "b": [1, 2]})
    assert b"\n" not in data
    assert json.loads(data) == {"a": "é\nx", "b": [1, 2]}
    assert jsonrpc.loads(data) == {"a": "é\nx", "b": [1, 2]}


def test_loads_rejects_non_json() -> None:
    with pytest.raises(ValueError):
        jsonrpc.loads(b"not json")


@pytest.mark.parametrize(
    ("msg", "kind"),
    [
        ({"jsonrpc": "2.0", "id": 1, "method": "ping"}, jsonrpc.REQUEST),
        ({"jsonrpc": "2.0", "id": "a", "method": "x", "params": {}}, jsonrpc.REQUEST),
        ({"jsonrpc": "2.0", "method": "notifications/x"}, jsonrpc.NOTIFICATION),
        ({"jsonrpc": "2.0", "id": 1, "result": {}}, jsonrpc.RESPONSE),
        ({"jsonrpc": "2.0", "id": 1, "error": {"code": -1, "message": "m"}}, jsonrpc.ERROR),
    ],
)
def test_classify(msg: dict[str, object], kind: int) -> None:
    assert jsonrpc.classify(msg) == kind


@pytest.mark.parametrize(
    ("msg", "text"),
    [
        ([1], "not a JSON object"),
        ("x", "not a JSON object"),
        ({"jsonrpc": "1.0", "id": 1, "result": 1}, "jsonrpc='1.0'"),
        ({"id": 1, "result": 1}, "jsonrpc=None"),
        ({"jsonrpc": "2.0", "id": 1}, "neither 'result' nor 'error'"),
        ({"jsonrpc": "2.0", "id": 1, "result": 1, "error": {"code": 1}}, "both 'result' and 'error'"),
        ({"jsonrpc": "2.0", "id": 1, "error": "bad"}, "malformed error object"),
        ({"jsonrpc": "2.0", "id": None, "method": "x"}, "not a string or integer"),
        ({"jsonrpc": "2.0", "method": 5}, "expected string"),
        ({"jsonrpc": "2.0"}, "neither 'method' nor 'id'"),
        ({"jsonrpc": "2.0", "id": 1, "method": "x", "params": 3}, "params of type number"),
        ({"jsonrpc": "2.0", "id": [1], "result": {}}, "response id [1] is not a string or integer"),
        ({"jsonrpc": "2.0", "id": True, "result": {}}, "response id True is not"),
        ({"jsonrpc": "2.0", "id": {"a": 1}, "error": {"code": 1, "message": "m"}}, "is not a string"),
    ],
)
def test_classify_errors_say_what_is_wrong(msg: object, text: str) -> None:
    with pytest.raises(ProtocolError) as info:
        jsonrpc.classify(msg)
    assert text in str(info.value)


def test_batches() -> None:
    assert jsonrpc.split_batch([{"a": 1}, {"b": 2}]) == [{"a": 1}, {"b": 2}]
    assert jsonrpc.split_batch({"a": 1}) == [{"a": 1}]
    with pytest.raises(ProtocolError, match="empty"):
        jsonrpc.split_batch([])


def test_correlator_ids_unique_and_late_responses() -> None:
    c: jsonrpc.Correlator[str] = jsonrpc.Correlator(abandoned_memory=2)
    ids = [c.add(f"w{i}") for i in range(5)]
    assert len(set(ids)) == 5
    assert c.pop(ids[0]) == "w0"
    with pytest.raises(ProtocolError, match="unknown request id"):
        c.pop(ids[0])  # answered twice
    with pytest.raises(ProtocolError, match="unknown request id 999"):
        c.pop(999)
    assert c.abandon(ids[1]) == "w1"
    assert c.pop(ids[1]) is None  # late response: ignored, not an error
    assert c.pop(float(ids[2])) == "w2"  # 3.0 is accepted for id 3
    assert sorted(c.drain()) == ["w3", "w4"]
    assert len(c) == 0
    assert c.add("again") not in ids  # never reused


def test_builders() -> None:
    assert jsonrpc.request(1, "m") == {"jsonrpc": "2.0", "id": 1, "method": "m"}
    assert jsonrpc.notification("n", {"a": 1})["params"] == {"a": 1}
    assert jsonrpc.error_response(2, -32601, "nope") == {
        "jsonrpc": "2.0", "id": 2, "error": {"code": -32601, "message": "nope"}}
    assert jsonrpc.error_response(2, 1, "m", {"d": 1})["error"]["data"] == {"d": 1}
