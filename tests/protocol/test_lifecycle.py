"""The server state table: every state reachable, the documented paths legal, the rest not."""

from __future__ import annotations

import itertools

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
