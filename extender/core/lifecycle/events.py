"""What the lifecycle's actions tell: the Event reasons and messages of its evictions,
suspensions and resumes.

An eviction's Event reason names its rule (`kubectl get events --field-selector
reason=NotReadyRequeued`), and its message says what the job did (TOLD). A workload requeued
through it is told whether it is suspended for a backoff (and when it resumes) or held (and the
command that resumes it); a resume says why the job was suspended and what happens now.
"""

from __future__ import annotations

from extender.core.lifecycle.requeues import RequeueRecord
from extender.core.lifecycle.watchdog import Finding
from extender.core.lifecycle.workloads import Suspension, Workload
from extender.core.model.keys import job_name
from extender.core.model.quantity import format_age

# Rule -> what the eviction's Event says
TOLD = {
    "not-ready": "not ready in time",
    "stale-gang": "lost members and could not be completed",
    "max-runtime": "ran past its maxRuntime",
    "idle": "its GPUs stayed idle",
}
# Rule -> the Event reason on the pods it evicts (`kubectl get events --field-selector
# reason=...`); preemption and reclaim keep Kubernetes' own `Preempted`.
EVICTED = {
    "not-ready": "NotReadyRequeued",
    "stale-gang": "StaleGangEvicted",
    "max-runtime": "MaxRuntimeExceeded",
    "idle": "IdleGpuEvicted",
    "consolidation": "ConsolidationMove",  # moved to make room (`consolidation/`)
}
# The Event reasons on a workload requeued through it
SUSPENDED = "RequeueSuspended"  # suspended for its backoff
HELD = "HeldSuspended"  # suspended and left so until a person resumes it
RESUMED = "RequeueResumed"  # resumed when its backoff ended
MOVED = "ConsolidationMove"  # on a job moved to make room (suspended, or its pods evicted)


def requeue_suspension(
    finding: Finding, record: RequeueRecord, workload: Workload, queue: str, now: float
) -> Suspension:
    """What suspends `finding`'s job through `workload`, and what its Event says."""
    rule, pods = finding.rule, finding.pods
    where = f" (queue {queue})" if queue else ""
    why = f"{job_name(finding.job)} {TOLD[rule]}: {finding.reason}{where}"
    if record.held:
        limit = "" if rule == "max-runtime" else f"; requeued {record.limit} times, its limit"
        reason = HELD
        message = (
            f"suspended by gangplank and held: {why}{limit}; it stays suspended until a person "
            f"resumes it: {workload.resume_command()}"
        )
    else:
        reason = SUSPENDED
        message = (
            f"suspended by gangplank: {why}; requeued ({record.count} of {record.limit}), "
            f"resumed in {format_age(record.next_try - now)}"
        )
    return Suspension(
        job=finding.job,
        workload=workload,
        pods=tuple((p.namespace, p.name, p.uid) for p in pods),
        rule=rule,
        queue=queue,
        reason=reason,
        message=message,
        gpu_seconds=sum(p.gpu_seconds(now) for p in pods),
    )


def resume_message(record: RequeueRecord) -> str:
    """What the Event on a workload resumed by gangplank says (`record`: its requeue or move)."""
    if record.moved:
        return (
            f"resumed by gangplank: {job_name(record.job)} was suspended to move it "
            f"({record.reason}); its controller recreates its pods on the nodes kept for them"
        )
    return (
        f"resumed by gangplank: {job_name(record.job)} waited out its backoff "
        f"(requeued {record.count} of {record.limit}: {record.reason}); its controller "
        "recreates its pods"
    )
