"""Fill levels of capped files, shown on every write so the agent sees the budget coming."""

from __future__ import annotations

from typing import NamedTuple


class Fill(NamedTuple):
    used: int
    cap: int

    @property
    def ratio(self) -> float:
        return self.used / self.cap if self.cap else 1.0

    @property
    def over(self) -> bool:
        return self.used > self.cap

    def warns(self, warning_ratio: float) -> bool:
        return self.ratio >= warning_ratio

    def __str__(self) -> str:
        """« 1 474/2 000 (74 %) », the way the spec writes it."""
        return f"{_group(self.used)}/{_group(self.cap)} ({round(100 * self.ratio)} %)"


def _group(number: int) -> str:
    return f"{number:,}".replace(",", " ")
