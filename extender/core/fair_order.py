"""Fair order: which waiting job should start next, across queues.

Among sibling queues with work waiting, the one with the lowest dominant-resource share against
its weight goes first (recursively, down the tree); inside a queue, priority, then age. The line
is built as if each job in it were admitted in turn: a picked job's requests count towards its
queues' shares for the picks after it, so a queue with weight 2 gets about two places for every
one of a queue with weight 1 when both start from the same share.

Each parent keeps a heap of its children by share; a pick changes the shares on one path only, so
a place in the line costs a few heap operations per level, not a look at every queue.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator

from extender.core.queues import QueueBook, WaitingJob


def fair_order(book: QueueBook) -> Iterator[WaitingJob]:
    """Waiting jobs of open queues, in the order fair sharing would admit them."""
    policy = book.policy
    remaining: dict[str, int] = {}
    for leaf in policy.queues:
        if policy.is_leaf(leaf) and all(
            policy.queues[q].state == "open" for q in policy.path(leaf)
        ):
            count = len(book.waiting(leaf))
            if count:
                for name in policy.path(leaf):
                    remaining[name] = remaining.get(name, 0) + count
    heaps: dict[str | None, list[tuple[float, str, int]]] = {}
    version: dict[str, int] = {}
    for name in remaining:
        version[name] = 0
        heaps.setdefault(policy.queues[name].parent, []).append((book.share(name), name, 0))
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
                    (book.share(name, added), name, version[name]),
                )
        yield job
