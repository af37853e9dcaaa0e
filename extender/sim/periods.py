"""Totals over a run split into periods of simulated time (a day, four hours): amount x seconds
(GPU-seconds of a queue, workers of elastic jobs) and counts of events, by key."""

from __future__ import annotations

import math


class PeriodTotals:
    """Per key, one total per period of `seconds` from time 0 (the last period may be short)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.totals: dict[str, list[float]] = {}

    def _row(self, key: str, index: int) -> list[float]:
        row = self.totals.setdefault(key, [])
        if len(row) <= index:
            row.extend([0.0] * (index + 1 - len(row)))
        return row

    def add(self, key: str, start: float, end: float, amount: float) -> None:
        """`amount` held from `start` to `end`: amount x seconds into each period it spans."""
        if not amount or end <= start:
            return
        t = start
        while t < end:
            index = int(t // self.seconds)
            edge = min(end, (index + 1) * self.seconds)
            self._row(key, index)[index] += amount * (edge - t)
            t = edge

    def count(self, key: str, t: float, n: int = 1) -> None:
        """`n` events at time `t`."""
        index = int(t // self.seconds)
        self._row(key, index)[index] += n

    def periods(self, end: float) -> int:
        """Periods from 0 to `end` (at least one)."""
        return max(1, math.ceil(end / self.seconds))

    def row(self, key: str, periods: int) -> list[float]:
        """`key`'s totals over `periods` periods (0 where nothing was added)."""
        found = self.totals.get(key, [])
        return [found[i] if i < len(found) else 0.0 for i in range(periods)]
