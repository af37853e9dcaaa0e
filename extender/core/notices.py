"""What people should read on their pods (`kubectl describe pod`), as the core decides it: one
notice per change of a job's state — planned, plan expired, holding freed capacity, held by its
queue — never one per filter call. The adapter turns them into Kubernetes Events."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Notice:
    job: str  # job key (`gang.job_key`)
    reason: str  # the Event's reason: GangPlanned, GangPlanExpired, GangHolding, QueueHeld
    message: str
    warning: bool = False
