"""The requeue ledger: how often each job was sent back, until when its new pods wait, and
whether it is held until a person acts.

A job evicted whole because it did not become ready in time (or crash-looped) is *requeued*: its
controller recreates the pods, and gangplank holds them for a backoff (`backoff` x 2^(n-1),
capped at `maxBackoff`), so a job that cannot start does not take the GPUs again at once. After
`limit` requeues the job is *held* (so is a job stopped for running past its `maxRuntime`) until a
person acts: recreates it (a new controller, or the pods recreated by hand) or sets the
annotation `gangplank.io/retry: "now"` on one of its pods. The records outlive a restart and a
failover: each change is handed to the adapter (`take_changes`), which keeps them in a ConfigMap,
and read back on start (`load`).

A job requeued through its workload (`workloads.py`: a Job, JobSet, PyTorchJob... suspended) has
no pods while it waits: its record names the workload, and whether gangplank resumed it, so that
whichever replica leads when the backoff ends resumes it, once (`resumes_due`, `resumed`). A held
one stays suspended until a person resumes it; its new pods then start afresh.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace

from extender.core.lifecycle.workloads import JOBSET_NAME, Workload, workload_of
from extender.core.model.keys import job_name
from extender.core.model.quantity import format_age
from extender.core.model.snapshot import PodInfo
from extender.core.queues.lifecycle import Requeue

RETRY_ANNOTATION = "gangplank.io/retry"
FORGET_SECONDS = 7 * 24 * 3600.0  # a record of a job gone this long is dropped


@dataclass(frozen=True, slots=True)
class RequeueRecord:
    job: str  # job key
    count: int  # requeues so far
    next_try: float  # unix time before which the job's new pods are held
    reason: str  # why the last requeue happened
    held: bool  # past its limit (or stopped for good): held until a person acts
    updated: float  # unix time of the last change
    owner: str = ""  # uid of the controller of the pods evicted ("": none)
    limit: int = 0  # the limit it was requeued under (for the reason shown)
    workload: Workload | None = None  # what was suspended (None: its pods were evicted)
    resumed: bool = False  # the workload was resumed when its backoff ended
    moved: bool = False  # suspended to move it (consolidation), not requeued: no count spent

    def to_json(self) -> dict[str, object]:
        suspended: dict[str, object] = {}
        if self.workload is not None:
            suspended = {"workload": self.workload.to_json(), "resumed": self.resumed}
        if self.moved:
            suspended["moved"] = True
        return {
            "count": self.count,
            "nextTry": self.next_try,
            "reason": self.reason,
            "held": self.held,
            "updated": self.updated,
            "owner": self.owner,
            "limit": self.limit,
            **suspended,
        }

    @classmethod
    def from_json(cls, job: str, data: Mapping[str, object]) -> RequeueRecord:
        return cls(
            job=job,
            count=int(str(data.get("count", 0))),
            next_try=float(str(data.get("nextTry", 0.0))),
            reason=str(data.get("reason", "")),
            held=bool(data.get("held", False)),
            updated=float(str(data.get("updated", 0.0))),
            owner=str(data.get("owner", "")),
            limit=int(str(data.get("limit", 0))),
            workload=Workload.from_json(data.get("workload")),
            resumed=bool(data.get("resumed", False)),
            moved=bool(data.get("moved", False)),
        )


class Requeues:
    def __init__(self) -> None:
        self._records: dict[str, RequeueRecord] = {}
        self._changes: dict[str, RequeueRecord | None] = {}
        # Whether the kept records are read (the adapter clears it until it has read them): no
        # job is requeued before, or a new count would overwrite the kept one.
        self.known = True

    def load(self, records: Mapping[str, Mapping[str, object]]) -> int:
        """The records as the adapter keeps them, in place of what this process remembered
        (a replica that led before may remember a record the leader since cleared); changes not
        kept yet stay. Returns how many were read."""
        kept: dict[str, RequeueRecord] = {}
        for job, data in records.items():
            try:
                kept[job] = RequeueRecord.from_json(job, data)
            except (TypeError, ValueError):
                continue  # a record someone edited by hand: ignored, not fatal
        read = len(kept)
        for job, pending in self._changes.items():  # ours, not written yet: they win
            if pending is None:
                kept.pop(job, None)
            else:
                kept[job] = pending
        self._records = kept
        self.known = True
        return read

    def undo(self, job: str, before: RequeueRecord | None) -> None:
        """The eviction a requeue was counted for did not happen (a PodDisruptionBudget, an
        error): the record goes back to what it was."""
        self._set(job, before)

    def requeue(
        self,
        job: str,
        reason: str,
        now: float,
        rules: Requeue,
        owner: str,
        stop: bool = False,
        workload: Workload | None = None,
    ) -> RequeueRecord:
        """Job `job` was sent back for `reason`; `stop`: held at once (it ran past its time);
        `workload`: it is suspended through it (None: its pods are evicted)."""
        known = self._records.get(job)
        count = (known.count if known is not None and known.owner == owner else 0) + 1
        held = stop or count > rules.limit
        wait = min(rules.backoff * 2 ** (count - 1), rules.max_backoff)
        record = RequeueRecord(
            job, count, now + wait, reason, held, now, owner, rules.limit, workload
        )
        self._set(job, record)
        return record

    def move(
        self, job: str, reason: str, now: float, owner: str, workload: Workload, resume_at: float
    ) -> RequeueRecord:
        """Job `job` is suspended through `workload` to move it (`reason`), and resumed at
        `resume_at`: its requeue count stays what it was (a move is no requeue), and the record
        outlives a restart, so the workload is resumed once, whoever leads then."""
        known = self._records.get(job)
        same = known is not None and known.owner == owner
        record = RequeueRecord(
            job,
            known.count if same and known is not None else 0,
            resume_at,
            reason,
            False,
            now,
            owner,
            known.limit if same and known is not None else 0,
            workload,
            moved=True,
        )
        self._set(job, record)
        return record

    def moved_since(self, since: float) -> set[str]:
        """The jobs moved (suspended for a move) since `since`, as the records say."""
        return {r.job for r in self._records.values() if r.moved and r.updated >= since}

    def resumes_due(self, now: float) -> list[RequeueRecord]:
        """The suspended workloads whose backoff is over and that are not resumed yet."""
        return [
            r
            for r in self._records.values()
            if r.workload is not None and not r.held and not r.resumed and now >= r.next_try
        ]

    def resumed(self, job: str) -> None:
        """The workload of `job` was resumed (or is gone): not resumed again."""
        record = self._records.get(job)
        if record is not None and record.workload is not None:
            self._set(job, replace(record, resumed=True))

    def gate(self, job: str, pods: Sequence[PodInfo], now: float) -> str | None:
        """Why the new pods of `job` must wait now (None: they may go): in backoff, or held.
        A job recreated (pods of another controller, or pods made after a held job's last
        requeue when it has none or was suspended: a person resumed it) or a pod annotated
        `gangplank.io/retry: "now"` starts afresh."""
        record = self._records.get(job)
        if record is None:
            return None
        owner = identity(pods)
        retry = any(p.annotations.get(RETRY_ANNOTATION) == "now" for p in pods)
        recreated = owner != record.owner or (
            (not owner or record.workload is not None)
            and record.held
            and all(p.created > record.updated for p in pods)
        )
        if retry or recreated:
            self._set(job, None)
            return None
        name = job_name(job)
        if record.held and record.workload is not None:
            return (
                f"{name} is held, {record.workload.shown} suspended: {record.reason}; it runs "
                f"again when resumed: {record.workload.resume_command()}"
            )
        if record.held:
            return (
                f"{name} is held: {record.reason}; it runs again when recreated or when a pod of "
                f'it is annotated gangplank.io/retry: "now"'
            )
        if now >= record.next_try:
            return None
        return (
            f"{name} requeued {record.count} of {record.limit} times: {record.reason}; next try "
            f"in {format_age(record.next_try - now)}"
        )

    def get(self, job: str) -> RequeueRecord | None:
        return self._records.get(job)

    def held(self) -> list[RequeueRecord]:
        return [r for r in self._records.values() if r.held]

    def prune(self, now: float, alive: set[str]) -> None:
        """Drop records of jobs long gone."""
        for job, record in list(self._records.items()):
            if job not in alive and now - record.updated > FORGET_SECONDS:
                self._set(job, None)

    def take_changes(self) -> dict[str, dict[str, object] | None]:
        """What changed since the last call, for the adapter to keep (None: delete)."""
        changes, self._changes = self._changes, {}
        return {job: r.to_json() if r is not None else None for job, r in changes.items()}

    def put_back(self, changes: Mapping[str, Mapping[str, object] | None]) -> None:
        """Changes the adapter could not keep: handed again next time (newer ones win)."""
        for job in changes:
            if job not in self._changes:
                self._changes[job] = self._records.get(job)

    def forget_changes(self, jobs: Collection[str]) -> None:
        """Changes of these jobs not kept yet are not to be kept (the records are read back in
        their place)."""
        for job in jobs:
            self._changes.pop(job, None)

    def _set(self, job: str, record: RequeueRecord | None) -> None:
        if record is None:
            self._records.pop(job, None)
        else:
            self._records[job] = record
        self._changes[job] = record

    def __len__(self) -> int:
        return len(self._records)


def identity(pods: Sequence[PodInfo]) -> str:
    """What stays the same while a job's controller recreates its pods, and changes when a
    person recreates the job: the owning JobSet (its child Jobs are recreated on each restart,
    with new uids); the uid of the workload gangplank suspends it through where the pods name it
    as their controller (an MPIJob's workers, not its launcher's Job), else the workload itself;
    else the uid of the pods' controller ("":
    none)."""
    for pod in pods:
        jobset = pod.labels.get(JOBSET_NAME)
        if jobset:
            return f"jobset:{pod.namespace}/{jobset}"
    workload = workload_of(pods)
    if workload is not None:
        own = sorted(
            p.owner.uid
            for p in pods
            if p.owner is not None
            and (p.owner.kind, p.owner.name) == (workload.kind, workload.name)
        )
        if own:
            return own[0]
        return f"{workload.kind.lower()}:{workload.namespace}/{workload.name}"
    return next((p.owner.uid for p in pods if p.owner is not None), "")
