"""Usage history: what each queue has used over the last days, decayed with a half-life.

The periodic pass samples each queue's current use (the book's counts, per resource, rolled up
the tree) and the time since the last sample; their product (resource-seconds, e.g. GPU-seconds)
goes into the hourly bucket the interval starts in, already decayed to that bucket's start. At
`now`, a bucket that starts `a` seconds ago counts `0.5 ** (a / halfLife)` of its amount; buckets
that start before `now - window` are dropped.

`average` is what the fair order adds to a queue's current use: the decayed resource-seconds over
the decay's mean lifetime (`halfLife / ln 2`), i.e. an average of the amount in use in the recent
past, weighted by recency — a queue that held 8 GPUs for ever averages 8 (docs/fairness.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

BUCKET_SECONDS = 3600.0
RECORD_LIMIT = 900_000  # bytes of JSON at most (a ConfigMap holds 1 MiB)
RECORD_VERSION = 1

Amounts = dict[str, dict[str, float]]  # queue -> resource -> amount


@dataclass
class UsageHistory:
    """Decayed resource-seconds per queue and resource (half_life 0: no history is kept).

    Besides the buckets (the window, and what is persisted) it keeps each queue's sum of the
    buckets decayed to a reference time, so that the decayed usage at any `now` is one
    multiplication per queue and resource, not a walk over a week of buckets."""

    half_life: float
    window: float
    bucket: float = BUCKET_SECONDS
    _buckets: dict[int, Amounts] = field(default_factory=dict)
    _last: float | None = None
    _ref: float = 0.0  # the sums below are decayed to this time
    _sums: Amounts = field(default_factory=dict)
    # Merged buckets of the last record whose hours are all past (`to_record`).
    _merged: dict[tuple[Any, ...], dict[str, list[int]]] = field(default_factory=dict)

    @property
    def on(self) -> bool:
        return self.half_life > 0

    @property
    def last(self) -> float | None:
        """The last sample's time (None before the first)."""
        return self._last

    def set_rates(self, half_life: float, window: float) -> None:
        """A new policy's half-life and window; the buckets kept are kept."""
        if (half_life, window) != (self.half_life, self.window):
            self.half_life, self.window = half_life, window
            self._resum()

    def sample(self, now: float, use: Mapping[str, Mapping[str, int]]) -> None:
        """Record that each queue has used `use` since the last sample (the first only starts
        the clock; a sample more than a bucket after the last counts one bucket, as after a
        pause the use in between is not known)."""
        if not self.on:
            return
        last, self._last = self._last, now
        if last is None or now <= last:
            return
        last = max(last, now - self.bucket)
        seconds = now - last
        start = int(last // self.bucket)
        if not self._buckets:
            self._ref = start * self.bucket
        # Decayed to the bucket's start from the interval's middle: exact for a steady use.
        lift = 0.5 ** -((last + seconds / 2 - start * self.bucket) / self.half_life)
        to_ref = 0.5 ** ((self._ref - start * self.bucket) / self.half_life)
        slot = self._buckets.setdefault(start, {})
        for queue, amounts in use.items():
            totals: dict[str, float] | None = None
            sums: dict[str, float] | None = None
            for resource, amount in amounts.items():
                if amount > 0:
                    if totals is None or sums is None:
                        totals = slot.setdefault(queue, {})
                        sums = self._sums.setdefault(queue, {})
                    added = amount * seconds * lift
                    totals[resource] = totals.get(resource, 0.0) + added
                    sums[resource] = sums.get(resource, 0.0) + added * to_ref
        oldest = (now - self.window) // self.bucket
        for old in [s for s in self._buckets if s < oldest]:
            self._forget(old)
        if (now - self._ref) > 200 * self.half_life:
            self._resum()  # the reference time moved on (the sums would grow out of floats)

    def _forget(self, start: int) -> None:
        """Bucket `start` out of the window: dropped, and taken out of the sums."""
        factor = 0.5 ** ((self._ref - start * self.bucket) / self.half_life)
        for queue, totals in self._buckets.pop(start).items():
            sums = self._sums.get(queue)
            if sums is None:
                continue
            for resource, amount in totals.items():
                left = sums.get(resource, 0.0) - amount * factor
                sums[resource] = left if left > 1e-9 * amount * factor else 0.0
            if not any(sums.values()):
                del self._sums[queue]

    def _resum(self) -> None:
        """The sums again from the buckets, decayed to the oldest bucket's start."""
        self._sums = {}
        if not self._buckets or not self.on:
            return
        self._ref = min(self._buckets) * self.bucket
        for start, slot in self._buckets.items():
            factor = 0.5 ** ((self._ref - start * self.bucket) / self.half_life)
            for queue, totals in slot.items():
                sums = self._sums.setdefault(queue, {})
                for resource, amount in totals.items():
                    sums[resource] = sums.get(resource, 0.0) + amount * factor

    def decayed(self, now: float) -> Amounts:
        """Each queue's decayed resource-seconds at `now`, per resource (the buckets up to
        `now`; those dropped at the last sample no longer count)."""
        if not self.on:
            return {}
        # Not before the reference time (a clock that never told the engine: `now` 0).
        factor = 0.5 ** (max(0.0, now - self._ref) / self.half_life)
        return {
            queue: {r: amount * factor for r, amount in sums.items()}
            for queue, sums in self._sums.items()
        }

    def average(self, now: float) -> Amounts:
        """Each queue's decayed use at `now` as an amount (decayed resource-seconds over the
        decay's mean lifetime): what the fair order adds to its current use."""
        if not self.on:
            return {}
        per_second = math.log(2) / self.half_life
        return {
            queue: {r: amount * per_second for r, amount in sums.items()}
            for queue, sums in self.decayed(now).items()
        }

    # ---- persistence (a ConfigMap's data, written by the leader) ---------------------------
    def to_record(self, limit: int = RECORD_LIMIT) -> dict[str, Any]:
        """What is written to the cluster: the buckets (merged into coarser ones as needed for
        the JSON to stay under `limit` bytes, a ConfigMap holding 1 MiB), each queue's amounts
        (whole resource-seconds) in the order of `resources`, and the last sample's time.

        Made once a minute under the decision lock, so it is cheap: the merged size is chosen
        from counts of rows, and a merged bucket whose hours are all past is merged once and
        kept (only the current one is merged again)."""
        resources = sorted({r for sums in self._sums.values() for r in sums})
        queues = self._sums.keys()
        row_bytes = 8 + 16 * len(resources) + sum(map(len, queues)) / max(1, len(queues))
        size = self.bucket
        while size < self.window:
            per = size / self.bucket  # hourly buckets in one merged bucket, at most
            count = sum(min(len(slot) * per, len(queues)) for slot in self._buckets.values()) / per
            if count * row_bytes <= limit:
                break
            size *= 2
        groups: dict[float, list[int]] = {}
        for start in sorted(self._buckets):
            groups.setdefault(start * self.bucket // size * size, []).append(start)
        newest = max(self._buckets, default=None)
        merged: dict[str, dict[str, list[int]]] = {}
        kept: dict[tuple[Any, ...], dict[str, list[int]]] = {}
        for coarse, starts in groups.items():
            key = (size, coarse, starts[0], len(starts), tuple(resources), self.half_life)
            rows = self._merged.get(key)
            if rows is None:
                rows = self._merge(coarse, starts, resources)
            if newest not in starts:  # all its hours are past: it no longer changes
                kept[key] = rows
            merged[f"{coarse:.0f}"] = rows
        self._merged = kept
        return {
            "version": RECORD_VERSION,
            "bucketSeconds": size,
            "last": self._last,
            "resources": resources,
            "buckets": merged,
        }

    def _merge(
        self, coarse: float, starts: list[int], resources: list[str]
    ) -> dict[str, list[int]]:
        """The hourly buckets `starts` as one bucket starting at `coarse`."""
        sums: dict[str, list[float]] = {}
        for start in starts:
            lift = 0.5 ** -((start * self.bucket - coarse) / self.half_life) if self.on else 1.0
            for queue, totals in self._buckets[start].items():
                row = sums.get(queue)
                if row is None:
                    row = sums[queue] = [0.0] * len(resources)
                for i, resource in enumerate(resources):
                    amount = totals.get(resource)
                    if amount:
                        row[i] += amount * lift
        return {q: [round(a) for a in row] for q, row in sums.items()}

    def restore(self, record: Mapping[str, Any]) -> None:
        """The buckets of a record `to_record` wrote, in place of this process's (it has sampled
        seconds since it started or took the Lease; the record, all the time before); ValueError
        saying why when it is not such a record."""
        try:
            if record.get("version") != RECORD_VERSION:
                raise ValueError(f"version {record.get('version')!r}, not {RECORD_VERSION}")
            size = float(record["bucketSeconds"])
            if size < self.bucket or size % self.bucket:
                raise ValueError(f"buckets of {size:g}s, not a multiple of {self.bucket:g}s")
            resources = [str(r) for r in record["resources"]]
            buckets: dict[int, Amounts] = {}
            for begins, slot in record["buckets"].items():
                start = float(begins)
                if start % size:
                    raise ValueError(f"a bucket starts at {begins}, not on a {size:g}s boundary")
                buckets[int(start // self.bucket)] = {
                    str(q): {r: float(a) for r, a in zip(resources, row, strict=True) if a}
                    for q, row in slot.items()
                }
            last = record.get("last")
            last = None if last is None else float(last)
        except (KeyError, TypeError, AttributeError, ValueError) as err:
            raise ValueError(f"not a usage history record: {err}") from None
        self._buckets = buckets
        if self._last is None:
            self._last = last
        self._resum()
