"""Why the fair order puts a queue behind another, in the words `gangplank why` and `GET /queues`
use: the decayed usage (`usage_history`) in resource-hours, and the sentence naming the queue
ahead when the history or a guarantee decides it (`queue research is behind queue vision: 410
GPU-hours recently (half-life 24h) against 120, weights 1:1`).
"""

from __future__ import annotations

from collections.abc import Mapping

from extender.core.queues.book import QueueBook
from extender.core.queues.lifecycle import format_duration

UNIT_HOURS = {"nvidia.com/gpu": "GPU-hours", "cpu": "core-hours", "memory": "GiB-hours"}
SCALE = {"cpu": 1000.0, "memory": float(2**30)}  # base units per unit written


def resource_hours(resource: str, seconds: float) -> str:
    """Decayed resource-seconds as a person reads them: `410 GPU-hours`, `12 core-hours`."""
    unit = UNIT_HOURS.get(resource, f"{resource}-hours")
    hours = seconds / SCALE.get(resource, 1.0) / 3600.0
    return f"{hours:.0f} {unit}" if hours >= 10 else f"{hours:.1f} {unit}"


def dominant(book: QueueBook, past: Mapping[str, float]) -> str:
    """The resource of the largest decayed share of capacity (GPUs when none is used)."""
    best, name = -1.0, "nvidia.com/gpu"
    for resource, amount in past.items():
        total = book.capacity.get(resource, 0)
        if total > 0 and amount / total > best:
            best, name = amount / total, resource
    return name


def behind(book: QueueBook, decayed: Mapping[str, Mapping[str, float]], queue: str) -> str:
    """Why `queue`'s jobs wait behind a sibling's (at the highest level of its path where one is
    ahead) when the usage history or a guarantee decides it; "" when neither does (the shares
    now decide, as without history) or the policy keeps no history."""
    policy = book.policy
    if not policy.fairness.on or not book.past:
        return ""
    for name in policy.path(queue)[::-1]:
        spec = policy.queues[name]
        siblings = [
            s
            for s in policy.children.get(spec.parent, ())
            if s != name and book.state[s].waiting_jobs and policy.queues[s].state == "open"
        ]
        mine = (not book.under_guarantee(name), book.share(name))
        ahead = sorted(
            (key, s)
            for s in siblings
            if (key := (not book.under_guarantee(s), book.share(s))) < mine
        )
        if not ahead:
            continue
        (tier, _), other = ahead[0]
        if not tier and mine[0]:
            return f"queue {name} is behind queue {other}: {other} is under its guarantee"
        if book.share(other, history=False) < book.share(name, history=False):
            return ""  # ahead on its current use alone: the history does not decide it
        resource = dominant(book, decayed.get(name, {}))
        half_life = format_duration(policy.fairness.half_life)
        return (
            f"queue {name} is behind queue {other}: "
            f"{resource_hours(resource, decayed.get(name, {}).get(resource, 0.0))} used recently "
            f"(half-life {half_life}) against "
            f"{resource_hours(resource, decayed.get(other, {}).get(resource, 0.0))}, "
            f"weights {spec.weight:g}:{policy.queues[other].weight:g}"
        )
    return ""
