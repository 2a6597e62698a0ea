"""A role-neutral JSON-RPC 2.0 peer over one transport (layer 3); knows no MCP method.

``peer`` (correlation, one sending path, one waiting path, serving the other side),
``calls`` (a call's options, a pending call's record, the counters), ``deadlines``
(timeouts on one injected clock), ``taskset`` (tasks with an owner that cancels them).
"""
