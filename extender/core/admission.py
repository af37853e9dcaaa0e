"""Admission by quota: may this job start in its queue now?

A job (a gang whole, a pod alone) is admitted when
- its queue and every ancestor are open (closed: holds new work; draining: admits nothing new),
- every ancestor stays within its `max` for each resource the job asks for, and
- what it would use beyond its queue's guarantee is idle: the free capacity left after it must
  still cover what the guarantees of other queues owe to their own waiting work (`protected`).
  Within a parent's guarantee only the siblings' claims count; beyond it, the parent's siblings'
  too, and so on up the tree.
The reason of a refusal names the queue, the resource and the amounts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from extender.core.policy import Policy
from extender.core.quantity import format_amount
from extender.core.queues import QueueBook


@dataclass(frozen=True, slots=True)
class Verdict:
    ok: bool
    reason: str = ""
    rule: str = (
        "admitted"  # a bounded label: admitted, unknown-queue, closed, draining, max, borrow
    )


ADMITTED = Verdict(True)


def _order(resource: str) -> tuple[bool, str]:
    return resource != "nvidia.com/gpu", resource


def check_state(policy: Policy, queue: str) -> Verdict:
    for name in policy.path(queue):
        state = policy.queues[name].state
        if state == "open":
            continue
        whose = f"queue {queue}" if name == queue else f"queue {queue}: its parent queue {name}"
        if state == "closed":
            return Verdict(
                False, f"{whose} is closed: it holds new work until it is opened", "closed"
            )
        return Verdict(
            False, f"{whose} is draining: it admits nothing new (running work goes on)", "draining"
        )
    return ADMITTED


def check_quota(book: QueueBook, queue: str, request: Mapping[str, int], job: str) -> Verdict:
    policy = book.policy
    wanted = sorted(
        ((k, v) for k, v in request.items() if k in book.governed and v > 0),
        key=lambda item: _order(item[0]),
    )
    path = policy.path(queue)
    for name in path:
        limits = policy.queues[name].max
        used = book.state[name].used
        for resource, need in wanted:
            cap = limits.get(resource)
            if cap is not None and used.get(resource, 0) + need > cap:
                who = f"queue {queue}" if name == queue else f"queue {queue}: parent queue {name}"
                return Verdict(
                    False,
                    f"{who}: {resource} {format_amount(resource, used.get(resource, 0))} of max "
                    f"{format_amount(resource, cap)} in use, {job} needs "
                    f"{format_amount(resource, need)}",
                    "max",
                )
    for resource, need in wanted:
        protected = 0
        claims: list[str] = []
        borrowing = False
        for name in path:
            guarantee = book.guarantee[name].get(resource, 0)
            if book.state[name].used.get(resource, 0) + need <= guarantee:
                break
            borrowing = True
            for sibling in policy.children.get(policy.queues[name].parent, ()):
                owed = book.state[sibling].protected.get(resource, 0) if sibling != name else 0
                if owed > 0:
                    protected += owed
                    claims.append(f"{sibling} {format_amount(resource, owed)}")
        if not borrowing or protected <= 0:
            continue
        idle = book.idle.get(resource, 0)
        if idle - need < protected:
            own = book.guarantee[queue].get(resource, 0)
            in_use = book.state[queue].used.get(resource, 0)
            return Verdict(
                False,
                f"queue {queue}: {job} needs {format_amount(resource, need)} {resource} beyond "
                f"its guarantee ({format_amount(resource, in_use)} of "
                f"{format_amount(resource, own)} in use); "
                f"{format_amount(resource, max(0, idle))} are idle but "
                f"{format_amount(resource, protected)} of them are guaranteed to queues with "
                f"work waiting ({', '.join(claims)})",
                "borrow",
            )
    return ADMITTED
