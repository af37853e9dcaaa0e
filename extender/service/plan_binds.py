"""Binding a pod (the bind verb's work), and planned gang members bound by gangplank itself as
soon as their gang's plan is made.

kube-scheduler takes one pod at a time through filter, prioritize and bind: once the first
member's filter has planned a gang, each other member still waits for its turn in kube-scheduler's
queue (behind every other pod waiting, a second gang's members included) and costs a filter and
a bind over HTTP, so a 100-pod gang trickled in over seconds (issue 36; docs/benchmarks.md,
"gangs as fast as kube-scheduler's own"). gangplank is the binder already (`pods/binding`): when
a filter call made a plan, the plan's other members are bound right away, a few at once, the same
way the bind verb binds (the plan recorded first, the Binding with the pod's UID, the member's
reservation turned into usage). The asking member goes on through kube-scheduler's own bind. The
record is one write, on the asking member, naming every member's node (`core/gangs/plan_record.py`):
the members need no record each, which also nudged them to kube-scheduler, since gangplank binds
them; that halves the writes of a bind wave.

Only where a Binding alone is all kube-scheduler's bind cycle would do: not a member whose
volumes or DRA claims kube-scheduler binds or allocates in that cycle (`PodInfo.needs_bind_cycle`),
not a plan made by preemption (its victims leave first), not while the cache is stale or this
replica's scheduler does not lead. Those keep kube-scheduler's path, and so does any member whose
Binding fails (it is nudged and retried as before: a gang is planned whole, and its members bind
to their planned nodes only, whoever binds them). A member kube-scheduler binds meanwhile is
refused by the API server for one of the two binders (already bound): nothing is bound twice.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor

from extender.core.model.answers import BindRequest
from extender.core.model.snapshot import PodInfo
from extender.kube.binder import BindError
from extender.kube.plan_recorder import RecordError
from extender.service.runtime import Runtime

log = logging.getLogger("gangplank.web")  # the bind verb's, as before it moved here

AT_ONCE = 8  # Bindings in flight at once
REMEMBERED = 10_000  # plans whose members were handed out (forgotten all at once past it)
# A plan of at most this many members is recorded once, on the asking member, naming every
# member's node (about 70 bytes a member, well under the 256 KiB a pod's annotations may hold);
# a larger one on each member, as when kube-scheduler binds them.
WHOLE_RECORD_MEMBERS = 2_000


def bind_pod(runtime: Runtime, request: BindRequest) -> str:
    """Bind as the bind verb does; returns the reason it did not ("": bound)."""
    metrics = runtime.metrics
    with runtime.lock:
        decision = runtime.scheduler.check_bind(request)
        records = []
        if runtime.scheduler.reservations.job_of(request.uid) is not None:  # a plan's member
            records = runtime.scheduler.records_to_write(
                runtime.store.snapshot_for_verbs(), uid=request.uid
            )
    if not decision.allowed:
        metrics.binds.labels("refused").inc()
        return decision.reason
    if request.uid and runtime.store.bound_node(request.uid) == request.node:
        # bound there already: by gangplank with its plan's other members, while kube-scheduler's
        # copy of the pod still waited (its filter passed that node: `plans.bound_answer`)
        metrics.binds.labels("already-bound").inc()
        return ""
    try:
        runtime.recorder.write(records)  # a plan is in the cluster before a member binds
        runtime.binder.bind(request)
    except (BindError, RecordError) as err:
        metrics.binds.labels("failed").inc()
        log.warning("%s", err)
        return str(err)
    with runtime.lock:
        pod = runtime.scheduler.bound(request)
        runtime.store.assume_bound(request.namespace, request.name, request.uid, request.node, pod)
    metrics.binds.labels("bound").inc()
    return ""


class PlanBinds:
    """After a filter call: the other members of the plan it made, bound in the background."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime
        self._handed: dict[str, int] = {}  # job -> id of the plan whose members were handed out
        self._pool = ThreadPoolExecutor(AT_ONCE, thread_name_prefix="plan-bind")

    def after_filter(self, pod: PodInfo) -> int:
        """Bind the members of `pod`'s plan other than `pod` (which kube-scheduler binds), once
        per plan; returns how many were handed to the binding threads."""
        runtime = self._runtime
        if runtime.staleness() or not runtime.leading():
            return 0
        with runtime.lock:
            reservations = runtime.scheduler.reservations
            key = reservations.job_of(pod.uid)
            plan = reservations.get(key) if key is not None else None
            if key is None or plan is None or plan.victims or self._handed.get(key) == id(plan):
                return 0
            if len(self._handed) >= REMEMBERED:
                self._handed.clear()
            self._handed[key] = id(plan)
            if len(plan.assignments) <= WHOLE_RECORD_MEMBERS:
                plan.record_on, plan.record_members = pod.uid, dict(plan.assignments)
            members = {p.uid: p for p in runtime.store.snapshot_for_verbs().groups.get(key, ())}
            todo = [
                BindRequest(member.namespace, member.name, uid, node)
                for uid, node in plan.assignments.items()
                if uid != pod.uid
                and (member := members.get(uid)) is not None
                and member.active
                and member.node_name is None
                and not member.needs_bind_cycle
            ]
        for request in todo:
            self._pool.submit(self._bind, request)
        return len(todo)

    def _bind(self, request: BindRequest) -> None:
        why = bind_pod(self._runtime, request)
        if why:
            log.info("planned member %s left to kube-scheduler: %s", request.key, why)
