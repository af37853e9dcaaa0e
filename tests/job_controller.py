"""A stand-in for the batch/v1 Job controller, over the fake API server's state: it makes a Job's
pods, counts the ones that end without succeeding as failures, waits its failure backoff before
making new ones, fails the Job past its backoffLimit, and suspends and resumes it.

The rules, and the upstream facts each rests on (kubernetes: pkg/controller/job/
job_controller.go, pkg/controller/job/backoff_utils.go, pkg/registry/batch/job/strategy.go,
pkg/apis/batch/v1/defaults.go):

- Defaults (defaults.go): parallelism 1; completions 1 when neither is set (left unset when only
  parallelism is: a work queue, done once any pod succeeds); backoffLimit 6.
- Pods (manageJob; strategy.go `generateSelector`): made from spec.template with generateName
  `<job>-` (so named `<job>-<5 random characters>`), labelled `batch.kubernetes.io/job-name`
  and `job-name` with the Job's name, `batch.kubernetes.io/controller-uid` and `controller-uid`
  with its uid, owned by it (ownerReference apiVersion batch/v1, kind Job, its name and uid,
  controller and blockOwnerDeletion true), with the tracking finalizer. As many are wanted
  active as parallelism, or with completions min(parallelism, completions - succeeded); all that
  are missing are created in one sync.
- Failures (`isPodFailed`, `trackJobStatusAndRemoveFinalizers`): a pod counts as failed when its
  phase is Failed, or when it is deleted (evicted, drained, `kubectl delete`) while not
  Succeeded. Upstream sees a deleted pod through its tracking finalizer; the fake API server
  deletes at once, so this stand-in remembers every pod of the Job it saw. Pods the controller
  deletes itself while suspending a Job or scaling it down (`deleteJobPods` drops the finalizer
  first) are not counted. Each pod is counted once: status.failed, status.succeeded.
- Backoff (backoff_utils.go `newBackoffRecord`, `getRemainingTimeForFailuresCount`; manageJob):
  a record of the failures since the last success and the time of the last one; new failed pods
  add to it, a success with no failure after it clears it. Before creating pods the controller
  waits 10 s (`DefaultJobPodFailureBackOff`) x 2^(failures - 1), capped at
  `MaxJobPodFailureBackOff`, counted from the last failure. The cap is 10 minutes in the source
  today (`10 * time.Minute`); the older `MaxJobBackOff`, and the Job documentation, say 6
  minutes. Pods that fail together count each: a 4-pod Job evicted whole has 4 failures, and
  its new pods wait 80 s. The record lives in the controller's memory (not in the Job), is kept
  while the Job is suspended, and is dropped when the Job finishes or is deleted.
- The limit (syncJob, `newFailureCondition`): once status.failed > backoffLimit the Job is
  finished: condition FailureTarget (reason BackoffLimitExceeded, message "Job has reached the
  specified backoff limit") first; its active pods are deleted and counted as failed ("when the
  job is considered finished, every non-terminated pod is considered failed"); then Failed with
  the same reason once no pod is terminating (`delayTerminalCondition`: on with the
  JobPodReplacementPolicy gate, on by default since 1.29 and GA in 1.34, or JobManagedBy, GA in
  1.35). Here deletions are at once, so both conditions come in one sync.
- Suspension (manageJob, syncJob): spec.suspend true deletes every active pod without counting
  it, sets condition Suspended True (reason JobSuspended, message "Job suspended") and
  status.active 0; false sets Suspended False (JobResumed, "Job resumed": a False condition is
  never added where there was none), resets status.startTime, and creates the pods in that same
  sync, held back only by the failure backoff above: a Job resumed soon after failures waits out
  the rest of it, one without failures gets its pods at once.
- Status (syncJob): active, failed and succeeded are left out when 0, as the API writes them;
  ready and terminating (0 here: deletions are at once) are always there.
- Success: status.succeeded; once succeeded >= completions (any success for a work queue) and
  no pod is active, SuccessCriteriaMet then Complete (`newSuccessCondition`: no reason, no
  message).
- Indexed Jobs (completionMode Indexed; `getCompletionIndex`, `activePodsForRemoval`,
  `appendDuplicatedIndexPodsForRemoval`; the ElasticIndexedJob rules, GA in 1.31): a pod per
  index below completions that has not succeeded, at most parallelism at once, the lowest
  missing index first, each with the annotation and label `batch.kubernetes.io/job-completion-
  index`, named `<job>-<index>-<5 characters>` with hostname `<job>-<index>`. Completions and
  parallelism lowered together (the API server allows it only where they stay equal): the pods
  whose index is at or above the new completions are removed by the controller, uncounted (the
  highest indexes go). A pod deleted by anyone else counts as failed only while its index is
  below completions (`trackJobStatusAndRemoveFinalizers`: `ix < completions`), so an evicted
  pod that a smaller size has put out of range is no failure.
- Not modelled: podFailurePolicy, podReplacementPolicy Failed, backoffLimitPerIndex,
  completedIndexes and succeeded counted per index, activeDeadlineSeconds, restarts under
  restartPolicy OnFailure, the 1 s batching of syncs (here each `tick`), the order in which a
  NonIndexed Job's pods are chosen for a scale-down. Jobs whose
  spec.managedBy names another controller are left alone, as upstream leaves them.

`scale` multiplies every backoff (0.01: 0.1 s, 0.2 s, 0.4 s ...) so tests keep the shape, not the
minutes; `clock` lets a test move time itself and call `sync()` instead of starting the thread.
"""

