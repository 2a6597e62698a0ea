"""The server state table: every state reachable, the documented paths legal, the rest not."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from mcphost.protocol.lifecycle import TRANSITIONS, IllegalTransition, ServerState, check

S = ServerState


def test_every_state_has_a_row_and_is_reachable_from_stopped() -> None:
    assert set(TRANSITIONS) == set(S)
    seen, todo = {S.STOPPED}, [S.STOPPED]
    while todo:
        for nxt in TRANSITIONS[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    assert seen == set(S) - {S.DISABLED}


@pytest.mark.parametrize(
    "path",
    [
        [S.STOPPED, S.STARTING, S.READY, S.STOPPING, S.STOPPED, S.STARTING, S.READY],  # restart
        [S.DISABLED, S.STARTING, S.READY],  # start_server on a disabled server
        [S.STOPPED, S.STARTING, S.FAILED, S.STARTING, S.READY],  # retried start
        [S.STOPPED, S.STARTING, S.READY, S.UNAVAILABLE, S.STARTING, S.READY],  # crash, restart
        [S.STOPPED, S.STARTING, S.READY, S.UNAVAILABLE, S.STOPPING, S.STOPPED],
        [S.STOPPED, S.STARTING, S.READY, S.UNAVAILABLE, S.READY],  # a remote server answered a probe
        [S.STOPPED, S.STARTING, S.STOPPING, S.STOPPED],  # stopped while starting
        [S.READY, S.STOPPING, S.FAILED],  # the stop itself failed
        [S.STOPPED, S.FAILED, S.STARTING, S.READY],  # not started: a dependency failed
    ],
)
def test_documented_paths_are_legal(path: list[ServerState]) -> None:
    for old, new in itertools.pairwise(path):
        check(old, new)


@pytest.mark.parametrize(
    ("old", "new"),
    [(S.STOPPED, S.READY), (S.READY, S.STARTING), (S.STOPPED, S.STOPPING), (S.FAILED, S.READY),
     (S.DISABLED, S.READY), (S.STOPPING, S.READY), (S.READY, S.FAILED)],
)
def test_other_moves_are_bugs(old: ServerState, new: ServerState) -> None:
    with pytest.raises(IllegalTransition, match=f"from {old.value} to {new.value}"):
        check(old, new)


def test_states_show_as_their_names() -> None:
    assert str(S.READY) == "ready" and S.READY == "ready" and f"{S.UNAVAILABLE}" == "unavailable"


# -- the host's and the connection's lifecycles: the same model ----------------------------

from mcphost.protocol.lifecycle import HOST_TRANSITIONS, HostState  # noqa: E402
from mcphost.protocol.machine import PEER_TRANSITIONS, PeerState, move  # noqa: E402

H, P = HostState, PeerState


@pytest.mark.parametrize(("table", "states"), [(HOST_TRANSITIONS, H), (PEER_TRANSITIONS, P)])
def test_every_lifecycle_has_a_row_per_state(table: dict[Any, frozenset[Any]], states: Any) -> None:
    assert set(table) == set(states)


@pytest.mark.parametrize(
    "path",
    [
        [H.NEW, H.STARTING, H.READY, H.STOPPING, H.STOPPED],
        [H.NEW, H.STOPPING, H.STOPPED],  # shut down without a start
        [H.NEW, H.STARTING, H.STOPPING, H.STOPPED],  # a failed (or interrupted) start
    ],
)
def test_documented_host_paths_are_legal(path: list[HostState]) -> None:
    for old, new in itertools.pairwise(path):
        move(HOST_TRANSITIONS, old, new, "host")


def test_a_stopped_host_is_final_and_the_rest_is_refused() -> None:
    assert HOST_TRANSITIONS[H.STOPPED] == frozenset()
    with pytest.raises(IllegalTransition, match="host state cannot go from stopping to ready"):
        move(HOST_TRANSITIONS, H.STOPPING, H.READY, "host")
    with pytest.raises(IllegalTransition):
        move(PEER_TRANSITIONS, P.GONE, P.OPEN, "peer")
