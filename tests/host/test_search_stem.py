"""The Porter2 stemmer against the Snowball project's published English vocabulary."""

from __future__ import annotations

from pathlib import Path

from mcphost.host.stem import stem

SAMPLE = Path(__file__).parent / "fixtures" / "snowball_english_sample.txt"


def test_every_pair_of_the_published_sample_stems_as_published() -> None:
    pairs = [line.split(" ") for line in SAMPLE.read_text(encoding="utf-8").splitlines() if line]
    assert len(pairs) > 4000
    wrong = [(word, want, stem(word)) for word, want in pairs if stem(word) != want]
    assert wrong == []


def test_the_words_search_depends_on() -> None:
    # "news" is not "new"; a user's word and a description's meet at one stem.
    assert stem("news") == "news" and stem("new") == "new"
    assert stem("listing") == stem("lists") == stem("list") == "list"
    assert stem("searching") == stem("searches") == "search"
    assert stem("directories") == stem("directory") == "directori"
    assert stem("generated") == stem("generates") == "generat"
    assert stem("dying") == "die" and stem("inning") == "inning"


def test_short_and_odd_words_pass_through() -> None:
    assert stem("") == "" and stem("a") == "a" and stem("is") == "is"
    assert stem("'tis") == "tis"
    assert stem("yelling") == "yell"
