"""The Product Metadata MCP server of Talk-2-Tables: product aliases and column mappings, as resources.

The document's new server (priority 1, "list_resources only"). It loads a JSON file in the
document's Product Metadata shape (``last_updated``, ``product_aliases``, ``column_mappings``)
and serves three resources:

- ``product-metadata://product_aliases``: user terms -> canonical products and their database
  references;
- ``product-metadata://column_mappings``: user-friendly terms -> SQL columns and expressions,
  aggregation terms, table aliases;
- ``product-metadata://metadata_summary``: counts and the update time.

The file is read again on every read, so an edited file is served without a restart. It has no
tools. Run: ``python -m examples.talk2tables.servers.product_metadata --transport sse --port 8002``.
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path
from typing import Any

from .mcpserver import MCPServer, Resource, run

logger = logging.getLogger("talk2tables.servers.product_metadata")

__all__ = ["DEFAULT_METADATA", "build_server", "load_metadata", "main"]

DEFAULT_METADATA = Path(__file__).resolve().parent.parent / "data" / "product_metadata.json"


def load_metadata(path: Path) -> dict[str, Any]:
    """The metadata file, checked for the document's two required maps."""
    data = json.loads(path.read_text(encoding="utf-8"))
    for key in ("product_aliases", "column_mappings"):
        if not isinstance(data.get(key), dict):
            raise ValueError(f"{path.name}: {key!r} must be an object")
    return dict(data)


def build_server(path: Path = DEFAULT_METADATA) -> MCPServer:
    """The server object (tests serve it in-process over SSE)."""
    load_metadata(path)  # a broken file fails at start, not at the first read
    server = MCPServer("talk2tables-product-metadata", instructions=(
        "Product aliases (user terms -> canonical products and database ids) and column mappings "
        "(user-friendly terms -> SQL). Resolve entities here before writing SQL."))

    def aliases() -> str:
        return json.dumps(load_metadata(path)["product_aliases"], indent=1)

    def mappings() -> str:
        return json.dumps(load_metadata(path)["column_mappings"], indent=1)

    def summary() -> str:
        data = load_metadata(path)
        return json.dumps({
            "last_updated": data.get("last_updated"),
            "product_alias_count": len(data["product_aliases"]),
            "alias_terms": sorted(a for p in data["product_aliases"].values() for a in p.get("aliases", [])),
            "column_mapping_groups": sorted(data["column_mappings"]),
        }, indent=1)

    server.add_resource(Resource("product-metadata://product_aliases", "product_aliases",
                                 "Maps user terms to canonical product IDs", aliases))
    server.add_resource(Resource("product-metadata://column_mappings", "column_mappings",
                                 "Maps user-friendly terms to SQL columns", mappings))
    server.add_resource(Resource("product-metadata://metadata_summary", "metadata_summary",
                                 "Overview of available metadata", summary))
    return server


def main(argv: list[str] | None = None) -> int:
    def extra(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--metadata", type=Path, default=DEFAULT_METADATA, help="the metadata JSON file")

    return run(lambda args: build_server(args.metadata), "Talk-2-Tables product metadata MCP server", argv,
               default_port=8002, extra=extra)


if __name__ == "__main__":
    raise SystemExit(main())
