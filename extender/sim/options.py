"""What a simulated run is given: its options (`Options`), its clock (simulated, or real time
for the demo), and what it samples over time (`Sample`)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol

STALL_SECONDS = 3600.0
STAGGER = 0.2  # seconds between the creation stamps of one job's pods
FLUSH_AFTER = 300.0  # kube-scheduler's podMaxInUnschedulablePodsDuration
FLUSH_EVERY = 30.0


class Clock(Protocol):
    def wait_until(self, t: float) -> None: ...


class SimulatedClock:
    def wait_until(self, t: float) -> None:
        pass


class WallClock:
    """Real time for the demo: the driver's time is seconds since `start`."""

    def __init__(self) -> None:
        self.start = time.monotonic()

    def now(self) -> float:
        return time.monotonic() - self.start

    def wait_until(self, t: float) -> None:
        delay = t - self.now()
        if delay > 0:
            time.sleep(delay)


@dataclass
class Sample:
    t: float
    allocated: int  # GPUs held by bound pods
    incomplete: int  # of those, held by gangs not all bound
    stranded: int  # free GPUs on nodes with fewer free than the smallest waiting GPU pod asks
    free: int
    running: dict[str, int]  # GPUs of started jobs, by queue
    waiting: dict[str, int]  # jobs waiting, by queue


@dataclass
class Options:
    kick_seconds: float = 5.0  # gangplank's periodic pass (nudges, holds, reclaim), simulated
    sample_seconds: float = 300.0
    until: float | None = None  # stop here (default: when the last job ended or nothing moves)
    seed: int = 1
    stall_seconds: float = (
        STALL_SECONDS  # after the last arrival, stop once nothing moved this long
    )
    # Simulated time one scheduling cycle takes: kube-scheduler places one pod at a time, so a
    # backlog drains at 1/cycle_seconds pods a second. 0: cycles take no time (the live demo's
    # cycles take real time already).
    cycle_seconds: float = 0.0
    # After the last arrival, stop this long after it at most (None: when the work is done or
    # stalls). A run without gangs can deadlock for good while unrelated jobs trickle on.
    drain_seconds: float | None = None
    progress_every: float = 0.0  # simulated seconds between two calls of `progress`
    # A stuck job (never ready, crash-looping) is deleted by its owner this many times its
    # duration after it got stuck (see `workload_faults.Faults`).
    stuck_factor: float = 3.0
    # Consolidation: a pod with no room makes room by moving running jobs (`moves.py`), at most
    # this many jobs in any minute.
    consolidate: bool = False
    moves_per_minute: int = 10
    # Totals by period of this many seconds (`periods.py`: each queue's GPU-time, elastic jobs'
    # workers); 0: none kept.
    period_seconds: float = 0.0
