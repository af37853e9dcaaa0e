"""Why a pod waits, and what the scheduler holds — the read-only answers behind `gangplank why`
and `gangplank status`, as plain values (made under the lock, printed after it)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Sequence
from typing import Any

from extender.core.engine import Engine
from extender.core.gangs.gang import resolve_gang
from extender.core.model.keys import group_key, is_single, job_key, job_name
from extender.core.model.snapshot import PodInfo, Snapshot
from extender.core.model.workload import is_managed, queue_label
from extender.core.queues.fair_reason import behind
from extender.core.queues.policy import Policy
from extender.core.report.counts import gang_counts


def held_pods(snapshot: Snapshot) -> Iterator[PodInfo]:
    """Every pod the snapshot holds, once: gang members (finished ones too), pods waiting for a
    node and pods on nodes. A pod that finished outside a gang, or is gone, is not held."""
    seen: set[str] = set()
    for pods in (
        *snapshot.groups.values(),
        *snapshot.queue_pending.values(),
        *(node.pods for node in snapshot.nodes.values()),
    ):
        for pod in pods:
            key = pod.uid or pod.key
            if key not in seen:
                seen.add(key)
                yield pod


def find_pod(snapshot: Snapshot, namespace: str, name: str) -> PodInfo | None:
    return next(
        (p for p in held_pods(snapshot) if p.namespace == namespace and p.name == name), None
    )


def not_held(namespace: str, name: str) -> str:
    """What is known of a pod the snapshot does not hold."""
    return (
        f"pod {namespace}/{name} is not in gangplank's view of the cluster: it finished or was "
        "deleted (only a gang's finished pods are kept), or there is no such pod in that "
        "namespace; `gangplank pods` lists the pods gangplank holds"
    )


def gangplanks(pod: PodInfo, scheduler_names: Collection[str]) -> bool:
    """Whether the pod is gangplank's: scheduled by one of its profiles, or naming a queue or a
    gang (other pods it only counts on their nodes)."""
    return pod.scheduler_name in scheduler_names or is_managed(pod)


def explain(engine: Engine, snapshot: Snapshot, pod: PodInfo, now: float) -> dict[str, Any]:
    """Queue, gang, place in line and the last reason, with a one-line summary first."""
    key = job_key(pod)
    out: dict[str, Any] = {"pod": pod.key, "job": job_name(key), "node": pod.node_name}
    parts = [f"pod {pod.key}"]
    planned = key in engine.reservations
    if not is_single(key):
        gang = resolve_gang(snapshot, key)
        bound = len(gang.bound)
        out["gang"] = {
            "name": gang.name,
            "size": gang.size,
            "members": len(gang.members),
            "bound": bound,
            "planned": planned,
            "problem": gang.problem,
        }
        parts.append(
            f"gang {gang.name} ({bound} of {gang.size or '?'} running, "
            f"{len(gang.members)} exist{', planned' if planned else ''})"
        )
    queue = None
    if engine.policy is not None:
        queue, problem = engine.queue_of(pod)
        out["queue"] = queue
        if queue is not None:
            book = engine.book_for(snapshot)
            line = [j.key for j in book.waiting(queue)]
            if key in line:
                out["position"] = line.index(key) + 1
                out["waitingInQueue"] = len(line)
                parts.append(f"queue {queue}, {line.index(key) + 1} of {len(line)} in line")
                fair = behind(book, engine.history.decayed(now), queue)
                if fair:
                    out["fairOrder"] = fair
            else:
                parts.append(f"queue {queue}")
        elif problem:
            out["queueProblem"] = problem
    reason = engine.waiting.reason_of(key)
    waiting = engine.waiting.gang(key)
    if waiting is not None and waiting.reason:
        reason = waiting.reason
    state = situation(pod, engine.reservations.planned_node(pod))
    if not gangplanks(pod, engine.scheduler_names):
        profiles = ", ".join(sorted(engine.scheduler_names))
        state += (
            f"; not gangplank's: its schedulerName {pod.scheduler_name} is not one of gangplank's "
            f"profiles ({profiles}) and it names no queue or gang"
        )
    elif state.startswith("planned") and (move := engine.consolidation.in_flight(key)):
        moves = [j.message.removeprefix("gangplank ") for j in move.jobs]
        out["moves"] = moves
        state += f", waiting for the {len(moves)} job(s) gangplank moves for it: " + "; ".join(
            moves
        )
    elif state.startswith("planned"):
        state += ", waiting for kube-scheduler to bind it"
    elif state == "waiting":
        state += (
            f": {reason}"
            if reason
            else ": no reason recorded yet (kube-scheduler has not asked gangplank about it)"
        )
    idle = engine.lifecycle.idle_reason(key)
    if idle and state.startswith("running"):
        state += f"; idle: {idle}"
    out["state"] = state
    out["reason"] = reason
    out["line"] = "; ".join([", ".join(parts), state])
    hold = engine.holder.current
    if hold is not None:
        out["hold"] = {"job": job_name(hold.key), "secondsLeft": max(0.0, hold.deadline - now)}
    return out


def situation(pod: PodInfo, planned: str | None) -> str:
    """Where a pod stands, in a few words: finished, being deleted, running, planned or
    waiting."""
    if pod.terminal:
        return f"finished ({pod.phase})" + (f" on {pod.node_name}" if pod.node_name else "")
    if pod.deleting:
        return "being deleted"
    if pod.node_name:
        return f"running on {pod.node_name}"
    if planned is not None:
        return f"planned on {planned}"
    return "waiting"


def explain_unseen(engine: Engine, namespace: str, name: str) -> dict[str, Any] | None:
    """A pod the cache has not seen but kube-scheduler asked about (the watch lags, or the
    pod is gone): what gangplank answered it, if anything."""
    for key, entry in engine.waiting.refusals():
        if (namespace, name) in entry.pods.values():
            reason = engine.waiting.reason_of(key)
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


def status(engine: Engine, snapshot: Snapshot, now: float) -> dict[str, Any]:
    plans = []
    for plan in sorted(engine.reservations.plans(), key=lambda p: p.key):
        key = plan.key
        # A member leaves `assignments` once bound, and the plan goes at the next sync after
        # its last member is: its bound members are on the nodes the snapshot shows them on.
        nodes = set(plan.assignments.values())
        nodes.update(
            p.node_name
            for p in snapshot.groups.get(key, ())
            if p.uid in plan.requests and p.node_name
        )
        plans.append(
            {
                "job": job_name(key),
                "members": len(plan.requests),
                "bound": len(plan.requests) - len(plan.assignments),
                "nodes": sorted(nodes),
                "secondsLeft": max(0.0, plan.deadline - now),
            }
        )
    hold = None
    held = engine.holder.current
    if held is not None:
        hold = {"job": job_name(held.key), "secondsLeft": max(0.0, held.deadline - now)}
    waiting = [
        {"job": job_name(w.key), "reason": w.reason, "parked": len(w.rejected)}
        for w in sorted(engine.waiting.gangs(), key=lambda w: w.key)
    ]
    return {
        "gangs": gang_counts(engine, snapshot),
        "reservedPods": engine.reservations.pods(),
        "plans": plans,
        "hold": hold,
        "waitingGangs": waiting,
        "policy": engine.policy.source if engine.policy is not None else None,
        "usageHistory": history_state(engine),
        "heldJobs": [
            {"job": job_name(r.job), "requeues": r.count, "reason": r.reason}
            for r in sorted(engine.lifecycle.requeues.held(), key=lambda r: r.job)
        ],
        "lifecycle": engine.lifecycle.saved(),
        "idleJobs": [
            {"job": job_name(key), "reason": why}
            for key, why in sorted(engine.lifecycle.idle().items())
        ],
    }


def history_state(engine: Engine) -> dict[str, Any] | None:
    """The usage history's settings and whether the fair order uses it (None: none kept)."""
    if engine.policy is None or not engine.history.on:
        return None
    fairness = engine.policy.fairness
    return {
        "halfLifeSeconds": fairness.half_life,
        "windowSeconds": fairness.window,
        "known": not engine.history_lost,
        "lost": engine.history_lost,
    }


