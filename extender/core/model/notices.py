"""What people should read on their pods (`kubectl describe pod`), as the core decides it: one
notice per change of a job's state — planned, plan expired, holding freed capacity, held by its
queue — never one per filter call. The adapter turns them into Kubernetes Events."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from extender.core.model.keys import is_single, job_name
from extender.core.model.snapshot import PodInfo

OUTBOX_LIMIT = 1000  # notices kept if no adapter drains them


@dataclass(frozen=True, slots=True)
class Notice:
    job: str  # job key (`gang.job_key`)
    reason: str  # the Event's reason: GangPlanned, GangPlanExpired, GangHolding, QueueHeld
    message: str
    warning: bool = False
    pod: PodInfo | None = None  # the pod told, for a job of one pod (a gang's are in the cache)


class Outbox:
    """Notices since the adapter last took them, bounded."""

    def __init__(self) -> None:
        self._notices: list[Notice] = []

    def add(self, notice: Notice) -> None:
        if len(self._notices) < OUTBOX_LIMIT:
            self._notices.append(notice)

    def take(self) -> list[Notice]:
        notices, self._notices = self._notices, []
        return notices

    def planned(self, key: str, nodes: Collection[str], members: int) -> None:
        names = sorted(set(nodes))
        shown = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
        self.add(
            Notice(
                key, "GangPlanned", f"{job_name(key)}: {members} members planned whole on {shown}"
            )
        )

    def expired(self, key: str) -> None:
        message = (
            f"{job_name(key)}: its reservation expired before its members were bound "
            "(released; it will be planned again)"
        )
        self.add(Notice(key, "GangPlanExpired", message, warning=True))

    def holding(self, key: str, seconds: float) -> None:
        message = (
            f"{job_name(key)} is first in line: capacity freed on the nodes it can use is kept "
            f"for it for up to {seconds:.0f} s"
        )
        self.add(Notice(key, "GangHolding", message))

    def queue_held(self, key: str, reason: str, pod: PodInfo) -> None:
        self.add(Notice(key, "QueueHeld", reason, pod=pod if is_single(key) else None))
