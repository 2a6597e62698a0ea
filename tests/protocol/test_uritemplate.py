"""RFC 6570 template matching for resource routing."""

from __future__ import annotations

import pytest

from mcphost.protocol.uritemplate import compile_template


@pytest.mark.parametrize(
    ("template", "uri", "expected"),
    [
        ("file:///{path}", "file:///tmp/x.txt", {"path": "tmp/x.txt"}),
        ("file:///{+path}", "file:///a/b%20c", {"path": "a/b c"}),
        ("test://static/resource/{id}", "test://static/resource/7", {"id": "7"}),
        ("repo://{owner}/{repo}{?state}", "repo://a/b?state=open", {"owner": "a", "repo": "b", "state": "open"}),
        ("repo://{owner}/{repo}{?state}", "repo://a/b", {"owner": "a", "repo": "b"}),
        ("x://h{/a,b}", "x://h/1/2", {"a": "1", "b": "2"}),
        ("x://h{#frag}", "x://h#top", {"frag": "top"}),
        ("x://{a}", "y://b", None),
        ("x://fixed", "x://fixed", {}),
    ],
)
def test_match(template: str, uri: str, expected: dict[str, str] | None) -> None:
    assert compile_template(template).match(uri) == expected


def test_invalid_template() -> None:
    with pytest.raises(ValueError, match="invalid URI template"):
        compile_template("x://{a b}")
