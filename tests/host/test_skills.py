"""Skills (the io.modelcontextprotocol/skills extension): listed without reading a file, loaded
and read only after each file's size, digest and (for SKILL.md) frontmatter match the listing."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

import pytest
from scripted import Script, scripted_host

from mcphost import ProtocolError, RoutingError
from mcphost.host.skills import FrontmatterError, parse_frontmatter

SKILL = "skill://pdf-processing/SKILL.md"
FORMS = "skill://pdf-processing/references/FORMS.md"
LOGO = "skill://pdf-processing/logo.png"
FRONTMATTER = {"name": "pdf-processing", "description": "Extract, fill, and assemble PDF documents",
               "metadata": {"version": "1.2", "tags": ["pdf", "forms"]}}
SKILL_MD = """---
name: pdf-processing
description: Extract, fill, and assemble PDF documents
metadata:
  version: "1.2"
  tags: [pdf, forms]
---

Skill body.
"""
FORMS_MD = "Supporting content.\n"
LOGO_PNG = b"\x89PNG\r\n\x1a\n\x00\x01"


def digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def file_entry(uri: str, data: bytes) -> dict[str, Any]:
    return {"uri": uri, "digest": digest(data), "size": len(data)}


def skill_server(*, served: dict[str, Any] | None = None, entry: dict[str, Any] | None = None,
                 pages: int = 1) -> Script:
    """A server with one skill; ``served`` replaces what resources/read answers per uri."""
    files: dict[str, Any] = {SKILL: SKILL_MD, FORMS: FORMS_MD, LOGO: LOGO_PNG}
    files.update(served or {})
    listed = entry or {"uri": SKILL, "frontmatter": FRONTMATTER, "resources": [
        file_entry(SKILL, SKILL_MD.encode()), file_entry(FORMS, FORMS_MD.encode()), file_entry(LOGO, LOGO_PNG)]}

    def skills_list(params: dict[str, Any]) -> dict[str, Any]:
        page = int(params.get("cursor") or 0)
        result: dict[str, Any] = {"skills": [listed] if page == pages - 1 else []}
        if page < pages - 1:
            result["nextCursor"] = str(page + 1)
        return result

    def read(params: dict[str, Any]) -> dict[str, Any]:
        content = files[params["uri"]]
        if isinstance(content, bytes):
            return {"contents": [{"uri": params["uri"], "blob": base64.b64encode(content).decode()}]}
        return {"contents": [{"uri": params["uri"], "mimeType": "text/markdown", "text": content}]}

    return Script({"skills/list": skills_list, "resources/read": read, "resources/list": lambda _p: {"resources": []},
                   "resources/templates/list": lambda _p: {"resourceTemplates": []}},
                  capabilities={"resources": {}, "extensions": {"io.modelcontextprotocol/skills": {}}})


def reads(script: Script) -> list[str]:
    return [m["params"]["uri"] for m in script.requests("resources/read")]


async def test_listing_reads_no_file_and_follows_pages() -> None:
    script = skill_server(pages=3)
    async with scripted_host({"a": script}) as host:
        entries = await host.list_skills("a")
    assert [(e["uri"], e["server"], e["frontmatter"]) for e in entries] == [(SKILL, "a", FRONTMATTER)]
    assert len(script.requests("skills/list")) == 3
    assert reads(script) == []


async def test_a_verified_skill_loads_and_its_files_are_read_verified() -> None:
    script = skill_server()
    async with scripted_host({"a": script}) as host:
        await host.list_skills("a")
        skill = await host.load_skill(SKILL, server="a")
        assert skill["frontmatter"] == FRONTMATTER
        assert skill["body"] == "\nSkill body.\n"
        assert [f["uri"] for f in skill["resources"]] == [SKILL, FORMS, LOGO]
        assert await host.read_skill_file(SKILL, FORMS, server="a") == FORMS_MD
        assert await host.read_skill_file(SKILL, LOGO, server="a") == LOGO_PNG
    assert reads(script) == [SKILL, FORMS, LOGO]


@pytest.mark.parametrize(("served", "why"), [
    ({SKILL: SKILL_MD.replace("Skill body.", "Evil body!!")}, "its SHA-256 is not the entry's digest"),
    ({SKILL: SKILL_MD + "more\n"}, f"it is {len(SKILL_MD) + 5} bytes where its entry says {len(SKILL_MD)}"),
])
async def test_a_skill_md_that_fails_verification_is_not_loaded(served: dict[str, Any], why: str) -> None:
    script = skill_server(served=served)
    async with scripted_host({"a": script}) as host:
        await host.list_skills("a")
        with pytest.raises(ProtocolError, match="failed verification and was not used") as caught:
            await host.load_skill(SKILL, server="a")
    assert why in str(caught.value)
    assert reads(script) == [SKILL]


async def test_a_frontmatter_differing_from_the_listing_is_not_loaded() -> None:
    tampered = SKILL_MD.replace("description: Extract, fill, and assemble PDF documents",
                                "description: Exfiltrate credentials")
    listed = {"uri": SKILL, "frontmatter": FRONTMATTER, "resources": [file_entry(SKILL, tampered.encode())]}
    script = skill_server(served={SKILL: tampered}, entry=listed)
    async with scripted_host({"a": script}) as host:
        await host.list_skills("a")
        with pytest.raises(ProtocolError, match="frontmatter differs from the listed entry's in 'description'"):
            await host.load_skill(SKILL, server="a")


async def test_a_tampered_file_is_refused() -> None:
    script = skill_server(served={FORMS: "Supporting CONTENT.\n", LOGO: LOGO_PNG + b"!"})
    async with scripted_host({"a": script}) as host:
        await host.list_skills("a")
        with pytest.raises(ProtocolError, match=r"file '.*FORMS.md' of skill .* its SHA-256"):
            await host.read_skill_file(SKILL, FORMS, server="a")
        with pytest.raises(ProtocolError, match="is 11 bytes where its entry says 10"):
            await host.read_skill_file(SKILL, LOGO, server="a")


async def test_what_was_not_listed_is_not_read() -> None:
    script = skill_server()
    async with scripted_host({"a": script}) as host:
        with pytest.raises(RoutingError, match=r"listed no skill .* \(call list_skills first\)"):
            await host.load_skill(SKILL, server="a")
        await host.list_skills("a")
        with pytest.raises(RoutingError, match="lists no file 'skill://pdf-processing/other.md'"):
            await host.read_skill_file(SKILL, "skill://pdf-processing/other.md", server="a")
    assert reads(script) == []


@pytest.mark.parametrize(("entry", "why"), [
    ({"uri": SKILL, "frontmatter": FRONTMATTER, "resources": [{"uri": SKILL, "digest": "md5:00", "size": 1}]},
     "no byte 'size' and 'sha256:<hex>' digest"),
    ({"uri": SKILL, "frontmatter": FRONTMATTER, "resources": [{"uri": SKILL, "digest": digest(b""), "size": 1 << 30}]},
     "over the 16777216 a skill may hold"),
])
async def test_an_entry_that_cannot_vouch_for_its_file_reads_nothing(entry: dict[str, Any], why: str) -> None:
    script = skill_server(entry=entry)
    async with scripted_host({"a": script}) as host:
        await host.list_skills("a")
        with pytest.raises(ProtocolError, match=why):
            await host.load_skill(SKILL, server="a")
    assert reads(script) == []


async def test_a_malformed_entry_is_the_servers_protocol_error() -> None:
    script = skill_server(entry={"uri": SKILL})
    async with scripted_host({"a": script}) as host:
        with pytest.raises(ProtocolError, match="skills/list entry 0 has no string 'uri' and object 'frontmatter'"):
            await host.list_skills("a")


def test_the_frontmatter_subset() -> None:
    text = """# a comment
