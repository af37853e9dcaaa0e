"""Fair order: which waiting job should start next, across queues.

Among sibling queues with work waiting, the one with the lowest dominant-resource share against
its weight goes first (recursively, down the tree); inside a queue, priority, then age. The line
is built as if each job in it were admitted in turn: a picked job's requests count towards its
queues' shares for the picks after it, so a queue with weight 2 gets about two places for every
one of a queue with weight 1 when both start from the same share.
"""

from __future__ import annotations

from collections.abc import Iterator

from extender.core.queues import QueueBook, WaitingJob


def _open(book: QueueBook, queue: str) -> bool:
    return all(book.policy.queues[q].state == "open" for q in book.policy.path(queue))


def fair_order(book: QueueBook) -> Iterator[WaitingJob]:
    """Waiting jobs of open queues, in the order fair sharing would admit them."""
    policy = book.policy
    remaining: dict[str, int] = {}
    for leaf, spec in policy.queues.items():
        if policy.is_leaf(leaf) and _open(book, leaf):
            count = len(book.waiting(leaf))
            for name in policy.path(spec.name):
                remaining[name] = remaining.get(name, 0) + count
    extra: dict[str, dict[str, int]] = {}
    taken: dict[str, int] = {}
    while True:
        parent: str | None = None
        while parent is None or not policy.is_leaf(parent):
            kids = [c for c in policy.children.get(parent, ()) if remaining.get(c, 0) > 0]
            if not kids:
                return
            parent = min(kids, key=lambda c: (book.share(c, extra.get(c)), c))
        leaf = parent
        job = book.waiting(leaf)[taken.get(leaf, 0)]
        taken[leaf] = taken.get(leaf, 0) + 1
        for name in policy.path(leaf):
            remaining[name] -= 1
            added = extra.setdefault(name, {})
            for resource, amount in job.requests.items():
                added[resource] = added.get(resource, 0) + amount
        yield job
