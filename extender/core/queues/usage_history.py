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

Amounts = dict[str, dict[str, float]]  # queue -> resource -> amount


@dataclass
class UsageHistory:
    """Decayed resource-seconds per queue and resource (half_life 0: no history is kept)."""

    half_life: float
    window: float
    bucket: float = BUCKET_SECONDS
    _buckets: dict[int, Amounts] = field(default_factory=dict)
    _last: float | None = None

    @property
    def on(self) -> bool:
        return self.half_life > 0

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
        # Decayed to the bucket's start from the interval's middle: exact for a steady use.
        lift = 0.5 ** -((last + seconds / 2 - start * self.bucket) / self.half_life)
        slot = self._buckets.setdefault(start, {})
        for queue, amounts in use.items():
            totals: dict[str, float] | None = None
            for resource, amount in amounts.items():
                if amount > 0:
                    totals = slot.setdefault(queue, {}) if totals is None else totals
                    totals[resource] = totals.get(resource, 0.0) + amount * seconds * lift
        oldest = (now - self.window) // self.bucket
        for old in [s for s in self._buckets if s < oldest]:
            del self._buckets[old]

    def decayed(self, now: float) -> Amounts:
        """Each queue's decayed resource-seconds at `now`, per resource."""
        out: Amounts = {}
        if not self.on:
            return out
        for start, slot in self._buckets.items():
            age = now - start * self.bucket
            if age > self.window + self.bucket:
                continue
            factor = 0.5 ** (max(0.0, age) / self.half_life)
            for queue, totals in slot.items():
                sums = out.setdefault(queue, {})
                for resource, amount in totals.items():
                    sums[resource] = sums.get(resource, 0.0) + amount * factor
        return out

    def average(self, now: float) -> Amounts:
        """Each queue's decayed use at `now` as an amount (decayed resource-seconds over the
        decay's mean lifetime): what the fair order adds to its current use."""
        if not self.on:
            return {}
        lifetime = self.half_life / math.log(2)
        return {
            queue: {r: amount / lifetime for r, amount in sums.items()}
            for queue, sums in self.decayed(now).items()
        }

    # ---- persistence (a ConfigMap's data, written by the leader) ---------------------------
    def to_record(self) -> dict[str, Any]:
        """What is written to the cluster: the buckets and the last sample's time."""
        return {
            "bucketSeconds": self.bucket,
            "last": self._last,
            "buckets": {str(start): slot for start, slot in sorted(self._buckets.items())},
        }

    def restore(self, record: Mapping[str, Any]) -> None:
        """Take the buckets of a record `to_record` wrote (ValueError when it is not one); what
        this process sampled since it started is kept too."""
        try:
            if float(record["bucketSeconds"]) != self.bucket:
                raise ValueError(f"bucket of {record['bucketSeconds']}s, not {self.bucket:g}s")
            buckets = {
                int(start): {
                    str(q): {str(r): float(a) for r, a in totals.items()}
                    for q, totals in slot.items()
                }
                for start, slot in record["buckets"].items()
            }
            last = record.get("last")
            last = None if last is None else float(last)
        except (KeyError, TypeError, AttributeError, ValueError) as err:
            raise ValueError(f"not a usage history record: {err}") from None
        for start, slot in buckets.items():
            mine = self._buckets.setdefault(start, {})
            for queue, totals in slot.items():
                sums = mine.setdefault(queue, {})
                for resource, amount in totals.items():
                    sums[resource] = max(sums.get(resource, 0.0), amount)
        if last is not None and (self._last is None or last > self._last):
            self._last = last
