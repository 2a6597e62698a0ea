"""Tests for mcphost.config.dotenv: the .env format of an envFile."""

from __future__ import annotations

import pytest

from mcphost.config import dotenv


def test_the_forms_people_write() -> None:
    text = (
        "\ufeff# a comment\n"
        "\n"
        "A=1\n"
        "export B = two words \n"
        "C='single # not a comment'\n"
        'D="line\\nbreak\\t\\"q\\""  # comment\n'
        "E=value # inline comment\n"
        "F=\n"
        "dotted.name=x\n"
        "A=again\n"
    )
    assert dotenv.parse(text) == {
        "A": "again",
        "B": "two words",
        "C": "single # not a comment",
        "D": 'line\nbreak\t"q"',
        "E": "value",
        "F": "",
        "dotted.name": "x",
    }


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        ("A=1\nno equals sign here\n", 2, "expected KEY=VALUE"),
        ("1A=x", 1, "expected KEY=VALUE"),
        ('A="open', 1, "unterminated or malformed quoted value"),
        ("A='x' trailing", 1, "unterminated or malformed quoted value"),
    ],
)
def test_errors_name_the_line_never_its_content(text: str, line: int, reason: str) -> None:
    with pytest.raises(dotenv.DotenvError) as info:
        dotenv.parse(text)
    assert (info.value.line, info.value.reason) == (line, reason)
    assert "trailing" not in str(info.value) and "open" not in str(info.value)
