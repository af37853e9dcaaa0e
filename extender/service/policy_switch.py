"""Switching the policy in force (at a reload of the policy file, `policy/file.py`), and what the
cluster offers that a new policy is checked against."""

from __future__ import annotations

from extender.cache.store import ClusterStore
from extender.core.engine import Engine
from extender.core.queues.policy import Policy
from extender.observe.metrics import Metrics
from extender.service.decision_lock import DecisionLock


class PolicySwitch:
    def __init__(
        self, store: ClusterStore, scheduler: Engine, lock: DecisionLock, metrics: Metrics
    ) -> None:
        self.store = store
        self.scheduler = scheduler
        self.lock = lock
        self.metrics = metrics

    def set_policy(self, policy: Policy | None) -> None:
        """Switch to `policy`. Its book is counted on the current snapshot first, without the
        lock, so the switch itself only catches up with what changed meanwhile."""
        book = None
        if policy is not None:
            book = self.scheduler.new_book(policy)
            book.refresh(self.store.snapshot(), {}, ())
        with self.lock.by("policy reload"):
            old = self.scheduler.set_policy(policy, book)
            if policy is not None:
                self.scheduler.book_for(self.store.snapshot())
        del old  # freed here, not under the lock
        self.metrics.policy_loaded(policy)

    def offered_resources(self) -> set[str]:
        """Resource names the cluster's nodes offer and its pods ask for: a policy naming
        another is warned about when it is loaded."""
        snapshot = self.store.snapshot()
        names = {name for node in snapshot.nodes.values() for name in node.allocatable}
        names.update(name for used in snapshot.queue_usage.values() for name in used)
        names.update(
            name for pods in snapshot.queue_pending.values() for p in pods for name in p.requests
        )
        return names
