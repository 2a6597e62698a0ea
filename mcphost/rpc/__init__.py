"""A role-neutral JSON-RPC 2.0 peer over one transport (layer 3); knows no MCP method."""
