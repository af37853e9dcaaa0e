"""Consolidation in the simulator: a waiting pod that no node has room for, while the cluster has
its GPUs free in total, makes room by moving running jobs, with gangplank's move planner
(`core/consolidation/plan.py: plan_moves`, the engine's, called here with the simulator's own
rule of what is movable, below; the moves are carried out here, not through the engine).

Movable here: a running single-pod job asking for fewer GPUs than its node has, with no
nodeSelector. Consolidated for: a single pod asking for GPUs (a gang's planner would plan its
members elsewhere than the moves). Before anything moves the plan is checked against every other
resource (CPU, memory, pods) of the new nodes and of the node emptied for the waiting pod; then
each moved job is evicted, its controller recreates it at once (as the simulator's preemption
and lifecycle requeues do) and its new pod is held to its planned node, as is the waiting pod to
its own: the capacity is held for them until their next cycle, which tries that node alone. A
moved job's work restarts (no checkpoint is modelled); what it had run is counted as lost to
moves. At most `Options.moves_per_minute` jobs move in any minute, at most `MOVE_LIMIT` for one
waiting pod, and a job is consolidated for at most once every `RETRY_SECONDS`.
"""

from __future__ import annotations

from collections import Counter

from extender.core.consolidation.plan import MovePlan, plan_moves
from extender.core.model.resources import GPU
from extender.sim.fit import PODS
from extender.sim.runs import Run, SimPod
from extender.sim.state import DriverState

MOVE_LIMIT = 8  # jobs moved for one waiting pod at most
RETRY_SECONDS = 60.0  # a job consolidated for once is not again before this


class MovePlay(DriverState):
    """Moves planned and carried out, and the capacity held for the pods they place."""

    def _held_node(self, pod: SimPod) -> list[str] | None:
        """The node held for `pod` by a move (its hold released: the cycle tries it alone)."""
        node = self.held.pop(pod.uid, None)
        if node is None:
            return None
        self._move(node, pod, -1)
        return [node] if self._room(node, pod, Counter()) else None

    def _remove_run(self, run: Run) -> None:
        for pod in run.pods:  # a pod gone before its cycle: what was held for it is free again
            node = self.held.pop(pod.uid, None)
            if node is not None:
                self._move(node, pod, -1)
        super()._remove_run(run)

    def _room(self, node: str, pod: SimPod, taken: Counter[tuple[str, str]]) -> bool:
        free = self.free[node]
        want = {**{r: a for r, a in pod.requests.items() if a > 0}, PODS: 1}
        return all(free.get(r, 0) - taken[(node, r)] >= a for r, a in want.items())

    def _consolidate(self, pod: SimPod) -> bool:
        """Move jobs so that `pod` fits, when a plan does (the caller enqueues it again)."""
        gpus = pod.requests.get(GPU, 0)
        record = pod.run.record
        if not self.options.consolidate or gpus <= 0 or record.spec.pods != 1:
            return False
        if pod.info.node_selector or self.now - self._tried.get(record.spec.name, -1e18) < (
            RETRY_SECONDS
        ):
            return False
        self._tried[record.spec.name] = self.now
        while self._moved_at and self._moved_at[0] <= self.now - 60.0:
            self._moved_at.pop(0)
        budget = min(MOVE_LIMIT, self.options.moves_per_minute - len(self._moved_at))
        free_of = {
            name: free.get(GPU, 0)
            for name, free in self.free.items()
            if self.nodes[name].allocatable.get(GPU, 0) >= gpus
        }
        if budget <= 0 or sum(free_of.values()) < gpus:
            return False
        movable: dict[str, dict[str, tuple[str, int]]] = {}
        for name, pods in self.on_node.items():
            whole = self.nodes[name].allocatable.get(GPU, 0)
            for other in pods.values():
                run = other.run
                held = other.requests.get(GPU, 0)
                if (
                    run.started is not None
                    and not run.fault
                    and run.record.spec.pods == 1
                    and 0 < held < whole
                    and not other.info.node_selector
                ):
                    movable[run.record.spec.name] = {other.uid: (name, held)}
        plan = plan_moves(free_of, [(pod.uid, gpus)], movable, budget)
        if plan is None or not plan.moves or not self._checked(plan, pod):
            return False
        self._carry_out(plan, pod)
        return True

    def _checked(self, plan: MovePlan, pod: SimPod) -> bool:
        """Whether every moved pod fits its new node, and the waiting pod its own once they left,
        in every resource (the plan counted GPUs)."""
        taken: Counter[tuple[str, str]] = Counter()
        leaving: Counter[tuple[str, str]] = Counter()
        for _, pods in plan.moves:
            for uid, (source, target) in pods.items():
                moved = self.live[uid]
                if not self._room(target, moved, taken):
                    return False
                for resource, amount in {**moved.requests, PODS: 1}.items():
                    taken[(target, resource)] += amount
                    leaving[(source, resource)] -= amount
        taken.update(leaving)  # (update keeps the negative counts: capacity freed)
        return self._room(plan.assignments[pod.uid], pod, taken)

    def _carry_out(self, plan: MovePlan, pod: SimPod) -> None:
        for _, pods in plan.moves:
            for uid, (_, target) in pods.items():
                moved = self.live[uid]
                run = moved.run
                gpus = moved.requests.get(GPU, 0)
                if run.started is not None:
                    self.move_lost_seconds += gpus * (self.now - run.started)
                self.jobs_moved += 1
                self.gpus_moved += gpus
                self._moved_at.append(self.now)
                self.on_event("moved", f"{run.record.spec.name} to {target}")
                self._remove_run(run)
                again = self._create_run(run.record, again=True)
                self._hold(again.pods[0], target)
        self._hold(pod, plan.assignments[pod.uid])

    def _hold(self, pod: SimPod, node: str) -> None:
        self.held[pod.uid] = node
        self._move(node, pod, +1)
