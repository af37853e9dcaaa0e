"""Jobs that waste what they hold: a seeded share of a workload's jobs (`Faults`, `with_faults`;
none by default) never become ready, crash-loop, lose a node mid-run, or leave their GPUs idle.
The driver plays each fault out (`faults.py`)."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence
from dataclasses import dataclass

from extender.sim.workload import JobSpec

FAULTS = {  # what the jobs with each fault do
    "never-ready": "never become ready once bound: one pod stuck in ImagePullBackOff, or Running "
    "and never Ready; they hold their GPUs until their owner deletes them",
    "crash": "crash-loop part-way through their run: one pod restarts again and again (kubelet's "
    "back-off, 10 s doubling to 5 min); they hold their GPUs until their owner deletes them",
    "node-loss": "lose a node mid-run: one member fails, the others hang on their collective "
    "(their GPUs look busy) until the job's duration ends",
    "idle": "leave their GPUs idle (near zero use) after a short busy start, until their "
    "duration ends",
}
CONTROLLER = "PyTorchJob"  # what owns the pods of a workload with faults: it recreates them


@dataclass(frozen=True)
class Faults:
    """Shares of jobs that waste what they hold (0: none; their sum at most 1; `FAULTS` says
    what each does). `node_loss` is a share of gangs (a pod alone that loses its node is simply
    recreated). A never-ready or crash-looping job sent back by gangplank is fixed on each new
    attempt with probability `fixed_on_retry` (an image typo corrected)."""

    never_ready: float = 0.0
    crash: float = 0.0
    node_loss: float = 0.0
    idle: float = 0.0
    fixed_on_retry: float = 0.5
    seed: int = 1

    def __post_init__(self) -> None:
        shares = (self.never_ready, self.crash, self.node_loss, self.idle, self.fixed_on_retry)
        if any(not 0.0 <= s <= 1.0 for s in shares):
            raise ValueError("fault shares and fixed_on_retry are between 0 and 1")
        if self.never_ready + self.crash + self.idle + self.node_loss > 1.0 + 1e-9:
            raise ValueError("the fault shares add up to more than 1")

    @property
    def any(self) -> bool:
        return bool(self.never_ready or self.crash or self.node_loss or self.idle)


MAX_FAULTY_RUNS = 30  # a job that fails this many attempts in a row is not tried again


def with_faults(jobs: Sequence[JobSpec], faults: Faults) -> list[JobSpec]:
    """`jobs`, a seeded share of them wasting what they hold, and their pods owned by a
    controller that recreates them. Each job draws from its own seeded generator (its name and
    `faults.seed`): a job's fault does not depend on the others'. Without faults, `jobs` as
    they are."""
    if not faults.any:
        return list(jobs)
    out = []
    for job in jobs:
        rng = random.Random(f"faults:{faults.seed}:{job.name}")
        draw, at, kind = rng.random(), rng.random(), rng.random()
        bands = [
            ("never-ready", faults.never_ready),
            ("crash", faults.crash),
            ("idle", faults.idle),
            ("node-loss", faults.node_loss if job.members > 1 else 0.0),
        ]
        fault, edge = "", 0.0
        for name, share in bands:
            edge += share
            if draw < edge:
                fault = name
                break
        runs, symptom, fault_at = 0, "", 0.0
        if fault in ("never-ready", "crash"):
            runs = 1  # then each new attempt is fixed with probability fixed_on_retry
            while runs < MAX_FAULTY_RUNS and rng.random() >= faults.fixed_on_retry:
                runs += 1
            if fault == "never-ready":
                symptom = "ImagePullBackOff" if kind < 0.5 else ""
            else:
                fault_at = round(0.5 * at, 3)  # from its start to half-way
        elif fault == "node-loss":
            runs, fault_at = 1, round(0.1 + 0.8 * at, 3)
        elif fault == "idle":
            runs, fault_at = 1, round(0.2 * at, 3)
        out.append(
            dataclasses.replace(
                job,
                fault=fault,
                fault_at=fault_at,
                symptom=symptom,
                faulty_runs=runs,
                controller=CONTROLLER,
            )
        )
    return out
