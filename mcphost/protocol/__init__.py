"""The rules of JSON-RPC 2.0 and MCP, with no I/O and no clock (layer 1).

``jsonrpc`` (envelope, codes, correlation), ``versions`` (the one table of protocol
versions), ``legacy`` (the initialize-era handshake), ``modern`` (the stateless 2026-07-28 era),
``modern_server`` (that era's rules seen from the server),
``machine`` (the one model of every
lifecycle, and the connection's), ``lifecycle`` (server and host states and their
transitions), ``messages`` (schema checks per version), ``tasks`` (task status rules),
``uritemplate`` (RFC 6570 matching for resource routing).
"""
