"""What `GET /queues` and the queue metrics show: every queue's guarantee, max, use, borrowing
and lending, and each waiting job with its place in the fair line and why it waits.

`lent` is the part of a queue's unused guarantee that its siblings are borrowing: what the
siblings use beyond their own guarantees, shared among the siblings with unused guarantee in
proportion to it.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from extender.core.engine import Engine
from extender.core.model.keys import job_name
from extender.core.model.quantity import format_amount
from extender.core.model.snapshot import Snapshot
from extender.core.queues.book import QueueBook
from extender.core.queues.fair_order import fair_order
from extender.core.queues.fair_reason import behind, resource_hours
from extender.core.report.failures import failing_jobs
from extender.core.report.why import history_state

LINE_LIMIT = 1000  # places in the fair line worked out for the report
HIDDEN = frozenset({"pods"})  # every pod takes one; saying so says nothing
NOT_TRIED = (
    "waiting for kube-scheduler to try it (its own filters found no node with room, or it has "
    "not come to it yet)"
)


def amounts(values: Mapping[str, int]) -> dict[str, str]:
    return {k: format_amount(k, v) for k, v in sorted(values.items()) if v and k not in HIDDEN}


def lent(book: QueueBook) -> dict[str, dict[str, int]]:
    policy = book.policy
    out: dict[str, dict[str, int]] = {name: {} for name in policy.queues}
    for kids in policy.children.values():
        borrowed: dict[str, int] = {}
        unused: dict[str, int] = {}
        for kid in kids:
            for k, v in book.borrowed(kid).items():
                borrowed[k] = borrowed.get(k, 0) + v
            for k, v in book.unused_guarantee(kid).items():
                unused[k] = unused.get(k, 0) + v
        for kid in kids:
            for k, v in book.unused_guarantee(kid).items():
                if borrowed.get(k):
                    out[kid][k] = int(v * min(1.0, borrowed[k] / unused[k]))
    return out


def collect_report(
    engine: Engine,
    snapshot: Snapshot,
    now: float,
    *,
    only: str | None = None,
    jobs_per_queue: int = 20,
) -> dict[str, Any]:
    """What the report shows, as plain values copied from the book: made under the lock, turned
    into text by `render_report` after it. `only`: one queue and its subtree; at most
    `jobs_per_queue` waiting jobs listed per queue (all are counted)."""
    policy = engine.policy
    if policy is None:
        return {"policy": None, "queues": []}
    book = engine.book_for(snapshot)
    line = {
        job.key: place
        for place, job in enumerate(itertools.islice(fair_order(book), LINE_LIMIT), start=1)
    }
    lending = lent(book)
    decayed = engine.history.decayed(now)
    queues = []
    for name, spec in policy.queues.items():
        if only is not None and only not in policy.path(name):
            continue
        state = book.state[name]
        waiting = [
            (job, place, line.get(job.key), engine.waiting.reason_of(job.key))
            for place, job in enumerate(book.waiting(name)[:jobs_per_queue], start=1)
        ]
        queues.append(
            {
                "name": name,
                "spec": spec,
                "guarantee": dict(book.guarantee[name]),
                "used": dict(state.used),
                "reserved": dict(state.reserved),
                "borrowed": book.borrowed(name),
                "lent": lending[name],
                "protected": dict(state.protected),
                "share": book.share(name),
                "share_now": book.share(name, history=False),
                "decayed": dict(decayed.get(name, {})),
                "behind": behind(book, decayed, name) if state.waiting_jobs else "",
                "pending_jobs": state.waiting_jobs,
                "pending_requests": dict(state.demand),
                "waiting": waiting,
            }
        )
    hold = engine.holder.current
    return {
        "policy": policy.source,
        "now": now,
        "capacity": {k: v for k, v in book.capacity.items() if k in book.tracked},
        "idle": dict(book.idle),
        "holding": None if hold is None else (hold.key, hold.deadline),
        "history": history_state(engine),
        "queues": queues,
    }


def render_report(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON of `GET /queues` from `collect_report`'s values."""
    if raw.get("policy") is None:
        return {"policy": None, "queues": []}
    now = raw["now"]
    queues = []
    for q in raw["queues"]:
        spec = q["spec"]
        queues.append(
            {
                "name": q["name"],
                "parent": spec.parent,
                "state": spec.state,
                "weight": spec.weight,
                "namespaces": list(spec.namespaces),
                "guarantee": amounts(q["guarantee"]),
                "max": amounts(spec.max),
                "used": amounts(q["used"]),
                "reserved": amounts(q["reserved"]),
                "borrowed": amounts(q["borrowed"]),
                "lent": amounts(q["lent"]),
                "protected": amounts(q["protected"]),
                "share": round(q["share"], 4),
                **history_of(q, raw.get("history") is not None),
                "pending": {"jobs": q["pending_jobs"], "requests": amounts(q["pending_requests"])},
                "waiting": [
                    {
                        "job": job.name,
                        "pods": len(job.pods),
                        "priority": job.priority,
                        "requests": amounts(job.requests),
                        "waitingSeconds": round(max(0.0, now - job.created), 1),
                        "queuePosition": place,
                        "position": position,
                        "reason": reason or NOT_TRIED,
                    }
                    for job, place, position, reason in q["waiting"]
                ],
            }
        )
    holding = raw["holding"]
    return {
        "policy": raw["policy"],
        "capacity": amounts(raw["capacity"]),
        "idle": amounts(raw["idle"]),
        "holding": None
        if holding is None
        else {"job": job_name(holding[0]), "seconds": round(max(0.0, holding[1] - now), 1)},
        "usageHistory": raw.get("history"),
        "queues": queues,
    }