from __future__ import annotations

import copy
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from tests.builders import pod as pod_builder
from tests.fakeapi import FakeApiServer

JOB_NAME = "batch.kubernetes.io/job-name"
CONTROLLER_UID = "batch.kubernetes.io/controller-uid"
LEGACY_JOB_NAME = "job-name"
LEGACY_CONTROLLER_UID = "controller-uid"
TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"  # annotation and label (Indexed)
MANAGED_BY = "kubernetes.io/job-controller"
DEFAULT_BACKOFF_LIMIT = 6
POD_FAILURE_BACKOFF = 10.0  # DefaultJobPodFailureBackOff
MAX_POD_FAILURE_BACKOFF = 600.0  # MaxJobPodFailureBackOff (10 minutes in job_controller.go)
BACKOFF_LIMIT_EXCEEDED = "BackoffLimitExceeded"
BACKOFF_LIMIT_MESSAGE = "Job has reached the specified backoff limit"
# what generateName appends (k8s.io/apimachinery/pkg/util/rand: no vowels, no look-alikes)
_NAME_CHARACTERS = "bcdfghjklmnpqrstvwxz2456789"


def backoff_seconds(
    failures: int, base: float = POD_FAILURE_BACKOFF, cap: float = MAX_POD_FAILURE_BACKOFF
) -> float:
    """How long the Job controller waits after the last of `failures` failures before it creates
    pods again: base x 2^(failures - 1), at most `cap` (0 with no failure)."""
    if failures <= 0:
        return 0.0
    return min(base * 2.0 ** (failures - 1), cap)


def stamp(seconds: float) -> str:
    """An RFC 3339 time as the API server writes it (whole seconds)."""
    return datetime.fromtimestamp(int(seconds), UTC).isoformat().replace("+00:00", "Z")


def batch_job(
    name: str,
    parallelism: int | None = None,
    *,
    completions: int | None = None,
    backoff_limit: int | None = None,
    suspend: bool | None = None,
    namespace: str = "default",
    gpu: int = 0,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    indexed: bool = False,
) -> dict[str, Any]:
    """A batch/v1 Job (`indexed`: completionMode Indexed) as the API server stores it once
    created: defaults filled in (parallelism 1, completions 1 when neither is given, backoffLimit
    6, suspend false), its uid, and the selector and template labels it generates. `labels` and
    `annotations` go on its pods' template (a queue label, a gang annotation...); each pod asks
    for `gpu` GPUs."""
    uid = str(uuid.uuid4())
    if parallelism is None and completions is None:
        parallelism = completions = 1
    template = pod_builder(name, namespace=namespace, gpu=gpu)
    template_labels = {
        **(labels or {}),
        LEGACY_CONTROLLER_UID: uid,
        CONTROLLER_UID: uid,
        LEGACY_JOB_NAME: name,
        JOB_NAME: name,
    }
    spec: dict[str, Any] = {
        "parallelism": 1 if parallelism is None else parallelism,
        "backoffLimit": DEFAULT_BACKOFF_LIMIT if backoff_limit is None else backoff_limit,
        "completionMode": "Indexed" if indexed else "NonIndexed",
        "suspend": bool(suspend),
        "manualSelector": False,
        "podReplacementPolicy": "TerminatingOrFailed",
        "selector": {"matchLabels": {CONTROLLER_UID: uid}},
        "template": {
            "metadata": {"labels": template_labels, "annotations": dict(annotations or {})},
            "spec": {**template["spec"], "restartPolicy": "Never"},
        },
    }
    if completions is not None:
        spec["completions"] = completions
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid,
            "labels": {CONTROLLER_UID: uid, JOB_NAME: name},
            "creationTimestamp": stamp(time.time()),
        },
        "spec": spec,
        "status": {},
    }


