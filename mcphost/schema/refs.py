"""Schema resources, base URIs, anchors and ``$ref`` resolution.

This module owns the question "which schema does this reference point at?". It walks each
schema document once (only through keywords that hold subschemas, so an ``$id`` inside an
``enum`` or ``const`` value is not an identifier), records every schema resource (``$id``),
``$anchor``, ``$dynamicAnchor`` and, for draft-07, the ``"$id": "#name"`` plain-name
fragments, and then resolves references against that index (JSON Schema 2020-12 core,
section 8.2 and 9).

Nothing is ever fetched. A reference to a resource that is not part of the compiled schema,
the caller's ``resources`` or the shipped meta-schemas (:mod:`mcphost.schema.meta`) is
reported to the caller as unresolved; the compiler then refuses it (``strict``) or treats
it as ``true``.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from mcphost.errors import SchemaError
from mcphost.schema import meta

__all__ = ["DRAFT7", "DRAFT2020", "Loc", "Registry", "dialect_of", "escape_pointer", "join_uri"]

logger = logging.getLogger("mcphost.schema")

DRAFT2020 = "2020-12"
DRAFT7 = "draft-07"

# Keywords whose values are subschemas, per dialect (2020-12 core section 10, draft-07
# validation section 6). "definitions" and "$defs" are walked in both: refs into either
# work in every draft in practice.
_SINGLE_2020 = (
    "additionalProperties", "propertyNames", "items", "contains", "not", "if", "then",
    "else", "unevaluatedItems", "unevaluatedProperties", "contentSchema", "additionalItems",
)
_MAP_2020 = ("properties", "patternProperties", "dependentSchemas", "$defs", "definitions")
_LIST_2020 = ("prefixItems", "allOf", "anyOf", "oneOf", "items")
_SINGLE_7 = (
    "additionalItems", "additionalProperties", "propertyNames", "contains", "not", "if",
    "then", "else", "items",
)
_MAP_7 = ("properties", "patternProperties", "definitions", "$defs", "dependencies")
_LIST_7 = ("allOf", "anyOf", "oneOf", "items")


def escape_pointer(token: str) -> str:
    """Escape one JSON pointer reference token (RFC 6901 section 3)."""
    return token.replace("~", "~0").replace("/", "~1")


def dialect_of(schema: Any, default: str) -> str:
    """The dialect a document declares with ``$schema`` (unknown → 2020-12)."""
    if isinstance(schema, dict):
        declared = schema.get("$schema")
        if isinstance(declared, str):
            d = declared.rstrip("#")
            if "draft-07" in d or "draft-06" in d or "draft-04" in d:
                return DRAFT7
            return DRAFT2020
    return default


def _split(uri: str) -> tuple[str, str]:
    base, _, frag = uri.partition("#")
    return base, frag


def join_uri(base: str, ref: str) -> str:
    """Resolve ``ref`` against ``base`` (RFC 3986 section 5), also for ``urn:`` bases.

    ``urllib.parse.urljoin`` only joins schemes it knows to be hierarchical, so a fragment
    reference against a URN base is handled here.
    """
    if ref.startswith("#"):
        return _split(base)[0] + ref
    if ":" in ref.split("/", 1)[0] or not base:
        return ref
    sibling = _sibling(base, ref)
    if sibling is not None:
        return sibling
    from urllib.parse import urljoin  # any other relative reference (with ipaddress, ~0.4 MB)

    return urljoin(base, ref)


# A file name beside the base ("common.json#/$defs/X", how schemas that span files refer to
# each other), against an http(s) base whose path has no dot segment, empty segment, query
# or parameters: there the merge of RFC 3986 section 5.2.3 is the base's path up to its last
# "/" plus the name, exactly what urljoin returns, without loading urllib.parse.
_SIBLING = re.compile(r"[A-Za-z0-9_~-][A-Za-z0-9_.~-]*(?:#[!-~]+)?")
_SEGMENT = r"[A-Za-z0-9_~!$&'()*+,=:@%-][A-Za-z0-9_.~!$&'()*+,=:@%-]*"
_PLAIN_BASE = re.compile(rf"https?://[A-Za-z0-9.:@_~%!$&'()*+,=-]*(?:/{_SEGMENT})*/?(?:#[!-~]*)?")


def _sibling(base: str, ref: str) -> str | None:
    if _SIBLING.fullmatch(ref) is None or _PLAIN_BASE.fullmatch(base) is None:
        return None
    path_end = base.find("#")
    head = base if path_end < 0 else base[:path_end]
    if head.count("/") < 3:  # no path: "https://host" -> "https://host/name"
        return f"{head}/{ref}"
    return f"{head.rpartition('/')[0]}/{ref}"


def _unquote(text: str) -> str:
    """``text`` with its %-escapes decoded: ``urllib.parse.unquote``, which returns a text
    without "%" as it is (so a local ``$ref`` such a text needs no urllib.parse)."""
    if "%" not in text:
        return text
    from urllib.parse import unquote as decode

    return decode(text)


class Loc:
    """Where a schema object sits: its base URI, JSON pointer in its document, dialect."""

    __slots__ = ("base", "dialect", "pointer")

    def __init__(self, base: str, pointer: str, dialect: str) -> None:
        self.base = base
        self.pointer = pointer
        self.dialect = dialect

    def where(self) -> str:
        """A human-readable location, e.g. ``#/properties/x`` or ``urn:x#/a``."""
        return f"{self.base}#{self.pointer}"


