"""The versions table is the one list of protocol versions; everything else agrees with it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from mcphost.protocol import legacy, messages, versions


def test_newest_first_and_offered() -> None:
    assert tuple(sorted(versions.SUPPORTED_VERSIONS, reverse=True)) == versions.SUPPORTED_VERSIONS
    assert versions.SUPPORTED_VERSIONS[0] == versions.LATEST_VERSION
    assert legacy.SUPPORTED_VERSIONS == versions.SUPPORTED_VERSIONS


def test_message_schemas_cover_every_version() -> None:
    assert set(messages.VERSIONS) == set(versions.ALL_VERSIONS)


def test_features_follow_the_spec_history() -> None:
    row = versions.get
    assert [v for v in versions.SUPPORTED_VERSIONS if row(v).batches] == ["2025-03-26"]
    assert row("2025-11-25").tasks and not row("2025-06-18").tasks
    assert row("2025-06-18").elicitation and not row("2025-03-26").elicitation
    assert row("2025-11-25").schema_dialect == "2020-12"
    assert {row(v).schema_dialect for v in versions.SUPPORTED_VERSIONS[1:]} == {"draft-07"}
    assert not row("2024-11-05").completions_flag


def test_unknown_version_has_no_feature() -> None:
    for name in (None, "1999-01-01", "2026-07-29"):
        v = versions.get(name)
        assert not (v.batches or v.tasks or v.elicitation or v.structured_content)
        assert not versions.is_supported(name)


def test_fake_server_speaks_the_same_versions() -> None:
    # The fake server is standalone (stdlib only) and keeps its own list: tie it here.
    testing = Path(versions.__file__).resolve().parents[1] / "testing"
    found: set[str] = set()
    for path in testing.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "SUPPORTED_VERSIONS" for t in node.targets
            ):
                found.update(ast.literal_eval(node.value))
    assert found == set(versions.SUPPORTED_VERSIONS)


def test_eras() -> None:
    assert versions.MODERN_VERSIONS == ("2026-07-28",) == (versions.LATEST_MODERN_VERSION,)
    assert versions.ALL_VERSIONS == versions.MODERN_VERSIONS + versions.SUPPORTED_VERSIONS
    assert all(versions.get(v).era == "legacy" and not versions.get(v).stateless for v in versions.SUPPORTED_VERSIONS)
    modern = versions.get("2026-07-28")
    assert modern.modern and modern.stateless and modern.input_requests and modern.listen
    assert modern.request_headers and modern.cache_hints and modern.task_extension
    assert not (modern.tasks or modern.batches or modern.roots_list_changed)
    assert versions.is_supported("2026-07-28")


@pytest.mark.parametrize(("setting", "expected"), [
    ("auto", ("auto", versions.SUPPORTED_VERSIONS, ("2026-07-28",))),
    ("legacy", ("legacy", versions.SUPPORTED_VERSIONS, ())),
    ("modern", ("modern", (), ("2026-07-28",))),
    ("2025-06-18", ("legacy", ("2025-06-18",), ())),
    ("2026-07-28", ("modern", (), ("2026-07-28",))),
])
def test_protocol_choice(setting: str, expected: tuple[str, tuple[str, ...], tuple[str, ...]]) -> None:
    assert versions.protocol_choice(setting) == expected


def test_protocol_choice_refuses_what_it_does_not_know() -> None:
    with pytest.raises(ValueError, match="auto, legacy, modern or a protocol version"):
        versions.protocol_choice("2027-01-01")