def list_pods(
    snapshot: Snapshot,
    policy: Policy | None,
    scheduler_names: Collection[str],
    *,
    queue: str | None = None,
    namespace: str | None = None,
    waiting: bool = False,
) -> list[tuple[PodInfo, str | None]] | None:
    """gangplank's pods (see `gangplanks`) and their queues, waiting ones first (oldest first),
    then the others by namespace and name. `queue`: only that queue and its subtree (None when
    there is no such queue); `waiting`: only pods not bound to a node yet. Reads only the
    snapshot and the policy, both immutable: no lock needed."""
    if queue is not None and (policy is None or queue not in policy.queues):
        return None
    out = []
    for pod in held_pods(snapshot):
        pending = pod.node_name is None and pod.active
        if (
            (namespace is not None and pod.namespace != namespace)
            or (waiting and not pending)
            or not gangplanks(pod, scheduler_names)
        ):
            continue
        pod_queue = None
        if policy is not None:
            label_key, label = queue_label(pod)
            pod_queue = policy.resolve(label, pod.namespace, label_key)[0]
        if queue is not None and (
            policy is None or pod_queue is None or queue not in policy.path(pod_queue)
        ):
            continue
        out.append((pod, pod_queue))
    out.sort(
        key=lambda item: (
            (0, item[0].created, item[0].key)
            if item[0].node_name is None and item[0].active
            else (1, 0.0, item[0].key)
        )
    )
    return out


def describe_pods(
    listed: Sequence[tuple[PodInfo, str | None]],
    planned: Callable[[PodInfo], str | None],
    now: float,
) -> list[dict[str, Any]]:
    """The rows of `gangplank pods`: `planned` is the node a pod's plan put it on (read under
    the lock, so only for the pods shown)."""
    rows = []
    for pod, queue in listed:
        gang = group_key(pod)
        row: dict[str, Any] = {
            "pod": pod.key,
            "gang": gang.split(":", 1)[1] if gang is not None else None,
            "queue": queue,
            "state": situation(pod, planned(pod) if pod.node_name is None else None),
            "node": pod.node_name,
        }
        if pod.node_name is None and pod.active:
            row["waitingSeconds"] = round(max(0.0, now - pod.created), 1)
        rows.append(row)
    return rows
