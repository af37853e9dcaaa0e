"""GPU fragmentation, measured against the jobs the cluster runs (after FGD, Weng et al., ATC '23).

A node's free GPU capacity is a *fragment* for a job shape when that shape cannot use it: all of
it when the shape does not fit the node at all (too little CPU or memory, the wrong GPU model, too
few free GPUs), else the GPUs each too partly used for the shape's per-GPU share. A node's
fragmentation is the expected fragment over the cluster's mix of shapes (each weighted by how
often it occurs); a placement is good when it grows fragmentation least. Amounts are milli-GPUs,
so shared GPUs (a share of one GPU, as in the Alibaba trace) are accounted per GPU.

A node's state is a plain tuple, so that nodes in the same state share every figure:
`(gpu model, free cpu milli, free memory MiB, free milli-GPU of each GPU with some free, largest
first)`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from extender.core.model.snapshot import GpuState

WHOLE = 1000  # milli-GPU in one GPU
MIX_SHAPES = 64  # the most common shapes make the mix (chosen on the trace, see docs)


@dataclass(frozen=True, slots=True)
class Shape:
    """What one pod asks for: `gpus` GPUs of `milli` each (a share when `gpus` is 1)."""

    cpu: int  # milli-CPU
    memory: int  # MiB
    gpus: int = 0
    milli: int = WHOLE
    models: frozenset[str] = frozenset()  # GPU models it may use; empty = any

    @property
    def gpu_milli(self) -> int:
        return self.gpus * self.milli


@dataclass(frozen=True, slots=True)
class Mix:
    """The shapes the cluster runs and how often (weights sum to 1)."""

    shapes: tuple[tuple[Shape, float], ...]

    @staticmethod
    def of(shapes: Iterable[Shape], limit: int = MIX_SHAPES) -> Mix:
        counts: dict[Shape, int] = {}
        for shape in shapes:
            counts[shape] = counts.get(shape, 0) + 1
        return Mix.counted(counts, limit)

    @staticmethod
    def counted(counts: Mapping[Shape, int], limit: int = MIX_SHAPES) -> Mix:
        common = sorted(counts.items(), key=lambda item: (-item[1], repr(item[0])))[:limit]
        total = sum(n for _, n in common)
        if not total:
            return DEFAULT_MIX
        return Mix(tuple((shape, n / total) for shape, n in common))


DEFAULT_MIX = Mix(
    tuple(
        (Shape(cpu=4000 * n, memory=16384 * n, gpus=n), w)
        for n, w in ((1, 0.4), (2, 0.2), (4, 0.2), (8, 0.2))
    )
)


def fits(state: GpuState, shape: Shape) -> bool:
    model, cpu, memory, gpus = state
    if cpu < shape.cpu or memory < shape.memory:
        return False
    if not shape.gpus:
        return True
    if shape.models and model not in shape.models:
        return False
    if shape.gpus == 1 and shape.milli < WHOLE:
        return bool(gpus) and gpus[0] >= shape.milli
    return sum(1 for g in gpus if g >= WHOLE) >= shape.gpus


def fragment(state: GpuState, shape: Shape) -> int:
    """Free milli-GPU on the node that `shape` cannot use."""
    gpus = state[3]
    if not gpus:
        return 0
    if not shape.gpus or not fits(state, shape):
        return sum(gpus)  # a job without GPUs, or one that does not fit, uses none of them
    need = shape.milli if shape.gpus == 1 else WHOLE
    return sum(g for g in gpus if g < need)


def fragmentation(state: GpuState, mix: Mix) -> float:
    return sum(weight * fragment(state, shape) for shape, weight in mix.shapes)


def placements(state: GpuState, shape: Shape) -> list[tuple[GpuState, int]]:
    """Each distinct state `shape` can leave the node in, with the index (in the state's GPU
    tuple) of the GPU a shared pod takes (-1 for whole GPUs or none). Assumes it fits."""
    model, cpu, memory, gpus = state
    cpu, memory = cpu - shape.cpu, memory - shape.memory
    if not shape.gpus:
        return [((model, cpu, memory, gpus), -1)]
    if shape.gpus == 1 and shape.milli < WHOLE:
        out: list[tuple[GpuState, int]] = []
        seen: set[int] = set()
        for i, g in enumerate(gpus):
            if g >= shape.milli and g not in seen:
                seen.add(g)
                rest = [*gpus[:i], g - shape.milli, *gpus[i + 1 :]]
                out.append(((model, cpu, memory, _norm(rest)), i))
        return out
    left, taken = [], 0
    for g in gpus:
        if g >= WHOLE and taken < shape.gpus:
            taken += 1
        else:
            left.append(g)
    return [((model, cpu, memory, tuple(left)), -1)]


def _norm(gpus: Sequence[int]) -> tuple[int, ...]:
    return tuple(sorted((g for g in gpus if g > 0), reverse=True))


def state_of(model: str, cpu: int, memory: int, gpu_free: Iterable[int]) -> GpuState:
    return (model, cpu, memory, _norm(list(gpu_free)))


class FragmentationCache:
    """Fragmentation of states under one mix, remembered (nodes repeat states all the time)."""

    LIMIT = 200_000

    def __init__(self, mix: Mix) -> None:
        self.mix = mix
        self._of: dict[GpuState, float] = {}

    def of(self, state: GpuState) -> float:
        value = self._of.get(state)
        if value is None:
            if len(self._of) > self.LIMIT:
                self._of.clear()
            value = self._of[state] = fragmentation(state, self.mix)
        return value

    def best(self, state: GpuState, shape: Shape) -> tuple[float, GpuState, int]:
        """The growth in fragmentation of the best placement of `shape` on the node, the state it
        leaves, and the GPU a shared pod takes."""
        before = self.of(state)
        return min(
            ((self.of(after) - before, after, gpu) for after, gpu in placements(state, shape)),
            key=lambda item: item[0],
        )
