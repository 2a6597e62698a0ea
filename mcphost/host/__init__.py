"""The host (layer 4): many servers behind one API.

``facade`` (``MCPHost``, the public API, delegating), ``supervisor`` (start, stop,
restart, states), ``signals`` (the application's SIGTERM: shut down, then die of it),
``renewal`` (what follows a renewed session), ``local`` (the application's own tools,
served in process), ``registry`` (discovery, paging, list_changed), ``router`` (qualified
names, URIs, the route cache), ``validation`` (tool schemas), ``handlers`` (the
application's callbacks and events), ``requests`` (prompts, resources, completion...),
``configload`` (reading the configuration), ``handle`` (one server's record),
``options`` (the constructor's options, checked), ``startup_errors`` (what a failed start
says).
"""

from .facade import MCPHost

__all__ = ["MCPHost"]