class Registry:
    """Every schema resource, anchor and dynamic anchor known to one compilation."""

    def __init__(self, default_dialect: str) -> None:
        self.default_dialect = default_dialect
        self.resources: dict[str, tuple[Any, Loc]] = {}
        self.anchors: dict[str, tuple[Any, Loc]] = {}
        #: resource URI → {dynamic anchor name → (schema, loc)}
        self.dynamic: dict[str, dict[str, tuple[Any, Loc]]] = {}
        #: id(schema object) → Loc; schema trees are private copies, so ids are unique.
        self.locs: dict[int, Loc] = {}
        self.documents: list[Any] = []  # keeps indexed objects alive (ids stay valid)

    def add_document(self, doc: Any, uri: str) -> Loc:
        """Index a whole document retrieved from ``uri``; returns its root location."""
        self.documents.append(doc)
        dialect = dialect_of(doc, self.default_dialect)
        root = Loc(uri, "", dialect)
        self.resources.setdefault(uri, (doc, root))
        self._walk(doc, uri, "", dialect)
        return self.locs.get(id(doc), root)

    def _walk(self, obj: Any, base: str, pointer: str, dialect: str) -> None:
        if not isinstance(obj, dict) or id(obj) in self.locs:
            return
        if dialect == DRAFT2020:
            sid = obj.get("$id")
            if isinstance(sid, str):
                base = _split(join_uri(base, sid))[0]
                self.resources[base] = (obj, Loc(base, pointer, dialect))
            loc = Loc(base, pointer, dialect)
            anchor = obj.get("$anchor")
            if isinstance(anchor, str):
                self.anchors[f"{base}#{anchor}"] = (obj, loc)
            dyn = obj.get("$dynamicAnchor")
            if isinstance(dyn, str):
                self.anchors.setdefault(f"{base}#{dyn}", (obj, loc))
                self.dynamic.setdefault(base, {})[dyn] = (obj, loc)
            singles: tuple[str, ...] = _SINGLE_2020
            maps: tuple[str, ...] = _MAP_2020
            lists: tuple[str, ...] = _LIST_2020
        else:
            sid = obj.get("$id")
            # Draft-07 section 8.3: "$ref" makes every sibling, "$id" included, ignored.
            if isinstance(sid, str) and "$ref" not in obj:
                full = join_uri(base, sid)
                new_base, frag = _split(full)
                if not sid.startswith("#"):
                    base = new_base
                    self.resources[base] = (obj, Loc(base, pointer, dialect))
                if frag and not frag.startswith("/"):
                    self.anchors[f"{base}#{frag}"] = (obj, Loc(base, pointer, dialect))
            loc = Loc(base, pointer, dialect)
            singles, maps, lists = _SINGLE_7, _MAP_7, _LIST_7
        self.locs[id(obj)] = loc
        for key in singles:
            sub = obj.get(key)
            if isinstance(sub, dict):
                self._walk(sub, base, f"{pointer}/{key}", dialect)
        for key in maps:
            subs = obj.get(key)
            if isinstance(subs, dict):
                for name, sub in subs.items():
                    self._walk(sub, base, f"{pointer}/{key}/{escape_pointer(name)}", dialect)
        for key in lists:
            subs = obj.get(key)
            if isinstance(subs, list):
                for i, sub in enumerate(subs):
                    self._walk(sub, base, f"{pointer}/{key}/{i}", dialect)

    def loc_of(self, obj: Any, fallback: Loc) -> Loc:
        """The recorded location of ``obj`` (indexing it under ``fallback`` if needed)."""
        loc = self.locs.get(id(obj))
        if loc is None:
            if isinstance(obj, dict):
                self._walk(obj, fallback.base, fallback.pointer, fallback.dialect)
                loc = self.locs.get(id(obj))
            if loc is None:
                loc = fallback
        return loc

    def _resource(self, uri: str) -> tuple[Any, Loc] | None:
        found = self.resources.get(uri)
        if found is None:
            doc = meta.lookup(uri)
            if doc is not None:
                logger.debug("resolving %s from the bundled meta-schemas", uri)
                self.add_document(doc, uri)
                found = self.resources.get(uri) or self.resources.get(meta.DRAFT7)
        return found

    def resolve(self, ref: str, loc: Loc) -> tuple[Any, Loc, str] | None:
        """Resolve ``ref`` found at ``loc``.

        Returns:
            ``(schema, location, absolute_uri)``, or ``None`` when the reference points
            at a resource that is not available locally (a "remote" reference).

        Raises:
            SchemaError: the resource is known but the fragment does not exist in it.
        """
        full = join_uri(loc.base, ref)
        uri, frag = _split(full)
        found = self._resource(uri)
        if found is None:
            return None
        doc, doc_loc = found
        if not frag:
            return doc, self.loc_of(doc, doc_loc), full
        if frag.startswith("/"):
            target: Any = doc
            pointer = doc_loc.pointer
            for raw in frag[1:].split("/"):
                token = _unquote(raw).replace("~1", "/").replace("~0", "~")
                if isinstance(target, dict) and token in target:
                    target = target[token]
                elif isinstance(target, list) and token.isdigit() and int(token) < len(target):
                    target = target[int(token)]
                else:
                    raise SchemaError(
                        f"schema at {loc.where()}: $ref {ref!r} points at nothing "
                        f"(no {token!r} in {uri or 'the root schema'})"
                    )
                pointer = f"{pointer}/{escape_pointer(token)}"
            fallback = Loc(doc_loc.base, pointer, doc_loc.dialect)
            return target, self.loc_of(target, fallback), full
        anchored = self.anchors.get(f"{uri}#{_unquote(frag)}")
        if anchored is None:
            raise SchemaError(
                f"schema at {loc.where()}: $ref {ref!r}: no anchor {frag!r} "
                f"in {uri or 'the root schema'}"
            )
        return anchored[0], anchored[1], full