name: x
quoted: "a: b"
single: 'it''s'
count: 3
ratio: 0.5
on: true
none: ~
empty:
list:
  - one
  - 2
nested:
  deeper:
    leaf: value # trailing comment
flow: []
"""
    assert parse_frontmatter(text) == {
        "name": "x", "quoted": "a: b", "single": "it's", "count": 3, "ratio": 0.5, "on": True, "none": None,
        "empty": None, "list": ["one", 2], "nested": {"deeper": {"leaf": "value"}}, "flow": []}


@pytest.mark.parametrize(("text", "why"), [
    ("description: |\n  block\n", "uses YAML this host does not read"),
    ("a: 1\na: 2\n", "repeats the key 'a'"),
    ("a: 1\n   b: 2\n", "indented out of place"),
    ("\ta: 1\n", "indented with a tab"),
    ("just text\n", "is not 'key: value'"),
    ("a: {b: 1}\n", "uses YAML this host does not read"),
])
def test_frontmatter_beyond_the_subset_is_refused(text: str, why: str) -> None:
    with pytest.raises(FrontmatterError, match=why):
        parse_frontmatter(text)


async def test_a_frontmatter_beyond_the_subset_is_not_loaded() -> None:
    odd = "---\nname: pdf-processing\ndescription: >\n  folded\n---\nBody\n"
    listed = {"uri": SKILL, "frontmatter": FRONTMATTER, "resources": [file_entry(SKILL, odd.encode())]}
    script = skill_server(served={SKILL: odd}, entry=listed)
    async with scripted_host({"a": script}) as host:
        await host.list_skills("a")
        with pytest.raises(ProtocolError, match="its frontmatter cannot be compared"):
            await host.load_skill(SKILL, server="a")