@dataclass(frozen=True)
class Generation:
    """Pods the controller created together."""

    at: float  # when (the controller's clock)
    pods: tuple[str, ...]  # their names


@dataclass
class _Tracked:
    """What the controller knows of one Job beyond the Job itself (upstream: its informer's pods
    with their tracking finalizers, and its backoff store)."""

    seen: dict[str, str] = field(default_factory=dict)  # pod uid -> the phase last seen
    index: dict[str, int] = field(default_factory=dict)  # pod uid -> its completion index
    counted: set[str] = field(default_factory=set)  # pods already in failed or succeeded
    removed: set[str] = field(default_factory=set)  # pods it deleted uncounted (suspension)
    failures: int = 0  # failures since the last success (the backoff record)
    last_failure: float | None = None
    next_try: float | None = None  # pods wanted but held back by the backoff until then
    generations: list[Generation] = field(default_factory=list)


class JobController(threading.Thread):
    """`with JobController(api, scale=0.01) as jobs:` runs it every `tick` seconds (an error in
    it is raised again when it stops); or call `sync()` yourself with a `clock` of your own.
    `only` names the Jobs it manages ("namespace/name"), for a test whose other Job objects
    only tell gangplank a size and whose pods the test makes itself; by default, every Job."""

    def __init__(
        self,
        api: FakeApiServer,
        *,
        scale: float = 1.0,
        tick: float = 0.02,
        clock: Callable[[], float] = time.time,
        seed: int | None = None,
        only: Iterable[str] = (),
    ) -> None:
        super().__init__(daemon=True)
        self.api, self.scale, self.tick, self.clock = api, scale, tick, clock
        self.only = frozenset(only)
        self.error: Exception | None = None
        self._random = random.Random(seed)
        self._tracked: dict[str, _Tracked] = {}  # Job uid -> what it knows of it
        self._done = threading.Event()

    def __enter__(self) -> JobController:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def run(self) -> None:
        try:
            while not self._done.wait(self.tick):
                self.sync()
        except Exception as err:  # kept for stop() to raise in the test's thread
            self.error = err

    def stop(self) -> None:
        """Stop the thread; raise what made it stop, if anything did."""
        self._done.set()
        if self.is_alive():
            self.join(2)
        if self.error is not None:
            raise RuntimeError("the Job controller stand-in stopped on an error") from self.error

    # ---- what tests read ------------------------------------------------------------------------
    def job(self, name: str, namespace: str = "default") -> dict[str, Any]:
        found = self.api.object("jobs", namespace, name)
        assert found is not None, f"no Job {namespace}/{name}"
        return found

    def failed(self, name: str, namespace: str = "default") -> int:
        """status.failed of the Job."""
        return int(self.job(name, namespace).get("status", {}).get("failed", 0))

    def succeeded(self, name: str, namespace: str = "default") -> int:
        return int(self.job(name, namespace).get("status", {}).get("succeeded", 0))

    def conditions(self, name: str, namespace: str = "default") -> list[tuple[str, str, str]]:
        """(type, status, reason) of each of the Job's conditions, in order."""
        return [
            (c["type"], c["status"], c.get("reason", ""))
            for c in self.job(name, namespace).get("status", {}).get("conditions", [])
        ]

    def generations(self, name: str, namespace: str = "default") -> list[Generation]:
        """The pods created for the Job, one entry per sync that created some."""
        job = self.job(name, namespace)
        with self.api.cond:
            return list(self._track(job).generations)

    def next_try(self, name: str, namespace: str = "default") -> float | None:
        """When the Job's missing pods are created, if its failure backoff holds them back."""
        job = self.job(name, namespace)
        with self.api.cond:
            return self._track(job).next_try

    def pods(self, name: str, namespace: str = "default") -> list[dict[str, Any]]:
        """The Job's pods in the API server now (copies)."""
        uid = self.job(name, namespace)["metadata"]["uid"]
        with self.api.cond:
            return [
                copy.deepcopy(p) for p in self.api.state.objects["pods"].values() if _owned(p, uid)
            ]

    # ---- the controller -------------------------------------------------------------------------
    def sync(self) -> None:
        """One pass over every Job, as the controller's syncJob does for each."""
        with self.api.cond:
            jobs = [copy.deepcopy(j) for j in self.api.state.objects["jobs"].values()]
            for job in jobs:
                managed_by = job.get("spec", {}).get("managedBy")
                if managed_by in (None, MANAGED_BY) and (not self.only or _key(job) in self.only):
                    self._sync(job)
            present = {j["metadata"]["uid"] for j in jobs}
            for uid in set(self._tracked) - present:  # deleted: its backoff record goes too
                del self._tracked[uid]

    def _track(self, job: dict[str, Any]) -> _Tracked:
        return self._tracked.setdefault(job["metadata"]["uid"], _Tracked())

    def _sync(self, job: dict[str, Any]) -> None:
        meta, spec = job["metadata"], job.get("spec") or {}
        status: dict[str, Any] = copy.deepcopy(job.get("status") or {})
        track = self._track(job)
        if _finished(status):
            track.failures, track.last_failure, track.next_try = 0, None, None
            return
        now = self.clock()
        pods = [p for p in self.api.state.objects["pods"].values() if _owned(p, meta["uid"])]
        failed, succeeded = self._count(track, pods, spec)
        status["failed"] = status.get("failed", 0) + failed
        status["succeeded"] = status.get("succeeded", 0) + succeeded
        if succeeded:
            track.failures, track.last_failure = 0, None  # failures seen with it: not after it
        elif failed:
            track.failures, track.last_failure = track.failures + failed, now
        conditions: list[dict[str, Any]] = status.setdefault("conditions", [])
        active = [p for p in pods if _phase(p) not in ("Succeeded", "Failed")]
        limit = spec.get("backoffLimit", DEFAULT_BACKOFF_LIMIT)
        track.next_try = None
        if _condition(conditions, "FailureTarget") or status["failed"] > limit:
            _ensure(conditions, "FailureTarget", "True", BACKOFF_LIMIT_EXCEEDED, now)
            for pod in active:  # each counted failed: the Job is finished
                track.counted.add(pod["metadata"]["uid"])
                self._remove(pod)
            status["failed"] += len(active)
            active = []
            _ensure(conditions, "Failed", "True", BACKOFF_LIMIT_EXCEEDED, now)
        elif spec.get("suspend"):
            for pod in active:
                track.removed.add(pod["metadata"]["uid"])
                self._remove(pod)
            active = []
            _ensure(conditions, "Suspended", "True", "JobSuspended", now)
        else:
            active = self._manage(job, status, track, active, now)
            if _ensure(conditions, "Suspended", "False", "JobResumed", now):
                status["startTime"] = stamp(now)
            if _complete(spec, status["succeeded"], active):
                _ensure(conditions, "SuccessCriteriaMet", "True", "", now)
                _ensure(conditions, "Complete", "True", "", now)
                status["completionTime"] = stamp(now)
        if "startTime" not in status and not spec.get("suspend"):
            status["startTime"] = stamp(now)
        status["active"] = len(active)
        status["ready"] = sum(1 for p in active if _ready(p))
        status["terminating"] = 0  # deletions are at once here
        status.setdefault("uncountedTerminatedPods", {})
        for counter in ("active", "failed", "succeeded"):  # omitempty, as the API writes them
            if not status[counter]:
                del status[counter]
        if not conditions:
            del status["conditions"]
        if status != (job.get("status") or {}):
            self.api.put("jobs", {**job, "status": status})

    def _count(
        self, track: _Tracked, pods: list[dict[str, Any]], spec: dict[str, Any]
    ) -> tuple[int, int]:
        """(failed, succeeded): the Job's pods that ended since the last sync, each once. A pod
        gone that was not Succeeded, and that the controller did not remove uncounted, failed —
        in an Indexed Job only while its index is below completions."""
        failed = succeeded = 0
        now = {p["metadata"]["uid"]: _phase(p) for p in pods}
        completions = spec.get("completions")
        indexed = spec.get("completionMode") == "Indexed"
        for uid, phase in list(track.seen.items()):
            if uid not in now:
                del track.seen[uid]
                index = track.index.pop(uid, None)
                beyond = indexed and (index is None or index >= (completions or 0))
                if uid not in track.counted and uid not in track.removed:
                    track.counted.add(uid)
                    succeeded += phase == "Succeeded" and not beyond
                    failed += phase != "Succeeded" and not beyond
        for uid, phase in now.items():
            track.seen[uid] = phase
            if uid not in track.counted and phase in ("Succeeded", "Failed"):
                track.counted.add(uid)
                succeeded += phase == "Succeeded"
                failed += phase == "Failed"
        return failed, succeeded

    def _manage(
        self,
        job: dict[str, Any],
        status: dict[str, Any],
        track: _Tracked,
        active: list[dict[str, Any]],
        now: float,
    ) -> list[dict[str, Any]]:
        """The Job's active pods once it has as many as it wants, or as it may have now."""
        spec = job.get("spec") or {}
        parallelism = spec.get("parallelism", 1)
        completions = spec.get("completions")
        if spec.get("completionMode") == "Indexed":
            return self._manage_indexed(job, track, active, now)
        if completions is None:
            wanted = len(active) if status["succeeded"] > 0 else parallelism
        else:
            wanted = max(0, min(parallelism, completions - status["succeeded"]))
        if len(active) > wanted:  # scaled down: pods go in the ActivePods order, uncounted
            going = sorted(sorted(active, key=_name, reverse=True), key=_removal_order)
            for pod in going[: len(active) - wanted]:
                track.removed.add(pod["metadata"]["uid"])
                self._remove(pod)
            return going[len(active) - wanted :]
        if len(active) == wanted:
            return active
        if self._held_back(track, now):
            return active
        return active + self._create_all(job, track, now, [None] * (wanted - len(active)))

    def _held_back(self, track: _Tracked, now: float) -> bool:
        """Whether the failure backoff holds the Job's new pods back now (until `next_try`)."""
        if track.last_failure is not None:
            wait = backoff_seconds(track.failures) * self.scale
            if now < track.last_failure + wait:
                track.next_try = track.last_failure + wait
                return True
        return False

    def _create_all(
        self, job: dict[str, Any], track: _Tracked, now: float, indexes: list[int | None]
    ) -> list[dict[str, Any]]:
        """A pod for each of `indexes` (None: a NonIndexed Job's), created in one sync."""
        created = [self._create(job, now, index) for index in indexes]
        for pod in created:
            track.seen[pod["metadata"]["uid"]] = "Pending"
            if (index := _index(pod)) >= 0:
                track.index[pod["metadata"]["uid"]] = index
        track.generations.append(Generation(now, tuple(p["metadata"]["name"] for p in created)))
        return created

    def _manage_indexed(
        self,
        job: dict[str, Any],
        track: _Tracked,
        active: list[dict[str, Any]],
        now: float,
    ) -> list[dict[str, Any]]:
        """An Indexed Job: a pod per index below completions not succeeded yet, at most
        parallelism at once, the lowest missing index first. A pod whose index is at or above
        completions (the Job was made smaller) is removed uncounted, the highest first."""
        spec = job.get("spec") or {}
        completions = spec.get("completions") or 0
        parallelism = spec.get("parallelism", 1)
        succeeded = {i for uid, i in track.index.items() if track.seen.get(uid) == "Succeeded"}
        in_range = sorted((p for p in active if _index(p) < completions), key=_index)
        keep = in_range[:parallelism]
        for pod in sorted(active, key=_index, reverse=True):
            if pod not in keep:
                track.removed.add(pod["metadata"]["uid"])
                self._remove(pod)
        running = {_index(p) for p in keep}
        missing = [i for i in range(completions) if i not in running and i not in succeeded]
        room = max(0, parallelism - len(keep))
        if not missing or not room:
            return keep
        if self._held_back(track, now):
            return keep
        return keep + self._create_all(job, track, now, list(missing[:room]))

    def _create(self, job: dict[str, Any], now: float, index: int | None = None) -> dict[str, Any]:
        meta = job["metadata"]
        template = copy.deepcopy((job.get("spec") or {}).get("template") or {})
        template_meta = template.get("metadata") or {}
        taken = self.api.state.objects["pods"]
        prefix = meta["name"] if index is None else f"{meta['name']}-{index}"
        while True:
            suffix = "".join(self._random.choices(_NAME_CHARACTERS, k=5))
            name = f"{prefix}-{suffix}"
            if f"{meta['namespace']}/{name}" not in taken:
                break
        indexes = {} if index is None else {COMPLETION_INDEX: str(index)}
        if index is not None:
            template.setdefault("spec", {})["hostname"] = f"{meta['name']}-{index}"
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "generateName": f"{meta['name']}-",
                "namespace": meta["namespace"],
                "uid": str(uuid.uuid4()),
                "labels": {
                    **(template_meta.get("labels") or {}),
                    LEGACY_CONTROLLER_UID: meta["uid"],
                    CONTROLLER_UID: meta["uid"],
                    LEGACY_JOB_NAME: meta["name"],
                    JOB_NAME: meta["name"],
                    **indexes,
                },
                "annotations": {**(template_meta.get("annotations") or {}), **indexes},
                "ownerReferences": [
                    {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "name": meta["name"],
                        "uid": meta["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
                "finalizers": [TRACKING_FINALIZER],
                "creationTimestamp": stamp(now),
            },
            "spec": template.get("spec") or {},
            "status": {"phase": "Pending"},
        }
        return self.api.put("pods", pod)

    def _remove(self, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        if f"{meta['namespace']}/{meta['name']}" in self.api.state.objects["pods"]:
            self.api.delete("pods", meta["namespace"], meta["name"])


def _key(obj: dict[str, Any]) -> str:
    return f"{obj['metadata'].get('namespace', 'default')}/{obj['metadata']['name']}"


def _index(pod: dict[str, Any]) -> int:
    """An Indexed Job's pod's completion index (-1: none)."""
    text = (pod["metadata"].get("annotations") or {}).get(COMPLETION_INDEX, "")
    return int(text) if text.isdigit() else -1


def _owned(pod: dict[str, Any], job_uid: str) -> bool:
    return any(
        ref.get("controller") and ref.get("uid") == job_uid
        for ref in pod["metadata"].get("ownerReferences") or []
    )


def _name(pod: dict[str, Any]) -> str:
    return str(pod["metadata"]["name"])


def _seconds(text: str | None) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() if text else 0.0


def _removal_order(pod: dict[str, Any]) -> tuple[bool, int, bool, float, int, float]:
    """The Job controller's `ActivePods` order, the first to be removed first: not scheduled,
    then Pending before Running, not ready before ready, ready the shortest time first, more
    container restarts first, the newest first (ties: as the pods come)."""
    status = pod.get("status") or {}
    ready_since = next(
        (
            c.get("lastTransitionTime")
            for c in status.get("conditions") or []
            if c.get("type") == "Ready" and c.get("status") == "True"
        ),
        None,
    )
    restarts = sum(c.get("restartCount", 0) for c in status.get("containerStatuses") or [])
    return (
        bool(pod["spec"].get("nodeName")),
        {"Pending": 0, "Unknown": 1}.get(_phase(pod), 2),
        _ready(pod),
        -_seconds(ready_since or status.get("startTime")),
        -restarts,
        -_seconds(pod["metadata"].get("creationTimestamp")),
    )


def _phase(pod: dict[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def _ready(pod: dict[str, Any]) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or []
    )


def _condition(conditions: list[dict[str, Any]], kind: str) -> bool:
    return any(c["type"] == kind and c["status"] == "True" for c in conditions)


def _finished(status: dict[str, Any]) -> bool:
    conditions = status.get("conditions") or []
    return _condition(conditions, "Complete") or _condition(conditions, "Failed")


def _complete(spec: dict[str, Any], succeeded: int, active: list[dict[str, Any]]) -> bool:
    completions = spec.get("completions")
    done = succeeded > 0 if completions is None else succeeded >= completions
    return done and not active


MESSAGES = {
    "BackoffLimitExceeded": BACKOFF_LIMIT_MESSAGE,
    "JobSuspended": "Job suspended",
    "JobResumed": "Job resumed",
    "": "",  # Complete and SuccessCriteriaMet (newSuccessCondition) have neither
}


def _ensure(
    conditions: list[dict[str, Any]], kind: str, status: str, reason: str, now: float
) -> bool:
    """Set condition `kind` (upstream ensureJobConditionStatus: a False one is only ever an
    update of one there); whether anything changed."""
    message = MESSAGES[reason]
    new = {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "lastProbeTime": stamp(now),
        "lastTransitionTime": stamp(now),
    }
    for i, condition in enumerate(conditions):
        if condition["type"] == kind:
            if (condition["status"], condition.get("reason"), condition.get("message")) == (
                status,
                reason,
                message,
            ):
                return False
            conditions[i] = new
            return True
    if status == "False":
        return False
    conditions.append(new)
    return True
