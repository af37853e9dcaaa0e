"""The watchdog: running jobs that hold GPUs and do nothing, found each pass.

A job is *healthy* when all its members are bound, Running and Ready, and none restarted more
than `restartLimit` times. For each job of a queue (or of no queue) whose policy has `lifecycle:`
rules, one of these holds, first match wins:

- **not ready** (`readyTimeout`): the job was never healthy, and its first member was bound more
  than `readyTimeout` ago; or a pod crash-loops (restarts above `restartLimit`); or, once it
  was healthy, a member that replaced a lost one is not ready `readyTimeout` after it started.
  It is evicted whole and requeued (`requeues.py`).
- **broken** (`staleGangGrace`): the job was healthy and lost members (a pod failed or was
  deleted, its node went away). While gangplank can complete it (a plan for the missing members)
  it waits; if it is still broken `staleGangGrace` after it broke, its remaining members go.
  Complete again (every member bound), it is no longer broken, its replacements still starting;
  a member that ran and is not Ready a moment is its readiness probe's business.
- **past its time** (`maxRuntime`, or the annotation `gangplank.io/max-runtime` on its pods,
  which may only lower it): evicted whole and held until a person acts.
- **idle** (`idleGpu`, measured): a healthy job whose every GPU pod stayed below `below` percent
  over the `for` window (`GpuUse`: pods with no data never make a job idle). `report` marks it,
  `reclaim-first` makes it the first victim of preemption and reclaim, `evict` evicts it whole.

It also counts the GPU-seconds each kind of waste holds, for the metrics.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

from extender.core.gangs.gang import resolve_gang
from extender.core.model.gpu_use import GpuUse
from extender.core.model.keys import is_single, job_key
from extender.core.model.quantity import format_age
from extender.core.model.resources import GPU
from extender.core.model.snapshot import PodInfo, Snapshot
from extender.core.queues.gate import queue_of
from extender.core.queues.lifecycle import LifecycleRules, format_duration, parse_duration
from extender.core.queues.policy import Policy

MAX_RUNTIME_ANNOTATION = "gangplank.io/max-runtime"
SHOWN = 3  # pods named in a reason


@dataclass(frozen=True, slots=True)
class Finding:
    """A job to act on."""

    job: str
    rule: str  # not-ready | stale-gang | max-runtime | idle
    reason: str
    pods: tuple[PodInfo, ...]  # its bound members still running
    rules: LifecycleRules


@dataclass(frozen=True, slots=True)
class Idle:
    """A job found idle."""

    why: str
    action: str  # report | reclaim-first | evict
    pods: tuple[PodInfo, ...]
    gpus: int


@dataclass
class Review:
    findings: list[Finding] = field(default_factory=list)
    idle: dict[str, Idle] = field(default_factory=dict)  # every idle job
    waste: dict[str, float] = field(default_factory=dict)  # kind -> GPU-seconds since last pass


@dataclass(frozen=True, slots=True)
class Look:
    """What one review looks at."""

    snapshot: Snapshot
    now: float
    policy: Policy
    use: GpuUse | None  # GPU use over the idle window (None: not measured)
    schedulers: Collection[str]  # gangplank's profiles: only their jobs are judged
    completing: Collection[str]  # jobs with a plan: a broken gang being completed is not stale


@dataclass
class _Seen:
    bound_at: float  # when this process first saw a member bound (when no start time is known)
    whole: bool = False  # healthy once
    broken_at: float = 0.0  # when it lost members after being healthy (0: not broken)
    members: frozenset[str] = frozenset()  # its pods' uids when it last ran whole


class Watchdog:
    def __init__(self) -> None:
        self._seen: dict[str, _Seen] = {}
        self._last = 0.0

    def review(self, look: Look) -> Review:
        """Every running job of gangplank's schedulers, against its queue's rules."""
        snapshot, now, policy, use = look.snapshot, look.now, look.policy, look.use
        schedulers, completing = look.schedulers, look.completing
        out = Review()
        dt = max(0.0, now - self._last) if self._last else 0.0
        self._last = now
        jobs = _running(node.pods for node in snapshot.nodes.values())
        for key in [k for k in self._seen if k not in jobs]:
            del self._seen[key]
        for key, pods in jobs.items():
            if not any(p.scheduler_name in schedulers for p in pods):
                continue
            rules = policy.lifecycle_of(queue_of(policy, pods[0])[0])
            if rules is None:
                continue
            seen = self._seen.setdefault(key, _Seen(now))
            gpus = sum(p.requests.get(GPU, 0) for p in pods)
            finding = self._judge(snapshot, key, pods, rules, seen, now, use, completing, out)
            kind = "broken" if seen.broken_at else "not-ready" if not seen.whole else ""
            if key in out.idle:
                kind = "idle"
            if kind:
                out.waste[kind] = out.waste.get(kind, 0.0) + gpus * dt
            if finding is not None:
                out.findings.append(finding)
        return out

    def _judge(
        self,
        snapshot: Snapshot,
        key: str,
        pods: list[PodInfo],
        rules: LifecycleRules,
        seen: _Seen,
        now: float,
        use: GpuUse | None,
        completing: Collection[str],
        out: Review,
    ) -> Finding | None:
        size = 1 if is_single(key) else resolve_gang(snapshot, key).size or len(pods)
        crashing = [p for p in pods if p.restarts > rules.restart_limit]
        unready = [p for p in pods if not (p.phase == "Running" and p.ready)]
        healthy = len(pods) >= size and not unready and not crashing
        first = min((p.started or seen.bound_at) for p in pods)
        found = tuple(pods)
        if healthy:
            seen.whole, seen.broken_at = True, 0.0
            seen.members = frozenset(p.uid for p in pods)
        elif not seen.whole and any(p.ready for p in pods) and len(pods) < size:
            seen.whole = True  # found broken (after a restart): it ran whole before
            seen.members = frozenset(p.uid for p in pods if p.ready)
        limit = _max_runtime(rules, pods)
        if limit and now - first > limit:
            ran, most = format_age(now - first), format_duration(limit)
            why = f"ran {ran}, past its maxRuntime of {most}"
            return Finding(key, "max-runtime", why, found, rules)
        if crashing:
            pod = crashing[0]
            limit_ = rules.restart_limit
            why = f"pod {pod.name} restarted {pod.restarts} times (restartLimit {limit_})"
            return Finding(key, "not-ready", why, found, rules)
        if healthy:
            return self._idle(key, pods, rules, use, out)
        if seen.whole and len(pods) >= size:  # complete again: its replacements are starting
            seen.broken_at = 0.0
            new = [p for p in unready if p.uid not in seen.members]
            started = min((p.started for p in new if p.started), default=now)
            if rules.ready_timeout and now - started > rules.ready_timeout:
                return _not_ready(key, pods, new, size, rules)
            return None  # a member that ran is not ready a moment: its probe's business
        if seen.whole:  # lost members after it ran whole
            seen.broken_at = seen.broken_at or now
            grace = rules.stale_gang_grace
            if grace and now - seen.broken_at >= grace and key not in completing:
                since = format_age(now - seen.broken_at)
                why = (
                    f"runs {len(pods)} of its {size} pods since {since} and could not be "
                    f"completed within staleGangGrace {format_duration(grace)}"
                )
                return Finding(key, "stale-gang", why, found, rules)
            return None
        if rules.ready_timeout and now - first > rules.ready_timeout:
            return _not_ready(key, pods, unready, size, rules)
        return None

    @staticmethod
    def _idle(
        key: str,
        pods: list[PodInfo],
        rules: LifecycleRules,
        use: GpuUse | None,
        out: Review,
    ) -> Finding | None:
        idle = rules.idle_gpu
        if idle is None or use is None or not use.ok:
            return None
        busiest = [
            use.busiest.get((p.namespace, p.name)) for p in pods if p.requests.get(GPU, 0) > 0
        ]
        if not busiest or any(b is None or b >= idle.below for b in busiest):
            return None  # no GPU, no data for a pod (never act on missing data), or busy
        peak = max(b for b in busiest if b is not None)
        why = (
            f"its GPUs stayed below {idle.below:g}% for {format_duration(idle.window)} "
            f"(busiest {peak:.0f}%)"
        )
        gpus = sum(p.requests.get(GPU, 0) for p in pods)
        out.idle[key] = Idle(why, idle.action, tuple(pods), gpus)
        if idle.action == "evict":
            return Finding(key, "idle", why, tuple(pods), rules)
        return None


def _running(pods_by_node: Iterable[Iterable[PodInfo]]) -> dict[str, list[PodInfo]]:
    jobs: dict[str, list[PodInfo]] = {}
    for pods in pods_by_node:
        for pod in pods:
            if pod.active and pod.node_name:
                jobs.setdefault(job_key(pod), []).append(pod)
    return jobs


def _not_ready(
    key: str, pods: list[PodInfo], unready: list[PodInfo], size: int, rules: LifecycleRules
) -> Finding:
    shown = ", ".join(f"{p.name}: {_state(p)}" for p in unready[:SHOWN])
    missing = f"{size - len(pods)} of {size} pods not bound" if len(pods) < size else ""
    detail = "; ".join(part for part in (shown, missing) if part)
    why = f"pods not ready within {format_duration(rules.ready_timeout)} ({detail})"
    return Finding(key, "not-ready", why, tuple(pods), rules)


def _state(pod: PodInfo) -> str:
    if pod.waiting_reason:
        return pod.waiting_reason
    return "Running, not Ready" if pod.phase == "Running" else pod.phase


def _max_runtime(rules: LifecycleRules, pods: Iterable[PodInfo]) -> float:
    """The job's limit: its queue's, lowered (never raised) by the annotation on its pods."""
    limit = rules.max_runtime or float("inf")
    for pod in pods:
        raw = pod.annotations.get(MAX_RUNTIME_ANNOTATION)
        if raw:
            try:
                limit = min(limit, parse_duration(raw))
            except ValueError:
                continue  # a bad annotation is ignored (and cannot raise the limit)
    return 0.0 if limit == float("inf") else limit
