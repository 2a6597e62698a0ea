"""Tool search: the ranker on queries nobody tuned it to, its thesaurus, phrases, fields,
ties and bounds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcphost.host.search import MAX_FIELD_WORDS, ToolIndex, fuse
from mcphost.host.search_words import _TABLE, HINT_WEIGHT, PAIR, query_concepts, words

FIXTURES = Path(__file__).parent / "fixtures"


def servers() -> dict[str, list[dict[str, Any]]]:
    out = {}
    for path in sorted((FIXTURES / "servers").glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        out[data["server"]] = data["tools"]
    return out


def real_index() -> ToolIndex:
    return ToolIndex((f"{s}.{t['name']}", s, t) for s, tools in servers().items() for t in tools)


def queries(split: str) -> list[dict[str, Any]]:
    return [q for q in json.loads((FIXTURES / "search_queries.json").read_text(encoding="utf-8")) if q["split"] == split]


def measure(index: ToolIndex, split: str) -> tuple[float, float, float, list[Any]]:
    """top-1, top-3, MRR and the misses (not in the top 3) of one half of the set."""
    found = queries(split)
    top1 = top3 = 0
    reciprocal = 0.0
    misses = []
    for q in found:
        ranked = [index.names[i] for i, _ in index.ranked(q["query"])]
        rank = next((n for n, name in enumerate(ranked, start=1) if name in q["expected"]), None)
        top1 += rank == 1
        top3 += rank is not None and rank <= 3
        reciprocal += 1.0 / rank if rank else 0.0
        if rank is None or rank > 3:
            misses.append((q["query"], q["expected"], ranked[:3]))
    return top1 / len(found), top3 / len(found), reciprocal / len(found), misses


def test_the_evaluation_set_is_large_split_and_names_real_tools() -> None:
    tools = {f"{s}.{t['name']}" for s, listed in servers().items() for t in listed}
    assert len(servers()) >= 8 and len(tools) >= 100
    everything = queries("tuning") + queries("held-out")
    assert len(everything) >= 150 and len(queries("held-out")) >= 75 and len(queries("tuning")) >= 75
    assert len({q["query"] for q in everything}) == len(everything)
    assert all(q["expected"] and set(q["expected"]) <= tools for q in everything)


def test_the_held_out_half_meets_the_floor_with_the_lexical_ranker_alone() -> None:
    # Only the figures: the held-out queries that miss are never shown, so that nobody
    # tunes on them by accident.
    top1, top3, mrr, misses = measure(real_index(), "held-out")
    figures = f"held-out: top-1 {top1:.1%}, top-3 {top3:.1%}, MRR {mrr:.3f}, {len(misses)} not in the top 3"
    assert top3 >= 0.90, figures
    assert top1 >= 0.75, figures


def test_the_tuning_half_meets_the_same_floor() -> None:
    top1, top3, _, misses = measure(real_index(), "tuning")
    assert top3 >= 0.90, misses
    assert top1 >= 0.75


def test_the_issue_examples_find_their_tools() -> None:
    index = real_index()

    def top(query: str, n: int = 3) -> list[str]:
        return [hit["name"] for hit in index.search(query, n)]

    # "news" is not "new", and "new" is not "create": no file or entity tool comes up.
    assert top("look up news on the web")[:2] == ["brave-search.brave_web_search", "brave-search.brave_news_search"] \
        or top("look up news on the web")[0] == "brave-search.brave_news_search"
    assert not any(n.startswith(("filesystem.", "memory.")) for n in top("look up news on the web", 5))
    assert top("remember that Alice works at Acme", 1)[0].startswith("memory.")
    assert top("search the internet", 1) == ["brave-search.brave_web_search"]
    assert top("open a png and give it to me", 1) == ["filesystem.read_media_file"]
    assert top("ask the user a question", 2)[0].startswith("everything.trigger-elicitation-request")
    assert top("ask the client's model to write something", 1)[0].startswith("everything.trigger-sampling-request")


def test_no_expansion_turns_a_word_into_an_unrelated_one() -> None:
    assert words("news") == ["news"] and words("new") == ["new"]
    assert all(term != "creat" for concept in query_concepts("latest news") for term, _ in concept)
    assert all(term != "creat" for concept in query_concepts("a new idea") for term, _ in concept)
    # Every alternative weighs less than the word itself, and a concept scores by its best one.
    assert all(0 < weight < 1 for alternatives in _TABLE.values() for _, weight in alternatives)
    index = ToolIndex([("a.delete", "a", {"name": "delete", "description": "delete remove erase"}),
                       ("a.other", "a", {"name": "other", "description": "remove"})])
    assert index.search("remove", 1)[0]["name"] == "a.delete"  # the word itself, not its synonyms summed
    assert index.search("remove", 2)[1]["score"] > 0
    only_synonym = ToolIndex([("a.x", "a", {"name": "x", "description": "delete"})]).search("remove")[0]["score"]
    exact = ToolIndex([("a.x", "a", {"name": "x", "description": "remove"})]).search("remove")[0]["score"]
    assert 0 < only_synonym < exact
    assert HINT_WEIGHT < 1


def test_a_query_phrase_prefers_the_tool_that_says_it_as_a_phrase() -> None:
    index = ToolIndex([
        ("a.scattered", "a", {"name": "scattered", "description": "request a pull of the latest data"}),
        ("a.phrase", "a", {"name": "phrase", "description": "open a pull request for review"}),
    ])
    assert [hit["name"] for hit in index.search("pull request")] == ["a.phrase", "a.scattered"]
    assert ("pull" + PAIR + "request", pytest.approx(0.6, abs=0.5)) in [c[0] for c in query_concepts("pull request")]
    # "PR" and "pull request" meet.
    assert index.search("open a PR", 1)[0]["name"] == "a.phrase"


def test_file_names_code_and_camel_case_in_a_query() -> None:
    heads = [c[0][0] for c in query_concepts("show me notes.txt and todo.md")]
    assert "file" in heads and "multipl" in heads and "txt" not in heads
    assert "code" in [c[0][0] for c in query_concepts("where is asyncio.TaskGroup used")]
    # "GitHub" is one word where the tools say it so, its parts where they do not.
    known = {"github"}.__contains__
    assert [c[0][0] for c in query_concepts("GitHub", known=known)] == ["github"]
    assert [c[0][0] for c in query_concepts("TaskGroup", known=known)][:2] == ["task", "group"]


def test_fields_name_beats_description_and_server_words_break_ties() -> None:
    tool = {"name": "lookup", "description": "Finds pages by words."}
    index = ToolIndex([("files.lookup", "files", tool), ("web.lookup", "web", tool)])
    assert [hit["name"] for hit in index.search("lookup")] == ["files.lookup", "web.lookup"]  # by name
    assert index.search("lookup on the web", 1)[0]["name"] == "web.lookup"
    assert index.search("lookup in my files", 1)[0]["name"] == "files.lookup"
    named = ToolIndex([("s.convert", "s", {"name": "convert", "description": "Resize an image."}),
                       ("s.resize", "s", {"name": "resize", "description": "Convert an image."})])
    assert named.search("resize", 1)[0]["name"] == "s.resize"


def test_a_server_s_domains_are_searched() -> None:
    tool = {"name": "query", "description": "Run a query."}
    entries = [("db.query", "db", tool), ("kb.query", "kb", tool)]
    plain = ToolIndex(entries)
    assert plain.search("query the sales warehouse", 1)[0]["name"] == "db.query"  # a tie: by name
    by_domain = ToolIndex(entries, {"kb": ["sales", "warehouse"]})
    assert by_domain.search("query the sales warehouse", 1)[0]["name"] == "kb.query"


def test_what_a_server_sends_is_bounded_and_odd_tools_are_indexed() -> None:
    huge = {"name": "huge", "description": "word " * 100_000 + "needle",
            "inputSchema": {"type": "object", "properties": {f"p{i}": {"description": "x " * 10_000} for i in range(1000)}}}
    odd: list[tuple[str, str, Any]] = [("s.huge", "s", huge), ("s.bare", "s", {"name": "bare"}),
                                       ("s.odd", "s", {"name": "odd", "description": None, "inputSchema": "nonsense"})]
    index = ToolIndex(odd)
    assert index.search("needle") == []  # past MAX_FIELD_WORDS words a description is not read
    assert MAX_FIELD_WORDS < 100_000
    assert index.search("bare", 1)[0]["name"] == "s.bare"
    assert index.search("") == [] and index.search("the of and") == []
    assert ToolIndex([]).search("anything at all") == []


def test_search_answers_in_the_shape_it_always_had() -> None:
    hits = real_index().search("read a file from disk", 2)
    assert [set(hit) for hit in hits] == [{"name", "score", "description"}] * 2
    assert hits[0]["score"] >= hits[1]["score"] > 0


def test_reciprocal_rank_fusion() -> None:
    assert fuse([1, 2, 3], [3, 2, 1]) == [(1, pytest.approx(1 / 61 + 1 / 63)), (3, pytest.approx(1 / 63 + 1 / 61)),
                                          (2, pytest.approx(2 / 62))]
    assert [i for i, _ in fuse([5], [7, 5])] == [5, 7]
    assert fuse() == []


async def test_the_host_searches_each_server_s_configured_domains() -> None:
    from helpers import fake

    from mcphost import MCPHost

    tool = {"name": "query", "description": "Run a query.", "inputSchema": {"type": "object"}}
    crm, warehouse = fake({"tools": [tool]}), fake({"tools": [tool]})
    warehouse.update(domains=["sales", "revenue"])
    async with MCPHost({"mcpServers": {"crm": crm, "warehouse": warehouse}}) as host:
        assert host.search_tools("query the revenue figures", limit=1)[0]["name"] == "warehouse.query"
        assert host.search_tools("query", limit=2)[0]["name"] == "crm.query"  # a tie: by name


async def test_domains_changed_by_a_reload_are_searched_at_once(tmp_path: Path) -> None:
    from helpers import fake, fake_config

    from mcphost import MCPHost

    tool = {"name": "query", "description": "Run a query.", "inputSchema": {"type": "object"}}
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(fake_config(crm=fake({"tools": [tool]}), warehouse=fake({"tools": [tool]}))),
                    encoding="utf-8")
    async with MCPHost(str(path)) as host:
        assert host.search_tools("query the revenue", limit=1)[0]["name"] == "crm.query"
        warehouse = fake({"tools": [tool]})
        warehouse.update(domains=["revenue"])
        path.write_text(json.dumps(fake_config(crm=fake({"tools": [tool]}), warehouse=warehouse)), encoding="utf-8")
        assert (await host.reload())["updated"] == ["warehouse"]  # in place: the tool lists did not change
        assert host.search_tools("query the revenue", limit=1)[0]["name"] == "warehouse.query"
