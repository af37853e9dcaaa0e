"""Admission by quota: may this job start in its queue now?

A job (a gang whole, a pod alone) is admitted when
- its queue and every ancestor are open (closed: holds new work; draining: admits nothing new),
- every ancestor stays within its `max` for each resource the job asks for, and
- what it would use beyond its queue's guarantee is idle: the free capacity left after it must
  still cover what the guarantees of other queues owe to their own waiting work (`protected`).
  Within a parent's guarantee only the siblings' claims count; beyond it, the parent's siblings'
  too, and so on up the tree.
The reason of a refusal names the queue, the resource and the amounts.

A job that may preempt is admitted against the book as it will be once its planned victims are
gone: `freed` (by each victim's queue) lowers the use of that queue and of every ancestor, and
adds to what is idle.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from extender.core.model.quantity import format_amount
from extender.core.queues.book import QueueBook
from extender.core.queues.policy import Policy


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


def check_quota(
    book: QueueBook,
    queue: str,
    request: Mapping[str, int],
    job: str,
    freed: Mapping[str, Mapping[str, int]] | None = None,
) -> Verdict:
    """The quota verdict on `job` asking `request` in `queue`; `freed`: what victims planned to
    leave free, by their queue (see the module's docstring)."""
    policy = book.policy
    less = _up_the_tree(book, freed) if freed else {}
    nothing: Mapping[str, int] = {}

    def used_of(name: str, resource: str) -> int:
        return book.state[name].used.get(resource, 0) - less.get(name, nothing).get(resource, 0)

    wanted = sorted(
        ((k, v) for k, v in request.items() if k in book.governed and v > 0),
        key=lambda item: _order(item[0]),
    )
    path = policy.path(queue)
    for name in path:
        limits = policy.queues[name].max
        for resource, need in wanted:
            cap = limits.get(resource)
            if cap is not None and used_of(name, resource) + need > cap:
                who = f"queue {queue}" if name == queue else f"queue {queue}: parent queue {name}"
                return Verdict(
                    False,
                    f"{who}: {resource} {format_amount(resource, used_of(name, resource))} of max "
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
            if used_of(name, resource) + need <= guarantee:
                break
            borrowing = True
            for sibling in policy.children.get(policy.queues[name].parent, ()):
                owed = book.state[sibling].protected.get(resource, 0) if sibling != name else 0
                if owed > 0:
                    protected += owed
                    claims.append(f"{sibling} {format_amount(resource, owed)}")
        if not borrowing or protected <= 0:
            continue
        idle = book.idle.get(resource, 0) + sum(a.get(resource, 0) for a in (freed or {}).values())
        if idle - need < protected:
            own = book.guarantee[queue].get(resource, 0)
            in_use = used_of(queue, resource)
            shown = format_amount(resource, protected)
            return Verdict(
                False,
                f"queue {queue}: {job} needs {format_amount(resource, need)} {resource} beyond "
                f"its guarantee ({format_amount(resource, in_use)} of "
                f"{format_amount(resource, own)} in use); "
                f"{format_amount(resource, max(0, idle))} are idle but "
                f"{shown} of them {'is' if shown == '1' else 'are'} guaranteed to queues with "
                f"work waiting ({', '.join(claims)})",
                "borrow",
            )
    return ADMITTED


def _up_the_tree(
    book: QueueBook, freed: Mapping[str, Mapping[str, int]]
) -> dict[str, dict[str, int]]:
    """What `freed` (by queue) frees in each queue and every one of its ancestors."""
    out: dict[str, dict[str, int]] = {}
    for queue, amounts in freed.items():
        if queue not in book.state:
            continue
        for name in book.policy.path(queue):
            into = out.setdefault(name, {})
            for resource, amount in amounts.items():
                into[resource] = into.get(resource, 0) + amount
    return out
