"""Measured GPU use, the core's input for the idle-GPU rule: per running pod, the highest GPU
utilisation over the rule's window, as the adapter read it from Prometheus (dcgm-exporter's
series). A pod without data is absent: the core never acts on missing data."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class GpuUse:
    """Per-pod GPU utilisation over the idle window, as read from Prometheus for running pods."""

    busiest: Mapping[tuple[str, str], float]  # (namespace, pod) -> max utilisation % over the
    # window, only pods whose series covers the whole window
    ok: bool = True  # False: Prometheus unreachable / query failed
    problem: str = ""  # why not ok, for readiness detail and logs
    window: float = 0.0  # the window it was read over (seconds)
