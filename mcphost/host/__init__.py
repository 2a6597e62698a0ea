"""The host (layer 4): many servers behind one API.

``facade`` (``MCPHost``: the public API, named collaborators, ``call_tool``), ``lifecycle``
(the host's state and its commands), ``supervisor`` (start, stop, restart, states),
``connector`` (how one start connects: transport, session wired to the host, discovery),
``eras`` (the era of each http origin, remembered),
``startclock`` (the start-up timeout, stopped while a person logs in), ``startup_errors`` (what a failed start says), ``signals`` (the application's SIGTERM: shut
down, then die of it), ``options`` (the constructor's options, checked), ``renewal`` (what
follows a renewed session), ``recovery`` (the restart policy; retries of safe requests),
``registry`` (discovery, paging, list_changed), ``router`` (qualified names, URIs, the route
cache), ``permissions`` (rights on ``mcp:{server}:{tool}``), ``validation`` (tool schemas),
``handlers`` (the application's callbacks and events), ``requests`` (sending prompts,
resources, completion...), ``queries`` (their public methods), ``readcache`` (the cache of
reads and prompts), ``skills`` (the skills extension: listed, loaded
verified), ``observe`` (outcomes, hooks, request logs, metrics), ``secrets``
(secrets and paths out of what is said), ``configload`` (reading the configuration),
``reload`` (applying a new one), ``handle`` (one server's record), ``local`` (the
application's own tools, served in process), ``tools_api`` (the model APIs: ``tools_for``,
``dispatch``, ``search_tools``), ``lazy`` (that room built on first use), ``providers`` (their shapes and names), ``search``,
``search_words``, ``search_vocabulary``, ``search_semantic`` and ``stem`` (tool search).
"""

from .facade import MCPHost

__all__ = ["MCPHost"]
