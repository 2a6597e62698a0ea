"""Talk-2-Tables: natural-language questions answered over two MCP servers (the orchestrator document)."""
