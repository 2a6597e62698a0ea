"""The MCP server side of one client connection (layer 3).

``session`` is the MCP server session over one JSON-RPC peer (the initialize-handshake era:
negotiation, ping, the lists page by page, calls, subscriptions, log level, completion,
cancellation, bounded requests in flight); ``context`` is what a served request can do while
it runs (progress, asking the client) and the ``Backend`` that serves it.
"""
