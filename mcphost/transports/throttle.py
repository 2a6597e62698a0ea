"""Bounded repetition of a diagnostic a server can cause at will.

Layer 2. A server that writes 100,000 messages that are not JSON must not make the host
write 100,000 warnings: a :class:`Throttle` lets the first few occurrences through, then
every ``every``-th, and says how many there were so far, so the log stays readable and the
count stays exact (the transports' statistics hold it too).
"""

from __future__ import annotations

from typing import Final

__all__ = ["DEFAULT_EVERY", "DEFAULT_FIRST", "Throttle"]

#: Occurrences told one by one.
DEFAULT_FIRST: Final = 5
#: After those, one in this many is told (with the count).
DEFAULT_EVERY: Final = 1000


class Throttle:
    """Counts occurrences of one kind and says which of them to report."""

    __slots__ = ("count", "every", "first")

    def __init__(self, first: int = DEFAULT_FIRST, every: int = DEFAULT_EVERY) -> None:
        if first < 0 or every < 1:
            raise ValueError("first must not be negative and every must be at least 1")
        self.first = first
        self.every = every
        self.count = 0

    def tick(self) -> bool:
        """Count one occurrence; return whether to report it."""
        self.count += 1
        return self.count <= self.first or self.count % self.every == 0

    def suffix(self) -> str:
        """What to add to a reported line: nothing for the first ones, then the count."""
        if self.count <= self.first:
            return f" (later ones are counted; one in {self.every} is logged)" if self.count == self.first else ""
        return f" ({self.count} so far; one in {self.every} is logged)"
