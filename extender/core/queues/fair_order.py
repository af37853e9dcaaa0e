"""Fair order: which waiting job should start next, across queues.

Among sibling queues with work waiting, the one with the lowest dominant-resource share against
its weight goes first (recursively, down the tree); inside a queue, priority, then age. The line
is built as if each job in it were admitted in turn: a picked job's requests count towards its
queues' shares for the picks after it, so a queue with weight 2 gets about two places for every
one of a queue with weight 1 when both start from the same share.

With a usage history (the policy's `fairness:`), a queue's share counts its decayed past use
too (`QueueBook.share`), and a queue under its guarantee goes before any sibling that is not
(docs/fairness.md); without one the order is exactly as above.

Each parent keeps a heap of its children by share; a pick changes the shares on one path only, so
a place in the line costs a few heap operations per level, not a look at every queue.
"""

from __future__ import annotations

import heapq
from collections.abc import Collection, Iterator

from extender.core.queues.book import QueueBook
from extender.core.queues.policy import Policy
from extender.core.queues.waiting_jobs import WaitingJob


def open_leaves(policy: Policy) -> list[str]:
    """The leaf queues that may admit work: open, and every ancestor open."""
    return [
        leaf
        for leaf in policy.queues
        if policy.is_leaf(leaf) and all(policy.queues[q].state == "open" for q in policy.path(leaf))
    ]


def fair_shares(policy: Policy, busy: Collection[str]) -> dict[str, float]:
    """What fair order gives each queue when the leaf queues `busy` always have work waiting and
    the others none: among siblings with work, a queue's share of its parent's share is its
    weight over theirs, recursively from the top (the top-level queues share the cluster). Only
    open leaves count; every queue with work below it is in the answer, the rest are not."""
    with_work: set[str] = set()
    for leaf in open_leaves(policy):
        if leaf in busy:
            with_work.update(policy.path(leaf))
    shares: dict[str, float] = {}

    def split(parent: str | None, share: float) -> None:
        kids = [k for k in policy.children.get(parent, ()) if k in with_work]
        weights = sum(policy.queues[k].weight for k in kids)
        for kid in kids:
            shares[kid] = share * policy.queues[kid].weight / weights
            split(kid, shares[kid])

    split(None, 1.0)
    return shares


def fair_order(book: QueueBook) -> Iterator[WaitingJob]:
    """Waiting jobs of open queues, in the order fair sharing would admit them."""
    policy = book.policy
    remaining: dict[str, int] = {}
    for leaf in open_leaves(policy):
        count = len(book.waiting(leaf))
        if count:
            for name in policy.path(leaf):
                remaining[name] = remaining.get(name, 0) + count
    tiers = policy.fairness.on and bool(book.past)

    def key(name: str, added: dict[str, int] | None = None) -> tuple[int, float]:
        tier = 0 if not tiers or book.under_guarantee(name, added) else 1
        return tier, book.share(name, added)

    heaps: dict[str | None, list[tuple[tuple[int, float], str, int]]] = {}
    version: dict[str, int] = {}
    for name in remaining:
        version[name] = 0
        heaps.setdefault(policy.queues[name].parent, []).append((key(name), name, 0))
    for heap in heaps.values():
        heapq.heapify(heap)
    extra: dict[str, dict[str, int]] = {}
    taken: dict[str, int] = {}
    while True:
        parent: str | None = None
        while True:
            heap = heaps.get(parent, [])
            while heap and (heap[0][2] != version[heap[0][1]] or not remaining[heap[0][1]]):
                heapq.heappop(heap)
            if not heap:
                return
            node = heap[0][1]
            if policy.is_leaf(node):
                break
            parent = node
        job = book.waiting(node)[taken.get(node, 0)]
        taken[node] = taken.get(node, 0) + 1
        for name in policy.path(node):
            remaining[name] -= 1
            added = extra.setdefault(name, {})
            for resource, amount in job.requests.items():
                added[resource] = added.get(resource, 0) + amount
            version[name] += 1
            if remaining[name]:
                heapq.heappush(
                    heaps[policy.queues[name].parent],
                    (key(name, added), name, version[name]),
                )
        yield job
