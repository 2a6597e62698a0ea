"""The specification documents' own APIs, each a thin facade over :class:`mcphost.MCPHost`.

Layer 5: these modules use only the public ``mcphost`` API and ``mcphost.errors``, so
code written against a document runs as written:

- :mod:`mcphost.compat.orchestrator`: the Talk-2-Tables orchestrator (``MCPOrchestrator``
  and its exception tree);
- :mod:`mcphost.compat.manager`: the client-manager API (``MCPClientManager``,
  ``MCPServerConfig``, ``ToolWrapper``...);
- :mod:`mcphost.compat.client_module`: the client-module revision (``MCPConfigManager``,
  ``MCPService``, ``MCPSessionManager``...).

``bridge`` makes each document's exception also the ``MCPHostError`` it stands for.
docs/specifications.md says what each document asks and where every difference comes from.
"""
