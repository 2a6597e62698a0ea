"""A role-neutral JSON-RPC 2.0 peer over one transport (layer 3); knows no MCP method.

``peer`` (correlation, one sending path, one waiting path, the inbound dispatch), ``serving``
(answering the other side's requests: at once, or from a task of its own),
``calls`` (a call's options, a pending call's record, the counters), ``deadlines``
(timeouts on one injected clock), ``taskset`` (tasks with an owner that cancels them).
"""
