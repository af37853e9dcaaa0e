"""Why a pod waits, and what the scheduler holds — the read-only answers behind `gangplank why`
and `gangplank status`, as plain values (made under the lock, printed after it)."""

from __future__ import annotations

from typing import Any

from extender.core.coordinator import Coordinator
from extender.core.gang import job_key, job_name, resolve_gang
from extender.core.model import PodInfo, Snapshot


def find_pod(snapshot: Snapshot, namespace: str, name: str) -> PodInfo | None:
    for pods in snapshot.groups.values():
        for pod in pods:
            if pod.namespace == namespace and pod.name == name:
                return pod
    for pending in snapshot.queue_pending.values():
        for pod in pending:
            if pod.namespace == namespace and pod.name == name:
                return pod
    for node in snapshot.nodes.values():
        for pod in node.pods:
            if pod.namespace == namespace and pod.name == name:
                return pod
    return None


def explain(
    coordinator: Coordinator, snapshot: Snapshot, pod: PodInfo, now: float
) -> dict[str, Any]:
    """Queue, gang, place in line and the last reason, with a one-line summary first."""
    key = job_key(pod)
    out: dict[str, Any] = {"pod": pod.key, "job": job_name(key), "node": pod.node_name}
    parts = [f"pod {pod.key}"]
    gangs = coordinator.gangs
    if not key.startswith("pod:"):
        gang = resolve_gang(snapshot, key)
        bound = len(gang.bound)
        out["gang"] = {
            "name": gang.name,
            "size": gang.size,
            "members": len(gang.members),
            "bound": bound,
            "planned": key in gangs.plans,
            "problem": gang.problem,
        }
        parts.append(
            f"gang {gang.name} ({bound} of {gang.size or '?'} running, "
            f"{len(gang.members)} exist{', planned' if key in gangs.plans else ''})"
        )
    queue = None
    if coordinator.policy is not None:
        queue, problem = coordinator.queue_of(pod)
        out["queue"] = queue
        if queue is not None:
            book = coordinator.book_for(snapshot)
            line = [j.key for j in book.waiting(queue)]
            if key in line:
                out["position"] = line.index(key) + 1
                out["waiting_in_queue"] = len(line)
                parts.append(f"queue {queue}, {line.index(key) + 1} of {len(line)} in line")
            else:
                parts.append(f"queue {queue}")
        elif problem:
            out["queue_problem"] = problem
    reason = ""
    if key in coordinator.reasons:
        reason = coordinator.reasons[key][0]
    waiting = gangs.waiting.get(key)
    if waiting is not None and waiting.reason:
        reason = waiting.reason
    planned = gangs.planned_node(pod)
    if pod.node_name:
        state = f"running on {pod.node_name}"
    elif planned is not None:
        state = f"planned on {planned}, waiting for kube-scheduler to bind it"
    elif reason:
        state = f"waiting: {reason}"
    else:
        state = "waiting: no reason recorded yet (kube-scheduler has not asked gangplank about it)"
    out["state"] = state
    out["reason"] = reason
    out["line"] = "; ".join([", ".join(parts), state])
    if gangs.hold is not None:
        out["hold"] = {"gang": gangs.hold.key, "seconds_left": max(0.0, gangs.hold.deadline - now)}
    return out


def explain_unseen(coordinator: Coordinator, namespace: str, name: str) -> dict[str, Any] | None:
    """A pod the cache has not seen but kube-scheduler asked about (the watch lags, or the
    pod is gone): what gangplank answered it, if anything."""
    for key, entry in coordinator.refused.items():
        if (namespace, name) in entry.pods.values():
            reason = coordinator.reasons.get(key, ("", 0.0))[0]
            line = (
                f"pod {namespace}/{name}, queue {entry.queue}; held by its queue ({entry.rule}): "
                f"{reason}"
            )
            return {
                "pod": f"{namespace}/{name}",
                "job": job_name(key),
                "queue": entry.queue,
                "state": f"held by its queue ({entry.rule})",
                "reason": reason,
                "line": line + " (not in gangplank's cache: from its last answer)",
            }
    return None


def status(coordinator: Coordinator, snapshot: Snapshot, now: float) -> dict[str, Any]:
    gangs = coordinator.gangs
    plans = [
        {
            "job": job_name(key),
            "members": len(plan.assignments),
            "nodes": sorted(set(plan.assignments.values())),
            "seconds_left": max(0.0, plan.deadline - now),
        }
        for key, plan in sorted(gangs.plans.items())
    ]
    hold = None
    if gangs.hold is not None:
        hold = {
            "job": job_name(gangs.hold.key),
            "seconds_left": max(0.0, gangs.hold.deadline - now),
        }
    waiting = [
        {"job": job_name(key), "reason": w.reason, "parked": len(w.rejected)}
        for key, w in sorted(gangs.waiting.items())
    ]
    return {
        "gangs": gangs.gang_counts(snapshot),
        "reserved_pods": gangs.reserved_pods(),
        "plans": plans,
        "hold": hold,
        "waiting_gangs": waiting,
        "policy": coordinator.policy.source if coordinator.policy is not None else None,
    }
