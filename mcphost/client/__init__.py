"""The MCP client side of one server connection (layer 3).

``session`` is the MCP client session over one JSON-RPC peer; ``era`` chooses its era (the
``server/discover`` probe) and does the modern era's work (``_meta``, headers, multi-round-trip
requests); ``listen`` keeps a modern server's ``subscriptions/listen`` stream; ``renewal`` starts a new
session when the transport lost its own (bounded) and tells the owner; ``tasks`` follows tasks the
host created on a server; ``served_tasks`` runs the server's task-augmented requests; ``serving`` admits,
bounds and answers the server's requests to the client.
"""
