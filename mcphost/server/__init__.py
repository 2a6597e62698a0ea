"""The MCP server side of one client connection (layer 3).

``session`` is the MCP server session over one JSON-RPC peer (the initialize-handshake era:
negotiation, ping, the lists page by page, calls, subscriptions, log level, completion,
cancellation, bounded requests in flight); ``context`` is what a served request can do while
it runs (progress, asking the client) and the ``Backend`` that serves it; ``modern`` serves
the 2026-07-28 era's requests on the same session (discover, per-request ``_meta``, questions
asked as multi-round-trip ``inputRequests`` with a signed ``requestState``); ``tasks`` keeps the
tasks made of clients' calls and serves ``tasks/*`` in both eras, each task seen only by its owner.
"""