def history_of(q: Mapping[str, Any], kept: bool) -> dict[str, Any]:
    """A queue's decayed usage and what it does to its share (nothing when no history is kept):
    `shareNow` is the share on current use alone, `behind` the queue ahead because of it."""
    if not kept:
        return {}
    return {
        "shareNow": round(q["share_now"], 4),
        "decayedUsage": {r: resource_hours(r, v) for r, v in sorted(q["decayed"].items())},
        "behind": q["behind"],
    }


def queue_report(engine: Engine, snapshot: Snapshot, now: float, **options: Any) -> dict[str, Any]:
    return render_report(collect_report(engine, snapshot, now, **options))


WAIT_THRESHOLDS = (("5m", 300.0), ("1h", 3600.0), ("6h", 21600.0))


def queue_numbers(engine: Engine, snapshot: Snapshot, now: float = 0.0) -> list[dict[str, Any]]:
    """Per queue, in base units, for the metrics. Waits are counted at `now` (wall clock)."""
    if engine.policy is None:
        return []
    book = engine.book_for(snapshot)
    lending = lent(book)
    decayed = engine.history.decayed(now)
    oldest: dict[str, float] = {}
    longer: dict[str, dict[str, int]] = {}
    for job in book.waiting_keys.values():
        waited = max(0.0, now - job.created)
        oldest[job.queue] = max(oldest.get(job.queue, 0.0), waited)
        counts = longer.setdefault(job.queue, {})
        for label, seconds in WAIT_THRESHOLDS:
            if waited > seconds:
                counts[label] = counts.get(label, 0) + 1
    failing = failing_jobs(snapshot, lambda p: engine.queue_of(p)[0])
    out = []
    for name, spec in engine.policy.queues.items():
        state = book.state[name]
        out.append(
            {
                "queue": name,
                "share": book.share(name),
                "pending_jobs": state.waiting_jobs,
                "oldest_pending_seconds": oldest.get(name, 0.0),
                "failing_jobs": failing.get(name, 0),
                "waiting_longer_than": {
                    label: longer.get(name, {}).get(label, 0) for label, _ in WAIT_THRESHOLDS
                },
                "by_resource": {
                    "guarantee": book.guarantee[name],
                    "max": spec.max,
                    "usage": state.used,
                    "borrowed": book.borrowed(name),
                    "lent": lending[name],
                    "pending_requests": state.demand,
                    "decayed_usage": decayed.get(name, {}),
                },
            }
        )
    return out
