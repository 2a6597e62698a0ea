"""Built-in specs of the fake server, chosen with ``--script NAME``.

``conformance``: the contract of the official conformance suite's reference server (the
tools, prompts and resources its server scenarios call), see :mod:`.conformance`.
"""

from __future__ import annotations

from collections.abc import Callable

from .common import Msg
from .conformance import conformance_spec

SCRIPTS: dict[str, Callable[[], Msg]] = {"conformance": conformance_spec}
