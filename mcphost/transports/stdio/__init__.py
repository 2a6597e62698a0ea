"""The stdio transport and its process room: everything about running a server as a child.

Layer 2. Nothing outside this package spawns, signals or waits for a process
(``tests/test_layering.py``):

- ``transport``: :class:`StdioTransport`, newline-delimited JSON over the child's pipes,
  what only stdio can say (noise on stdout, oversized lines, how the process ended);
- ``process``: :class:`~.process.ServerProcess`, the spawn, the pipes, stderr, and the ONE
  shutdown ladder (with its synchronous forms: kill now, and the ``atexit`` hook);
- ``command``: the command found on the child's ``PATH`` (on Windows through ``PATHEXT``,
  npm's ``.cmd`` shims run by ``node.exe``), the environment allow-list, the package
  runners (``npx``, ``uvx``...);
- ``platform``: the operating system's side (process trees, signals, survivors, resource
  limits), behind one interface with injected system calls; POSIX here, and
- ``windows``: the same interface on Windows (a process group and a Job Object per server).
"""

from .transport import StdioTransport

__all__ = ["StdioTransport"]
