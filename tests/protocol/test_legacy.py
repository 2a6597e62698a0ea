"""MCP session: version negotiation and capability declarations."""

from __future__ import annotations

import pytest

from mcphost.errors import ProtocolError
from mcphost.protocol.legacy import LATEST_VERSION, Session, State, client_capabilities


def caps(version: str) -> dict[str, object]:
    return client_capabilities(version, sampling=True, sampling_tools=True,
                               elicitation_form=True, elicitation_url=True)


def test_offers_latest_and_accepts_older() -> None:
    s = Session(client_info={"name": "t", "version": "1", "title": "T"}, capabilities_for=caps)
    params = s.initialize_params()
    assert params["protocolVersion"] == LATEST_VERSION == "2025-11-25"
    assert params["clientInfo"]["title"] == "T"
    assert params["capabilities"]["elicitation"] == {"form": {}, "url": {}}
    s.accept_initialize_result({"protocolVersion": "2025-03-26", "capabilities": {"tools": {}},
                                "serverInfo": {"name": "x", "version": "1"}})
    assert s.state is State.READY
    assert s.protocol_version == "2025-03-26"
    assert s.batches_allowed
    assert not s.has_elicitation
    assert "elicitation" not in s.client_caps  # re-declared for the negotiated version
    assert s.has_capability("tools")
    assert not s.has_capability("prompts")


def test_unsupported_version_names_both() -> None:
    s = Session(client_info={"name": "t", "version": "1"})
    s.initialize_params()
    with pytest.raises(ProtocolError, match=r"'1999-01-01'.*'2025-11-25'"):
        s.accept_initialize_result({"protocolVersion": "1999-01-01", "capabilities": {}})
    assert s.state is State.FAILED


@pytest.mark.parametrize(
    ("result", "text"),
    [
        ([], "not an object"),
        ({}, "no protocolVersion"),
        ({"protocolVersion": "2025-11-25", "capabilities": 3}, "capabilities is not an object"),
        ({"protocolVersion": "2025-11-25", "serverInfo": "x"}, "serverInfo is not an object"),
        ({"protocolVersion": "2025-11-25", "instructions": 5}, "instructions is not a string"),
    ],
)
def test_malformed_initialize_results(result: object, text: str) -> None:
    s = Session(client_info={"name": "t", "version": "1"})
    s.initialize_params()
    with pytest.raises(ProtocolError, match=text):
        s.accept_initialize_result(result)


def test_state_rules() -> None:
    s = Session(client_info={"name": "t", "version": "1"})
    with pytest.raises(ProtocolError):
        s.accept_initialize_result({"protocolVersion": "2025-11-25"})
    s.initialize_params()
    with pytest.raises(ProtocolError):
        s.initialize_params()


def test_client_capabilities_per_version() -> None:
    assert client_capabilities("2024-11-05", sampling=True, elicitation_form=True) == {
        "roots": {"listChanged": True}, "sampling": {}}
    assert client_capabilities("2025-06-18", elicitation_form=True, elicitation_url=True)[
        "elicitation"] == {}
    assert client_capabilities("2025-11-25", sampling=True, sampling_tools=True)["sampling"] == {
        "tools": {}}
    assert client_capabilities("2025-11-25", roots=False) == {}


def test_completions_flag_by_version() -> None:
    s = Session(client_info={"name": "t", "version": "1"}, versions=("2024-11-05",))
    s.initialize_params()
    s.accept_initialize_result({"protocolVersion": "2024-11-05", "capabilities": {}})
    assert s.supports_completions()
    assert s.accepts_server_request("ping")
    assert not s.accepts_server_request("elicitation/create")
